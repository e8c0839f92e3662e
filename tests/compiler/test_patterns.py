"""Pattern recognition (ge.compiler.patterns): numpy-spelled softmax becomes SoftmaxV2 only
when the match is exact and self-contained; results never change."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

import ge
from ge.compiler.executable import CompiledGraph
from ge.compiler.pipeline import optimize_graph
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import eval_graph


def _graph(fn: Any, shape: list[int]) -> Graph:
    b = GraphBuilder("p")
    x = b.create_input(0, shape=shape)
    out = fn(x)
    return b.build_and_reset(list(out) if isinstance(out, list) else [out])


def _softmax(x: Any, axis: Any = -1) -> Any:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _check(graph: Graph, shape: list[int]) -> Counter[str]:
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3
    compiled = CompiledGraph(graph)
    for a, e in zip(compiled.run_arrays([x]), eval_graph(graph, [x]), strict=True):
        np.testing.assert_allclose(a, np.asarray(e), rtol=2e-6, atol=1e-7)
    return Counter(n.type for n in compiled.graph.get_direct_nodes())


@pytest.mark.parametrize(("shape", "axis"), [([4, 9], -1), ([2, 3, 5], (1, 2)), ([6], 0)])
def test_numpy_softmax_becomes_softmax_v2(shape: list[int], axis: Any) -> None:
    kinds = _check(_graph(lambda x: _softmax(x, axis), shape), shape)
    assert kinds["SoftmaxV2"] == 1 and kinds["Exp"] == 0 and kinds["ReduceMax"] == 0


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: [_softmax(x), np.exp(x - x.max(axis=-1, keepdims=True))],  # e used outside
        lambda x: (
            np.exp(x - x.max(axis=0, keepdims=True))
            / np.exp(x - x.max(axis=0, keepdims=True)).sum(axis=-1, keepdims=True)
        ),  # axes differ
        lambda x: [_softmax(x), x.max(axis=-1, keepdims=True)],  # the max is an output too
    ],
)
def test_near_misses_are_left_alone(fn: Any) -> None:
    kinds = _check(_graph(fn, [4, 9]), [4, 9])
    assert kinds["SoftmaxV2"] == 0


def test_recognition_shows_in_the_pipeline() -> None:
    optimized = optimize_graph(_graph(_softmax, [3, 4]), fuse=False)
    assert [n.type for n in optimized.get_direct_nodes()].count("SoftmaxV2") == 1


def _setitem(key: Any, value: Any) -> Any:
    def update(u: Any) -> Any:
        out = u.copy()
        out[key] = value(u) if callable(value) else value
        return out

    return update


def _jit_check(fn: Any, shape: tuple[int, ...]) -> str:
    u = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    jitted = ge.jit(fn)
    np.testing.assert_array_equal(np.asarray(jitted(u)), fn(u))
    return str(jitted.lower(u).as_text())


@pytest.mark.parametrize(
    ("key", "value", "shape"),
    [
        ((slice(1, -1), slice(1, -1)), lambda u: 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1]), (9, 7)),
        ((slice(None, None, 2), 1), lambda u: u[::2, 0] * 2, (7, 4)),  # strided rows, one col
        (slice(2, 5), lambda u: u[:3] + 1, (6, 3)),  # whole rows
        ((Ellipsis, slice(1, 3)), 5.0, (2, 3, 4)),  # a scalar broadcast into the box
        ((1, slice(None), slice(0, 1)), lambda u: u[0, :, 1:2], (3, 4, 5)),
    ],
)
def test_slice_assignment_becomes_a_box_update(
    key: Any, value: Any, shape: tuple[int, ...]
) -> None:
    text = _jit_check(_setitem(key, value), shape)
    assert "= TensorScatterUpdate(" in text
    assert "= GatherV2(" not in text and "= SelectV2(" not in text


@pytest.mark.parametrize(
    ("key", "shape"),
    [
        ((slice(None, None, -1), slice(0, 2)), (4, 3)),  # box, but written in reverse order
        (([0, 2, 3],), (5, 2)),  # rows that are no progression
        (([1, 1],), (4, 2)),  # the same row twice (last write wins)
    ],
)
def test_assignment_off_a_box_keeps_gather_and_select(key: Any, shape: tuple[int, ...]) -> None:
    def value(u: Any) -> Any:
        return u[key] * 2 + 1

    text = _jit_check(_setitem(key, value), shape)
    assert "= TensorScatterUpdate(" not in text and "= SelectV2(" in text
