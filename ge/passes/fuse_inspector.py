"""Fusion checks for graph passes: may a node set become one node (``can_fuse``), and telling
the compiler what a hand-written rewrite replaced (``report_fuse``).

Both follow GE_ERRORS.md §9.4. ``can_fuse`` never raises for a verdict: it returns
``FuseCheckResult(ok, reason)`` with the first failing reason of this table, checked in order.

=====  ==========================================================================================
 row   reason (``<…>`` filled in)
=====  ==========================================================================================
  1    ``nodes_before_fuse is empty``
  3    ``owner graph is null`` — the first node is stale: it names a graph that no longer holds
       it (the old nodes of a graph reloaded with ``load_from_air``)
  4    ``nodes belong to different graphs, node: <name>``
  5    ``Fusion is not supported because there are multiple <key> [<v1>][<v2>]… between nodes
       [<n1>][<n2>]…`` for the string attributes ``_LABEL_ATTRS``
 7-9   the ``_deterministic`` rows, then the ``_deterministic_level`` rows (``_LEVEL_ATTRS``)
 10    ``it will create cycle after fuse``
=====  ==========================================================================================

Rows 2 and 6 (a GNode that cannot be converted, a null op desc) cannot happen here: our nodes
are their own op descs. Bad arguments raise instead (§9.4): an element that is not a ``Node`` →
``TypeError``; a node removed from its graph (``node.graph is None``, GE's null handle) →
``RuntimeError("Node handle is empty")``.

Decisions where GE's text is silent:

* Row 5: a node without the attribute (or with a non-string value) counts as the value ``""``,
  so a labelled node and an unlabelled one do not fuse (FE treats a missing stream label as a
  label of its own). Values are listed in first-seen order (GE's follow a hash set) and the
  nodes are all the nodes given, in order.
* Rows 7-9: a node without the attribute is skipped. Every node is validated (rows 7, 8) before
  the values are compared (row 9); values print as the integers they parse to, so ``"1"`` and
  ``"01"`` agree.
* Row 10: the set fused into one node creates a cycle when some path leaves the set and comes
  back (data or control edges). The walk starts at the set's outside successors and only visits
  nodes placed before the set's last node in a topological order: a node after it cannot reach a
  member.

``report_fuse`` fails with ``RuntimeError("Failed to report fusion result, pass_name=<name>,
status=<status>: <reason>")``, the text also stored with ``context.set_error_message``;
``ReportStatus`` numbers the causes. GE also marks the pass name on the new nodes; §9.4 names no
attribute for it, so nothing is written on them. On success the names are recorded with the
context's ``_record_fuse(before, after)`` (``PassContext`` keeps them for the compile log).

    >>> from ge.graph.graph import Graph
    >>> g = Graph("g"); a = g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    >>> b = g.add_node("Relu", "b", num_inputs=1, num_outputs=1); g.add_data_edge(a, 0, b, 0)
    >>> can_fuse([a, b])
    FuseCheckResult(ok=True, reason='')
    >>> b.set_attr("_user_stream_label", "s1"); can_fuse([a, b]).reason[-55:]
    'multiple _user_stream_label [][s1] between nodes [a][b]'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ge.error import GeError, GeTypeError, GraphError
from ge.graph._verify import topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.types import AttrValueType

__all__ = [
    "FuseCheckResult",
    "ReportStatus",
    "can_fuse",
    "checked_nodes",
    "fuse_creates_cycle",
    "incompatible_arguments",
    "report_fuse",
]

EMPTY_NODES = "nodes_before_fuse is empty"

_LABEL_ATTRS = (
    "_user_stream_label",
    "_super_kernel_scope",
    "_super_kernel_options",
    "_op_aicore_num",
    "_op_vectorcore_num",
)
_INT = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class FuseCheckResult:
    """Whether a node set may be fused into one node; ``reason`` says why not (``""`` if ok)."""

    ok: bool
    reason: str = ""


@dataclass(frozen=True)
class _LevelAttr:
    """A string attribute holding a small int that fused nodes must agree on."""

    key: str
    allowed: range

    @property
    def allowed_text(self) -> str:
        return "{" + ",".join(str(v) for v in self.allowed) + "}"


_LEVEL_ATTRS = (
    _LevelAttr("_deterministic", range(2)),
    _LevelAttr("_deterministic_level", range(4)),
)


class ReportStatus(IntEnum):
    """Why ``report_fuse`` failed (the ``status=`` of its message)."""

    SUCCESS = 0
    EMPTY_BEFORE = 1  # nodes_before is empty
    OWNER_NULL = 2  # the first of nodes_before is stale (no owner graph)
    BEFORE_DIFFERENT_GRAPHS = 3  # nodes_before span several graphs
    AFTER_DIFFERENT_GRAPH = 4  # a node of nodes_after is in another graph than nodes_before
    EMPTY_PASS_NAME = 5  # the context has no pass name


# --- arguments ---------------------------------------------------------------------------------


def incompatible_arguments(api: str, signature: str, *given: object) -> GeTypeError:
    """pybind11's ``TypeError`` for arguments of the wrong kind (GE_ERRORS.md §0)."""
    invoked = ", ".join(repr(v) for v in given)
    return GeTypeError(
        f"{api}(): incompatible function arguments. The following argument types are "
        f"supported:\n    1. {signature}\n\nInvoked with: {invoked}"
    )


