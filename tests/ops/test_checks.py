"""Graph.verify's op-level checks (ge.ops.checks): arity, required inputs and attributes,
attribute kinds, and recorded descs against infer."""

from __future__ import annotations

import pytest

from ge.error import GraphError
from ge.es import GraphBuilder
from ge.graph import AttrValueType, Graph, TensorDesc


def _built() -> Graph:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    return b.build_and_reset([(x * 2.0).sum(axis=1)])


def test_graph_built_by_es_passes() -> None:
    _built().verify()


def test_stale_desc_is_reported_with_the_fix() -> None:
    g = _built()
    node = next(n for n in g.get_direct_nodes() if n.type == "ReduceSum")
    node.update_output_desc(0, TensorDesc([7]))
    with pytest.raises(GraphError, match=r"recorded as f32\[7\] but infers to f32\[2\]; run "):
        g.verify()
    g.verify(ops=False)  # the structure itself is fine


def test_wrong_arity_for_a_registered_op() -> None:
    g = Graph("g")
    g.add_node("Relu", "r", num_inputs=2, num_outputs=1)
    with pytest.raises(GraphError, match=r"do not fit Relu's IR inputs \['x'\]"):
        g.verify()


def test_unconnected_required_input_and_missing_required_attr() -> None:
    g = Graph("g")
    g.add_node("Cast", "c", num_inputs=1, num_outputs=1, input_names=["x"],
               output_names=["y"])
    with pytest.raises(GraphError) as info:
        g.verify()
    text = str(info.value)
    assert "required input 'x' is not connected" in text
    assert "required attribute 'dst_type' is missing" in text


def test_attribute_of_the_wrong_kind() -> None:
    g = _built()
    node = next(n for n in g.get_direct_nodes() if n.type == "ReduceSum")
    node.set_attr("keep_dims", 1)
    with pytest.raises(GraphError, match="attribute 'keep_dims' is VT_INT, the op declares "
                                          "VT_BOOL"):
        g.verify()
    node.set_attr("keep_dims", False, AttrValueType.VT_BOOL)
    g.verify()


def test_unregistered_op_types_are_not_checked() -> None:
    g = Graph("g")
    g.add_node("SomethingGeHasButWeDoNot", "n", num_inputs=3, num_outputs=2)
    g.verify()
