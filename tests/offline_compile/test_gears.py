"""Shape gears: a graph with -1 dims compiled for several fixed shapes (ATC's dynamic_dims and
dynamic_batch_size); the model runs the gear its inputs name and refuses other shapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ge import offline_compile as oc
from ge.error import GeError, GeValueError
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.offline_compile.atc import main as atc
from ge.runtime import load_model, malloc, memcpy_h2d


@pytest.fixture(autouse=True)
def _build_session() -> Iterator[None]:
    oc.build_initialize({})
    yield
    oc.build_finalize()


def _graph() -> Graph:
    b = GraphBuilder("dyn")
    x = b.create_input(0, name="x", shape=[-1, 3])
    y = b.create_input(1, name="y", shape=[-1, -1])
    return b.build_and_reset([np.exp(x) * 2.0, y + 1.0])


def _feeds(n: int, m: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.standard_normal((n, 3)).astype(np.float32), np.ones((m, k), np.float32)]


def test_dynamic_dims_compiles_one_plan_per_gear_and_picks_by_shape() -> None:
    options = {"input_shape": "x:-1,3;y:-1,-1", "dynamic_dims": "1,2,2;4,1,5;8,3,3"}
    model = load_model(oc.build_model(_graph(), options).get_bytes())
    graph = model.graph("dyn")
    assert graph.gears == [[[1, 3], [2, 2]], [[4, 3], [1, 5]], [[8, 3], [3, 3]]]
    assert [d.shape.origin_shape.dims for d in model.input_descs] == [[-1, 3], [-1, -1]]
    for gear in ((1, 2, 2), (4, 1, 5), (8, 3, 3)):
        x, y = _feeds(*gear)
        out_x, out_y = model.execute([x, y])
        np.testing.assert_allclose(out_x, np.exp(x) * 2.0, rtol=1e-6)
        np.testing.assert_array_equal(out_y, y + 1.0)
    with pytest.raises(GeValueError, match=r"compiled for the inputs .* got \[.float32\[2, 3\]."):
        model.execute(_feeds(2, 2, 2))


def test_dynamic_batch_size_fills_every_unknown_dim_and_device_inputs_pick_by_size() -> None:
    b = GraphBuilder("batch")
    x = b.create_input(0, name="x", shape=[-1, 4])
    model = load_model(
        oc.build_model(b.build_and_reset([x * 3.0]), {"dynamic_batch_size": "2,5"}).get_bytes()
    )
    assert model.graph("batch").gears == [[[2, 4]], [[5, 4]]]
    data = np.arange(20, dtype=np.float32).reshape(5, 4)
    block = malloc(data.nbytes)  # device memory of exactly the 5-row gear's size
    memcpy_h2d(block.addr, data)
    (out,) = model.execute([block])
    np.testing.assert_array_equal(out, data * 3.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dynamic_dims": "1;2"}, "2 values for 3 -1 dims|gives 1 values"),
        ({"dynamic_dims": "1,2,x"}, "values must be integers"),
        ({"dynamic_dims": "1,2,2;1,2,2"}, "repeats the gear"),
        ({"dynamic_dims": "1,2,2", "dynamic_batch_size": "2"}, "not both"),
        ({"dynamic_dims": "-1,2,2"}, "dims >= 0"),
        ({"dynamic_dims": ";".join(["1,1,1"] * 101)}, "1 to 100"),
    ],
)
def test_bad_gears_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(GeError, match=r"^BuildModel failed; .*(" + message + ")"):
        oc.build_model(_graph(), options)


def test_gears_need_unknown_dims() -> None:
    b = GraphBuilder("static")
    x = b.create_input(0, name="x", shape=[2, 3])
    with pytest.raises(GeError, match="no input dim is -1"):
        oc.build_model(b.build_and_reset([x + 1.0]), {"dynamic_dims": "1"})


def test_atc_takes_the_gear_flags(tmp_path: Path) -> None:
    air = tmp_path / "g.air"
    _graph().save_to_air(str(air))
    argv = ["--model", str(air), "--output", str(tmp_path / "m"), "--input_shape", "x:-1,3;y:2,-1"]
    assert atc([*argv, "--dynamic_dims", "1,4;2,5"]) == 0
    assert load_model(tmp_path / "m.om").graph("dyn").gears == [[[1, 3], [2, 4]], [[2, 3], [2, 5]]]
    assert atc([*argv, "--dynamic_batch_size", "3"]) == 0
    assert load_model(tmp_path / "m.om").graph("dyn").gears == [[[3, 3], [2, 3]]]
