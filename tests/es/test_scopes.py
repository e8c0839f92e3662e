"""``attr_scope`` and ``control_dependency_scope`` (GE_REFERENCE.md §3.3, §10 item 7)."""

from __future__ import annotations

import threading
import types
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder, TensorHolder
from ge.es.graph_builder import attr_scope, control_dependency_scope
from ge.graph import Graph, Node
from ge.ops import eval_graph

# A generous safety timeout for thread hand-offs; nothing asserts on elapsed time.
WAIT = 30.0


def node(graph: Graph, holder: TensorHolder) -> Node:
    return graph.find_node_by_name(holder.name)


def user_attrs(n: Node) -> dict[str, Any]:
    return {k: n.get_attr(k) for k in n.get_attr_names() if k.startswith("_s")}


# ============================================================================== attr_scope ====


def test_attr_scope_applies_to_every_kind_of_node() -> None:
    b = GraphBuilder("g")
    with attr_scope({"_s_label": "s1", "_s_id": 3}):
        x = b.create_input(0, shape=[2])
        c = b.create_const_float([1.0, 2.0])
        y = x + c  # operator
        z = ge.es.Relu(y)  # generated op
        w = np.exp(z)  # numpy protocol
        s = z * 2.0  # operator with a TensorLike constant
    outside = x - 1.0
    g = b.build_and_reset([w, s, outside])
    expected = {"_s_label": "s1", "_s_id": 3}
    for holder in (x, c, y, z, w, s):
        assert user_attrs(node(g, holder)) == expected, holder.name
    const_of_s = node(g, s).get_in_data_nodes_and_port_indexes(1)[0]
    assert const_of_s.type == "Const"
    assert user_attrs(const_of_s) == expected
    assert user_attrs(node(g, outside)) == {}
    assert user_attrs(node(g, outside).get_in_data_nodes_and_port_indexes(1)[0]) == {}
    # the scope does not change what the graph computes
    a = np.array([-3.0, 0.5], np.float32)
    got = eval_graph(g, [a])
    np.testing.assert_allclose(
        got[0], np.exp(np.maximum(a + np.array([1.0, 2.0], np.float32), 0)), rtol=1e-6
    )
    np.testing.assert_allclose(got[2], a - 1.0)


def test_attr_scope_nesting_inner_overrides_and_restores() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with attr_scope({"_s_a": 1, "_s_b": "outer"}):
        y1 = ge.es.Relu(x)
        with attr_scope({"_s_b": "inner", "_s_c": True}):
            y2 = ge.es.Relu(x)
            with attr_scope({"_s_a": 2.5}):
                y3 = ge.es.Relu(x)
            y4 = ge.es.Relu(x)
        y5 = ge.es.Relu(x)
    y6 = ge.es.Relu(x)
    g = b.build_and_reset([y1, y2, y3, y4, y5, y6])
    assert user_attrs(node(g, y1)) == {"_s_a": 1, "_s_b": "outer"}
    assert user_attrs(node(g, y2)) == {"_s_a": 1, "_s_b": "inner", "_s_c": True}
    assert user_attrs(node(g, y3)) == {"_s_a": 2.5, "_s_b": "inner", "_s_c": True}
    assert user_attrs(node(g, y4)) == {"_s_a": 1, "_s_b": "inner", "_s_c": True}
    assert user_attrs(node(g, y5)) == {"_s_a": 1, "_s_b": "outer"}
    assert user_attrs(node(g, y6)) == {}


def test_attr_scope_restored_after_an_exception() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(ZeroDivisionError), attr_scope({"_s_a": 1}):
        _ = 1 / 0
    y = ge.es.Relu(x)
    assert user_attrs(node(b.build_and_reset([y]), y)) == {}


def test_attr_scope_value_kinds() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    values = {"_s_i": 7, "_s_f": 0.5, "_s_s": "t", "_s_b": False, "_s_li": [1, 2], "_s_ls": ["a"]}
    with attr_scope(values):
        y = ge.es.Relu(x)
    n = node(b.build_and_reset([y]), y)
    got = user_attrs(n)
    assert got == values
    assert got["_s_b"] is False
    assert type(got["_s_i"]) is int