def checked_nodes(nodes: object, what: str, api: str, signature: str) -> list[Node]:
    """``nodes`` as a list of nodes still in a graph, converted as GE's binding does: a
    non-iterable → pybind11's ``TypeError``; an element that is not a Node → ``TypeError``
    "<what> must contain only ge.graph.Node objects"; a removed node → "Node handle is empty"."""
    if not isinstance(nodes, Iterable):
        raise incompatible_arguments(api, signature, nodes)
    checked = []
    for node in nodes:
        if not isinstance(node, Node):
            raise GeTypeError(f"{what} must contain only ge.graph.Node objects")
        if node.graph is None:
            raise GeError("Node handle is empty")
        checked.append(node)
    return checked


def _owner(node: Node) -> Graph | None:
    """The graph that holds ``node``; ``None`` for a stale node (its graph no longer holds it)."""
    graph = node.graph
    if graph is None:
        return None
    try:
        found = graph.find_node_by_name(node.name)
    except GraphError:
        return None
    return graph if found is node else None


# --- can_fuse ----------------------------------------------------------------------------------


def _owners_problem(nodes: Sequence[Node]) -> str:
    """Rows 3 and 4."""
    owner = _owner(nodes[0])
    if owner is None:
        return "owner graph is null"
    for node in nodes[1:]:
        if _owner(node) is not owner:
            return f"nodes belong to different graphs, node: {node.name}"
    return ""


def _string_attr(node: Node, key: str) -> str:
    stored = node.attr_value(key)
    return stored.value if stored is not None and stored.type is AttrValueType.VT_STRING else ""


def _labels_problem(nodes: Sequence[Node]) -> str:
    """Row 5: the nodes must agree on every attribute of ``_LABEL_ATTRS``."""
    for key in _LABEL_ATTRS:
        values = dict.fromkeys(_string_attr(n, key) for n in nodes)
        if len(values) > 1:
            return (
                f"Fusion is not supported because there are multiple {key} "
                f"{''.join(f'[{v}]' for v in values)} between nodes "
                f"{''.join(f'[{n.name}]' for n in nodes)}"
            )
    return ""


def _level_problem(nodes: Sequence[Node], level: _LevelAttr) -> str:
    """Rows 7-9 for one attribute: every holder's value is a string of an allowed int, and
    all holders agree."""
    holders: list[tuple[Node, int]] = []
    for node in nodes:
        stored = node.attr_value(level.key)
        if stored is None:
            continue
        where = f"attr {level.key} of node [{node.name}]"
        if stored.type is not AttrValueType.VT_STRING:
            return f"Fusion is not supported because {where} is not string."
        text = stored.value
        value = int(text) if _INT.fullmatch(text) else None
        if value not in level.allowed:
            return (
                f"Fusion is not supported because {where} should be in "
                f"{level.allowed_text}, but got {text}."
            )
        holders.append((node, int(text)))
    values = dict.fromkeys(v for _, v in holders)
    if len(values) > 1:
        return (
            f"Fusion is not supported because there are multiple {level.key} "
            f"{''.join(f'[{v}]' for v in values)} between nodes "
            f"{''.join(f'[{n.name}]' for n, _ in holders)}"
        )
    return ""


def _levels_problem(nodes: Sequence[Node]) -> str:
    for level in _LEVEL_ATTRS:
        problem = _level_problem(nodes, level)
        if problem:
            return problem
    return ""


def _successors(node: Node) -> Iterable[Node]:
    for consumers in node.users_by_port:
        for dst, _ in consumers:
            yield dst
    yield from node.control_outputs


