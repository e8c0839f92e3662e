"""Views of graph inputs in offline models and in ``ge.jit``'s plan cache: a model whose plan
reads an input through a view (a Reshape of the input, with no copy task) round-trips through
the file and runs with each call's inputs; the reader refuses view records that are not a
plain view of an intermediate or an input of the same size and index (chains, cycles, views
of constants or outputs, views that are not intermediates)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge
import ge.es
from ge import offline_compile as oc
from ge import runtime
from ge.es import GraphBuilder
from ge.graph.tensor import Tensor
from ge.runtime import ModelFormatError
from tests.runtime.test_om_format import repack, split

W = np.linspace(-1, 1, 24, dtype=np.float32).reshape(12, 2)


def _expected(x: np.ndarray) -> list[np.ndarray]:
    h = x.reshape(2, 12) @ W
    return [np.exp(x.reshape(24)) * 0.5, h.reshape(4) * 2.0, (h * 3.0).reshape(4, 1)]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    """``[exp(x.reshape(24)) * 0.5, h.reshape(4) * 2, (h * 3).reshape(4, 1)]`` with
    ``h = x.reshape(2, 12) @ W``: the reshapes of x are views of the input, the one of h a
    view of an intermediate, and ``h * 3`` a view of the last output (written in place)."""
    oc.build_initialize({})
    try:
        b = GraphBuilder("om_views")
        x = b.create_input(0, name="x", shape=[4, 6])
        w = ge.es.Const(b, value=Tensor.from_numpy(W))
        h = x.reshape([2, 12]) @ w
        graph = b.build_and_reset(
            [np.exp(x.reshape([24])) * 0.5, h.reshape([4]) * 2.0, (h * 3.0).reshape([4, 1])]
        )
        return oc.build_model(graph).get_bytes()
    finally:
        oc.build_finalize()


def _graph(header: dict[str, Any]) -> dict[str, Any]:
    graph: dict[str, Any] = header["graphs"][0]
    return graph


def _input_views(graph: dict[str, Any]) -> list[list[int]]:
    inputs = set(graph["inputs"])
    return [[v, s] for v, s in graph["views"] if s in inputs]


def test_the_file_holds_views_of_the_input_and_no_copy(model_bytes: bytes) -> None:
    header, _ = split(model_bytes)
    graph = _graph(header)
    views = _input_views(graph)
    assert len(views) == 2
    for view, source in views:
        assert graph["buffers"][view][0] == "intermediate"
        assert graph["buffers"][view][1] == graph["buffers"][source][1] == 0
    names = [t["name"] for t in graph["tasks"]]
    assert not [n for n in names if n.startswith("Reshape")], names


def test_an_output_written_in_place_through_a_view(model_bytes: bytes) -> None:
    header, _ = split(model_bytes)
    graph = _graph(header)
    last = graph["outputs"][-1]
    (view,) = [v for v, s in graph["views"] if s == last]
    assert graph["buffers"][view][2] == [2, 2] and graph["buffers"][last][2] == [4, 1]
    assert graph["buffers"][view][0] == "intermediate"


def test_the_model_runs_with_each_calls_input(model_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "views.om"
    path.write_bytes(model_bytes)
    for source in (model_bytes, str(path)):
        model = runtime.load_model(source)
        for k in range(3):
            x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6) * (k + 1)
            kept = x.copy()
            for got, want in zip(model.execute([x]), _expected(kept), strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(x, kept)


def _mutated(model_bytes: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    header, payload = split(model_bytes)
    header = copy.deepcopy(header)
    change(_graph(header))
    return repack(header, payload)


def _first_view(graph: dict[str, Any]) -> tuple[int, int]:
    view, source = _input_views(graph)[0]
    return view, source


def _chain(graph: dict[str, Any]) -> None:
    (a, _), (b, _) = _input_views(graph)
    graph["views"] = [[a, b], [b, graph["inputs"][0]]]


def _cycle(graph: dict[str, Any]) -> None:
    (a, _), (b, _) = _input_views(graph)
    graph["views"] = [[a, b], [b, a]]


def _self(graph: dict[str, Any]) -> None:
    view, _ = _first_view(graph)
    graph["views"] = [[view, view]]


def _of_kind(kind: str) -> Callable[[dict[str, Any]], None]:
    def change(graph: dict[str, Any]) -> None:
        view, _ = _first_view(graph)
        target = [b for b, spec in enumerate(graph["buffers"]) if spec[0] == kind][1]
        graph["views"] = [[view, target]]

    return change


def _index(graph: dict[str, Any]) -> None:
    view, _ = _first_view(graph)
    graph["buffers"][view][1] = 64


def _size(graph: dict[str, Any]) -> None:
    view, _ = _first_view(graph)
    graph["buffers"][view][2] = [2, 13]


def _input_is_a_view(graph: dict[str, Any]) -> None:
    view, source = _first_view(graph)
    graph["views"].append([source, view])


def _output_is_a_view(graph: dict[str, Any]) -> None:
    _, source = _first_view(graph)
    graph["views"].append([graph["outputs"][0], source])


HOSTILE = {
    "chain": (_chain, "which is a view"),
    "cycle": (_cycle, "which is a view"),
    "self": (_self, "which is a view"),
    "of a const": (_of_kind("const"), "which is a const buffer"),
    "of an output of another size": (_of_kind("output"), "differs in size or index"),
    "other index": (_index, "differs in size or index"),
    "other size": (_size, "differs in size or index"),
    "an input as view": (_input_is_a_view, "only intermediates are views"),
    "an output as view": (_output_is_a_view, "only intermediates are views"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_view_records_are_refused(model_bytes: bytes, case: str) -> None:
    change, message = HOSTILE[case]
    data = _mutated(model_bytes, change)
    with pytest.raises(ModelFormatError, match=message):
        runtime.load_model(data)


def _inter_view(graph: dict[str, Any]) -> tuple[int, int]:
    kinds = graph["buffers"]
    (found,) = [(v, s) for v, s in graph["views"] if kinds[s][0] == "intermediate"]
    return found[0], found[1]


def test_a_view_of_an_intermediate_keeps_its_sources_index(model_bytes: bytes) -> None:
    header, _ = split(model_bytes)
    view, source = _inter_view(_graph(header))
    assert _graph(header)["buffers"][source][0] == "intermediate"

    def change(graph: dict[str, Any]) -> None:
        graph["buffers"][view][1] = graph["buffers"][source][1] + 64
        graph["arena_size"] = graph["arena_size"] + 1024  # the index alone is wrong

    with pytest.raises(ModelFormatError, match="differs in size or index"):
        runtime.load_model(_mutated(model_bytes, change))


def test_an_intermediate_that_is_not_a_view_still_lies_in_the_arena(model_bytes: bytes) -> None:
    header, _ = split(model_bytes)
    view, _ = _inter_view(_graph(header))

    def change(graph: dict[str, Any]) -> None:
        graph["views"] = [pair for pair in graph["views"] if pair[0] != view]
        graph["buffers"][view][1] = graph["arena_size"]

    with pytest.raises(ModelFormatError, match="of an arena of"):
        runtime.load_model(_mutated(model_bytes, change))


# --- ge.jit's plan cache: the same format -------------------------------------------------------
@pytest.fixture
def plan_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("GE_JIT_PLAN_CACHE", "1")
    monkeypatch.setenv("GE_JIT_BACKGROUND", "0")
    monkeypatch.setenv("GE_KERNEL_CACHE_DIR", str(tmp_path))
    yield tmp_path


@pytest.mark.slow
def test_a_cached_plan_with_input_views_loads_and_runs(plan_cache: Path) -> None:
    def f(x: Any, w: Any) -> Any:
        return x.reshape(3, 8) @ w + np.exp(x.reshape(3, 8)[:, :2])

    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 2)).astype(np.float32)
    entries = []
    for _ in range(2):  # the second wrapper can only find the first's plan on disk
        jitted = ge.jit(f)
        for _ in range(2):
            x = rng.standard_normal((4, 6)).astype(np.float32)
            np.testing.assert_allclose(jitted(x, w), f(x, w), rtol=1e-5, atol=1e-5)
        (entry,) = jitted._cache.values()
        entries.append(entry)
    assert list(plan_cache.glob("*.geplan"))
    assert entries[1]._loaded is not None