def test_explicit_op_attrs_win_over_the_scope() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    with attr_scope({"transpose_x1": True}):
        y = ge.es.MatMulV2(x, x, transpose_x1=False)
    n = node(b.build_and_reset([y]), y)
    assert n.get_attr("transpose_x1") is False


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"key": "value"},
            "Unsupported attribute type: <class 'dict'> for value: {'key': 'value'}",
        ),
        ([1, "a"], "Unsupported attribute type: <class 'list'> for value: [1, 'a']"),
    ],
)
def test_attr_scope_rejects_unsupported_values(value: Any, text: str) -> None:
    """As GE-PY, the value is converted when a node is made in the scope, not on entry."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with attr_scope({"_s_bad": value}):
        pass  # no node: no error
    with pytest.raises(ValueError) as info, attr_scope({"_s_bad": value}):
        ge.es.Relu(x)
    assert text in str(info.value)
    # the failed call added nothing, and nothing of the scope is active after it
    y = ge.es.Relu(x)
    g = b.build_and_reset([y])
    assert [n.type for n in g.get_direct_nodes()] == ["Data", "Relu", "NetOutput"]
    assert user_attrs(node(g, y)) == {}


def test_attr_scope_takes_any_mapping_and_refuses_others() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with attr_scope(types.MappingProxyType({"_s_a": 1})):
        y = ge.es.Relu(x)
    assert user_attrs(node(b.build_and_reset([y]), y)) == {"_s_a": 1}
    bad: Any = [("_s_a", 1)]
    with pytest.raises(TypeError, match="'list' object is not a mapping"), attr_scope(bad):
        pass


# ================================================================ control_dependency_scope ====


def ctrl(graph: Graph, holder: TensorHolder) -> set[str]:
    return {n.name for n in node(graph, holder).get_in_control_nodes()}


def test_control_dependency_scope_adds_edges_to_every_new_node() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a = ge.es.Relu(x)
    c = ge.es.Exp(x)
    with control_dependency_scope([a, c]):
        y = x + 1.0  # a Const and an Add
        z = ge.es.Abs(y)
        k = b.create_scalar_float(3.0)
    after = ge.es.Neg(x)
    g = b.build_and_reset([y, z, k, after, a, c])
    deps = {a.name, c.name}
    assert ctrl(g, y) == deps
    assert ctrl(g, z) == deps
    assert ctrl(g, k) == deps
    const_of_y = node(g, y).get_in_data_nodes_and_port_indexes(1)[0]
    assert {n.name for n in const_of_y.get_in_control_nodes()} == deps
    assert ctrl(g, after) == set()
    assert ctrl(g, a) == set()
    arr = np.array([-1.0, 2.0], np.float32)
    got = eval_graph(g, [arr])
    np.testing.assert_allclose(got[1], np.abs(arr + 1.0))


def test_control_dependency_scope_nesting_appends() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a = ge.es.Relu(x)
    c = ge.es.Exp(x)
    with control_dependency_scope([a]):
        y1 = ge.es.Abs(x)
        with control_dependency_scope([c]):
            y2 = ge.es.Abs(x)
        y3 = ge.es.Abs(x)
    y4 = ge.es.Abs(x)
    g = b.build_and_reset([y1, y2, y3, y4])
    assert ctrl(g, y1) == {a.name}
    assert ctrl(g, y2) == {a.name, c.name}
    assert ctrl(g, y3) == {a.name}
    assert ctrl(g, y4) == set()


def test_control_dependency_scope_type_check() -> None:
    """As GE-PY: a tuple fails on entry; elements are checked when a node is made inside."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    text = r'can only concatenate list \(not "tuple"\) to list'
    with pytest.raises(TypeError, match=text), control_dependency_scope((x,)):  # type: ignore[arg-type]
        pass
    with control_dependency_scope([1]):  # type: ignore[list-item]
        with pytest.raises(TypeError, match="src_tensors must be a list of TensorHolder"):
            ge.es.Relu(x)
        with pytest.raises(TypeError, match="src_tensors must be a list of TensorHolder"):
            b.create_scalar_float(1.0)
    y = ge.es.Relu(x)
    g = b.build_and_reset([y])
    assert [n.type for n in g.get_direct_nodes()] == ["Data", "Relu", "NetOutput"]


def test_control_dependency_scope_across_builders() -> None:
    """GE applies the scope to every node made inside it, whichever builder makes it."""
    a = GraphBuilder("a")
    dep = ge.es.Relu(a.create_input(0, shape=[2]))
    b = GraphBuilder("b")
    with control_dependency_scope([dep]):
        y = b.create_input(0, shape=[2])
    assert [n.name for n in y._node.get_in_control_nodes()] == [dep.name]


# ========================================================================== thread-locality ====


def test_scopes_are_thread_local() -> None:
    """Thread T enters both scopes and waits; meanwhile the main thread builds and must see
    neither. Then the main thread enters its own scopes while T builds, and T must see none."""
    main_b = GraphBuilder("main")
    mx = main_b.create_input(0, shape=[2])
    m_dep = ge.es.Relu(mx)

    entered = threading.Event()
    main_built = threading.Event()
    main_in_scope = threading.Event()
    thread_built = threading.Event()
    result: dict[str, Any] = {}

    def worker() -> None:
        try:
            tb = GraphBuilder("thread")
            tx = tb.create_input(0, shape=[2])
            t_dep = ge.es.Relu(tx)
            with attr_scope({"_s_thread": 1}), control_dependency_scope([t_dep]):
                entered.set()
                assert main_built.wait(WAIT)
                inside = ge.es.Abs(tx)
            assert main_in_scope.wait(WAIT)
            plain = ge.es.Neg(tx)
            thread_built.set()
            g = tb.build_and_reset([inside, plain])
            result["inside"] = (user_attrs(node(g, inside)), ctrl(g, inside))
            result["plain"] = (user_attrs(node(g, plain)), ctrl(g, plain))
            result["dep"] = t_dep.name
        except BaseException as e:  # reported to the main thread
            result["error"] = e
            entered.set()
            thread_built.set()

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert entered.wait(WAIT)
        m1 = ge.es.Abs(mx)  # built while the thread is inside its scopes
        main_built.set()
        with attr_scope({"_s_main": 2}), control_dependency_scope([m_dep]):
            main_in_scope.set()
            assert thread_built.wait(WAIT)
            m2 = ge.es.Exp(mx)
    finally:
        main_built.set()
        main_in_scope.set()
        t.join(WAIT)
    assert not t.is_alive()
    if "error" in result:
        raise result["error"]
    g = main_b.build_and_reset([m1, m2])
    assert user_attrs(node(g, m1)) == {}
    assert ctrl(g, m1) == set()
    assert user_attrs(node(g, m2)) == {"_s_main": 2}
    assert ctrl(g, m2) == {m_dep.name}
    assert result["inside"] == ({"_s_thread": 1}, {result["dep"]})
    assert result["plain"] == ({}, set())
