"""``Graph.save_descs`` / ``Graph.restore_descs`` (ours): every node's descs, subgraphs
included, come back as saved; a snapshot can be restored twice; nodes added since keep theirs;
a bad call changes nothing."""

from __future__ import annotations

import pytest

from ge.error import GeTypeError, GraphError
from ge.graph import Graph, Node, TensorDesc
from ge.graph.graph import DescSnapshot


def _graph() -> tuple[Graph, Node, Node]:
    """``x -> relu`` in the root, ``inner`` in a subgraph registered on it."""
    g = Graph("g")
    x = g.add_node("Data", "x", num_outputs=1)
    relu = g.add_node("Relu", "relu", num_inputs=1, num_outputs=1)
    g.add_data_edge(x, 0, relu, 0)
    body = Graph("body")
    inner = body.add_node("Relu", "inner", num_inputs=1, num_outputs=1)
    g.register_subgraph(body)
    return g, relu, inner


def _shapes(*nodes: Node) -> list[list[int]]:
    return [d.get_shape() for n in nodes for d in (*n.input_descs, *n.output_descs)]


def test_restore_puts_back_every_nodes_descs() -> None:
    g, relu, inner = _graph()
    before = _shapes(relu, inner)
    saved = g.save_descs()
    g.set_output_desc(relu, 0, TensorDesc([4]))
    relu.update_input_desc(0, TensorDesc([4]))
    inner.update_output_desc(0, TensorDesc([5]))
    g.restore_descs(saved)
    assert _shapes(relu, inner) == before


def test_a_snapshot_restores_twice_and_spares_new_nodes() -> None:
    g, relu, _ = _graph()
    saved = g.save_descs()
    for _ in range(2):
        relu.update_output_desc(0, TensorDesc([3]))
        g.restore_descs(saved)
        assert relu.output_desc(0).get_shape() != [3]
    late = g.add_node("Relu", "late", num_inputs=1, num_outputs=1)
    late.update_output_desc(0, TensorDesc([6]))
    g.restore_descs(saved)
    assert late.output_desc(0).get_shape() == [6]


def test_a_subgraph_saves_and_restores_the_whole_tree() -> None:
    g, relu, inner = _graph()
    body = g.get_subgraph("body")
    assert body is not None
    saved = body.save_descs()
    relu.update_output_desc(0, TensorDesc([2]))
    inner.update_output_desc(0, TensorDesc([2]))
    g.restore_descs(saved)  # the same root: accepted
    assert _shapes(relu, inner).count([2]) == 0


@pytest.mark.parametrize(
    ("saved", "error", "match"),
    [
        ("not a snapshot", GeTypeError, "saved must be a DescSnapshot, got str"),
        ("other", GraphError, "saved: a DescSnapshot of graph 'h', not of graph 'g'"),
    ],
)
def test_bad_restore_changes_nothing(saved: str, error: type[Exception], match: str) -> None:
    g, relu, _ = _graph()
    relu.update_output_desc(0, TensorDesc([9]))
    h = Graph("h")
    h.add_node("Relu", "relu", num_inputs=1, num_outputs=1)
    arg: object = h.save_descs() if saved == "other" else saved
    with pytest.raises(error, match=match):
        g.restore_descs(arg)  # type: ignore[arg-type]
    assert relu.output_desc(0).get_shape() == [9]
    assert isinstance(h.save_descs(), DescSnapshot)
