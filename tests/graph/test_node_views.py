"""The read-only, non-copying accessors of ``Node`` and ``Graph.set_output_desc`` (ours): what
they return is the node's own object, it shows later edits, bad indexes are refused, and a bad
``set_output_desc`` changes nothing."""

from __future__ import annotations

import pytest

import ge.es
from ge.error import GeTypeError, GraphError
from ge.es import GraphBuilder
from ge.graph import DataType, Graph, Node, TensorDesc
from ge.ops import get_op


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


def test_inputs_and_users_are_the_links() -> None:
    _, src, add, relu = _graph()
    assert add.inputs == [(src, 0), (src, 1)]
    assert add.input(1) == (src, 1)
    assert list(src.users(0)) == [(add, 0), (relu, 0)]
    assert list(src.users(1)) == [(add, 1)]
    assert [list(u) for u in src.users_by_port] == [[(add, 0), (relu, 0)], [(add, 1)]]
    assert relu.users() == []


def test_views_are_not_copies_and_stay_live() -> None:
    g, src, add, relu = _graph()
    users, inputs = src.users(0), relu.inputs
    assert src.users(0) is users and relu.inputs is inputs
    g.remove_edge(src, 0, relu, 0)
    assert list(users) == [(add, 0)] and inputs == [None]
    assert relu.input(0) is None  # unconnected: None, where GE's getter raises
    assert add.output_desc(0) is add.output_descs[0]
    assert add.input_desc(0) is add.input_descs[0]
    assert add.get_output_desc(0) is not add.output_desc(0)


@pytest.mark.parametrize("method", ["input", "users", "output_desc", "input_desc"])
@pytest.mark.parametrize("index", [-1, 5])
def test_out_of_range_index_is_refused(method: str, index: int) -> None:
    _, _, add, _ = _graph()
    with pytest.raises(GraphError, match=rf"Node add \(Add\) has \d+ (in|out)puts; .* {index}"):
        getattr(add, method)(index)


@pytest.mark.parametrize("method", ["input", "users", "output_desc", "input_desc"])
def test_non_int_index_is_refused(method: str) -> None:
    _, _, add, _ = _graph()
    with pytest.raises(GeTypeError, match="index must be an int, got str"):
        getattr(add, method)("0")


def test_attrs_control_subgraphs_and_names() -> None:
    g, src, add, relu = _graph()
    add.set_attr("alpha", 2.0)
    assert add.attr_value("alpha") is add.attr_values["alpha"]
    assert add.attr_value("alpha").value == 2.0  # type: ignore[union-attr]
    assert add.attr_value("missing") is None
    assert list(add.attr_values) == ["alpha"]
    g.add_control_edge(add, relu)
    assert list(add.control_outputs) == [relu] and list(relu.control_inputs) == [add]
    assert list(src.control_inputs) == [] and list(add.subgraph_names) == []
    assert list(add.input_names) == ["", ""] and list(add.output_names) == [""]


def test_op_is_the_registered_definition() -> None:
    b = GraphBuilder("g")
    g = b.build_and_reset([ge.es.Relu(b.create_input(0, shape=[2]))])
    relu = next(n for n in g.get_direct_nodes() if n.type == "Relu")
    assert relu.op is get_op("Relu")  # resolved by the builder
    assert Graph("h").add_node("Relu", num_inputs=1, num_outputs=1).op is get_op("Relu")
    assert Graph("h").add_node("NoSuchOp").op is None


def test_set_output_desc_updates_the_consumers() -> None:
    g, src, add, relu = _graph()
    desc = TensorDesc([2, 3], data_type=DataType.DT_FLOAT16)
    g.set_output_desc(src, 0, desc)
    assert src.output_desc(0).get_shape() == [2, 3]
    assert src.output_desc(0) is not desc  # a copy: the caller's desc stays its own
    for node in (add, relu):
        assert node.input_desc(0).get_shape() == [2, 3]
        assert node.input_desc(0).get_data_type() == DataType.DT_FLOAT16
        assert node.input_desc(0) is not src.output_desc(0)
    assert add.input_desc(1).get_shape() != [2, 3]  # fed by src:1


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("other", 0, "desc"), GraphError, "node src belongs to graph 'h', not to graph 'g'"),
        (("src", 2, "desc"), GraphError, "port: node src has 2 outputs, got 2"),
        (("src", "0", "desc"), GeTypeError, "port must be an int, got str"),
        (("src", 0, [2, 3]), GeTypeError, "desc must be a TensorDesc, got list"),
    ],
)
def test_bad_set_output_desc_changes_nothing(
    args: tuple[str, object, object], error: type[Exception], match: str
) -> None:
    g, src, add, _ = _graph()
    h = Graph("h")
    other = h.add_node("Split", "src", num_outputs=2)
    before = [str(d) for d in (*src.output_descs, *add.input_descs)]
    named = {"src": src, "other": other, "desc": TensorDesc([7])}
    node, port, desc = (named.get(a, a) if isinstance(a, str) else a for a in args)
    with pytest.raises(error, match=match):
        g.set_output_desc(node, port, desc)  # type: ignore[arg-type]
    assert [str(d) for d in (*src.output_descs, *add.input_descs)] == before
    assert other.output_desc(0).get_shape() != [7]
