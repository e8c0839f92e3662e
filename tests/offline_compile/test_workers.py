"""An offline model is the unit that scales out: worker processes that never saw the graph,
the compiler or the user's code load it from its path and map it over input shards."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ge import offline_compile
from ge.es import GraphBuilder

_MODEL = None


def _load(path: str) -> None:
    global _MODEL
    from ge.runtime import load_model  # noqa: PLC0415  (the worker imports the runtime only)

    _MODEL = load_model(path)


def _run(shard: np.ndarray) -> tuple[np.ndarray, bool]:
    import sys  # noqa: PLC0415

    assert _MODEL is not None
    (out,) = _MODEL.execute([shard])
    return out, "ge.compiler" in sys.modules or "numba" in sys.modules


def test_a_process_pool_maps_one_model_over_shards(tmp_path: Path) -> None:
    b = GraphBuilder("shard")
    x = b.create_input(0, name="x", shape=[64, 8])
    graph = b.build_and_reset([np.tanh(x) * 3.0 + 1.0])
    offline_compile.build_initialize({})
    try:
        offline_compile.save_model(str(tmp_path / "m"), offline_compile.build_model(graph))
    finally:
        offline_compile.build_finalize()
    shards = [np.random.default_rng(i).standard_normal((64, 8)).astype(np.float32) for i in range(6)]
    spawn = multiprocessing.get_context("spawn")  # fresh interpreters: nothing inherited
    with ProcessPoolExecutor(2, mp_context=spawn, initializer=_load,
                             initargs=(str(tmp_path / "m.om"),)) as pool:
        results = list(pool.map(_run, shards))
    for shard, (out, compiler_loaded) in zip(shards, results, strict=True):
        np.testing.assert_allclose(out, np.tanh(shard) * 3.0 + 1.0, rtol=1e-5, atol=1e-6)
        assert not compiler_loaded
