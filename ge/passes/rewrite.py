"""Local rewrite rules and the one driver that applies them (as tinygrad's ``graph_rewrite``).

A ``Rule`` is anchored at nodes of some op types; ``rule.apply(node, state)`` looks at the node
and what feeds it and returns what should replace the node's output 0, or ``None``:

    (node, port)   an existing value (``Add(x, 0)`` -> ``x``)
    NewOp(...)     a new node of an op type, on existing values (``Div(e, ReduceSum(e))`` ->
                   ``SoftmaxV2(x)``)
    a Graph        (rules made with ``whole_node=True``) a subgraph replacing the whole node:
                   its ``Data`` i reads the node's i-th connected input, its output j replaces
                   the node's output j (``SubgraphRewriter``; how a ``DecomposePass`` runs)

``rewrite(graph, rules, name)`` visits the graph's nodes in creation order (producers first for
graphs built by ``ge.es`` and ``ge.jit``; nodes a rewrite makes come last), tries the rules
of each node's type in order, and applies the first that fires, only when the replacement
describes exactly the value it replaces (same shape and dtype — and a fully known shape when an
existing value is forwarded, since two unknown dims need not be equal — so no rewrite can
change a result's type or broadcast shape). The replaced node and the producers that nothing
uses any more are removed at once. With ``fixed_point=True`` it sweeps again until a sweep
changes nothing. Only pure nodes that no control edge depends on are replaced.

The built-in algebraic simplification (``ge.compiler.simplify``) and pattern recognition
(``ge.compiler.patterns``) are rule tables run by this driver, and so are users'
``DecomposePass``es (``ge.passes._run``); ``state`` is what the rules of one run share (a cache
of Const values; a pass's ``PassContext``, which whole-node replacements report to).

    >>> import ge.es as es
    >>> b = es.GraphBuilder("g"); x = b.create_input(0, shape=[2])
    >>> g = b.build_and_reset([es.Neg(es.Neg(x))])
    >>> def double_neg(node, state):
    ...     inner, _ = node.get_in_data_nodes_and_port_indexes(0)
    ...     return inner.get_in_data_nodes_and_port_indexes(0) if inner.type == "Neg" else None
    >>> rewrite(g, [Rule("double_neg", frozenset({"Neg"}), double_neg)], "demo")
    True
    >>> sorted(n.type for n in g.get_direct_nodes())
    ['Data', 'NetOutput']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ge.error import GeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc

__all__ = ["NewOp", "Rule", "is_removable", "rewrite"]

Port = tuple[Node, int]


@dataclass(frozen=True)
class NewOp:
    """A node to make: ``op_type`` on ``inputs`` (one entry per IR input, ``None`` for an
    absent optional one) with ``attrs``."""

    op_type: str
    inputs: Sequence[Port | None]
    attrs: Mapping[str, Any] = field(default_factory=dict)


Result = Port | NewOp | Graph | None


@dataclass(frozen=True)
class Rule:
    """``apply(node, state)`` for nodes whose type is in ``op_types``; ``name`` names the rule
    in errors. A rule returns values for a node's single output (pure nodes only, the default)
    or, with ``whole_node``, a replacement graph for any node of its types."""

    name: str
    op_types: frozenset[str]
    apply: Callable[[Node, Any], Result]
    whole_node: bool = False


def is_removable(node: Node) -> bool:
    """A pure op node that nothing depends on through a control edge."""
    op = node.op
    return op is not None and op.pure and not op.io and not node.control_outputs


def _same(have: TensorDesc, want: TensorDesc, *, known: bool) -> bool:
    shape = want.get_shape()
    if known and (-1 in shape or shape == [-2]):
        return False
    return have.get_shape() == shape and have.get_data_type() == want.get_data_type()


def _table(rules: Iterable[Rule]) -> dict[str, list[Rule]]:
    table: dict[str, list[Rule]] = {}
    for rule in rules:
        for op_type in sorted(rule.op_types):
            table.setdefault(op_type, []).append(rule)
    return table


def rewrite(
    graph: Graph, rules: Iterable[Rule], name: str, *, fixed_point: bool = False, state: Any = None
) -> bool:
    """Apply ``rules`` to ``graph`` (one sweep, or until nothing fires with ``fixed_point``);
    returns whether anything changed. ``name`` names the rewrite in errors."""
    table = _table(rules)
    changed = False
    while True:
        progress = _sweep(graph, table, name, state)
        changed = changed or progress
        if not (progress and fixed_point):
            return changed


def _sweep(graph: Graph, table: dict[str, list[Rule]], name: str, state: Any) -> bool:
    changed = False
    for node in graph.get_direct_nodes():
        rules = table.get(node.type)
        if rules is None or node.graph is not graph:
            continue
        local = len(node.output_descs) == 1 and is_removable(node)
        for rule in rules:
            if not (rule.whole_node or local):
                continue
            try:
                result = rule.apply(node, state)
            except GeError as e:
                raise GeError(f"rewrite {name}: rule {rule.name} at node {node.name}: {e}") from e
            if result is not None and _apply(graph, node, result, rule, state):
                changed = True
                break
    return changed


def _apply(graph: Graph, node: Node, result: Port | NewOp | Graph, rule: Rule, state: Any) -> bool:
    if isinstance(result, Graph):
        if not rule.whole_node:
            raise GeError(f"rule {rule.name} returned a Graph; make it with whole_node=True")
        _replace_node(node, result, state)
        return True
    if isinstance(result, NewOp):
        port = _make(graph, node, result)
        if port is None:
            return False
    else:
        port = result
        if not _same(port[0].output_desc(port[1]), node.output_desc(0), known=True):
            return False
    graph.replace_all_uses(node, 0, *port)
    _remove_unused(graph, node)
    return True


def _replace_node(node: Node, replacement: Graph, state: Any) -> None:
    """The whole node replaced by ``replacement`` (checked, reported to the context in
    ``state`` when there is one; a refused replacement raises)."""
    from ge.passes.replacement import SubgraphRewriter, node_boundary  # noqa: PLC0415  (a cycle)

    boundary = node_boundary(node)
    if hasattr(state, "get_pass_name"):  # a PassContext: checked with can_fuse and reported
        SubgraphRewriter.replace(boundary, replacement, context=state)
        return
    status = SubgraphRewriter.replace(boundary, replacement)
    if status != 0:
        raise GeError(f"replacing node {node.name} failed (status {status})")


def _make(graph: Graph, node: Node, new: NewOp) -> Port | None:
    from ge.ops.construct import add_op_node  # noqa: PLC0415  (construct imports infer)

    made = add_op_node(
        graph, new.op_type, list(new.inputs), dict(new.attrs), name=_fresh(graph, node, new)
    )
    if not _same(made.output_desc(0), node.output_desc(0), known=False):
        graph.remove_node(made)
        return None
    return made, 0


def _fresh(graph: Graph, node: Node, new: NewOp) -> str:
    base = f"{node.name}_{new.op_type}"
    name, k = base, 0
    while graph.has_node(name):
        k += 1
        name = f"{base}_{k}"
    return name


def _remove_unused(graph: Graph, node: Node) -> None:
    """Remove ``node`` and then every producer left without a use (pure ones only)."""
    outputs = {id(n) for n, _ in graph.get_outputs()}
    stack = [node]
    while stack:
        dead = stack.pop()
        if dead.graph is not graph or id(dead) in outputs or not is_removable(dead):
            continue
        if any(dead.users_by_port):
            continue
        producers = [e[0] for e in dead.inputs if e is not None]
        graph.remove_node(dead)
        stack.extend(producers)
