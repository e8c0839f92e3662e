"""Elementwise fusion: connected elementwise ops of one output shape become one node.

The pass walks the graph in topological order and grows *groups*: a node joins the groups of
its producers when every rule in ``JOIN_RULES`` allows it, and two groups that meet at a node
merge. Each group of two or more ops becomes a ``FusedElementwise`` node (``ge.ops.fused``)
whose ``body`` subgraph holds the ops, their scalar Consts, and one Data node per outside
input; every group value used outside (or returned by the graph) is an output. The lowering
turns the body into one kernel (``ge.compiler.kernels.elementwise``), so a chain such as
``x*y + x*0.5 - y*y`` reads ``x`` and ``y`` once and writes once.

A reduction over its input's last axes whose only consumer is such an op can *head* the
group (``_epilogue_head``): the group then becomes a ``FusedReduce`` node, whose kernel runs
the elementwise ops on each row's result right after reducing it, so
``sqrt(x.sum(axis=-1) / n + eps) * y`` is one kernel. (Elementwise ops *before* a reduction,
of the input's larger shape, are a group of their own.)

A constant ``StridedSlice`` that only a group reads, of the group's shape, joins the group as
it is lowered (``_absorb_slices``): the kernel reads its source in place, through strides and an
offset (``ge.compiler.kernels.fused.slice_view`` says which slices qualify: rows read
contiguously), so ``0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + ...)`` copies nothing; a lone op
reading such a slice is a group of its own for that reason.

The decision is data, readable top to bottom: ``FUSIBLE`` says which nodes may be in a body,
``JOIN_RULES`` when two groups may become one. A merge that would make the graph cyclic (an
outside node both fed by the group and feeding it) is refused. The pass is the pipeline step
``fuse`` and shows in ``GE_DUMP_GRAPH`` dumps.

    >>> from ge.es import GraphBuilder
    >>> b = GraphBuilder("g"); x, y = b.create_input(0, shape=[8]), b.create_input(1, shape=[8])
    >>> g = b.build_and_reset([x * y + x * 0.5 - y * y])
    >>> fuse_elementwise(g)
    True
    >>> sorted(n.type for n in g.get_direct_nodes())
    ['Data', 'Data', 'FusedElementwise', 'NetOutput']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ge.compiler._graphs import ConstValues, fresh_name, op_of
from ge.compiler.dce import eliminate_dead_nodes
from ge.compiler.kernels import kernels_of
from ge.compiler.kernels.elementwise import MAX_RANK, supports_dtype
from ge.compiler.kernels.fused import slice_view
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.ops.construct import add_op_node
from ge.ops.infer import const_array, graph_outputs, node_attrs
from ge.ops.layout import input_groups

__all__ = ["FUSIBLE", "JOIN_RULES", "MAX_GROUP", "fuse_elementwise"]

MAX_GROUP = 64  # ops per body: Numba's compile time grows with the body
_MAX_INPUTS = 24

Port = tuple[Node, int]


def _shape(node: Node) -> tuple[int, ...]:
    return tuple(node.output_desc(0)._shape)


def _fusible(node: Node) -> bool:
    """An elementwise op with a scalar body (``OpDef.fusible``: built in or registered at run
    time), one output of a supported type and a known rank."""
    op = node.op
    if (
        op is None
        or not op.fusible
        or node.control_inputs
        or node.control_outputs
        or node.subgraph_names
    ):
        return False
    outputs, inputs = node.output_descs, node.inputs
    if len(outputs) != 1 or any(e is None for e in inputs):
        return False
    descs = [outputs[0], *(e[0].output_desc(e[1]) for e in inputs if e)]
    shape = _shape(node)
    return (
        all(supports_dtype(numpy_dtype(d._data_type)) for d in descs)
        and len(shape) <= MAX_RANK
        and -2 not in shape
    )


FUSIBLE: Callable[[Node], bool] = _fusible


def _scalar_const(port: Port, consts: ConstValues) -> bool:
    """A one-element Const: it goes into the body as a parameter, not as an input."""
    node = port[0]
    if node.type != "Const":
        return False
    stored = node.attr_value("value")
    if stored is None or not isinstance(stored.value, Tensor):
        return False
    if math.prod(stored.value._desc._shape) != 1:  # sized by its desc, without reading it
        return False
    value = consts(node)
    return value is not None and value.size == 1


@dataclass
class _Group:
    shape: tuple[int, ...]
    members: list[Node] = field(default_factory=list)
    ids: set[int] = field(default_factory=set)  # id() of every member
    reduction: Node | None = None  # a reduction whose elementwise epilogue the others are
    # what the members read that is not a scalar Const, by (id(producer), port); producers
    # inside the group are filtered out where it is counted (``_input_count``)
    reads: dict[tuple[int, int], Port] = field(default_factory=dict)
    first: int = 0  # the smallest topological index of a member

    @staticmethod
    def of(node: Node, index: int, consts: ConstValues, reduction: Node | None = None) -> _Group:
        reads = {(id(e[0]), e[1]): e for e in node.inputs if e is not None}
        reads = {k: e for k, e in reads.items() if not _scalar_const(e, consts)}
        return _Group(_shape(node), [node], {id(node)}, reduction, reads, index)

    def absorb(self, other: _Group) -> None:
        self.members += other.members
        self.ids |= other.ids
        self.first = min(self.first, other.first)
        self.reduction = self.reduction or other.reduction
        for key, port in other.reads.items():
            self.reads.setdefault(key, port)

    def outside_inputs(self, consts: ConstValues) -> list[Port]:
        inside = {id(m) for m in self.members}
        ports: dict[tuple[int, int], Port] = {}
        for m in self.members:
            for port, e in enumerate(m.inputs):
                if e is None or id(e[0]) in inside or _scalar_const(e, consts):
                    continue
                if m is self.reduction and port > 0:  # the axes: a Const, kept in the body
                    continue
                if m.type == "StridedSlice" and port > 0:  # its bounds: Consts, kept too
                    continue
                ports.setdefault((id(e[0]), e[1]), e)
        return list(ports.values())


def _epilogue_head(node: Node, consumer: Node) -> bool:
    """A trailing-axes reduction feeding only ``consumer``, with the consumer's shape: it can
    head a group whose elementwise ops become its epilogue."""
    op = node.op
    if op is None or kernels_of(op).row_reduction is None:
        return False
    if node.control_inputs or node.control_outputs:
        return False
    users = node.users(0)
    if len(users) != 1 or users[0][0] is not consumer:
        return False
    inputs = node.inputs
    x, axes = inputs[0], inputs[1] if len(inputs) > 1 else None
    if x is None or axes is None or axes[0].type != "Const" or _shape(node) != _shape(consumer):
        return False
    dims = list(x[0].output_desc(x[1])._shape)
    values = const_array(axes[0])
    if values is None or any(d < 0 for d in dims) or not dims:
        return False
    rank = len(dims)
    wanted = sorted({int(a) % rank for a in values.reshape(-1)})
    dtype = numpy_dtype(node.output_desc(0)._data_type)
    return (
        bool(wanted) and wanted == list(range(rank - len(wanted), rank)) and supports_dtype(dtype)
    )


# Nodes one cycle check may visit before it gives up and refuses the merge (so a pass stays
# linear in the graph: chains and wide DAGs need a handful; only a dense tangle needs more).
_CYCLE_SEARCH_LIMIT = 1024


@dataclass
class _Fusion:
    """State of one pass: topological index and group of every node."""

    index: dict[int, int]
    group_of: dict[int, _Group] = field(default_factory=dict)

    def creates_cycle(self, a: _Group, b: _Group) -> bool:
        """Whether some outside producer of ``a`` + ``b`` depends on one of their members.

        A backward search from the outside producers, through data and control inputs. A path
        from a member to a producer only runs through nodes placed after the first member, so
        the search stops at earlier ones (for a chain, at once)."""
        a_ids, b_ids, index = a.ids, b.ids, self.index  # no union sets: this runs per merge
        first = min(a.first, b.first)
        # the outside producers (scalar Consts, left out of ``reads``, have no inputs)
        stack = [
            e[0]
            for reads in (a.reads, b.reads)
            for k, e in reads.items()
            if k[0] not in a_ids and k[0] not in b_ids
        ]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            key = id(node)
            if key in a_ids or key in b_ids:
                return True
            if key in seen or index[key] < first:
                continue
            seen.add(key)
            if len(seen) > _CYCLE_SEARCH_LIMIT:
                return True  # undecided within the limit: do not merge
            stack += [e[0] for e in node.inputs if e is not None]
            stack += node.control_inputs
        return False


def _input_count(a: _Group, b: _Group) -> int:
    """Outside inputs of ``a`` + ``b`` (what ``outside_inputs`` of the union counts), without
    building the union (this runs per merge)."""
    a_ids, b_ids, a_reads = a.ids, b.ids, a.reads
    count = 0
    for k in a_reads:
        if k[0] not in a_ids and k[0] not in b_ids:
            count += 1
    for k in b.reads:
        if k not in a_reads and k[0] not in a_ids and k[0] not in b_ids:
            count += 1
    return count


JoinRule = Callable[[_Fusion, _Group, _Group], bool]

# When may group ``a`` and group ``b`` become one group (all must hold):
JOIN_RULES: tuple[tuple[str, JoinRule], ...] = (
    ("same output shape", lambda f, a, b: a.shape == b.shape),
    ("one reduction per body", lambda f, a, b: a.reduction is None or b.reduction is None),
    ("body size limit", lambda f, a, b: len(a.members) + len(b.members) <= MAX_GROUP),
    ("input limit", lambda f, a, b: _input_count(a, b) <= _MAX_INPUTS),
    ("stays acyclic", lambda f, a, b: not f.creates_cycle(a, b)),
)


def _may_join(fusion: _Fusion, a: _Group, b: _Group) -> bool:
    return all(rule(fusion, a, b) for _, rule in JOIN_RULES)


def _groups(graph: Graph, min_ops: int, consts: ConstValues) -> list[_Group]:
    order, _ = topological_order(graph)
    fusion = _Fusion({id(n): i for i, n in enumerate(order)})
    for node in order:
        if not FUSIBLE(node):
            continue
        group = fusion.group_of[id(node)] = _Group.of(node, fusion.index[id(node)], consts)
        for e in node.inputs:
            if e is not None and id(e[0]) not in fusion.group_of and _epilogue_head(e[0], node):
                head = e[0]
                fusion.group_of[id(head)] = _Group.of(head, fusion.index[id(head)], consts, head)
            producer = fusion.group_of.get(id(e[0])) if e is not None else None
            if producer is None or producer is group or not _may_join(fusion, producer, group):
                continue
            producer.absorb(group)
            for m in group.members:
                fusion.group_of[id(m)] = producer
            group = producer
    outputs = {(id(n), p) for n, p in graph_outputs(graph)}
    unique = {
        id(g): g
        for g in fusion.group_of.values()
        if len(g.members) >= max(min_ops, 2 if g.reduction is not None else 1)
        or (g.reduction is None and _reads_a_slice(g, outputs))  # a lone op reading slices
    }
    for g in unique.values():
        g.members.sort(key=lambda m: fusion.index[id(m)])
    return list(unique.values())


def _exported(group: _Group, graph_outputs: set[tuple[int, int]]) -> list[Node]:
    inside = {id(m) for m in group.members}
    return [
        m
        for m in group.members
        if (id(m), 0) in graph_outputs or any(id(dst) not in inside for dst, _ in m.users(0))
    ]


def _body(graph: Graph, group: _Group, inputs: list[Port], exported: list[Node]) -> Graph:
    root = graph._root()
    name = f"{group.members[-1].name}_fused_body"
    k = 1
    while name in root._subgraphs or name == root.name:
        name, k = f"{group.members[-1].name}_fused_body_{k}", k + 1
    body = Graph(name)
    ports: dict[tuple[int, int], Port] = {}
    for k, (src, port) in enumerate(inputs):
        desc = src.output_desc(port)
        data = add_op_node(
            body, "Data", [None], {"index": k}, name=f"x{k}", declared=[desc], infer=False
        )
        ports[(id(src), port)] = (data, 0)
    for m in group.members:
        op = op_of(m)
        assert op is not None
        args = []
        for e in m.inputs:
            assert e is not None
            if (id(e[0]), e[1]) not in ports:  # a scalar Const or the axes: copied in
                stored = e[0].attr_value("value")
                tensor = None if stored is None else stored.value
                assert isinstance(tensor, Tensor)
                const = add_op_node(
                    body, "Const", [], {"value": tensor}, name=e[0].name, infer=False
                )
                body.set_output_desc(const, 0, e[0].output_desc(0))
                ports[(id(e[0]), e[1])] = (const, 0)
            args.append(ports[(id(e[0]), e[1])])
        grouped = [
            [args[p] for p in g] if spec.dynamic else args[g[0]]
            for spec, g in zip(op.inputs, input_groups(op, m), strict=True)
        ]
        copy = add_op_node(body, m.type, grouped, node_attrs(op, m), name=m.name, infer=False)
        copy.update_output_desc(0, m.output_desc(0))  # as inferred outside: same inputs
        ports[(id(m), 0)] = (copy, 0)
    outputs = [ports[(id(m), 0)] for m in exported]
    add_op_node(body, "NetOutput", [outputs], name="NetOutput", infer=False)
    return body


def _absorbable_slice(port: Port, group: _Group, graph_outputs: set[tuple[int, int]]) -> bool:
    """A constant StridedSlice only ``group`` reads, of the group's shape, of a value made
    outside the group, that the fused kernel can read in place (``slice_view``)."""
    node = port[0]
    if node.type != "StridedSlice" or id(node) in group.ids or port[1] != 0:
        return False
    if node.control_inputs or node.control_outputs or (id(node), 0) in graph_outputs:
        return False
    edges = [e for e in node.inputs if e is not None]
    if len(edges) != 4 or len(node.inputs) != 4 or _shape(node) != group.shape:
        return False
    if any(e[0].type != "Const" for e in edges[1:]) or id(edges[0][0]) in group.ids:
        return False
    if any(id(dst) not in group.ids for dst, _ in node.users(0)):
        return False
    return slice_view(node) is not None


def _reads_a_slice(group: _Group, graph_outputs: set[tuple[int, int]]) -> bool:
    return any(
        e is not None and _absorbable_slice(e, group, graph_outputs)
        for m in group.members
        for e in m.inputs
    )


def _absorb_slices(group: _Group, graph_outputs: set[tuple[int, int]]) -> None:
    """Move the slices the group alone reads into it (first: they read outside values only),
    so the kernel reads their source in place instead of a copy (``u[1:-1, 2:] + ...``)."""
    if group.reduction is not None:
        return
    slices: dict[int, Node] = {}
    for m in group.members:
        for e in m.inputs:
            if e is None or id(e[0]) in slices:
                continue
            if _absorbable_slice(e, group, graph_outputs):
                slices[id(e[0])] = e[0]
    group.members[:0] = list(slices.values())
    group.ids |= set(slices)


def _replace(
    graph: Graph, group: _Group, graph_outputs: set[tuple[int, int]], consts: ConstValues
) -> None:
    _absorb_slices(group, graph_outputs)
    inputs = group.outside_inputs(consts)
    exported = _exported(group, graph_outputs)
    body = _body(graph, group, inputs, exported)
    name = fresh_name(graph, f"{group.members[-1].name}_fused")
    # The members were inferred in place, on the descs the body's inputs copy, so the body and
    # the fused node take their descs instead of inferring the body again (verify does).
    fused = add_op_node(
        graph,
        "FusedElementwise" if group.reduction is None else "FusedReduce",
        [inputs],
        name=name,
        output_counts=[len(exported)],
        subgraphs=[body],
        declared=[m.output_desc(0) for m in exported],
        infer=False,
    )
    fused.set_attr("_fused_ops", ",".join(m.type for m in group.members))
    for j, m in enumerate(exported):
        graph.replace_all_uses(m, 0, fused, j)


def fuse_elementwise(graph: Graph, *, min_ops: int = 2) -> bool:
    """Fuse ``graph``'s elementwise groups of at least ``min_ops`` ops in place; returns
    whether anything changed. (A lone op is already one kernel; ``min_ops=1`` wraps it anyway,
    which tests use to run every op through the fused path.)"""
    consts = ConstValues()  # the pass replaces nodes, never changes a Const
    groups = _groups(graph, min_ops, consts)
    if not groups:
        return False
    outputs = {(id(n), p) for n, p in graph_outputs(graph)}
    for group in groups:
        _replace(graph, group, outputs, consts)
    # all at once: removing them group by group rescans a shared producer's consumer list
    graph.remove_nodes(m for group in groups for m in group.members)
    eliminate_dead_nodes(graph)
    return True
