"""Graph.verify's op-level checks (ge.ops.checks): arity, required inputs and attributes,
attribute kinds, and recorded descs against infer."""

from __future__ import annotations

import pytest

import ge.es
from ge.error import GraphError
from ge.es import GraphBuilder
from ge.graph import AttrValueType, DataType, Graph, TensorDesc


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
    g.add_node("Cast", "c", num_inputs=1, num_outputs=1, input_names=["x"], output_names=["y"])
    with pytest.raises(GraphError) as info:
        g.verify()
    text = str(info.value)
    assert "required input 'x' is not connected" in text
    assert "required attribute 'dst_type' is missing" in text


def test_attribute_of_the_wrong_kind() -> None:
    g = _built()
    node = next(n for n in g.get_direct_nodes() if n.type == "ReduceSum")
    node.set_attr("keep_dims", 1)
    with pytest.raises(
        GraphError, match="attribute 'keep_dims' is VT_INT, the op declares VT_BOOL"
    ):
        g.verify()
    node.set_attr("keep_dims", False, AttrValueType.VT_BOOL)
    g.verify()


def test_unregistered_op_types_are_not_checked() -> None:
    g = Graph("g")
    g.add_node("SomethingGeHasButWeDoNot", "n", num_inputs=3, num_outputs=2)
    g.verify()


def _if_graph() -> Graph:
    branches = []
    for name in ("then_g", "else_g"):
        b = GraphBuilder(name)
        branches.append(b.build_and_reset([b.create_input(0, shape=[2]) * 2.0]))
    b = GraphBuilder("root")
    cond = b.create_input(0, data_type=DataType.DT_BOOL)
    x = b.create_input(1, shape=[2])
    outputs = ge.es.If(cond, [x], 1, *branches)
    return b.build_and_reset(outputs)


def test_removed_subgraph_leaves_a_hole_the_op_check_reports() -> None:
    g = _if_graph()
    g.verify()
    g.remove_subgraph("then_g")
    g.verify(ops=False)
    with pytest.raises(GraphError, match=r"subgraph slot 0 is empty; attach a graph"):
        g.verify()


def test_missing_subgraphs_are_reported() -> None:
    g = Graph("g")
    node = g.add_node("While", "w", num_outputs=0)
    with pytest.raises(GraphError, match=r"has 0 subgraphs, the op declares \['cond', 'body'\]"):
        g.verify()
    assert node.get_subgraph_names() == []
