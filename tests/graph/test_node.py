"""``ge.graph.Node``: construction, read-only identity, attributes, descs and link queries
(GE_REFERENCE.md §4.4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ge.error import GraphError
from ge.es import GraphBuilder
from ge.graph import DataType, Format, Graph, Node, TensorDesc


def _graph() -> tuple[Graph, Node, Node, Node]:
    """``src`` (2 outputs) feeds ``add`` (2 inputs) twice and ``relu`` once."""
    g = Graph("g")
    src = g.add_node("Split", "src", num_outputs=2)
    add = g.add_node("Add", "add", num_inputs=2, num_outputs=1)
    relu = g.add_node("Relu", "relu", num_inputs=1, num_outputs=1)
    g.add_data_edge(src, 0, add, 0)
    g.add_data_edge(src, 1, add, 1)
    g.add_data_edge(src, 0, relu, 0)
    return g, src, add, relu


# --- construction and identity -------------------------------------------------------------------


def test_node_cannot_be_constructed_directly() -> None:
    with pytest.raises(RuntimeError):
        Node()


def test_name_and_type() -> None:
    _, src, add, _ = _graph()
    assert (src.name, src.type) == ("src", "Split")
    assert (add.name, add.type) == ("add", "Add")


@pytest.mark.parametrize("field", ["name", "type"])
def test_name_and_type_are_read_only(field: str) -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(AttributeError):
        setattr(add, field, "other")
    assert (add.name, add.type) == ("add", "Add")
    assert g.as_text() == before


def test_node_copy_refused() -> None:
    _, _, add, _ = _graph()
    with pytest.raises(RuntimeError):
        copy.copy(add)
    with pytest.raises(RuntimeError):
        copy.deepcopy(add)


def test_sizes() -> None:
    _, src, add, relu = _graph()
    assert (src.get_inputs_size(), src.get_outputs_size()) == (0, 2)
    assert (add.get_inputs_size(), add.get_outputs_size()) == (2, 1)
    assert (relu.get_inputs_size(), relu.get_outputs_size()) == (1, 1)


# --- attributes ----------------------------------------------------------------------------------


def test_get_set_has_attr() -> None:
    _, _, add, _ = _graph()
    assert not add.has_attr("alpha")
    add.set_attr("alpha", 2)
    add.set_attr("flag", True)
    add.set_attr("name_list", ["a", "b"])
    assert add.has_attr("alpha")
    assert add.get_attr("alpha") == 2
    assert add.get_attr("flag") is True
    assert add.get_attr("name_list") == ["a", "b"]
    add.set_attr("alpha", 3)
    assert add.get_attr("alpha") == 3


def test_get_missing_attr_is_runtime_error() -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(RuntimeError):
        add.get_attr("missing")
    assert not add.has_attr("missing")
    assert g.as_text() == before


@pytest.mark.parametrize("key", [0, None, b"k"])
def test_attr_key_must_be_str(key: Any) -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(TypeError, match="Attribute key must be a string"):
        add.set_attr(key, 1)
    with pytest.raises(TypeError, match="Attribute key must be a string"):
        add.get_attr(key)
    with pytest.raises(TypeError, match=r"^attr_name must be a string"):  # GE's has_attr text
        add.has_attr(key)
    assert g.as_text() == before


def test_failed_set_attr_keeps_node_unchanged() -> None:
    g, _, add, _ = _graph()
    add.set_attr("k", 1)
    before = g.as_text()
    with pytest.raises(ValueError):
        add.set_attr("k", {"key": "value"})
    assert add.get_attr("k") == 1
    assert g.as_text() == before


def test_attrs_are_per_node() -> None:
    _, src, add, _ = _graph()
    add.set_attr("k", 1)
    assert not src.has_attr("k")


# --- input / output attrs (on the descs) ---------------------------------------------------------


def test_input_and_output_attrs() -> None:
    _, _, add, _ = _graph()
    add.set_input_attr("in_attr", 1, "one")
    add.set_input_attr("in_attr", 0, 0.5)
    add.set_output_attr("out_attr", 0, [1, 2])
    assert add.get_input_attr("in_attr", 1) == "one"
    assert add.get_input_attr("in_attr", 0) == 0.5
    assert add.get_output_attr("out_attr", 0) == [1, 2]
    assert not add.has_attr("in_attr")  # not a node attribute
    assert not add.has_attr("out_attr")


def test_input_attr_missing_is_runtime_error() -> None:
    _, _, add, _ = _graph()
    add.set_input_attr("a", 0, 1)
    with pytest.raises(RuntimeError):
        add.get_input_attr("a", 1)  # set on input 0 only
    with pytest.raises(RuntimeError):
        add.get_output_attr("a", 0)  # inputs and outputs are separate


def test_input_output_attr_index_errors() -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(RuntimeError):
        add.set_input_attr("a", 2, 1)
    with pytest.raises(RuntimeError):
        add.get_input_attr("a", -1)
    with pytest.raises(RuntimeError):
        add.set_output_attr("a", 1, 1)
    with pytest.raises(RuntimeError):
        add.get_output_attr("a", 5)
    with pytest.raises(TypeError):
        add.set_input_attr("a", "0", 1)
    with pytest.raises(TypeError):
        add.get_output_attr("a", 0.0)
    with pytest.raises(TypeError, match=r"^Attribute name must be a string"):
        add.set_output_attr(1, 0, 1)
    assert g.as_text() == before
    for i in range(add.get_inputs_size()):
        with pytest.raises(RuntimeError):
            add.get_input_attr("a", i)  # no failed call left an attribute behind
    with pytest.raises(RuntimeError):
        add.get_output_attr("a", 0)


def test_input_attr_travels_with_the_desc() -> None:
    _, _, add, _ = _graph()
    add.set_output_attr("tag", 0, "x")
    desc = add.get_output_desc(0)
    add.update_output_desc(0, desc.set_shape([3]))
    assert add.get_output_attr("tag", 0) == "x"


def test_input_attr_value_rules_match_node_attrs() -> None:
    _, _, add, _ = _graph()
    add.set_input_attr("b", 0, True)
    assert add.get_input_attr("b", 0) is True
    with pytest.raises(ValueError, match="Empty list is not supported"):
        add.set_input_attr("e", 0, [])


# --- descs are values ----------------------------------------------------------------------------


def test_default_descs() -> None:
    _, _, add, _ = _graph()
    d = add.get_input_desc(0)
    assert d.shape == []
    assert d.format == Format.FORMAT_ND
    assert d.data_type == DataType.DT_FLOAT


def test_update_and_get_descs() -> None:
    _, _, add, _ = _graph()
    add.update_input_desc(1, TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_INT32))
    add.update_output_desc(0, TensorDesc([5], data_type=DataType.DT_FLOAT16))
    i1 = add.get_input_desc(1)
    assert (i1.shape, i1.format, i1.data_type) == ([2, 3], Format.FORMAT_NCHW, DataType.DT_INT32)
    assert add.get_input_desc(0).shape == []
    o0 = add.get_output_desc(0)
    assert (o0.shape, o0.data_type) == ([5], DataType.DT_FLOAT16)


def test_get_desc_returns_a_copy() -> None:
    g, _, add, _ = _graph()
    add.update_output_desc(0, TensorDesc([2]))
    before = g.as_text()
    got = add.get_output_desc(0)
    got.set_shape([9, 9]).set_data_type(DataType.DT_INT8).set_format(Format.FORMAT_NHWC)
    got_in = add.get_input_desc(0)
    got_in.set_shape([7])
    assert add.get_output_desc(0).shape == [2]
    assert add.get_output_desc(0).data_type == DataType.DT_FLOAT
    assert add.get_output_desc(0).format == Format.FORMAT_ND
    assert add.get_input_desc(0).shape == []
    assert g.as_text() == before
    assert add.get_output_desc(0) is not add.get_output_desc(0)


def test_update_desc_copies_in() -> None:
    _, _, add, _ = _graph()
    desc = TensorDesc([4])
    add.update_input_desc(0, desc)
    add.update_output_desc(0, desc)
    desc.set_shape([1, 1, 1]).set_data_type(DataType.DT_INT64)
    assert add.get_input_desc(0).shape == [4]
    assert add.get_output_desc(0).shape == [4]
    assert add.get_output_desc(0).data_type == DataType.DT_FLOAT


def test_shape_of_returned_desc_is_a_copy() -> None:
    _, _, add, _ = _graph()
    add.update_output_desc(0, TensorDesc([2, 3]))
    add.get_output_desc(0).shape.append(4)
    assert add.get_output_desc(0).shape == [2, 3]


@pytest.mark.parametrize(
    "call",
    [
        lambda n: n.get_input_desc(2),
        lambda n: n.get_input_desc(-1),
        lambda n: n.get_output_desc(1),
        lambda n: n.update_input_desc(2, TensorDesc()),
        lambda n: n.update_output_desc(1, TensorDesc()),
    ],
)
def test_desc_index_out_of_range(call: Any) -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(RuntimeError):
        call(add)
    assert g.as_text() == before


@pytest.mark.parametrize(
    "call",
    [
        lambda n: n.get_input_desc("0"),
        lambda n: n.get_output_desc(0.0),
        lambda n: n.update_input_desc(None, TensorDesc()),
        lambda n: n.update_output_desc(0, [1, 2]),
        lambda n: n.update_input_desc(0, None),
    ],
)
def test_desc_wrong_types(call: Any) -> None:
    g, _, add, _ = _graph()
    before = g.as_text()
    with pytest.raises(TypeError):
        call(add)
    assert g.as_text() == before


# --- links ---------------------------------------------------------------------------------------


def test_in_data_node_and_port() -> None:
    _, src, add, relu = _graph()
    node, port = add.get_in_data_nodes_and_port_indexes(1)
    assert node is src
    assert port == 1
    assert add.get_in_data_nodes_and_port_indexes(0) == (src, 0)
    assert relu.get_in_data_nodes_and_port_indexes(0) == (src, 0)


def test_in_data_unconnected_is_runtime_error() -> None:
    g = Graph("g")
    n = g.add_node("Relu", "n", num_inputs=1, num_outputs=1)
    with pytest.raises(RuntimeError):
        n.get_in_data_nodes_and_port_indexes(0)


def test_out_data_nodes_and_ports_in_edge_order() -> None:
    _, src, add, relu = _graph()
    assert src.get_out_data_nodes_and_port_indexes(0) == [(add, 0), (relu, 0)]
    assert src.get_out_data_nodes_and_port_indexes(1) == [(add, 1)]
    assert relu.get_out_data_nodes_and_port_indexes(0) == []


def test_out_data_list_is_fresh() -> None:
    _, src, add, relu = _graph()
    src.get_out_data_nodes_and_port_indexes(0).clear()
    assert src.get_out_data_nodes_and_port_indexes(0) == [(add, 0), (relu, 0)]


def test_control_node_lists() -> None:
    g, src, add, relu = _graph()
    assert add.get_in_control_nodes() == []
    assert add.get_out_control_nodes() == []
    g.add_control_edge(src, relu)
    g.add_control_edge(add, relu)
    assert relu.get_in_control_nodes() == [src, add]
    assert src.get_out_control_nodes() == [relu]
    relu.get_in_control_nodes().clear()  # a fresh list each time
    src.get_out_control_nodes().clear()
    assert relu.get_in_control_nodes() == [src, add]
    assert src.get_out_control_nodes() == [relu]


@pytest.mark.parametrize(
    "call",
    [
        lambda s, a: a.get_in_data_nodes_and_port_indexes(2),
        lambda s, a: a.get_in_data_nodes_and_port_indexes(-1),
        lambda s, a: s.get_in_data_nodes_and_port_indexes(0),  # src has no inputs
    ],
)
def test_link_port_index_out_of_range(call: Any) -> None:
    _, src, add, _ = _graph()
    with pytest.raises(RuntimeError, match=r"^Failed to get input data node for index"):
        call(src, add)


@pytest.mark.parametrize("port", [2, -1, 5])
def test_out_data_nodes_of_a_missing_output_are_empty(port: int) -> None:
    """GE_ERRORS.md §2.2: a nonexistent output anchor gives ``[]``, as in GE."""
    _, src, add, _ = _graph()
    assert src.get_out_data_nodes_and_port_indexes(port) == []
    assert add.get_out_data_nodes_and_port_indexes(port) == []


@pytest.mark.parametrize("bad", ["0", 0.0, None, [0]])
def test_link_port_index_must_be_int(bad: Any) -> None:
    _, src, add, _ = _graph()
    with pytest.raises(TypeError):
        add.get_in_data_nodes_and_port_indexes(bad)
    with pytest.raises(TypeError):
        src.get_out_data_nodes_and_port_indexes(bad)


def test_repr_names_node_and_type() -> None:
    _, _, add, _ = _graph()
    assert "add" in repr(add) and "Add" in repr(add)


# --- nodes without inputs share one empty tuple (build cost per node) --------------------------


def _const_and_consumer() -> tuple[Graph, Node, Node]:
    b = GraphBuilder("g")
    y = b.create_input(0, shape=[2]) * 3.0  # type: ignore[operator]
    graph = b.build_and_reset([y])
    (mul,) = (n for n in graph.get_all_nodes() if n.type == "Mul")
    const = mul._in_edges[1]
    assert const is not None
    return graph, const[0], mul


def test_a_node_without_inputs_keeps_no_input_lists() -> None:
    graph, const, mul = _const_and_consumer()
    assert const.type == "Const" and const._in_edges == () and const._input_descs == ()
    assert isinstance(mul._in_edges, list) and len(mul._input_descs) == 2
    assert const.get_inputs_size() == 0
    with pytest.raises(GraphError, match="Failed to update input desc for index 0"):
        const.update_input_desc(0, TensorDesc([1]))
    with pytest.raises(GraphError, match="Failed to get input desc for index 0"):
        const.get_input_desc(0)
    graph.remove_node(const)  # cutting its links writes only into the consumer
    assert mul._in_edges[1] is None and mul._in_edges[0] is not None
