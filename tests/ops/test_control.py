"""Control flow with subgraphs: If, While and Case, built with add_op_node and checked against
plain Python; inferred outputs, including branches that disagree in shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ge.error import GeValueError, InferError
from ge.graph import DataType, Graph, Node, TensorDesc
from ge.ops import add_op_node, eval_graph, infer_graph

from ._cases import GE_TYPE, const_node, data_node

Port = tuple[Node, int]


def sub_input(
    graph: Graph, slot: int, shape: list[int], dtype: str = "float32", *, by: str = "parent"
) -> Port:
    """A subgraph Data node for parent input ``slot``: by ``_parent_node_index`` (GE's
    subgraph convention) or, with ``by="index"``, by its plain ``index``."""
    attrs = {"_parent_node_index": slot} if by == "parent" else {"index": slot}
    desc = TensorDesc(shape, data_type=GE_TYPE[dtype])
    return add_op_node(graph, "Data", [None], attrs, declared=[desc]), 0


def sub_output(graph: Graph, *ports: Port) -> None:
    add_op_node(graph, "NetOutput", [list(ports)])


def k(graph: Graph, value: Any, dtype: Any = np.float32) -> Port:
    return const_node(graph, np.asarray(value, dtype)), 0


def op(graph: Graph, op_type: str, *inputs: Any, **attrs: Any) -> Port:
    return add_op_node(graph, op_type, list(inputs), attrs), 0


def shapes(node: Node) -> list[list[int]]:
    return [list(node.get_output_desc(i).get_shape()) for i in range(node.get_outputs_size())]


# --- If -----------------------------------------------------------------------------------------
def _if_graph(by_then: str = "parent", by_else: str = "index") -> tuple[Graph, Node]:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool", name="cond")
    x = data_node(g, 1, [2, 3], "float32", name="x")
    then_g = Graph("then_g")
    a = sub_input(then_g, 1 if by_then == "parent" else 0, [2, 3], by=by_then)
    sub_output(then_g, op(then_g, "Add", a, k(then_g, 1.0)))
    else_g = Graph("else_g")
    b = sub_input(else_g, 1 if by_else == "parent" else 0, [2, 3], by=by_else)
    sub_output(else_g, op(else_g, "Mul", b, k(else_g, 2.0)))
    node = add_op_node(
        g, "If", [(cond, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[1], name="if"
    )
    g.set_outputs([(node, 0)])
    return g, node


@pytest.mark.parametrize("by", [("parent", "index"), ("index", "parent"), ("parent", "parent")])
@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_chosen_branch(cond: bool, by: tuple[str, str]) -> None:
    g, node = _if_graph(*by)
    assert shapes(node) == [[2, 3]]
    assert node.get_output_desc(0).get_data_type() == DataType.DT_FLOAT
    assert node.get_input_names() == ["cond", "input0"]
    assert node.get_output_names() == ["output0"]
    assert {s.name for s in g.get_all_subgraphs()} == {"then_g", "else_g"}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = eval_graph(g, [np.array(cond), x])
    expected = x + 1 if cond else x * 2
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.float32


@pytest.mark.parametrize(
    ("cond", "branch"),
    [
        (np.array(0, np.int32), "else"),
        (np.array(7, np.int32), "then"),
        (np.array([True]), "then"),
        (np.array([False]), "else"),
        (np.zeros(3, np.int32), "then"),  # a non-scalar condition is true when it has elements
        (np.zeros(0, np.bool_), "else"),
    ],
    ids=["int0", "int7", "[True]", "[False]", "zeros[3]", "empty"],
)
def test_if_condition_truth(cond: np.ndarray, branch: str) -> None:
    g = Graph("root")
    c = data_node(
        g,
        0,
        list(cond.shape),
        {np.dtype(np.int32): "int32", np.dtype(np.bool_): "bool"}[cond.dtype],
    )
    x = data_node(g, 1, [2], "float32")
    then_g, else_g = Graph("t"), Graph("e")
    sub_output(then_g, op(then_g, "Neg", sub_input(then_g, 1, [2])))
    sub_output(else_g, op(else_g, "Abs", sub_input(else_g, 1, [2])))
    node = add_op_node(g, "If", [(c, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[1])
    g.set_outputs([(node, 0)])
    feed = np.array([-1.5, 2.0], np.float32)
    (got,) = eval_graph(g, [cond, feed])
    np.testing.assert_array_equal(got, -feed if branch == "then" else np.abs(feed))


def test_if_with_two_inputs_and_two_outputs() -> None:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool")
    a = data_node(g, 1, [3], "int32")
    b = data_node(g, 2, [3], "int32")
    then_g, else_g = Graph("t2"), Graph("e2")
    ta, tb = sub_input(then_g, 1, [3], "int32"), sub_input(then_g, 2, [3], "int32")
    sub_output(then_g, op(then_g, "Add", ta, tb), op(then_g, "Sub", ta, tb))
    ea, eb = sub_input(else_g, 1, [3], "int32"), sub_input(else_g, 2, [3], "int32")
    sub_output(else_g, eb, ea)  # swap
    node = add_op_node(
        g, "If", [(cond, 0), [(a, 0), (b, 0)]], subgraphs=[then_g, else_g], output_counts=[2]
    )
    assert shapes(node) == [[3], [3]]
    g.set_outputs([(node, 0), (node, 1)])
    va, vb = np.array([1, 2, 3], np.int32), np.array([10, 20, 30], np.int32)
    for flag in (True, False):
        got = eval_graph(g, [np.array(flag), va, vb])
        expected = (va + vb, va - vb) if flag else (vb, va)
        for x, y in zip(got, expected, strict=True):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == np.int32


def _branches_graph(make_else: Callable[[Graph, Port], Port]) -> tuple[Graph, Node]:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool")
    x = data_node(g, 1, [2, 3], "float32")
    then_g, else_g = Graph("t3"), Graph("e3")
    sub_output(then_g, op(then_g, "Relu", sub_input(then_g, 1, [2, 3])))
    sub_output(else_g, make_else(else_g, sub_input(else_g, 1, [2, 3])))
    node = add_op_node(
        g, "If", [(cond, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[1]
    )
    g.set_outputs([(node, 0)])
    return g, node


def test_if_branches_with_different_dims_give_unknown_dims() -> None:
    g, node = _branches_graph(
        lambda s, x: op(s, "ReduceSum", x, k(s, [1], np.int32), keep_dims=True)
    )
    assert shapes(node) == [[2, -1]]
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    (then_out,) = eval_graph(g, [np.array(True), x])
    (else_out,) = eval_graph(g, [np.array(False), x])
    np.testing.assert_array_equal(then_out, np.maximum(x, 0))
    np.testing.assert_array_equal(else_out, x.sum(axis=1, keepdims=True))


def test_if_branches_with_different_ranks_give_unknown_rank() -> None:
    _, node = _branches_graph(lambda s, x: op(s, "ReduceSum", x, k(s, [1], np.int32)))
    assert shapes(node) == [[-2]]


def test_if_branches_with_different_types_are_refused() -> None:
    with pytest.raises(InferError, match="If"):
        _branches_graph(lambda s, x: op(s, "Cast", x, dst_type=int(DataType.DT_INT32)))


def test_if_branch_output_count_must_match_the_node() -> None:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool")
    x = data_node(g, 1, [2], "float32")
    then_g, else_g = Graph("t4"), Graph("e4")
    tx = sub_input(then_g, 1, [2])
    sub_output(then_g, tx, tx)
    sub_output(else_g, sub_input(else_g, 1, [2]))
    with pytest.raises(InferError, match="outputs"):
        add_op_node(g, "If", [(cond, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[2])
    assert g.get_all_subgraphs() == []


def test_if_needs_both_branches() -> None:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool")
    with pytest.raises(GeValueError, match="then_branch"):
        add_op_node(g, "If", [(cond, 0), []], subgraphs=[Graph("only")], output_counts=[0])


# --- While --------------------------------------------------------------------------------------
def _while_graph(body_acc: Callable[[Graph, Port], Port] | None = None) -> tuple[Graph, Node]:
    """while i < limit: i, limit, acc = i + 1, limit, acc * 2"""
    g = Graph("root")
    i = data_node(g, 0, [], "int32", name="i")
    limit = data_node(g, 1, [], "int32", name="limit")
    acc = data_node(g, 2, [2], "float32", name="acc")
    cond = Graph("cond_g")
    ci, cl = sub_input(cond, 0, [], "int32"), sub_input(cond, 1, [], "int32")
    sub_output(cond, op(cond, "Less", ci, cl))  # acc is not read by cond
    body = Graph("body_g")
    bi, bl = sub_input(body, 0, [], "int32"), sub_input(body, 1, [], "int32")
    ba = sub_input(body, 2, [2])
    new_acc = (body_acc or (lambda s, a: op(s, "Mul", a, k(s, 2.0))))(body, ba)
    sub_output(body, op(body, "Add", bi, k(body, 1, np.int32)), bl, new_acc)
    node = add_op_node(
        g,
        "While",
        [[(i, 0), (limit, 0), (acc, 0)]],
        subgraphs=[cond, body],
        output_counts=[3],
        name="loop",
    )
    g.set_outputs([(node, p) for p in range(3)])
    return g, node


def _python_loop(i: int, limit: int, acc: np.ndarray) -> tuple[int, int, np.ndarray]:
    while i < limit:
        i, acc = i + 1, acc * 2
    return i, limit, acc


@pytest.mark.parametrize(("start", "limit"), [(0, 3), (2, 3), (5, 3), (-2, 0)])
def test_while_matches_python(start: int, limit: int) -> None:
    g, node = _while_graph()
    assert node.get_attr("parallel_iterations") == 10
    assert shapes(node) == [[], [], [2]]
    assert [node.get_output_desc(p).get_data_type() for p in range(3)] == [
        DataType.DT_INT32,
        DataType.DT_INT32,
        DataType.DT_FLOAT,
    ]
    acc = np.array([1.0, -0.5], np.float32)
    got = eval_graph(g, [np.array(start, np.int32), np.array(limit, np.int32), acc])
    i, lim, out = _python_loop(start, limit, acc)
    assert int(got[0]) == i and int(got[1]) == lim
    np.testing.assert_array_equal(got[2], out)
    assert got[0].dtype == np.int32 and got[2].dtype == np.float32
    np.testing.assert_array_equal(acc, [1.0, -0.5])  # the fed array is untouched


def test_while_with_a_growing_loop_var_has_unknown_dims() -> None:
    def grow(s: Graph, a: Port) -> Port:
        return op(s, "ConcatV2", [a, a], k(s, 0, np.int32), N=2)

    g, node = _while_graph(grow)
    assert shapes(node) == [[], [], [-1]]
    acc = np.array([1.0, 2.0], np.float32)
    got = eval_graph(g, [np.array(0, np.int32), np.array(2, np.int32), acc])
    np.testing.assert_array_equal(got[2], np.tile(acc, 4))


def test_while_body_must_return_every_loop_var() -> None:
    g = Graph("root")
    i = data_node(g, 0, [], "int32")
    cond, body = Graph("c5"), Graph("b5")
    sub_output(cond, op(cond, "Less", sub_input(cond, 0, [], "int32"), k(cond, 3, np.int32)))
    bi = sub_input(body, 0, [], "int32")
    sub_output(body, bi, bi)
    with pytest.raises(InferError, match="body returns 2 values for 1 loop vars"):
        add_op_node(g, "While", [[(i, 0)]], subgraphs=[cond, body], output_counts=[1])
    assert g.get_all_subgraphs() == []


def test_while_containing_if() -> None:
    """while i < n: acc = acc * 2 if i is even else acc + 1; i += 1"""
    g = Graph("root")
    i = data_node(g, 0, [], "int32")
    n = data_node(g, 1, [], "int32")
    acc = data_node(g, 2, [], "float32")
    cond = Graph("c6")
    sub_output(
        cond, op(cond, "Less", sub_input(cond, 0, [], "int32"), sub_input(cond, 1, [], "int32"))
    )
    body = Graph("b6")
    bi, bn, ba = (
        sub_input(body, 0, [], "int32"),
        sub_input(body, 1, [], "int32"),
        sub_input(body, 2, []),
    )
    two = k(body, 2, np.int32)
    half = op(body, "Div", bi, two)
    even = op(body, "Equal", op(body, "Mul", half, two), bi)
    then_g, else_g = Graph("t6"), Graph("e6")
    sub_output(then_g, op(then_g, "Mul", sub_input(then_g, 1, []), k(then_g, 2.0)))
    sub_output(else_g, op(else_g, "Add", sub_input(else_g, 1, []), k(else_g, 1.0)))
    branch = add_op_node(body, "If", [even, [ba]], subgraphs=[then_g, else_g], output_counts=[1])
    sub_output(body, op(body, "Add", bi, k(body, 1, np.int32)), bn, (branch, 0))
    loop = add_op_node(
        g, "While", [[(i, 0), (n, 0), (acc, 0)]], subgraphs=[cond, body], output_counts=[3]
    )
    g.set_outputs([(loop, 2)])
    assert {s.name for s in g.get_all_subgraphs()} == {"c6", "b6", "t6", "e6"}
    for steps in range(5):
        (got,) = eval_graph(
            g, [np.array(0, np.int32), np.array(steps, np.int32), np.array(1.0, np.float32)]
        )
        value = 1.0
        for j in range(steps):
            value = value * 2 if j % 2 == 0 else value + 1
        assert float(got) == value


# --- Case ---------------------------------------------------------------------------------------
def _case_graph(branch_outputs: list[Callable[[Graph, Port], Port]]) -> tuple[Graph, Node]:
    g = Graph("root")
    index = data_node(g, 0, [], "int32", name="index")
    x = data_node(g, 1, [2, 3], "float32", name="x")
    branches = []
    for j, make in enumerate(branch_outputs):
        b = Graph(f"branch{j}_g")
        sub_output(b, make(b, sub_input(b, 1, [2, 3])))
        branches.append(b)
    node = add_op_node(
        g, "Case", [(index, 0), [(x, 0)]], subgraphs=[branches], output_counts=[1], name="case"
    )
    g.set_outputs([(node, 0)])
    return g, node


THREE = [
    lambda s, x: op(s, "Add", x, k(s, 1.0)),
    lambda s, x: op(s, "Mul", x, k(s, 2.0)),
    lambda s, x: op(s, "Sub", x, k(s, 3.0)),
]


@pytest.mark.parametrize("index", [0, 1, 2, 3, 5, -1, -7])
def test_case_runs_the_indexed_branch(index: int) -> None:
    g, node = _case_graph(THREE)
    assert shapes(node) == [[2, 3]]
    assert node.get_subgraph_names() == ["branch0_g", "branch1_g", "branch2_g"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    python = [x + 1, x * 2, x - 3]
    expected = python[index] if 0 <= index < 3 else python[-1]  # out of range: the last branch
    (got,) = eval_graph(g, [np.array(index, np.int32), x])
    np.testing.assert_array_equal(got, expected)


def test_case_branches_with_different_shapes_give_unknown_dims() -> None:
    g, node = _case_graph(
        [
            lambda s, x: x,
            lambda s, x: op(s, "Transpose", x, k(s, [1, 0], np.int32)),
            lambda s, x: op(s, "Relu", x),
        ]
    )
    assert shapes(node) == [[-1, -1]]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = eval_graph(g, [np.array(1, np.int32), x])
    np.testing.assert_array_equal(got, x.T)


def test_case_with_one_branch() -> None:
    g, _ = _case_graph([lambda s, x: op(s, "Neg", x)])
    x = np.ones((2, 3), np.float32)
    for index in (0, 4):
        (got,) = eval_graph(g, [np.array(index, np.int32), x])
        np.testing.assert_array_equal(got, -x)


def test_infer_graph_reinfers_branches_with_new_input_shapes() -> None:
    g = Graph("root")
    cond = data_node(g, 0, [], "bool")
    x = data_node(g, 1, [-1, 3], "float32")
    then_g, else_g = Graph("t7"), Graph("e7")
    sub_output(then_g, op(then_g, "Relu", sub_input(then_g, 1, [-1, 3])))
    sub_output(
        else_g,
        op(
            else_g,
            "ReduceSum",
            sub_input(else_g, 1, [-1, 3]),
            k(else_g, [1], np.int32),
            keep_dims=True,
        ),
    )
    node = add_op_node(
        g, "If", [(cond, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[1]
    )
    g.set_outputs([(node, 0)])
    assert shapes(node) == [[-1, -1]]
    infer_graph(g, input_shapes=[[], [4, 3]])
    assert shapes(node) == [[4, -1]]
    x_value = np.ones((4, 3), np.float32)
    (got,) = eval_graph(g, [np.array(False), x_value])
    np.testing.assert_array_equal(got, np.full((4, 1), 3.0, np.float32))
