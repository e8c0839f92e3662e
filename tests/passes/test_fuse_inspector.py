"""ge.passes.fuse_inspector: can_fuse reasons in check order, report_fuse failures and records
(GE_ERRORS.md §9.4)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from pathlib import Path

import pytest

from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.passes.base import PassContext
from ge.passes.fuse_inspector import FuseCheckResult, ReportStatus, can_fuse, report_fuse

LABELS = (
    "_user_stream_label",
    "_super_kernel_scope",
    "_super_kernel_options",
    "_op_aicore_num",
    "_op_vectorcore_num",
)


def chain(n: int, name: str = "g") -> tuple[Graph, list[Node]]:
    """``n0 -> n1 -> ...``: Relu nodes in a line."""
    g = Graph(name)
    nodes = [g.add_node("Relu", f"n{i}", num_inputs=1, num_outputs=1) for i in range(n)]
    for a, b in itertools.pairwise(nodes):
        g.add_data_edge(a, 0, b, 0)
    return g, nodes


def ctx(name: str = "MyPass") -> PassContext:
    return PassContext._create(name, {})


def reason(nodes: list[Node]) -> str:
    result = can_fuse(nodes)
    assert result.ok is (result.reason == "")
    return result.reason


# --- can_fuse --------------------------------------------------------------------------------


def test_result_is_a_frozen_dataclass() -> None:
    result = FuseCheckResult(True)
    assert result.reason == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.ok = False  # type: ignore[misc]


def test_fusible_chain() -> None:
    _, (a, b, c) = chain(3)
    assert can_fuse([a, b]) == FuseCheckResult(True, "")
    assert can_fuse(n for n in (a, b, c)).ok  # any iterable


def test_empty() -> None:
    assert can_fuse([]) == FuseCheckResult(False, "nodes_before_fuse is empty")


def test_argument_errors() -> None:
    _, (a, b) = chain(2)
    with pytest.raises(TypeError, match=r"^nodes must contain only ge\.graph\.Node objects$"):
        can_fuse([a, "b"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^can_fuse\(\): incompatible function arguments"):
        can_fuse(5)  # type: ignore[arg-type]
    a.graph.remove_node(b)  # type: ignore[union-attr]
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        can_fuse([a, b])


def stale_chain(tmp_path: Path) -> tuple[Graph, list[Node]]:
    """Nodes whose graph was reloaded: they name the graph, which no longer holds them."""
    g, nodes = chain(2)
    path = tmp_path / "g.air"
    g.save_to_air(path)
    g.load_from_air(path)
    assert nodes[0].graph is g and g.find_node_by_name("n0") is not nodes[0]
    return g, nodes


def test_owner_graph_is_null(tmp_path: Path) -> None:
    g, (old0, _) = stale_chain(tmp_path)
    assert reason([old0, g.find_node_by_name("n1")]) == "owner graph is null"
    assert reason([g.find_node_by_name("n1"), old0]) == "nodes belong to different graphs, node: n0"


def test_different_graphs() -> None:
    _, (a, b) = chain(2)
    _, (x,) = chain(1, "other")
    assert reason([a, b, x]) == "nodes belong to different graphs, node: n0"
    _, (y, z) = chain(2, "third")
    assert reason([a, z]) == "nodes belong to different graphs, node: n1"
    del y


@pytest.mark.parametrize("key", LABELS)
def test_string_attr_conflicts(key: str) -> None:
    _, (a, b, c) = chain(3)
    a.set_attr(key, "x")
    b.set_attr(key, "x")
    assert reason([a, b]) == ""
    c.set_attr(key, "y")
    assert reason([a, b, c]) == (
        f"Fusion is not supported because there are multiple {key} [x][y] between nodes "
        "[n0][n1][n2]"
    )


def test_a_missing_label_is_a_value_of_its_own() -> None:
    _, (a, b) = chain(2)
    b.set_attr("_user_stream_label", "s")
    assert reason([a, b]) == (
        "Fusion is not supported because there are multiple _user_stream_label [][s] between "
        "nodes [n0][n1]"
    )
    _, (c, d) = chain(2)
    c.set_attr("_op_aicore_num", 4)  # not a string: read as absent
    assert reason([c, d]) == ""


def test_label_attrs_are_checked_in_order() -> None:
    _, (a, b) = chain(2)
    a.set_attr("_op_vectorcore_num", "1")
    a.set_attr("_super_kernel_scope", "s")
    assert "multiple _super_kernel_scope" in reason([a, b])


@pytest.mark.parametrize(
    ("key", "allowed", "bad"),
    [("_deterministic", "{0,1}", "2"), ("_deterministic_level", "{0,1,2,3}", "4")],
)
def test_deterministic_rows(key: str, allowed: str, bad: str) -> None:
    _, (a, b, c) = chain(3)
    a.set_attr(key, 1)
    assert reason([a, b]) == (
        f"Fusion is not supported because attr {key} of node [n0] is not string."
    )
    a.set_attr(key, bad)
    assert reason([a, b]) == (
        f"Fusion is not supported because attr {key} of node [n0] should be in {allowed}, "
        f"but got {bad}."
    )
    a.set_attr(key, "one")
    assert reason([a, b]).endswith(f"should be in {allowed}, but got one.")
    a.set_attr(key, "1")
    b.set_attr(key, "01")
    assert reason([a, b, c]) == ""  # c has none: skipped; "01" is 1
    c.set_attr(key, "0")
    assert reason([a, b, c]) == (
        f"Fusion is not supported because there are multiple {key} [1][0] between nodes "
        "[n0][n1][n2]"
    )


def test_deterministic_before_level_and_validation_before_comparison() -> None:
    _, (a, b, c) = chain(3)
    a.set_attr("_deterministic_level", "9")
    b.set_attr("_deterministic", 1)
    assert "attr _deterministic of node [n1] is not string" in reason([a, b])
    a.set_attr("_deterministic", "0")
    b.set_attr("_deterministic", "1")
    c.set_attr("_deterministic", "7")
    assert "node [n2] should be in {0,1}, but got 7" in reason([a, b, c])


def test_labels_before_deterministic_before_cycle() -> None:
    _, (a, _b, c) = chain(3)
    a.set_attr("_deterministic", "5")
    assert "should be in" in reason([a, c])
    a.set_attr("_user_stream_label", "s")
    assert "multiple _user_stream_label" in reason([a, c])


def test_cycle_through_an_outside_node() -> None:
    _, (a, b, c) = chain(3)
    assert reason([a, c]) == "it will create cycle after fuse"
    assert reason([a, b]) == "" and reason([b, c]) == "" and reason([a, b, c]) == ""


def test_cycle_through_a_control_edge() -> None:
    g = Graph("g")
    a = g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    x = g.add_node("Relu", "x", num_inputs=1, num_outputs=1)
    b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1)
    g.add_control_edge(a, x)
    g.add_data_edge(x, 0, b, 0)
    assert reason([a, b]) == "it will create cycle after fuse"
    assert reason([a, x]) == ""


def test_no_cycle_across_parallel_branches() -> None:
    g = Graph("g")
    src = g.add_node("Relu", "src", num_inputs=1, num_outputs=1)
    left = g.add_node("Relu", "left", num_inputs=1, num_outputs=1)
    right = g.add_node("Relu", "right", num_inputs=1, num_outputs=1)
    join = g.add_node("Add", "join", num_inputs=2, num_outputs=1)
    g.add_data_edge(src, 0, left, 0)
    g.add_data_edge(src, 0, right, 0)
    g.add_data_edge(left, 0, join, 0)
    g.add_data_edge(right, 0, join, 1)
    assert reason([left, right]) == ""
    assert reason([src, join]) == "it will create cycle after fuse"
    assert reason([src, left, right, join]) == ""


def test_cycle_check_stops_at_the_region_end(monkeypatch: pytest.MonkeyPatch) -> None:
    import ge.passes.fuse_inspector as fi

    _, nodes = chain(5000)
    walked: list[str] = []
    real = fi._successors

    def counting(node: Node) -> Iterable[Node]:
        walked.append(node.name)
        return real(node)

    monkeypatch.setattr(fi, "_successors", counting)
    assert can_fuse(nodes[:2]).ok
    assert walked == ["n0", "n1"]  # n2 comes after the region's last node: never walked
    walked.clear()
    assert not can_fuse([nodes[10], nodes[12]]).ok
    assert sorted(walked) == ["n10", "n11", "n12"]


def test_duplicates_are_harmless() -> None:
    _, (a, b, _c) = chain(3)
    assert reason([a, a, b]) == ""


# --- report_fuse -----------------------------------------------------------------------------


def test_report_records_names() -> None:
    g, (a, b, c) = chain(3)
    new = g.add_node("Relu", "fused", num_inputs=1, num_outputs=1)
    context = ctx()
    assert report_fuse([a, b], [new], context) is None
    report_fuse([c], [], context)  # delete-only
    assert [(r.nodes_before, r.nodes_after) for r in context._fuse_records] == [
        (["n0", "n1"], ["fused"]),
        (["n2"], []),
    ]
    assert context.get_error_message() == ""


def failure(before: list[Node], after: list[Node], status: ReportStatus, name: str = "P") -> str:
    context = ctx(name)
    with pytest.raises(
        RuntimeError,
        match=rf"^Failed to report fusion result, pass_name={name}, status={int(status)}: ",
    ) as info:
        report_fuse(before, after, context)
    assert context.get_error_message() == str(info.value)
    assert context._fuse_records == []
    return str(info.value)


def test_report_failures(tmp_path: Path) -> None:
    _g, (a, b) = chain(2)
    _, (x,) = chain(1, "other")
    assert failure([], [a], ReportStatus.EMPTY_BEFORE).endswith("nodes_before_fuse is empty")
    assert failure([a, x], [], ReportStatus.BEFORE_DIFFERENT_GRAPHS).endswith(
        "nodes belong to different graphs, node: n0"
    )
    assert "nodes_after" in failure([a], [x], ReportStatus.AFTER_DIFFERENT_GRAPH)
    assert failure([a], [b], ReportStatus.EMPTY_PASS_NAME, name="").endswith("pass name is empty")
    s, (old0, _) = stale_chain(tmp_path)
    assert failure([old0], [], ReportStatus.OWNER_NULL).endswith("owner graph is null")
    del s


def test_report_argument_errors() -> None:
    g, (a, b) = chain(2)
    with pytest.raises(TypeError, match=r"^nodes_before must contain only ge\.graph\.Node"):
        report_fuse([a, 1], [], ctx())  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^nodes_after must contain only ge\.graph\.Node objects$"):
        report_fuse([a], ["b"], ctx())  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^report_fuse\(\): incompatible function arguments"):
        report_fuse(a, [], ctx())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^report_fuse\(\): incompatible function arguments"):
        report_fuse([a], [b], object())
    g.remove_node(b)
    with pytest.raises(RuntimeError, match=r"^Node handle is empty$"):
        report_fuse([a], [b], ctx())


def test_report_with_a_context_without_records() -> None:
    """A context object without ``_record_fuse`` (duck-typed) is still accepted."""

    class Bare:
        message = ""

        def get_pass_name(self) -> str:
            return "P"

        def set_error_message(self, message: str) -> None:
            self.message = message

    _, (a,) = chain(1)
    report_fuse([a], [], Bare())
