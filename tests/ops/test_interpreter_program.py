"""``ge.ops.interpreter.Program``: ``eval_graph`` prepared once, ufunc-shaped nodes run as their
numpy ufunc into reused buffers. Every result is checked against ``eval_graph`` (the oracle)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph import Graph, TensorDesc
from ge.graph._dtypes import data_type_from_numpy
from ge.graph.node import Node
from ge.ops.construct import add_op_node
from ge.ops.interpreter import (
    _FLOAT_UFUNCS,
    _NOT_THE_UFUNC,
    Program,
    _Step,
    _UfuncStep,
    eval_graph,
)
from ge.ops.registry import registry

from ._cases import const_node

_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64]


def _data(g: Graph, index: int, shape: list[int], dtype: Any) -> Node:
    desc = TensorDesc(shape, data_type=data_type_from_numpy(np.dtype(dtype)))
    return add_op_node(g, "Data", [None], {"index": index}, name=f"x{index}", declared=[desc])


def _values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Values with the edge cases of the dtype: 0, negatives, NaN and infinities for floats,
    the extremes for integers."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        pool = np.array([0.0, -0.0, 1.5, -2.25, 0.5, 3.0, np.nan, np.inf, -np.inf, 1e30], dt)
    else:
        info = np.iinfo(dt)
        pool = np.array([0, 1, 2, 3, 7, info.min, info.max, info.max // 3], dt)
        if dt.kind == "i":
            pool = np.concatenate([pool, np.array([-1, -5], dt)])
    return rng.choice(pool, size=shape)


def _ufunc_cases() -> list[tuple[str, Any]]:
    """(op type, dtype) for each op with a numpy ufunc and each dtype it takes."""
    cases = []
    for op in registry():
        name = op.ufunc or _FLOAT_UFUNCS.get(op.type, "")
        ufunc = getattr(np, name, None) if name else None
        if not isinstance(ufunc, np.ufunc) or any(a.required for a in op.attrs):
            continue  # (attributes at their defaults: the node below sets none)
        allowed = op.inputs[0].dtypes
        for dtype in _DTYPES:
            if allowed is None or data_type_from_numpy(np.dtype(dtype)) in allowed:
                cases.append((op.type, dtype))
    return cases


@pytest.mark.parametrize(("op_type", "dtype"), _ufunc_cases())
def test_every_ufunc_op_runs_as_its_ufunc_and_matches_the_reference(
    op_type: str, dtype: Any
) -> None:
    g = Graph("g")
    op = registry_op(op_type)
    nin = getattr(np, op.ufunc or _FLOAT_UFUNCS[op_type]).nin
    shapes = [[4, 5], [5]][:nin]  # broadcast for binaries
    try:
        xs = [_data(g, i, s, dtype) for i, s in enumerate(shapes)]
        y = add_op_node(g, op_type, [(x, 0) for x in xs])
    except GeError:  # the op's row refuses this dtype combination
        pytest.skip(f"{op_type} does not build on {np.dtype(dtype).name}")
    g.set_outputs([(y, 0)])
    feeds = [_values(dtype, tuple(s), seed) for seed, s in enumerate(shapes)]
    program = Program(g)
    as_ufunc = any(isinstance(s, _UfuncStep) for s in program._steps)
    kind = np.dtype(dtype).kind
    expected = kind not in _NOT_THE_UFUNC.get(op_type, "") and (bool(op.ufunc) or kind == "f")
    assert as_ufunc == expected
    want = eval_graph(g, feeds)[0]
    got = program.run(feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def registry_op(op_type: str) -> Any:
    return next(op for op in registry() if op.type == op_type)


def _chain_graph(shape: list[int], dtype: Any = np.float32) -> Graph:
    """y = (x * c + c) - x * x, and z = -y (so y is read twice: by z and as an output)."""
    g = Graph("chain")
    x = _data(g, 0, shape, dtype)
    c = const_node(g, np.asarray(1.5, dtype))
    m = add_op_node(g, "Mul", [(x, 0), (c, 0)])
    a = add_op_node(g, "Add", [(m, 0), (c, 0)])
    sq = add_op_node(g, "Mul", [(x, 0), (x, 0)])
    y = add_op_node(g, "Sub", [(a, 0), (sq, 0)])
    z = add_op_node(g, "Neg", [(y, 0)])
    g.set_outputs([(y, 0), (z, 0)])
    return g


@pytest.mark.parametrize("shape", [[7, 3], [], [0, 4], [1]])
def test_a_chain_matches_eval_graph_on_odd_shapes(shape: list[int]) -> None:
    g = _chain_graph(shape)
    x = _values(np.float32, tuple(shape), 1)
    program = Program(g)
    for want, got in zip(eval_graph(g, [x]), program.run([x]), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_temporaries_are_reused_and_outputs_are_new_each_run() -> None:
    g = _chain_graph([64])
    program = Program(g)
    # Mul -> Add writes over the Mul's buffer; x*x takes a second one; y and z leave
    assert len(program._buffer_specs) == 2
    x1 = np.arange(64, dtype=np.float32)
    x2 = x1[::-1].copy()
    y1, z1 = program.run([x1])
    y1_copy = y1.copy()
    y2, _ = program.run([x2])
    assert y1 is not y2 and not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, y1_copy)  # the second run left the first's results alone
    np.testing.assert_array_equal(z1, -y1)
    np.testing.assert_array_equal(y2, eval_graph(g, [x2])[0])


def test_a_non_contiguous_feed() -> None:
    g = _chain_graph([5, 3])
    x = _values(np.float32, (3, 5), 2).T  # a transposed view
    np.testing.assert_array_equal(Program(g).run([x])[0], eval_graph(g, [x])[0])


def test_outputs_that_are_inputs_or_constants_are_copies() -> None:
    g = Graph("g")
    x = _data(g, 0, [3], np.float32)
    c = const_node(g, np.arange(3, dtype=np.float32))
    g.set_outputs([(x, 0), (c, 0), (x, 0)])
    feed = np.ones(3, np.float32)
    program = Program(g)
    first, const, again = program.run([feed])
    assert not np.shares_memory(first, feed) and not np.shares_memory(again, first)
    const[:] = 7  # the caller owns it: the next run still gives the constant
    np.testing.assert_array_equal(program.run([feed])[1], np.arange(3, dtype=np.float32))


def test_a_ufunc_value_read_by_a_reference_node_is_not_reused() -> None:
    """Reshape's reference returns a view of its input: that input must get a new buffer
    each run, or the next run would write over the previous run's output."""
    g = Graph("g")
    x = _data(g, 0, [6], np.float32)
    e = add_op_node(g, "Exp", [(x, 0)])
    shape = const_node(g, np.array([2, 3], np.int64))
    r = add_op_node(g, "Reshape", [(e, 0), (shape, 0)])
    g.set_outputs([(r, 0)])
    program = Program(g)
    assert program._buffer_specs == []
    first = program.run([np.zeros(6, np.float32)])[0]
    program.run([np.ones(6, np.float32)])
    np.testing.assert_array_equal(first, np.ones((2, 3), np.float32))


