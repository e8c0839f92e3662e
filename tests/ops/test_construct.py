"""``add_op_node`` / ``add_plain_node``: the direct paths make the node the generic one makes."""

from __future__ import annotations

import numpy as np
import pytest

from ge.error import GeTypeError, InferError
from ge.graph import Graph, Tensor, TensorDesc
from ge.graph.types import AttrValueType, DataType
from ge.ops.construct import _PENDING, add_op_node, add_plain_node
from ge.ops.infer import infer_node


def _generic_const(graph: Graph, name: str, tensor: Tensor) -> object:
    """A Const made the generic way: attribute conversion, then the registered infer rule."""
    node = graph.add_node("Const", name, num_outputs=1, output_names=["y"])
    node.set_attr("value", tensor, AttrValueType.VT_TENSOR)
    node._output_descs = infer_node(node)
    return node


def _same_node(a: object, b: object) -> None:
    for field in ("_type", "_input_names", "_output_names", "_in_edges", "_input_descs"):
        assert list(getattr(a, field)) == list(getattr(b, field)), field
    assert list(a.output_descs) == list(b.output_descs)  # type: ignore[attr-defined]
    assert list(a.attr_values) == list(b.attr_values)  # type: ignore[attr-defined]
    for key, stored in a.attr_values.items():  # type: ignore[attr-defined]
        assert stored == b.attr_values[key]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "array",
    [
        np.float32(1.5),
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.zeros((0, 4), np.float16),
        np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],  # non-contiguous source
        np.array(True),
    ],
    ids=["f32-0d", "i64-2x3", "f16-0x4", "strided", "bool-0d"],
)
def test_direct_const_is_the_generic_const(array: np.ndarray) -> None:
    g = Graph("g")
    tensor = Tensor.from_numpy(np.ascontiguousarray(array))
    direct = add_plain_node(g, "Const", [], {"value": tensor}, "direct", "user.py:3")
    _same_node(direct, _generic_const(g, "generic", tensor))
    assert direct.source == "user.py:3" and direct.op is not None and direct.op.type == "Const"
    np.testing.assert_array_equal(direct.attr_value("value").value.numpy(), array)


def test_direct_const_keeps_a_private_copy() -> None:
    g = Graph("g")
    tensor = Tensor.from_numpy(np.arange(3, dtype=np.float32))
    node = add_op_node(g, "Const", [], {"value": tensor})
    stored = node.attr_value("value").value
    # the output desc is the stored tensor's own (shared: neither is changed in place)
    assert stored is not tensor and node.output_desc(0) is stored._desc
    tensor.set_data_type(DataType.DT_INT32)  # the caller changes its tensor afterwards
    assert stored.get_data_type() == node.output_desc(0).data_type == DataType.DT_FLOAT


def test_const_with_other_attrs_or_values_takes_the_checked_path() -> None:
    g = Graph("g")
    tensor = Tensor.from_numpy(np.ones(2, np.float32))
    tagged = add_op_node(g, "Const", [], {"value": tensor, "_tag": "t"})
    assert tagged.get_attr("_tag") == "t" and list(tagged.output_desc(0).shape) == [2]
    with pytest.raises(GeTypeError, match="value"):
        add_op_node(g, "Const", [], {"value": [1.0, 2.0]})  # not a Tensor: the full checks
    assert [n.name for n in g.get_direct_nodes()] == [tagged.name]


def test_plain_node_wires_and_infers_like_add_op_node() -> None:
    g = Graph("g")
    c = add_plain_node(
        g, "Const", [], {"value": Tensor.from_numpy(np.ones((2, 1), np.int32))}, "c", None
    )
    plain = add_plain_node(g, "Add", [(c, 0), (c, 0)], None, "plain", None)
    generic = add_op_node(g, "Add", [(c, 0), (c, 0)], name="generic", output_counts=[1])
    _same_node(plain, generic)
    assert plain.output_desc(0).data_type == DataType.DT_INT32
    assert [(n.name, p) for n, p in c.users(0)] == [
        ("plain", 0),
        ("plain", 1),
        ("generic", 0),
        ("generic", 1),
    ]


def test_plain_node_failure_leaves_the_graph_unchanged() -> None:
    g = Graph("g")
    a = add_plain_node(
        g, "Const", [], {"value": Tensor.from_numpy(np.ones(2, np.float32))}, "a", None
    )
    b = add_plain_node(
        g, "Const", [], {"value": Tensor.from_numpy(np.ones(3, np.float32))}, "b", None
    )
    with pytest.raises(InferError, match="broadcast"):
        add_plain_node(g, "Add", [(a, 0), (b, 0)], None, "bad", "user.py:9")
    assert not g.has_node("bad") and list(a.users(0)) == [] and list(b.users(0)) == []


def test_no_pending_desc_outlives_its_node_call() -> None:
    """The fast path makes a node with the shared ``_PENDING`` output descs and replaces them
    by the rule's: no node keeps one, whichever way it was made, and it stays a scalar."""
    g = Graph("g")
    c = add_plain_node(
        g, "Const", [], {"value": Tensor.from_numpy(np.ones((2, 3), np.float32))}, "c", None
    )
    data = add_plain_node(g, "Data", [None], {"index": 0}, "d", None)  # its rule reads its desc
    relu = add_plain_node(g, "Relu", [(c, 0)], None, "r", None)
    lazy = add_op_node(g, "Relu", [(c, 0)], name="lazy", infer=False)  # scalar descs, its own
    for node in (c, data, relu, lazy):
        assert all(d is not _PENDING for d in node.output_descs), node.name
    assert list(relu.output_desc(0).shape) == [2, 3]
    assert lazy.output_desc(0) == TensorDesc() and lazy.output_desc(0) is not _PENDING
    wrong = add_plain_node(
        g, "Const", [], {"value": Tensor.from_numpy(np.ones(4, np.float32))}, "w", None
    )
    with pytest.raises(InferError, match="broadcast"):
        add_plain_node(g, "Add", [(c, 0), (wrong, 0)], None, "bad", None)
    assert TensorDesc() == _PENDING and not g.has_node("bad")