def fuse_creates_cycle(nodes: Iterable[Node]) -> bool:
    """Whether fusing ``nodes`` (all of one graph) into one node would make a cycle: some
    path of data or control edges leaves the set and comes back to it."""
    members = dict.fromkeys(nodes)  # ordered, so the walk is the same on every run
    stack = [s for m in members for s in _successors(m) if s not in members]
    if len(members) < 2 or not stack:
        return False  # one node (a decomposed one) or nothing outside after the set
    graph = next(iter(members)).graph
    assert graph is not None  # callers pass nodes of a graph
    order, _ = topological_order(graph)
    position = {node: i for i, node in enumerate(order)}
    # Nodes on a cycle already (no position) are walked: -1 never prunes them.
    last = max(position.get(m, len(order)) for m in members)
    seen: set[Node] = set()
    while stack:
        node = stack.pop()
        if node in seen or position.get(node, -1) > last:
            continue
        seen.add(node)
        for succ in _successors(node):
            if succ in members:
                return True
            if succ not in seen:
                stack.append(succ)
    return False


def _cycle_problem(nodes: Sequence[Node]) -> str:
    return "it will create cycle after fuse" if fuse_creates_cycle(nodes) else ""


_FUSE_CHECKS: tuple[Callable[[Sequence[Node]], str], ...] = (
    _owners_problem,
    _labels_problem,
    _levels_problem,
    _cycle_problem,
)


def fuse_problem(nodes: Sequence[Node]) -> str:
    """The first reason of the module table why ``nodes`` cannot be fused; ``""`` if none."""
    if not nodes:
        return EMPTY_NODES
    for check in _FUSE_CHECKS:
        problem = check(nodes)
        if problem:
            return problem
    return ""


def can_fuse(nodes: Iterable[Node]) -> FuseCheckResult:
    """Whether ``nodes`` can be fused into one node (see the module table for the reasons).

    >>> can_fuse([])
    FuseCheckResult(ok=False, reason='nodes_before_fuse is empty')
    """
    checked = checked_nodes(
        nodes, "nodes", "can_fuse", "(nodes: Iterable[ge.graph.Node]) -> FuseCheckResult"
    )
    reason = fuse_problem(checked)
    return FuseCheckResult(not reason, reason)


# --- report_fuse -------------------------------------------------------------------------------

_REPORT_SIGNATURE = (
    "(nodes_before: Iterable[ge.graph.Node], nodes_after: Iterable[ge.graph.Node], "
    "context: ge.passes.PassContext) -> None"
)


def is_context(context: object) -> bool:
    """Whether ``context`` behaves as a ``PassContext`` (pass name and error message)."""
    return all(callable(getattr(context, m, None)) for m in ("get_pass_name", "set_error_message"))


def _report_problem(
    before: Sequence[Node], after: Sequence[Node], context: Any
) -> tuple[ReportStatus, str]:
    if not before:
        return ReportStatus.EMPTY_BEFORE, EMPTY_NODES
    owners = _owners_problem(before)
    if owners:
        stale = _owner(before[0]) is None
        return (
            ReportStatus.OWNER_NULL if stale else ReportStatus.BEFORE_DIFFERENT_GRAPHS,
            owners,
        )
    owner = _owner(before[0])
    for node in after:
        if _owner(node) is not owner:
            return (
                ReportStatus.AFTER_DIFFERENT_GRAPH,
                f"node {node.name} of nodes_after is not in the graph of nodes_before",
            )
    if not context.get_pass_name():
        return ReportStatus.EMPTY_PASS_NAME, "the context's pass name is empty"
    return ReportStatus.SUCCESS, ""


def record_fuse(context: Any, before: Sequence[str], after: Sequence[str]) -> None:
    """Tell ``context`` (a ``PassContext``, duck-typed) which nodes a rewrite replaced."""
    record = getattr(context, "_record_fuse", None)
    if callable(record):
        record(list(before), list(after))


def report_fuse(nodes_before: Iterable[Node], nodes_after: Iterable[Node], context: Any) -> None:
    """Report that a pass replaced ``nodes_before`` by ``nodes_after`` (call it after editing the
    graph and before deleting the old nodes; an empty ``nodes_after`` means they are only
    deleted). Raises ``RuntimeError`` for the causes of ``ReportStatus``."""
    if not isinstance(nodes_before, Iterable) or not isinstance(nodes_after, Iterable):
        raise incompatible_arguments("report_fuse", _REPORT_SIGNATURE, nodes_before, nodes_after)
    if not is_context(context):
        raise incompatible_arguments(
            "report_fuse", _REPORT_SIGNATURE, nodes_before, nodes_after, context
        )
    before = checked_nodes(nodes_before, "nodes_before", "report_fuse", _REPORT_SIGNATURE)
    after = checked_nodes(nodes_after, "nodes_after", "report_fuse", _REPORT_SIGNATURE)
    status, reason = _report_problem(before, after, context)
    if status:
        message = (
            f"Failed to report fusion result, pass_name={context.get_pass_name()}, "
            f"status={int(status)}: {reason}"
        )
        context.set_error_message(message)
        raise GeError(message)
    record_fuse(context, [n.name for n in before], [n.name for n in after])
