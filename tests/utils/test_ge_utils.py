"""``ge.utils.GeUtils`` (GE_REFERENCE.md §5.5): whole-graph shape inference and the AI-core
support query."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph, infer_graph
from ge.utils import GeUtils

DT = DataType


def descs(graph: Graph) -> dict[tuple[str, str], Any]:
    """Every node's input and output descs (shape, dtype, format), subgraphs included."""
    out: dict[tuple[str, str], Any] = {}
    for g in [graph, *graph.get_all_subgraphs()]:
        for n in g.get_direct_nodes():
            out[(g.name, n.name)] = (
                [_desc(n.get_input_desc(i)) for i in range(n.get_inputs_size())],
                [_desc(n.get_output_desc(i)) for i in range(n.get_outputs_size())],
            )
    return out


def _desc(d: Any) -> tuple[list[int], DataType, Any]:
    return (list(d.get_shape()), d.get_data_type(), d.get_format())


def attrs(graph: Graph) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for g in [graph, *graph.get_all_subgraphs()]:
        for n in g.get_direct_nodes():
            out[(g.name, n.name)] = {k: repr(n.get_attr(k)) for k in n.get_attr_names()}
    return out


def out_shape(graph: Graph, name: str, port: int = 0) -> list[int]:
    return list(graph.find_node_by_name(name).get_output_desc(port).get_shape())


def mlp_graph() -> tuple[Graph, dict[str, str]]:
    b = GraphBuilder("mlp")
    x = b.create_input(0, shape=[2, 3])
    w = b.create_input(1, shape=[3, 4])
    h = ge.es.Relu(x @ w)
    s = h.sum(axis=1)
    y = np.concatenate([h, h], axis=0)
    b.set_node_attr_string(h, "note", "hidden")
    g = b.build_and_reset([s, y])
    matmul = g.find_node_by_name(h.name).get_in_data_nodes_and_port_indexes(0)[0]
    return g, {"h": h.name, "s": s.name, "y": y.name, "mm": matmul.name}


# ============================================================================= infer_shape ====


def test_infer_shape_updates_data_and_downstream_shapes() -> None:
    g, n = mlp_graph()
    nodes_before = [x.name for x in g.get_all_nodes()]
    attrs_before = attrs(g)
    assert GeUtils.infer_shape(g, [[5, 3], [3, 7]]) is None
    assert out_shape(g, "input_0") == [5, 3]
    assert out_shape(g, "input_1") == [3, 7]
    assert out_shape(g, n["mm"]) == [5, 7]
    assert out_shape(g, n["h"]) == [5, 7]
    assert out_shape(g, n["s"]) == [5]
    assert out_shape(g, n["y"]) == [10, 7]
    # the consumers' input descs follow their producers
    h = g.find_node_by_name(n["h"])
    assert list(h.get_input_desc(0).get_shape()) == [5, 7]
    net = g.find_node_by_name("NetOutput_mlp")
    assert list(net.get_input_desc(1).get_shape()) == [10, 7]
    # nothing else changed
    assert [x.name for x in g.get_all_nodes()] == nodes_before
    assert attrs(g) == attrs_before
    assert g.find_node_by_name(n["h"]).get_attr("note") == "hidden"
    # the graph runs with the new shapes, as numpy says
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 7)).astype(np.float32)
    s, y = eval_graph(g, [a, w])
    hv = np.maximum(a @ w, 0)
    np.testing.assert_allclose(s, hv.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, np.concatenate([hv, hv]), rtol=1e-5, atol=1e-6)


def test_infer_shape_keeps_dtypes() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DT.DT_INT32, shape=[2])
    y = x * 3
    g = b.build_and_reset([y])
    GeUtils.infer_shape(g, [[4, 4]])
    assert out_shape(g, y.name) == [4, 4]
    assert g.find_node_by_name(y.name).get_output_desc(0).get_data_type() == DT.DT_INT32


def test_infer_shape_with_the_same_shapes_changes_nothing() -> None:
    g, _ = mlp_graph()
    infer_graph(g)  # NetOutput's input descs start at GE's default, not the producers'
    before = descs(g)
    GeUtils.infer_shape(g, [[2, 3], [3, 4]])
    assert descs(g) == before


@pytest.mark.parametrize(
    ("x_shape", "v_shape", "squeezed"),
    [([-2], [-2], [-2]), ([-1, 1], [-1], [-2]), ([4, 1], [], [4])],
)
def test_infer_shape_takes_unknown_shapes(
    x_shape: list[int], v_shape: list[int], squeezed: list[int]
) -> None:
    """GE infers any graph; shapes it cannot decide stay unknown (issue #17): a Squeeze of all
    size-1 dims of unknown dims has an unknown rank, a Fill by a value that may be a scalar
    and a BroadcastTo of an unknown-rank x take their target shape."""
    b = GraphBuilder("unknown")
    x = b.create_input(0, shape=[4, 1])
    v = b.create_input(1, shape=[])
    dims = b.create_const_int64([2, 3])
    sq = ge.es.Squeeze(x)
    fill = ge.es.Fill(dims, v)
    bcast = ge.es.BroadcastTo(v, dims)
    g = b.build_and_reset([sq, fill, bcast])
    GeUtils.infer_shape(g, [x_shape, v_shape])
    assert out_shape(g, sq.name) == squeezed
    assert out_shape(g, fill.name) == out_shape(g, bcast.name) == [2, 3]


