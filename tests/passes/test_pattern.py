"""Pattern, NodeIo, the matcher config, MatchResult, PatternInputs and expression patterns
(GE_REFERENCE.md §6, GE_ERRORS.md §9.3), and the graph move behind ``Pattern(graph)``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ge import es
from ge.es import GraphBuilder, TensorHolder
from ge.graph import Graph
from ge.passes.pattern import (
    MatchResult,
    NodeIo,
    Pattern,
    PatternInputs,
    PatternMatcherConfig,
    PatternMatcherConfigBuilder,
    build_expression_pattern,
    create_pattern,
    ensure_pattern,
    pattern,
    replacement_inputs,
)

MOVED = "Failed to get Graph name"


def relu_graph(name: str = "p") -> tuple[Graph, TensorHolder, TensorHolder]:
    b = GraphBuilder(name)
    x = b.create_input(0)
    y = es.Relu(x)
    return b.build_and_reset([y]), x, y


# ================================================================================ the move ====
def test_move_out_hands_over_everything() -> None:
    g, x, y = relu_graph("moved")
    g.set_attr("a", 3)
    names = [n.name for n in g.get_direct_nodes()]
    new = g._move_out()
    assert new.name == "moved"
    assert [n.name for n in new.get_direct_nodes()] == names
    assert all(n.graph is new for n in new.get_direct_nodes())
    assert new.get_attr("a") == 3
    assert new.get_outputs() == [(y._node, 0)]
    assert x._node.graph is new
    new.verify()


@pytest.mark.parametrize(
    "use",
    [
        lambda g: g.name,
        lambda g: g.get_all_nodes(),
        lambda g: g.get_direct_nodes(),
        lambda g: g.add_node("Relu"),
        lambda g: g.add_node("Relu", "r"),
        lambda g: g.set_attr("k", 1),
        lambda g: g.get_outputs(),
        lambda g: g.find_node_by_name("x"),
        str,
        lambda g: g.verify(),
        lambda g: g.get_all_subgraphs(),
    ],
)
def test_moved_graph_raises_failed_to_get_graph_name(use: Any) -> None:
    g, _, _ = relu_graph()
    g._move_out()
    with pytest.raises(RuntimeError, match=MOVED):
        use(g)


def test_moved_graph_repr_and_unknown_attribute() -> None:
    g, _, _ = relu_graph()
    g._move_out()
    assert repr(g) == "<Graph (moved)>"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        g.nope  # noqa: B018
    assert not hasattr(g, "_handle")


def test_move_of_a_subgraph_keeps_the_registry_pointing_at_the_new_object() -> None:
    root = Graph("root")
    parent = root.add_node("If", num_inputs=1, num_outputs=1)
    sub = Graph("branch")
    root.set_node_subgraph(parent, 0, sub)
    moved = sub._move_out()
    assert root.get_subgraph("branch") is moved


# ============================================================================== Pattern ====
def test_pattern_moves_the_graph() -> None:
    g, x, y = relu_graph()
    p = Pattern(g)
    assert p.is_valid()
    with pytest.raises(RuntimeError, match=MOVED):
        _ = g.name
    p.capture_tensor(x).capture_tensor(y)  # holders still reach the moved nodes
    assert [io.node.name for io in p.get_captured_tensors()] == ["input_0", "Relu_0"]


@pytest.mark.parametrize("bad", [None, 1, "graph", object()])
def test_pattern_needs_a_graph(bad: Any) -> None:
    with pytest.raises(RuntimeError, match="Graph object must carry _handle"):
        Pattern(bad)
    with pytest.raises(RuntimeError, match="Graph object must carry _handle"):
        create_pattern(bad)


def test_pattern_of_a_moved_graph() -> None:
    g, _, _ = relu_graph()
    Pattern(g)
    with pytest.raises(RuntimeError, match="Pattern graph handle is empty"):
        Pattern(g)


def test_capture_sources_and_order() -> None:
    b = GraphBuilder("p")
    x = b.create_input(0)
    s = es.Relu(x)
    g = b.build_and_reset([s])
    relu = s._node
    p = create_pattern(g)
    p.capture_tensor(s).capture_tensor(relu).capture_tensor(NodeIo(x._node))
    p.capture_tensor(NodeIo(relu, 0), None).capture_tensor(x, 0)
    got = [(io.node.name, io.index) for io in p.get_captured_tensors()]
    assert got == [("Relu_0", 0), ("Relu_0", 0), ("input_0", 0), ("Relu_0", 0), ("input_0", 0)]
    assert p.get_captured_tensors() is not p.get_captured_tensors()  # a copy


def test_capture_errors_leave_captures_unchanged() -> None:
    g, _x, y = relu_graph()
    p = Pattern(g)
    p.capture_tensor(y)
    with pytest.raises(RuntimeError, match="Node object must carry _handle"):
        p.capture_tensor("Relu_0")
    with pytest.raises(ValueError, match="index must be an output of Relu_0"):
        p.capture_tensor(y, 3)
    with pytest.raises(TypeError, match="index must be an int"):
        p.capture_tensor(y, "0")
    other, _, z = relu_graph("other")
    with pytest.raises(ValueError, match="not in pattern graph 'p'"):
        p.capture_tensor(z)
    removed = other.add_node("Relu")
    other.remove_node(removed)
    with pytest.raises(RuntimeError, match="Node handle is empty"):
        p.capture_tensor(removed)
    assert len(p.get_captured_tensors()) == 1


def test_release_once() -> None:
    g, _, y = relu_graph()
    p = Pattern(g).capture_tensor(y)
    handle = p.release()
    assert isinstance(handle, int)
    assert not p.is_valid()
    for use in (p.release, p.get_captured_tensors, lambda: p.capture_tensor(y)):
        with pytest.raises(RuntimeError, match="Pattern handle has been released"):
            use()
    assert repr(p) == "<Pattern (released)>"


def test_ensure_pattern() -> None:
    g, _, _ = relu_graph()
    p = Pattern(g)
    assert ensure_pattern(p) is p
    g2, _, _ = relu_graph()
    wrapped = ensure_pattern(g2)
    assert isinstance(wrapped, Pattern) and wrapped.is_valid()
    with pytest.raises(TypeError, match=r"patterns must return Pattern or Graph objects"):
        ensure_pattern([p])


def test_node_io_is_a_frozen_dataclass() -> None:
    _g, x, _ = relu_graph()
    io = NodeIo(x._node)
    assert io.index == 0
    assert io == NodeIo(x._node, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        io.index = 1  # type: ignore[misc]


# ========================================================================== matcher config ====
def test_config_builder() -> None:
    plain = PatternMatcherConfigBuilder().build()
    assert not plain.is_enable_const_value_match() and not plain.is_enable_ir_attr_match()
    builder = PatternMatcherConfigBuilder()
    assert builder.enable_const_value_match() is builder
    assert builder.enable_ir_attr_match() is builder
    both = builder.build()
    assert both.is_enable_const_value_match() and both.is_enable_ir_attr_match()
    only = PatternMatcherConfigBuilder().enable_ir_attr_match().build()
    assert only.is_enable_ir_attr_match() and not only.is_enable_const_value_match()


@pytest.mark.parametrize("cls", [PatternMatcherConfig, MatchResult])
def test_no_constructor(cls: type) -> None:
    with pytest.raises(TypeError, match="No constructor defined!"):
        cls()


# ============================================================================= MatchResult ====
def test_match_result_accessors_and_expiry() -> None:
    _g, x, y = relu_graph()
    relu, data = y._node, x._node
    r = MatchResult._create("pat", [relu], [NodeIo(data), NodeIo(relu)], [[(relu, 0)]], [(relu, 0)])
    assert r.get_matched_nodes() == [relu]
    assert r.get_captured_tensor(1) == NodeIo(relu)
    assert r.get_pattern_graph_name() == "pat"
    assert r._inputs() == [[(relu, 0)]]
    assert r._input_ports() == [(data, 0)]
    assert r._outputs() == [(relu, 0)]
    assert "pat" in str(r) and "Relu_0" in str(r)
    for bad in (2, -1, "0", True):
        with pytest.raises(RuntimeError, match="Failed to get captured tensor from MatchResult"):
            r.get_captured_tensor(bad)
    r._invalidate()
    uses = [
        r.get_matched_nodes,
        lambda: r.get_captured_tensor(0),
        r.get_pattern_graph_name,
        lambda: str(r),
        r._inputs,
        r._input_ports,
        r._outputs,
    ]
    for use in uses:
        with pytest.raises(RuntimeError, match="MatchResult handle has expired"):
            use()
    assert "expired" in repr(r)


# ========================================================================== PatternInputs ====
def test_pattern_inputs_fill_gaps_in_order() -> None:
    b = GraphBuilder("p")
    inputs = PatternInputs(b)
    third = inputs[2]
    assert [h.name for h in inputs._holders()] == ["input_0", "input_1", "input_2"]
    assert inputs[2] is third
    assert [h.name for h in inputs[1:4]] == ["input_1", "input_2", "input_3"]
    assert inputs[5:5] == [] and len(inputs._holders()) == 4
    assert [h.name for h in inputs[:2]] == ["input_0", "input_1"]


@pytest.mark.parametrize(
    ("key", "exc", "text"),
    [
        ("0", TypeError, "PatternInputs index must be an integer or slice"),
        (1.0, TypeError, "PatternInputs index must be an integer or slice"),
        (-1, ValueError, "PatternInputs index must be non-negative"),
        (slice(0, 3, 2), ValueError, "PatternInputs slice step must be 1"),
        (slice(1, None), ValueError, "PatternInputs slice must provide a stop index"),
        (slice(-1, 2), ValueError, "PatternInputs slice indices must be non-negative"),
        (slice(0, -2), ValueError, "PatternInputs slice indices must be non-negative"),
        (slice(3, 1), ValueError, "PatternInputs slice stop must be greater than or equal"),
    ],
)
def test_pattern_inputs_bad_keys_create_nothing(key: Any, exc: type, text: str) -> None:
    inputs = PatternInputs(GraphBuilder("p"))
    with pytest.raises(exc, match=text):
        inputs[key]
    assert inputs._holders() == []


@pytest.mark.parametrize("use", [iter, list, lambda i: 0 in i, lambda i: [x for x in i]])
def test_pattern_inputs_cannot_be_iterated(use: Any) -> None:
    inputs = PatternInputs(GraphBuilder("p"))
    with pytest.raises(TypeError, match="PatternInputs cannot be iterated because the input"):
        use(inputs)


def test_replacement_inputs_are_bounded() -> None:
    builder, inputs = replacement_inputs("Fuse", 2)
    assert builder.name == "Fuse_replacement"
    inputs[1]
    with pytest.raises(ValueError, match="the match has 2 inputs"):
        inputs[2]
    assert len(inputs._holders()) == 2


# ==================================================================== expression patterns ====
class MatMulAdd:
    @pattern
    def fuse(self, inputs: PatternInputs) -> Any:
        a, b, c = inputs[:3]
        return es.MatMul(a, b) + c

    @pattern
    def two_outputs(self, inputs: PatternInputs) -> Any:
        r = es.Relu(inputs[1])
        return (es.Abs(r), r)

    @pattern
    def uses_only_second(self, inputs: PatternInputs) -> Any:
        return [es.Relu(inputs[1])]

    @pattern
    def returns_graph(self, inputs: PatternInputs) -> Any:
        return relu_graph("given")[0]

    @pattern
    def returns_patterns(self, inputs: PatternInputs) -> Any:
        return [Pattern(relu_graph("a")[0])]

    @pattern
    def returns_nothing(self, inputs: PatternInputs) -> Any:
        return None

    @pattern
    def returns_empty(self, inputs: PatternInputs) -> Any:
        return []

    @pattern
    def returns_mixed(self, inputs: PatternInputs) -> Any:
        return [es.Relu(inputs[0]), 3]


def test_expression_pattern_captures_inputs_then_outputs() -> None:
    p = build_expression_pattern(MatMulAdd(), "fuse")
    caps = [(io.node.name, io.index) for io in p.get_captured_tensors()]
    assert caps == [("input_0", 0), ("input_1", 0), ("input_2", 0), ("Add_1", 0)]
    graph = p._live_graph()
    assert graph.name == "MatMulAdd_fuse_pattern"
    assert graph.get_outputs() == [(p.get_captured_tensors()[3].node, 0)]


def test_expression_pattern_several_outputs_and_gap_filled_inputs() -> None:
    p = build_expression_pattern(MatMulAdd(), "two_outputs")
    caps = [io.node.name for io in p.get_captured_tensors()]
    assert caps == ["input_0", "input_1", "Abs_1", "Relu_0"]
    q = build_expression_pattern(MatMulAdd(), "uses_only_second")
    assert [io.node.name for io in q.get_captured_tensors()] == ["input_0", "input_1", "Relu_0"]


def test_expression_pattern_returning_a_graph() -> None:
    p = build_expression_pattern(MatMulAdd(), "returns_graph")
    assert p._live_graph().name == "given" and p.get_captured_tensors() == []


@pytest.mark.parametrize(
    ("method", "text"),
    [
        ("returns_patterns", "A @pattern method supports a single pattern only"),
        ("returns_nothing", "Expression-style patterns must return a TensorHolder"),
        ("returns_empty", "Expression-style patterns must return a TensorHolder"),
        ("returns_mixed", "Expression-style patterns must return a TensorHolder"),
    ],
)
def test_expression_pattern_bad_results(method: str, text: str) -> None:
    with pytest.raises(TypeError, match=text):
        build_expression_pattern(MatMulAdd(), method)