def test_mixed_dtypes_and_float16_run_by_the_reference() -> None:
    """Nodes the ufunc rule does not cover (float16 computes in float32; a Cast) still run,
    by their reference, with eval_graph's results."""
    g = Graph("g")
    h = _data(g, 0, [4], np.float16)
    y = add_op_node(g, "Add", [(h, 0), (h, 0)])
    cast = add_op_node(g, "Cast", [(y, 0)], {"dst_type": int(data_type_from_numpy(np.dtype("f4")))})
    g.set_outputs([(cast, 0)])
    program = Program(g)
    assert not any(isinstance(s, _UfuncStep) for s in program._steps)
    x = np.array([1, 2.5, -3, 65504], np.float16)
    np.testing.assert_array_equal(program.run([x])[0], eval_graph(g, [x])[0])


def test_runs_from_several_threads_take_their_own_buffers() -> None:
    g = _chain_graph([20000])
    program = Program(g)
    feeds = [np.full(20000, k, np.float32) for k in range(8)]
    results: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        for _ in range(5):
            results[k] = program.run([feeds[k]])[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(8):
        np.testing.assert_array_equal(results[k], eval_graph(g, [feeds[k]])[0])


def test_bad_input() -> None:
    with pytest.raises(GeTypeError, match=r"graph: expected a ge\.graph\.Graph, got list"):
        Program([])  # type: ignore[arg-type]
    g = _chain_graph([3])
    with pytest.raises(
        GeValueError, match=r"inputs\[0\] \(for x0\) has shape \[4\], expected \[3\]"
    ):
        Program(g).run([np.zeros(4, np.float32)])
    with pytest.raises(GeValueError, match=r"graph input x0 takes inputs\[0\], but 0 inputs"):
        Program(g).run([])


def test_an_op_with_attributes_off_their_defaults_runs_its_reference() -> None:
    """Exp at its defaults is numpy's exp; with base 2 and a scale it is not, and runs by its
    reference (same results as eval_graph)."""
    g = Graph("g")
    x = _data(g, 0, [5], np.float32)
    plain = add_op_node(g, "Exp", [(x, 0)])
    based = add_op_node(g, "Exp", [(x, 0)], {"base": 2.0, "scale": 0.5})
    g.set_outputs([(plain, 0), (based, 0)])
    program = Program(g)
    kinds = {s.node.name if isinstance(s, _Step) else "ufunc" for s in program._steps}
    assert based.name in kinds and plain.name not in kinds
    feed = np.array([-1.0, 0.0, 0.5, 2.0, 3.0], np.float32)
    for got, want in zip(program.run([feed]), eval_graph(g, [feed]), strict=True):
        np.testing.assert_array_equal(got, want)
