"""A ``Pattern`` as the matcher reads it, and the order its search visits pattern ops.

``compiled_pattern`` preprocesses a pattern once (cached on the ``Pattern``): per op, its type,
the sources of its input ports (another pattern op's output, or a pattern input), its pattern
consumers, exported ports, Const value and IR attributes. ``search_plan`` orders the search
(``ge.passes._match``): anchored at the op whose type is rarest in the graph, then along edges.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ge.error import GeValueError
from ge.graph._attr import AttrValue, make_attr_value
from ge.graph.node import Node
from ge.ops.registry import find_op
from ge.passes.pattern import Pattern

__all__ = [
    "OP",
    "SINK_TYPES",
    "WILD",
    "WILDCARD_TYPES",
    "CompiledPattern",
    "PatternOp",
    "Step",
    "compiled_pattern",
    "search_plan",
]

WILDCARD_TYPES = frozenset({"Data", "RefData", "AippData", "AnyData"})
"""Pattern nodes that stand for any tensor made outside the match (the pattern inputs)."""
SINK_TYPES = frozenset({"NetOutput"})
"""Pattern nodes that only collect the pattern outputs; never matched."""

OP, WILD = 0, 1  # kinds of a pattern input-port source


# --- the pattern, preprocessed once ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PatternOp:
    """One pattern op node, as the search reads it."""

    node: Node
    type: str
    ins: tuple[tuple[int, int, int] | None, ...]  # per input port: (OP, op, port) | (WILD, w, 0)
    outs: tuple[tuple[tuple[int, int], ...], ...]  # per output port: pattern consumers (op, port)
    exported: frozenset[int]  # output ports that are pattern outputs
    n_out_used: int  # the graph node needs at least this many outputs
    const: AttrValue | None  # a Const's value
    ir_attrs: tuple[tuple[str, AttrValue | None, AttrValue | None], ...]  # (name, default, value)


@dataclass(frozen=True, slots=True)
class CompiledPattern:
    name: str
    ops: tuple[PatternOp, ...]
    readers: tuple[tuple[tuple[int, int], ...], ...]  # per pattern input: (op, in_port) readers
    outputs: tuple[tuple[int, int], ...]  # per pattern output: (op, out_port)
    roles: dict[Node, tuple[int, int]]  # pattern node -> (OP, op) | (WILD, input)
    single_exit: bool  # one output, reached from every op: no cross-match cycle possible


def _index_of(node: Node, position: int) -> int:
    value = node.attr_value("index")
    return int(value.value) if value is not None else position


def _ir_attrs(node: Node) -> tuple[tuple[str, AttrValue | None, AttrValue | None], ...]:
    op = find_op(node.type)
    if op is None:
        return ()
    found = []
    for spec in op.attrs:
        if spec.name.startswith("_") or (node.type == "Const" and spec.name == "value"):
            continue
        default = None if spec.required else make_attr_value(spec.default, spec.type)
        found.append((spec.name, default, node.attr_values.get(spec.name, default)))
    return tuple(found)


def _compile(pattern: Pattern) -> CompiledPattern:
    graph = pattern._live_graph()
    name = graph.name
    nodes = list(graph._nodes.values())
    wild_nodes = [n for n in nodes if n.type in WILDCARD_TYPES]
    op_nodes = [n for n in nodes if n.type not in WILDCARD_TYPES and n.type not in SINK_TYPES]
    if not op_nodes:
        raise GeValueError(
            f"pattern '{name}' has no op node to match: it needs a node that is not "
            f"Data or NetOutput"
        )
    order = sorted(range(len(wild_nodes)), key=lambda k: _index_of(wild_nodes[k], k))
    wild_nodes = [wild_nodes[k] for k in order]
    indexes = [_index_of(n, k) for k, n in enumerate(wild_nodes)]
    if len(set(indexes)) != len(indexes):
        raise GeValueError(f"pattern '{name}': two inputs have the same index ({indexes})")
    roles: dict[Node, tuple[int, int]] = {n: (OP, i) for i, n in enumerate(op_nodes)}
    roles.update({n: (WILD, w) for w, n in enumerate(wild_nodes)})
    outputs = []
    for j, (node, port) in enumerate(graph._outputs):
        role = roles.get(node)
        if role is None or role[0] != OP:
            raise GeValueError(
                f"pattern '{name}': output {j} is {node.name}:{port}, not an output of "
                f"a pattern op; a pattern's outputs must be computed by its ops"
            )
        outputs.append((role[1], port))
    readers: list[list[tuple[int, int]]] = [[] for _ in wild_nodes]
    ops = [_compile_op(i, n, roles, outputs, readers) for i, n in enumerate(op_nodes)]
    for w, anchors in enumerate(readers):
        if not anchors:
            raise GeValueError(
                f"pattern '{name}': input {indexes[w]} ({wild_nodes[w].name}) is not read "
                f"by any pattern op; use it or leave it out"
            )
    return CompiledPattern(
        name,
        tuple(ops),
        tuple(tuple(r) for r in readers),
        tuple(outputs),
        roles,
        _single_exit(ops, outputs),
    )


def _compile_op(
    i: int,
    node: Node,
    roles: dict[Node, tuple[int, int]],
    outputs: list[tuple[int, int]],
    readers: list[list[tuple[int, int]]],
) -> PatternOp:
    ins: list[tuple[int, int, int] | None] = []
    for k, edge in enumerate(node.inputs):
        role = roles.get(edge[0]) if edge is not None else None
        if edge is None or role is None:
            ins.append(None)
        elif role[0] == OP:
            ins.append((OP, role[1], edge[1]))
        else:
            ins.append((WILD, role[1], 0))
            readers[role[1]].append((i, k))
    outs = tuple(
        tuple((roles[d][1], k) for d, k in consumers if roles.get(d, (WILD, 0))[0] == OP)
        for consumers in node.users_by_port
    )
    exported = frozenset(p for o, p in outputs if o == i)
    used = [p for p, c in enumerate(outs) if c] + list(exported)
    value = node.attr_value("value") if node.type == "Const" else None
    return PatternOp(
        node,
        node.type,
        tuple(ins),
        outs,
        exported,
        max(used, default=-1) + 1,
        value,
        _ir_attrs(node),
    )


def _single_exit(ops: list[PatternOp], outputs: list[tuple[int, int]]) -> bool:
    if len(outputs) != 1:
        return False
    reached = {outputs[0][0]}
    stack = [outputs[0][0]]
    while stack:  # walk producers back from the output op
        for spec in ops[stack.pop()].ins:
            if spec is not None and spec[0] == OP and spec[1] not in reached:
                reached.add(spec[1])
                stack.append(spec[1])
    return len(reached) == len(ops)


def compiled_pattern(pattern: Pattern) -> CompiledPattern:
    if (
        pattern._compiled is None
        or pattern._compiled.ops[0].node.graph is not pattern._live_graph()
    ):
        pattern._compiled = _compile(pattern)
    compiled: CompiledPattern = pattern._compiled
    return compiled


# --- the search plan: anchor, then along edges -------------------------------------------------
# A step says where the candidates for one pattern op come from:
#   (op, "anchor", 0, 0, 0)               every graph node of its type
#   (op, "producer", known, in_port, 0)   the producer of known's input in_port
#   (op, "consumer", known, out_port, k)  consumers of known's output out_port at input k
#   (op, "sibling", known, in_port, k)    other readers (input k) of the tensor known reads
Step = tuple[int, str, int, int, int]


def search_plan(compiled: CompiledPattern, by_type: dict[str, list[Node]]) -> list[Step]:
    """Anchor at the op whose type is rarest in the graph, then grow along direct edges;
    other readers of a shared pattern input only when no direct edge reaches further, and a
    new anchor for a part of the pattern not connected to the rest."""
    ops = compiled.ops
    count = [len(by_type.get(op.type, ())) for op in ops]
    steps: list[Step] = []
    placed: set[int] = set()

    def place(step: Step) -> None:
        placed.add(step[0])
        steps.append(step)

    while len(placed) < len(ops):
        place((min(set(range(len(ops))) - placed, key=lambda i: count[i]), "anchor", 0, 0, 0))
        while True:
            step = next(_frontier(compiled, steps, placed, direct=True), None) or next(
                _frontier(compiled, steps, placed, direct=False), None
            )
            if step is None:
                break
            place(step)
    return steps


def _frontier(
    compiled: CompiledPattern, steps: list[Step], placed: set[int], *, direct: bool
) -> Iterator[Step]:
    for known, *_ in steps:
        for step in _neighbours(compiled, known):
            if step[0] not in placed and (step[1] != "sibling") == direct:
                yield step


def _neighbours(compiled: CompiledPattern, known: int) -> Iterator[Step]:
    """Direct edges first (a producer is one candidate, consumers few), then other readers
    of a shared pattern input."""
    op = compiled.ops[known]
    for k, spec in enumerate(op.ins):
        if spec is not None and spec[0] == OP:
            yield (spec[1], "producer", known, k, 0)
    for p, consumers in enumerate(op.outs):
        for consumer, port in consumers:
            yield (consumer, "consumer", known, p, port)
    for k, spec in enumerate(op.ins):
        if spec is not None and spec[0] == WILD:
            for reader, port in compiled.readers[spec[1]]:
                yield (reader, "sibling", known, k, port)