def if_graph(const_len: int | None = None) -> tuple[Graph, str]:
    def branch(name: str, fn: Any) -> Graph:
        bb = GraphBuilder(name)
        a = bb.create_input(0, shape=[3])
        return bb.build_and_reset([fn(a, bb)])

    if const_len is None:
        then_g = branch("then_g", lambda a, bb: a * 2.0)
    else:
        then_g = branch("then_g", lambda a, bb: a + bb.create_const_float([1.0] * const_len))
    else_g = branch("else_g", lambda a, bb: ge.es.Relu(a))
    b = GraphBuilder("root")
    c = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.If(c, [x], 1, then_g, else_g)
    return b.build_and_reset([y]), y.name


def test_infer_shape_reaches_if_subgraphs() -> None:
    g, if_name = if_graph()
    GeUtils.infer_shape(g, [[], [6]])
    assert out_shape(g, "input_1") == [6]
    assert out_shape(g, if_name) == [6]
    for sub in ("then_g", "else_g"):
        sg = g.get_subgraph(sub)
        assert sg is not None
        assert out_shape(sg, "input_0") == [6]
        for n in sg.get_direct_nodes():
            if n.type not in ("Const", "NetOutput"):
                assert list(n.get_output_desc(0).get_shape()) == [6], (sub, n.name)
    a = np.arange(6, dtype=np.float32) - 2
    np.testing.assert_allclose(eval_graph(g, [np.array(True), a])[0], a * 2.0)
    np.testing.assert_allclose(eval_graph(g, [np.array(False), a])[0], np.maximum(a, 0))


def test_failing_inference_leaves_every_desc_unchanged() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    v = b.create_input(1, shape=[3])
    y = ge.es.Relu(x + v) * 2.0
    g = b.build_and_reset([y])
    before = descs(g)
    text_before = g.as_text()
    with pytest.raises(RuntimeError, match=r"^Failed to infer shape"):
        GeUtils.infer_shape(g, [[2, 3], [4]])
    assert descs(g) == before
    assert g.as_text() == text_before


def test_failing_inference_inside_a_subgraph_restores_everything() -> None:
    g, _ = if_graph(const_len=3)
    before = descs(g)
    text_before = g.as_text()
    with pytest.raises(RuntimeError, match=r"^Failed to infer shape"):
        GeUtils.infer_shape(g, [[], [5]])  # then_g adds a [3] constant to a [5] input
    assert descs(g) == before
    assert g.as_text() == text_before
    # and the graph still works with its original shapes
    a = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(eval_graph(g, [np.array(True), a])[0], a + 1.0)


@pytest.mark.parametrize(
    ("graph", "shapes", "error", "text"),
    [
        ("not a graph", [[2, 3]], AttributeError, "'str' object has no attribute '_handle'"),
        (None, [[2, 3]], AttributeError, "'NoneType' object has no attribute '_handle'"),
        ("GRAPH", ([2, 3], [3, 4]), TypeError, "input_shapes must be a list of shape lists"),
        ("GRAPH", [(2, 3), [3, 4]], TypeError, "input_shapes must be a list of shape lists"),
        ("GRAPH", [[2.0, 3], [3, 4]], TypeError, "each shape dim must be an integer"),
        ("GRAPH", [[2, "3"], [3, 4]], TypeError, "each shape dim must be an integer"),
        ("GRAPH", "2,3", TypeError, "input_shapes must be a list of shape lists"),
        ("GRAPH", None, TypeError, "input_shapes must be a list of shape lists"),
    ],
)
def test_infer_shape_bad_argument_types(
    graph: Any, shapes: Any, error: type[Exception], text: str
) -> None:
    """GE_ERRORS.md §6; every row is a TypeError in ours (the AttributeError rows too). A
    ``bool`` dim is accepted, as GE accepts it (tests/utils/test_ge_errors.py)."""
    g, _ = mlp_graph()
    before = descs(g)
    with pytest.raises(error, match="^" + re.escape(text)) as info:
        GeUtils.infer_shape(g if graph == "GRAPH" else graph, shapes)
    assert isinstance(info.value, TypeError)
    assert descs(g) == before


# =============================================================== check_node_support_on_aicore ====


def test_check_node_support_on_aicore_answers_from_the_compiler() -> None:
    from ge.compiler.kernels import LOWERINGS

    g, n = mlp_graph()
    assert GeUtils.check_node_support_on_aicore(g.find_node_by_name("input_0")) == (True, "")
    for node in g.get_direct_nodes():
        supported, reason = GeUtils.check_node_support_on_aicore(node)
        if node.type in LOWERINGS or node.type in ("Data", "Const", "NetOutput"):
            assert (supported, reason) == (True, "")
        else:
            assert supported is False
            assert node.type in reason and "reference" in reason
    assert n  # the helper built the nodes it names


@pytest.mark.parametrize("bad", [None, "Relu", 1, Graph("g")])
def test_check_node_support_on_aicore_type_error(bad: Any) -> None:
    """GE reads ``node._handle``: an AttributeError with Python's text; ours is a TypeError too."""
    text = f"'{type(bad).__name__}' object has no attribute '_handle'"
    with pytest.raises(AttributeError, match="^" + re.escape(text)) as info:
        GeUtils.check_node_support_on_aicore(bad)
    assert isinstance(info.value, TypeError)
