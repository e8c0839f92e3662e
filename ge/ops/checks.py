"""Op-level checks that ``Graph.verify()`` runs on every node of a registered op type.

A node must fit its op's IR (port count per input/output, required inputs connected, required
attributes present with the right kind) and its recorded output descs must equal what the
op's infer rule gives now. Nodes of unregistered op types (from a file written by GE, say) are
not checked: there is nothing to check them against.
"""

from __future__ import annotations

from collections.abc import Iterator

from ge.error import GeError
from ge.graph._printer import format_desc
from ge.graph._verify import register_node_check
from ge.graph.node import Node
from ge.ops.infer import infer_node, inferred_in_this_verify
from ge.ops.layout import input_groups, output_groups
from ge.ops.registry import find_op
from ge.ops.schema import OpDef

__all__ = ["check_descs", "check_node"]


def check_node(node: Node) -> Iterator[str]:
    """Problems of ``node`` against its op definition, each saying what to fix."""
    op = find_op(node.type)
    if op is None:
        return
    try:
        groups = input_groups(op, node)
        output_groups(op, node)
    except GeError as e:
        yield f"{e}; rebuild the node with ge.ops.add_op_node"
        return
    edges = node.inputs
    for spec, ports in zip(op.inputs, groups, strict=True):
        required = not spec.optional and not spec.dynamic and op.io != "input"
        if required and edges[ports[0]] is None:
            yield f"node {node.name} ({op.type}): required input '{spec.name}' is not connected"
        elif spec.dynamic and op.io != "input":  # every instance of a dynamic input is fed
            loose = [k for k, port in enumerate(ports) if edges[port] is None]
            if loose:
                yield (
                    f"node {node.name} ({op.type}): dynamic input '{spec.name}' instances "
                    f"{loose} are not connected; connect them or rebuild the node with fewer"
                )
    for attr in op.attrs:
        stored = node.attr_value(attr.name)
        if stored is None:
            if attr.required:
                yield f"node {node.name} ({op.type}): required attribute '{attr.name}' is missing"
        elif stored.type != attr.type:
            yield (
                f"node {node.name} ({op.type}): attribute '{attr.name}' is "
                f"{stored.type.name}, the op declares {attr.type.name}"
            )
    yield from _subgraph_slots(node, op)


def _subgraph_slots(node: Node, op: OpDef) -> Iterator[str]:
    names = node.subgraph_names
    if not names and not op.subgraphs:
        return
    fixed = sum(1 for s in op.subgraphs if not s.dynamic)
    dynamic = any(s.dynamic for s in op.subgraphs)
    if len(names) < fixed or (not dynamic and len(names) != fixed):
        expected = [s.name for s in op.subgraphs]
        yield (
            f"node {node.name} ({op.type}) has {len(names)} subgraphs, the op declares "
            f"{expected}; attach them with Graph.set_node_subgraph"
        )
    for i, name in enumerate(names):
        if not name:
            yield (
                f"node {node.name} ({op.type}): subgraph slot {i} is empty; attach a graph "
                f"with Graph.set_node_subgraph"
            )


def check_descs(node: Node) -> Iterator[str]:
    """Whether ``node``'s recorded output descs are what its op's infer rule gives now (only
    for a node that fits its op; ``check_node`` reports one that does not)."""
    op = find_op(node.type)
    if op is None:
        return
    graph = node.graph
    if graph is not None and inferred_in_this_verify(graph):
        return  # its parent's check just inferred the whole graph: it holds what infers
    try:
        input_groups(op, node)
        output_groups(op, node)
    except GeError:
        return
    try:
        inferred = infer_node(node)
    except GeError as e:
        yield f"node {node.name}: {e}"
        return
    for port, (have, want) in enumerate(zip(node.output_descs, inferred, strict=True)):
        if list(have._shape) != list(want._shape) or have._data_type != want._data_type:
            yield (
                f"node {node.name} output {port} is recorded as {format_desc(have)} but "
                f"infers to {format_desc(want)}; run ge.ops.infer_graph after editing"
            )


register_node_check(check_node)
register_node_check(check_descs, infer=True)
