"""Constant folding: a pure node whose data inputs are all Const nodes becomes Const nodes.

The values come from the op's numpy reference (the same oracle ``eval_graph`` uses), so folding
cannot change results. Decisions: nodes with subgraphs are not folded; results larger than
``MAX_FOLD_ELEMENTS`` stay computed at run time (folding them would bloat the graph and the
AIR file); a reference that fails leaves the node alone (the error then shows at run time,
where it belongs); an op that is not ``foldable`` (Python custom ops: their reference runs
their callbacks, which may launch kernels, be costly or have side effects) is never folded.
"""

from __future__ import annotations

import numpy as np

from ge.compiler._graphs import const_array, fresh_name, is_removable, make_const, op_of
from ge.compiler.refine import mark_users, refine_node, refine_parent
from ge.error import GeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.infer import node_attrs
from ge.ops.layout import input_groups, output_groups
from ge.ops.schema import ExecContext

__all__ = ["MAX_FOLD_ELEMENTS", "fold_constants"]

MAX_FOLD_ELEMENTS = 1 << 16


def _const_inputs(node: Node) -> list[np.ndarray] | None:
    values = []
    for edge in node.inputs:
        if edge is None:
            continue
        value = const_array(edge[0])
        if value is None:
            return None
        values.append(value)
    return values


def _evaluate(node: Node) -> list[np.ndarray] | None:
    op = op_of(node)
    if op is None or op.reference is None or not op.foldable or node.subgraph_names:
        return None
    if not is_removable(node):
        return None
    if _const_inputs(node) is None or node.type == "Const":
        return None
    groups = input_groups(op, node)
    inputs: list[object] = []
    edges_by_port = node.inputs
    for spec, ports in zip(op.inputs, groups, strict=True):
        edges = [edges_by_port[p] for p in ports]
        arrays = [None if e is None else const_array(e[0]) for e in edges]
        inputs.append(arrays if spec.dynamic else arrays[0])
    descs = node.output_descs
    if sum(max(d._shape.get_shape_size(), 0) for d in descs) > MAX_FOLD_ELEMENTS:
        return None  # known to be too big: do not even compute it (a huge Fill or Range)
    try:
        ctx = ExecContext(op, inputs, node_attrs(op, node), outputs=list(descs))
        results = op.reference(ctx)
    except (GeError, ValueError, TypeError, ArithmeticError, MemoryError):
        return None  # includes a result too big to allocate (its size was unknown)
    flat: list[np.ndarray] = []
    for spec, result, group in zip(op.outputs, results, output_groups(op, node), strict=True):
        items = list(result) if spec.dynamic else [result]  # type: ignore[arg-type]
        if len(items) != len(group):
            return None
        flat += [np.asarray(x) for x in items]
    if sum(int(a.size) for a in flat) > MAX_FOLD_ELEMENTS:
        return None
    return flat


def fold_constants(graph: Graph) -> bool:
    """Fold every foldable node of ``graph`` (repeatedly, in one topological sweep).

    The users of each folded value are re-inferred in the same sweep (``ge.compiler.refine``):
    an op that reads an input's value (a shape, perm, axes, paddings) learns dims it recorded
    as ``-1``, and their users follow."""
    from ge.graph._verify import topological_order  # noqa: PLC0415

    changed = False
    stale: set[int] = set()  # nodes reading a value folded (or a desc refined) in this sweep
    refined: set[int] = set()
    order, _ = topological_order(graph)
    for node in order:
        if id(node) in stale and refine_node(node):
            refined.add(id(node))
            mark_users(node, stale)
            changed = True
        values = _evaluate(node)
        if values is None:
            continue
        for port, value in enumerate(values):
            name = fresh_name(graph, node.name if len(values) == 1 else f"{node.name}_{port}")
            if name == node.name:
                name = fresh_name(graph, f"{node.name}_folded")
            const = make_const(graph, name, value, node, port)
            if const.output_desc(0)._shape != node.output_desc(port)._shape:
                refined.add(id(const))  # the value knows dims the node recorded as -1
            graph.replace_all_uses(node, port, const, 0)
            mark_users(const, stale)
        for src in list(node.control_inputs):
            graph.remove_edge(src, -1, node, -1)
        graph.remove_node(node)
        changed = True
    refine_parent(graph, refined)
    return changed
