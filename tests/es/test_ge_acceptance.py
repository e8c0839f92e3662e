"""What GE builds that a stricter builder might refuse (GE_ERRORS.md §13.2): eager inference
never refuses a graph GE would build. Where an infer rule cannot decide, the node is built
with unknown outputs and the problem is reported when the graph is inferred whole (as the
compile step does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.error import InferError
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.graph.types import DataType
from ge.ops import eval_graph, infer_graph

DT = DataType
F2 = (DT.DT_FLOAT, [2])
I32 = (DT.DT_INT32, [])


def branch(name: str, fn: Callable[..., Any], specs: list[tuple[DT, list[int]]]) -> Graph:
    b = GraphBuilder(name)
    ins = [b.create_input(i, data_type=dt, shape=shape) for i, (dt, shape) in enumerate(specs)]
    outs = fn(*ins)
    return b.build_and_reset(list(outs) if isinstance(outs, (list, tuple)) else [outs])


def _unknown(holder: ge.es.TensorHolder) -> bool:
    desc = holder._node.get_output_desc(holder._port)
    return list(desc.get_shape()) == [-2] and desc.get_data_type() == DT.DT_FLOAT


def test_while_whose_body_changes_a_loop_var_type_is_built() -> None:
    cond_g = branch("cond_g", lambda i, acc: i < 3, [I32, F2])
    body_g = branch(
        "body_g", lambda i, acc: (i + 1, ge.es.Cast(acc, dst_type=DT.DT_INT32)), [I32, F2]
    )
    b = GraphBuilder("root")
    i0 = b.create_input(0, data_type=DT.DT_INT32)
    acc0 = b.create_input(1, shape=[2])
    outs = ge.es.While([i0, acc0], 2, cond_g, body_g)
    assert all(_unknown(o) for o in outs)
    y = outs[1] * 2.0  # later ops still build on the unknown outputs
    g = b.build_and_reset([outs[0], y])
    assert {s.name for s in g.get_all_subgraphs()} == {"cond_g", "body_g"}
    with pytest.raises(InferError, match="loop var 1"):
        infer_graph(g)  # what compilation runs: the problem is reported there


def test_if_whose_branches_return_different_types_is_built() -> None:
    then_g = branch("then_g", lambda x: x * 2.0, [F2])
    else_g = branch("else_g", lambda x: ge.es.Cast(x, dst_type=DT.DT_INT32), [F2])
    b = GraphBuilder("root")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[2])
    (out,) = ge.es.If(cond, [x], 1, then_g, else_g)
    assert _unknown(out)
    g = b.build_and_reset([out])
    with pytest.raises(InferError, match="output 0"):
        infer_graph(g)


def test_a_decidable_control_op_still_infers_at_once() -> None:
    then_g = branch("then_g", lambda x: x * 2.0, [F2])
    else_g = branch("else_g", lambda x: x + 1.0, [F2])
    b = GraphBuilder("root")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[2])
    (out,) = ge.es.If(cond, [x], 1, then_g, else_g)
    assert out.shape == (2,)
    assert out.data_type == DT.DT_FLOAT


def test_a_plain_op_error_is_still_raised_at_the_line() -> None:
    """Only control ops (whose rule infers subgraphs) fall back; a plain op's shape error is
    the project's eager error, raised where it is made."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[4])
    with pytest.raises(InferError, match="Add"):
        ge.es.Add(x, y)


def test_netoutput_input_descs_are_not_copied_from_producers() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DT.DT_INT32, shape=[2, 3])
    y = ge.es.Cast(x, dst_type=DT.DT_FLOAT16)
    g = b.build_and_reset([x, y])
    out = g.find_node_by_name("NetOutput_g")
    for port in range(2):
        desc = out.get_input_desc(port)
        assert list(desc.get_shape()) == []
        assert desc.get_data_type() == DT.DT_FLOAT
    # the producers keep theirs, and inference fills NetOutput's in when the graph is inferred
    assert y.shape == (2, 3)
    infer_graph(g)
    assert list(out.get_input_desc(1).get_shape()) == [2, 3]
    assert out.get_input_desc(1).get_data_type() == DT.DT_FLOAT16
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = eval_graph(g, [a])
    np.testing.assert_array_equal(got[1], a.astype(np.float16))
