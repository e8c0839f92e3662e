"""How a node's flat ports map onto its op's IR inputs and outputs.

GE names the ports of IR input ``x`` ``"x"``, or ``"x0", "x1", ...`` when ``x`` is dynamic
(GE_REFERENCE.md §2.3). ``port_groups`` inverts that: it returns, per IR entry, the list of port
indexes. When a node carries no port names (a file written by another tool), a single dynamic
entry takes whatever ports the others leave.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ge.error import GraphError
from ge.graph.node import Node
from ge.ops.schema import OpDef, TensorSpec

__all__ = [
    "FixedLayout",
    "fixed_layout",
    "input_groups",
    "output_groups",
    "port_names",
    "subgraph_names",
]


@dataclass(frozen=True, slots=True)
class FixedLayout:
    """The ports of an op without dynamic inputs or outputs: one port per IR entry, named
    after it, so node building and inference need no port groups (the common case, worked
    out once per op)."""

    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    optional: tuple[bool, ...]  # per input: may be left unconnected
    required: tuple[str, ...]  # names of the inputs that must be connected
    attr_names: frozenset[str]
    checks_dtypes: bool  # whether any input restricts its dtypes


_FIXED_LAYOUTS: dict[OpDef, FixedLayout | None] = {}


def fixed_layout(op: OpDef) -> FixedLayout | None:
    """``op``'s ``FixedLayout``, or ``None`` when it has a dynamic input or output."""
    try:
        return _FIXED_LAYOUTS[op]
    except KeyError:
        pass
    layout = None
    if not any(s.dynamic for s in op.inputs + op.outputs):
        layout = FixedLayout(
            input_names=tuple(s.name for s in op.inputs),
            output_names=tuple(s.name for s in op.outputs),
            optional=tuple(s.optional for s in op.inputs),
            required=tuple(s.name for s in op.inputs if not s.optional),
            attr_names=frozenset(a.name for a in op.attrs),
            checks_dtypes=any(s.dtypes is not None for s in op.inputs),
        )
    _FIXED_LAYOUTS[op] = layout
    return layout


def port_names(specs: Sequence[TensorSpec], counts: Sequence[int]) -> list[str]:
    """Port names for IR entries with the given instance counts (dynamic: ``x0, x1, ...``)."""
    names: list[str] = []
    for spec, count in zip(specs, counts, strict=True):
        names += [f"{spec.name}{k}" for k in range(count)] if spec.dynamic else [spec.name]
    return names


def _groups_by_name(specs: Sequence[TensorSpec], names: Sequence[str]) -> list[list[int]] | None:
    groups: list[list[int]] = []
    pos = 0
    for spec in specs:
        if spec.dynamic:
            group: list[int] = []
            while pos < len(names) and names[pos] == f"{spec.name}{len(group)}":
                group.append(pos)
                pos += 1
            groups.append(group)
        elif pos < len(names) and names[pos] == spec.name:
            groups.append([pos])
            pos += 1
        else:
            return None
    return groups if pos == len(names) else None


def _groups_by_count(specs: Sequence[TensorSpec], total: int) -> list[list[int]] | None:
    fixed = sum(1 for s in specs if not s.dynamic)
    dynamic = [s for s in specs if s.dynamic]
    if len(dynamic) > 1 or total < fixed or (not dynamic and total != fixed):
        return None
    groups: list[list[int]] = []
    pos = 0
    for spec in specs:
        width = total - fixed if spec.dynamic else 1
        groups.append(list(range(pos, pos + width)))
        pos += width
    return groups


def _groups(
    op: OpDef, node: Node, specs: Sequence[TensorSpec], names: Sequence[str], what: str
) -> list[list[int]]:
    groups = _groups_by_name(specs, names) if any(names) else None
    if groups is None:
        groups = _groups_by_count(specs, len(names))
    if groups is None:
        raise GraphError(
            f"node {node.name}: its {len(names)} {what} ports {names} do not fit "
            f"{op.type}'s IR {what}s {[s.name for s in specs]}"
        )
    return groups


def input_groups(op: OpDef, node: Node) -> list[list[int]]:
    """Port indexes of each IR input of ``op`` on ``node``."""
    layout = fixed_layout(op)
    if layout is not None and len(node._input_names) == len(layout.input_names):
        return [[port] for port in range(len(layout.input_names))]  # what _groups finds
    return _groups(op, node, op.inputs, node._input_names, "input")


def output_groups(op: OpDef, node: Node) -> list[list[int]]:
    """Port indexes of each IR output of ``op`` on ``node``."""
    layout = fixed_layout(op)
    if layout is not None and len(node._output_names) == len(layout.output_names):
        return [[port] for port in range(len(layout.output_names))]
    return _groups(op, node, op.outputs, node._output_names, "output")


def subgraph_names(op: OpDef, counts: Sequence[int]) -> list[str]:
    """IR subgraph names per instance (dynamic: ``branches0, branches1, ...``)."""
    names: list[str] = []
    for spec, count in zip(op.subgraphs, counts, strict=True):
        names += [f"{spec.name}{k}" for k in range(count)] if spec.dynamic else [spec.name]
    return names
