"""Shape and dtype inference: unknown dims (-1) and ranks ([-2]), errors, and infer_graph.

Inferred shapes are checked against hand-written expectations, and where a dim is data-dependent,
against what ``eval_graph`` really produces for several runtime shapes (an inferred static dim
must hold for every input the declared shape admits).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ge.error import GeError, GeValueError, GraphError, InferError
from ge.graph import DataType, Graph, Node, Tensor, TensorDesc
from ge.ops import add_op_node, eval_graph, infer_graph, infer_node

from ._cases import const_node, data_node

F32 = "float32"
I32 = "int32"


def shape_of(node: Node, port: int = 0) -> list[int]:
    return list(node.get_output_desc(port).get_shape())


def dtype_of(node: Node, port: int = 0) -> DataType:
    return node.get_output_desc(port).get_data_type()


def k(graph: Graph, value: Any, dtype: Any = np.int32) -> tuple[Node, int]:
    return const_node(graph, np.asarray(value, dtype)), 0


def d(graph: Graph, index: int, shape: list[int], dtype: str = F32) -> tuple[Node, int]:
    return data_node(graph, index, shape, dtype), 0


# --- unknown dims and ranks propagate ---------------------------------------------------------
BROADCAST = [
    ([-1, 3], [2, 1], [2, 3]),  # -1 against a known 2: at run time it must be 1 or 2 -> 2
    ([-1, 3], [1], [-1, 3]),
    ([-1, 3], [-1, 3], [-1, 3]),
    ([2, -1], [3], [2, 3]),
    ([-1], [-1, 1], [-1, -1]),
    ([-1, 1], [1, -1], [-1, -1]),
    ([-2], [3], [-2]),
    ([], [-2], [-2]),
    ([0, 3], [1, -1], [0, 3]),
]


@pytest.mark.parametrize(("a", "b", "out"), BROADCAST, ids=[f"{a}+{b}" for a, b, _ in BROADCAST])
@pytest.mark.parametrize("op", ["Add", "Mul", "Less"])
def test_binary_unknown_dims(op: str, a: list[int], b: list[int], out: list[int]) -> None:
    g = Graph("g")
    y = add_op_node(g, op, [d(g, 0, a), d(g, 1, b)])
    assert shape_of(y) == out
    assert dtype_of(y) == (DataType.DT_BOOL if op == "Less" else DataType.DT_FLOAT)


@pytest.mark.parametrize("shape", [[-1, 3], [-2], [], [0, -1]])
@pytest.mark.parametrize("op", ["Relu", "Exp", "Cast", "Identity", "SoftmaxV2", "ZerosLike"])
def test_unary_keeps_unknown_dims(op: str, shape: list[int]) -> None:
    if op == "SoftmaxV2" and shape == []:
        pytest.skip("covered by the table (softmax of a scalar)")
    g = Graph("g")
    attrs = {"dst_type": int(DataType.DT_INT32)} if op == "Cast" else {}
    y = add_op_node(g, op, [d(g, 0, shape)], attrs)
    assert shape_of(y) == shape


def test_layer_norm_unknown_rank() -> None:
    g = Graph("g")
    y = add_op_node(g, "LayerNorm", [d(g, 0, [-2]), d(g, 1, [4]), d(g, 2, [4])])
    assert [shape_of(y, i) for i in range(3)] == [[-2], [-2], [-2]]


def test_reshape_with_runtime_shape_has_unknown_dims() -> None:
    g = Graph("g")
    y = add_op_node(g, "Reshape", [d(g, 0, [2, 3]), d(g, 1, [3], I32)])
    assert shape_of(y) == [-1, -1, -1]
    z = add_op_node(g, "Reshape", [d(g, 2, [2, 3]), d(g, 3, [-1], I32)])
    assert shape_of(z) == [-2]
    w = add_op_node(g, "Reshape", [d(g, 4, [-1, 3]), k(g, [3, -1])])
    assert shape_of(w) == [3, -1]
    u = add_op_node(g, "Reshape", [d(g, 5, [-2]), k(g, [2, 3])])
    assert shape_of(u) == [2, 3]


def test_reshape_with_axis_and_runtime_shape_keeps_the_outer_dims() -> None:
    # y = x with dims [1, 2) replaced by a 2-element runtime shape: rank 3 - 1 + 2 = 4.
    g = Graph("g")
    y = add_op_node(
        g, "Reshape", [d(g, 0, [2, 3, 4]), d(g, 1, [2], I32)], {"axis": 1, "num_axes": 1}
    )
    g.set_outputs([(y, 0)])
    (got,) = eval_graph(g, [np.zeros((2, 3, 4), np.float32), np.array([3, 1], np.int32)])
    assert got.shape == (2, 3, 1, 4)
    assert shape_of(y) == [2, -1, -1, 4]


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_reduce_with_runtime_axes(op: str) -> None:
    g = Graph("g")
    assert shape_of(add_op_node(g, op, [d(g, 0, [2, 3, 4]), d(g, 1, [1], I32)])) == [-2]
    keep = add_op_node(g, op, [d(g, 2, [2, 3, 4]), d(g, 3, [1], I32)], {"keep_dims": True})
    assert shape_of(keep) == [-1, -1, -1]
    assert shape_of(add_op_node(g, op, [d(g, 4, [-2]), k(g, [0])])) == [-2]
    assert shape_of(add_op_node(g, op, [d(g, 5, [-1, 3]), k(g, [1])])) == [-1]
    assert shape_of(add_op_node(g, op, [d(g, 6, [-1, 3]), k(g, [0])], {"keep_dims": True})) == [
        1,
        3,
    ]


def test_argmax_with_runtime_dimension() -> None:
    g = Graph("g")
    y = add_op_node(g, "ArgMaxV2", [d(g, 0, [2, 3, 4]), d(g, 1, [], I32)])
    assert shape_of(y) == [-1, -1]
    assert dtype_of(y) == DataType.DT_INT64
    assert shape_of(add_op_node(g, "ArgMaxV2", [d(g, 2, [-2]), k(g, 0)])) == [-2]


def test_concat_unknown_dims() -> None:
    g = Graph("g")

    def concat(shapes: list[list[int]], axis: Any) -> list[int]:
        xs = [d(g, 0, s) for s in shapes]
        node = add_op_node(g, "ConcatV2", [xs, axis], {"N": len(xs)})
        return shape_of(node)

    assert concat([[-1, 3], [2, 3]], k(g, 0)) == [-1, 3]
    assert concat([[-1, 3], [2, 3]], k(g, 1)) == [2, 6]
    assert concat([[-1, 3], [2, -1]], k(g, -1)) == [2, -1]
    assert concat([[2, 3], [2, 3]], d(g, 1, [], I32)) == [-1, -1]
    assert concat([[-2], [2, 3]], k(g, 0)) == [-2]


def test_matmul_and_transpose_unknown_dims() -> None:
    g = Graph("g")
    assert shape_of(add_op_node(g, "MatMul", [d(g, 0, [-1, 3]), d(g, 1, [3, 4]), None])) == [-1, 4]
    mm = add_op_node(g, "MatMulV2", [d(g, 0, [2, -1]), d(g, 1, [3, 4]), None, None])
    assert shape_of(mm) == [2, 4]
    bmm = add_op_node(g, "BatchMatMulV2", [d(g, 0, [-2]), d(g, 1, [3, 4]), None, None])
    assert shape_of(bmm) == [-2]
    assert shape_of(add_op_node(g, "Transpose", [d(g, 0, [-1, 3]), k(g, [1, 0])])) == [3, -1]
    assert shape_of(add_op_node(g, "Transpose", [d(g, 0, [-1, 3]), d(g, 1, [2], I32)])) == [-1, -1]


def test_shape_ops_with_runtime_values() -> None:
    g = Graph("g")
    x = d(g, 0, [-1, 3])
    v = d(g, 1, [2], I32)
    assert shape_of(add_op_node(g, "Pad", [x, k(g, [[1, 1], [0, 2]])])) == [-1, 5]
    assert shape_of(add_op_node(g, "Pad", [x, d(g, 2, [2, 2], I32)])) == [-1, -1]
    assert shape_of(add_op_node(g, "Tile", [x, k(g, [2, 2])])) == [-1, 6]
    assert shape_of(add_op_node(g, "Tile", [x, v])) == [-1, -1]
    # the runtime target [a, b] must have a == 3 for [3, 1] to broadcast to it
    assert shape_of(add_op_node(g, "BroadcastTo", [d(g, 3, [3, 1]), v])) == [3, -1]
    assert shape_of(add_op_node(g, "Fill", [v, d(g, 4, [])])) == [-1, -1]
    assert shape_of(
        add_op_node(g, "Range", [d(g, 5, []), k(g, 5, np.float32), k(g, 1, np.float32)])
    ) == [-1]
    assert shape_of(add_op_node(g, "Slice", [x, v, k(g, [1, 2])])) == [-1, -1]
    assert shape_of(add_op_node(g, "ExpandDims", [x, d(g, 6, [], I32)])) == [-1, -1, -1]
    split = add_op_node(
        g, "SplitV", [x, k(g, [1, 2]), d(g, 7, [], I32)], {"num_split": 2}, output_counts=[2]
    )
    assert [shape_of(split, i) for i in range(2)] == [[-1, -1], [-1, -1]]
    split = add_op_node(
        g, "SplitV", [x, d(g, 8, [2], I32), k(g, 1)], {"num_split": 2}, output_counts=[2]
    )
    assert [shape_of(split, i) for i in range(2)] == [[-1, -1], [-1, -1]]
    shape = add_op_node(g, "Shape", [x])
    assert (shape_of(shape), dtype_of(shape)) == ([2], DataType.DT_INT32)
    assert shape_of(add_op_node(g, "Shape", [d(g, 9, [-2])])) == [-1]
    assert shape_of(add_op_node(g, "Squeeze", [d(g, 10, [-1, 1])], {"axis": [1]})) == [-1]
    gather = add_op_node(g, "GatherV2", [x, d(g, 11, [-1, 2], I32), k(g, 1)])
    assert shape_of(gather) == [-1, -1, 2]


def test_squeeze_all_with_unknown_dims_has_an_unknown_rank() -> None:
    """An unknown dim may be 1 or not, so the rank is unknown (GE builds it); run time knows."""
    g = Graph("g")
    node = add_op_node(g, "Squeeze", [d(g, 0, [-1, 1])])
    assert shape_of(node) == [-2]
    g.set_outputs([(node, 0)])
    for rows in (1, 3):
        x = np.arange(rows, dtype=np.float32).reshape(rows, 1)
        (y,) = eval_graph(g, [x])
        np.testing.assert_array_equal(y, np.squeeze(x))


# An inferred static dim must be what eval produces for every input the declared shape admits.
def _slice_graph(g: Graph) -> Node:
    x = d(g, 0, [-1, 6])
    return add_op_node(g, "StridedSlice", [x, k(g, [0, 0]), k(g, [2, 6]), k(g, [1, 1])])


def _strided_tail_graph(g: Graph) -> Node:
    x = d(g, 0, [-1, 6])
    return add_op_node(g, "StridedSlice", [x, k(g, [1]), k(g, [0]), k(g, [1])], {"end_mask": 1})


def _slice_to_end_graph(g: Graph) -> Node:
    return add_op_node(g, "Slice", [d(g, 0, [-1, 6]), k(g, [1, 0]), k(g, [-1, 6])])


def _gather_graph(g: Graph) -> Node:
    x = d(g, 0, [-1, 6])
    return add_op_node(g, "GatherV2", [x, k(g, [0]), k(g, 0)])


def _concat_graph(g: Graph) -> Node:
    return add_op_node(g, "ConcatV2", [[d(g, 0, [-1, 6]), d(g, 1, [-1, 6])], k(g, 0)], {"N": 2})


RUNTIME = [
    ("strided-slice-0:2", _slice_graph, [1, 2, 5]),
    ("strided-slice-1:", _strided_tail_graph, [1, 3, 5]),
    ("slice-to-end", _slice_to_end_graph, [1, 4]),
    ("gather", _gather_graph, [1, 4]),
    ("concat", _concat_graph, [0, 3]),
]


@pytest.mark.parametrize(
    ("build", "rows"), [(b, r) for _, b, r in RUNTIME], ids=[n for n, _, _ in RUNTIME]
)
def test_inferred_dims_hold_at_run_time(build: Any, rows: list[int]) -> None:
    g = Graph("g")
    node = build(g)
    g.set_outputs([(node, 0)])
    inferred = shape_of(node)
    for n in rows:
        feeds = [np.ones((n, 6), np.float32)] * sum(
            1 for x in g.get_direct_nodes() if x.type == "Data"
        )
        (got,) = eval_graph(g, feeds)
        assert len(inferred) == got.ndim
        for dim, real in zip(inferred, got.shape, strict=True):
            assert dim in (-1, real), (
                f"inferred {inferred} but a [{n}, 6] input gives {list(got.shape)}"
            )


# --- errors -----------------------------------------------------------------------------------
def test_infer_error_names_the_op_and_input_descs() -> None:
    g = Graph("g")
    x1, x2 = d(g, 0, [2, 3]), d(g, 1, [4])
    with pytest.raises(InferError) as info:
        add_op_node(g, "Add", [x1, x2])
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, GeError)
    text = str(info.value)
    assert text.startswith("Add(x1: f32[2,3], x2: f32[4])")
    assert "3 vs 4" in text


def test_infer_error_carries_the_source_line() -> None:
    g = Graph("g")
    with pytest.raises(InferError, match=r"^Add\(x1: f32\[2,3\], x2: f32\[4\]\) at model\.py:12: "):
        add_op_node(g, "Add", [d(g, 0, [2, 3]), d(g, 1, [4])], source="model.py:12")


ERRORS = [
    (
        "MatMul",
        lambda g: [d(g, 0, [2, 3]), d(g, 1, [4, 5]), None],
        {},
        r"MatMul\(x1: f32\[2,3\], x2: f32\[4,5\], bias: None\)",
    ),
    (
        "ConcatV2",
        lambda g: [[d(g, 0, [2, 3]), d(g, 1, [3, 4])], k(g, 0)],
        {"N": 2},
        r"ConcatV2\(x: \[f32\[2,3\], f32\[3,4\]\], concat_dim: i32\[\]\)",
    ),
    (
        "Reshape",
        lambda g: [d(g, 0, [2, 3]), k(g, [4, 2])],
        {},
        r"Reshape\(x: f32\[2,3\], shape: i32\[2\]\)",
    ),
    ("Transpose", lambda g: [d(g, 0, [2, 3]), k(g, [0, 0])], {}, "perm"),
    ("ReduceSum", lambda g: [d(g, 0, [2, 3]), k(g, [2])], {}, "out of range"),
    ("ReduceSum", lambda g: [d(g, 0, [2, 3]), k(g, [1, -1])], {}, "repeat"),
    ("ReduceMax", lambda g: [d(g, 0, [0, 3]), k(g, [0])], {}, "empty"),
    ("SoftmaxV2", lambda g: [d(g, 0, [2, 3])], {"axes": [2]}, "out of range"),
    ("ArgMaxV2", lambda g: [d(g, 0, [2, 3]), k(g, 2)], {}, "out of range"),
    ("ArgMaxV2", lambda g: [d(g, 0, []), k(g, 0)], {}, "ArgMaxV2"),  # a scalar has no axis 0
    ("ConcatV2", lambda g: [[d(g, 0, []), d(g, 1, [])], k(g, 0)], {"N": 2}, "ConcatV2"),
    ("ConcatV2", lambda g: [[d(g, 0, [2, 3])], k(g, 0)], {"N": 2}, "N is 2"),
    ("AddN", lambda g: [[d(g, 0, [2])]], {"N": 3}, "N is 3"),
    ("SplitV", lambda g: [d(g, 0, [6]), k(g, [1, 2]), k(g, 0)], {"num_split": 2}, "add up"),
    ("Squeeze", lambda g: [d(g, 0, [2, 3])], {"axis": [0]}, "squeeze axis 0"),
    ("GatherV2", lambda g: [d(g, 0, [2, 3]), d(g, 1, [2], I32), k(g, 5)], {}, "out of range"),
    ("BroadcastTo", lambda g: [d(g, 0, [3, 2]), k(g, [3, 3])], {}, "broadcast"),
    (
        "LayerNorm",
        lambda g: [d(g, 0, [2, 3]), d(g, 1, [4]), d(g, 2, [3])],
        {"begin_params_axis": -1},
        "LayerNorm",
    ),
    ("BiasAdd", lambda g: [d(g, 0, [2, 3]), d(g, 1, [2])], {}, "bias"),
    ("Fill", lambda g: [k(g, [2]), d(g, 0, [2])], {}, "scalar"),
    (
        "Range",
        lambda g: [k(g, 0.0, np.float32), k(g, 1.0, np.float32), k(g, 0.0, np.float32)],
        {},
        "delta",
    ),
    ("Cast", lambda g: [d(g, 0, [2])], {"dst_type": 999}, "dst_type"),
    ("Shape", lambda g: [d(g, 0, [2])], {"dtype": int(DataType.DT_FLOAT)}, "dtype"),
]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "pattern"), ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)]
)
def test_infer_errors_are_infer_errors(
    op: str, inputs: Any, attrs: dict[str, Any], pattern: str
) -> None:
    g = Graph("g")
    ports = inputs(g)
    before = g.as_text()
    counts = [attrs["num_split"]] if op == "SplitV" else None
    with pytest.raises(InferError, match=pattern) as info:
        add_op_node(g, op, ports, attrs, output_counts=counts)
    assert isinstance(info.value, ValueError)
    assert g.as_text() == before


DTYPE_REFUSALS = [
    ("Exp", [([2], I32)], "DT_INT32"),
    ("Sqrt", [([2], "bool")], "DT_BOOL"),
    ("LogicalAnd", [([2], F32), ([2], F32)], "DT_FLOAT"),
    ("LogicalNot", [([2], "int8")], "DT_INT8"),
    ("Neg", [([2], "uint8")], "DT_UINT8"),
    ("MatMul", [([2, 2], "int8"), ([2, 2], "int8"), None], "DT_INT8"),
    ("SoftmaxV2", [([2], I32)], "DT_INT32"),
    ("Sub", [([2], "bool"), ([2], "bool")], "DT_BOOL"),
    ("Select", [([2], F32), ([2], F32), ([2], F32)], "DT_FLOAT"),
    ("ReduceSum", [([2], F32), ([1], F32)], "DT_FLOAT"),
    ("Reshape", [([2], F32), ([1], "int16")], "DT_INT16"),
    ("GatherV2", [([2], F32), ([1], F32), ([], I32)], "DT_FLOAT"),
]


@pytest.mark.parametrize(
    ("op", "inputs", "name"), DTYPE_REFUSALS, ids=[f"{o}-{n}" for o, _, n in DTYPE_REFUSALS]
)
def test_dtype_constraints_are_enforced(op: str, inputs: list[Any], name: str) -> None:
    g = Graph("g")
    ports = [None if s is None else d(g, i, s[0], s[1]) for i, s in enumerate(inputs)]
    before = g.as_text()
    with pytest.raises(InferError, match=name):
        add_op_node(g, op, ports)
    assert g.as_text() == before


def test_case_branch_index_must_be_int32() -> None:
    g = Graph("g")
    branch = Graph("b0")
    x = data_node(branch, 0, [2], F32)
    add_op_node(branch, "NetOutput", [[(x, 0)]])
    idx, x = d(g, 0, [], "int64"), d(g, 1, [2])
    before = g.as_text()
    with pytest.raises(InferError, match="DT_INT64"):
        add_op_node(g, "Case", [idx, [x]], subgraphs=[[branch]], output_counts=[1])
    assert g.as_text() == before
    assert g.get_all_subgraphs() == []


# --- a failed add_op_node leaves the graph as it was ---------------------------------------
BAD_BUILDS = [
    ("shape", lambda g, x: add_op_node(g, "Add", [x, d(g, 9, [4])]), InferError),
    ("arity", lambda g, x: add_op_node(g, "Add", [x]), GeValueError),
    ("required-attr", lambda g, x: add_op_node(g, "Cast", [x]), GeValueError),
    ("attr-type", lambda g, x: add_op_node(g, "Cast", [x], {"dst_type": "float"}), TypeError),
    ("unknown-op", lambda g, x: add_op_node(g, "Addd", [x, x]), GeValueError),
    ("dynamic-not-list", lambda g, x: add_op_node(g, "AddN", [x], {"N": 1}), TypeError),
    (
        "dynamic-outputs",
        lambda g, x: add_op_node(g, "SplitV", [x, k(g, [3]), k(g, 0)], {"num_split": 1}),
        GeValueError,
    ),
    ("dtype", lambda g, x: add_op_node(g, "LogicalNot", [x]), InferError),
]


@pytest.mark.parametrize(
    ("build", "error"), [(b, e) for _, b, e in BAD_BUILDS], ids=[n for n, _, _ in BAD_BUILDS]
)
def test_failed_build_leaves_graph_unchanged(build: Any, error: type[Exception]) -> None:
    g = Graph("g")
    x = data_node(g, 0, [3], F32, name="x")
    y = add_op_node(g, "Relu", [(x, 0)], name="y")
    g.set_outputs([(y, 0)])
    before = g.as_text()
    names = sorted(n.name for n in g.get_all_nodes())
    with pytest.raises(error):
        build(g, (x, 0))
    # Consts made for the call stay (they were added by the test before the call); drop them.
    for node in list(g.get_direct_nodes()):
        if node.name not in names and node.type in ("Const", "Data"):
            g.remove_node(node)
    assert g.as_text() == before
    assert sorted(n.name for n in g.get_all_nodes()) == names
    assert x.get_out_data_nodes_and_port_indexes(0) == [(y, 0)]
    # the failed node's name is free again
    add_op_node(g, "Neg", [(x, 0)], name="op")


def test_failed_control_flow_build_leaves_no_subgraph() -> None:
    g = Graph("g")
    cond = data_node(g, 0, [], "bool", name="cond")
    x = data_node(g, 1, [2], F32, name="x")
    then_g, else_g = Graph("then"), Graph("else")
    for sub, dtype in ((then_g, F32), (else_g, I32)):  # branches disagree on the output type
        a = add_op_node(sub, "Data", [None], {"_parent_node_index": 1}, declared=[TensorDesc([2])])
        c = add_op_node(sub, "Cast", [(a, 0)], {"dst_type": int({F32: 0, I32: 3}[dtype])})
        add_op_node(sub, "NetOutput", [[(c, 0)]])
    before = g.as_text()
    with pytest.raises(InferError, match="type"):
        add_op_node(
            g, "If", [(cond, 0), [(x, 0)]], subgraphs=[then_g, else_g], output_counts=[1], name="if"
        )
    assert g.as_text() == before
    assert g.get_all_subgraphs() == []
    assert then_g.parent_node is None and else_g.parent_node is None
    assert [n.name for n in g.get_direct_nodes()] == ["cond", "x"]


def test_infer_node_does_not_change_the_node() -> None:
    g = Graph("g")
    x = data_node(g, 0, [2, 3], F32)
    y = add_op_node(g, "Relu", [(x, 0)])
    before = g.as_text()
    descs = infer_node(y)
    assert [list(t.get_shape()) for t in descs] == [[2, 3]]
    assert g.as_text() == before


# --- infer_graph ------------------------------------------------------------------------------
def _pipeline() -> tuple[Graph, dict[str, Node]]:
    g = Graph("g")
    x = data_node(g, 0, [-1, 3], F32, name="x")
    b = data_node(g, 1, [-1], F32, name="b")
    r = add_op_node(g, "Relu", [(x, 0)], name="r")
    s = add_op_node(g, "ReduceSum", [(r, 0), k(g, [1])], name="s")
    y = add_op_node(g, "Add", [(s, 0), (b, 0)], name="y")
    g.set_outputs([(y, 0)])
    return g, {"x": x, "b": b, "r": r, "s": s, "y": y}


def test_infer_graph_with_input_shapes() -> None:
    g, n = _pipeline()
    assert shape_of(n["y"]) == [-1]
    infer_graph(g, input_shapes=[[5, 3], [5]])
    assert shape_of(n["x"]) == [5, 3]
    assert shape_of(n["r"]) == [5, 3]
    assert list(n["r"].get_input_desc(0).get_shape()) == [5, 3]
    assert shape_of(n["s"]) == [5]
    assert shape_of(n["y"]) == [5]
    assert "f32[5,3]" in g.as_text()
    (got,) = eval_graph(g, [np.ones((5, 3), np.float32), np.arange(5, dtype=np.float32)])
    np.testing.assert_array_equal(got, np.arange(5, dtype=np.float32) + 3)


def test_infer_graph_without_input_shapes_is_idempotent() -> None:
    g, _ = _pipeline()
    before = g.as_text()
    infer_graph(g)
    assert g.as_text() == before


def test_infer_graph_reports_conflicting_input_shapes() -> None:
    g, _ = _pipeline()
    with pytest.raises(InferError, match=r"Add\(x1: f32\[5\], x2: f32\[4\]\)"):
        infer_graph(g, input_shapes=[[5, 3], [4]])


def test_infer_graph_needs_a_shape_per_data_index() -> None:
    g, _ = _pipeline()
    with pytest.raises(GraphError, match="input_shapes"):
        infer_graph(g, input_shapes=[[5, 3]])


# --- found by the slow verified-graphs search ----------------------------------------------------
@pytest.mark.parametrize("axis", [[0], [-1]])
def test_squeezing_an_axis_of_a_scalar_is_an_infer_error(axis: list[int]) -> None:
    """numpy: a 0-d array has no axis to squeeze (this raised IndexError)."""
    g = Graph("g")
    x = data_node(g, 0, [], "float32")
    with pytest.raises(InferError, match=r"cannot squeeze axis .* of a scalar"):
        add_op_node(g, "Squeeze", [(x, 0)], {"axis": axis})
    assert [n.name for n in g.get_direct_nodes()] == [x.name]


@pytest.mark.parametrize("value", [-np.inf, np.nan, 1.5])
def test_axes_that_are_not_integers_are_an_infer_error(value: float) -> None:
    """A float Const where axes belong (an edited graph) is refused by verify's re-inference
    naming the value; int(-inf) leaked OverflowError from Graph.verify."""
    g = Graph("g")
    x = data_node(g, 0, [2, 3], "float32")
    axes = const_node(g, np.array([1], np.int32))
    node = add_op_node(g, "ReduceMax", [(x, 0), (axes, 0)])
    axes.set_attr("value", Tensor.from_numpy(np.array([value], np.float32)))
    with pytest.raises(GraphError, match="axes must be integers"):
        g.verify()
    assert node.graph is g


def test_an_unconnected_instance_of_a_dynamic_input_fails_verify() -> None:
    """AddN with N=1 whose one input edge was removed ran into an AttributeError in its
    reference; verify now says which instance is loose."""
    g = Graph("g")
    x = data_node(g, 0, [3], "float32")
    node = add_op_node(g, "AddN", [[(x, 0), (x, 0)]], {"N": 2})
    g.remove_edge(x, 0, node, 1)
    with pytest.raises(GraphError, match=r"dynamic input 'x' instances \[1\] are not connected"):
        g.verify()


def test_eval_graph_refuses_a_tensor_past_any_address_space() -> None:
    """BroadcastTo a target of 2**63 - 1 elements: named before numpy fails its own way."""
    g = Graph("g")
    x = data_node(g, 0, [], "float32")
    target = const_node(g, np.array([2, 2**63 - 1], np.int64))
    node = add_op_node(g, "BroadcastTo", [(x, 0), (target, 0)])
    g.set_outputs([(node, 0)])
    with pytest.raises(GeValueError, match=r"BroadcastTo.*a tensor of shape \[2, \d+\]"):
        eval_graph(g, [np.float32(1.0)])


def test_gathering_from_a_scalar_is_an_infer_error() -> None:
    """numpy's take refuses a 0-d array; the reference raised IndexError on it."""
    g = Graph("g")
    x = data_node(g, 0, [], "float32")
    zero = const_node(g, np.array(0, np.int64))
    with pytest.raises(InferError, match="x is a scalar: it has no axis to gather along"):
        add_op_node(g, "GatherV2", [(x, 0), (zero, 0), (zero, 0)])
