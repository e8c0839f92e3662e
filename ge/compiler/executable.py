"""``CompiledGraph``: an optimized graph plus its task plans, ready to run.

A graph whose inputs all have known shapes gets its plan at compile time and never infers
again. A graph with ``-1`` dims gets one plan per distinct set of input shapes, built on the
first run with those shapes (GE's runtime infers from the actual inputs the same way) and
cached. Control-flow nodes run their subgraphs through nested ``CompiledGraph``s.

When a shape depends on input *values* (a Reshape whose target shape is a graph input, a Range
with run-time bounds), the small tensors that decide it (the ops' ``value_inputs``) are
evaluated from the inputs and the plan is specialized on their values — one cached plan per
distinct set of them, as GE's runtime infers such shapes from actual data. Only a graph whose
shapes stay undecidable after that runs on the reference interpreter.

    >>> import numpy as np
    >>> from ge.es import GraphBuilder
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[-1, 2])
    >>> exe = CompiledGraph(b.build_and_reset([np.exp(x) + 1.0]))
    >>> exe.run_arrays([np.zeros((3, 2), np.float32)])[0]
    array([[2., 2.],
           [2., 2.],
           [2., 2.]], dtype=float32)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.compiler.lower import ValueDependentShapeError, lower_graph
from ge.compiler.pipeline import copy_graph, optimize_graph
from ge.error import GeError, GeValueError
from ge.graph._dtypes import data_type_from_numpy, numpy_dtype
from ge.graph._printer import format_desc
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.ops.infer import _subgraph_slot, graph_output_descs, infer_graph
from ge.ops.interpreter import _run as run_reference
from ge.ops.interpreter import eval_tensors
from ge.ops.registry import get_op
from ge.options import Options, current_options, using_options
from ge.runtime import memory
from ge.runtime.executor import PlanRunner
from ge.runtime.plan import Plan

__all__ = ["CompiledGraph", "GraphRunner", "InputSpec"]

_MAX_VALUE_ELEMENTS = 1024  # tensors that decide shapes are small (shapes, axes, bounds)


def _unknown_nodes(graph: Graph) -> list[Node]:
    return [
        n
        for n in graph.get_direct_nodes()
        if any(d < 0 for desc in n.output_descs for d in desc._shape)
    ]


def _value_candidates(node: Node) -> list[tuple[str, int]]:
    """The producers of ``node``'s value inputs (those its shape rule reads the values of)
    that are not constants already and are small."""
    op = get_op(node.type)
    found = []
    for edge, name in zip(node.inputs, node.input_names, strict=True):
        if edge is None or edge[0].type == "Const" or name not in op.value_inputs:
            continue
        dims = list(edge[0].output_desc(edge[1])._shape)
        if all(d >= 0 for d in dims) and int(np.prod(dims, dtype=np.int64)) <= _MAX_VALUE_ELEMENTS:
            found.append((edge[0].name, edge[1]))
    return found


class _ByValue:
    """Plans of one input-shape signature, specialized on the values of the small tensors
    (``targets``) that decide the remaining shapes."""

    def __init__(self) -> None:
        self.targets: list[tuple[str, int]] | None = None
        self.plans: dict[tuple[Any, ...], Plan | None] = {}

    def plan(
        self,
        compiled: CompiledGraph,
        shapes: tuple[tuple[int, ...], ...],
        arrays: Sequence[np.ndarray],
    ) -> Plan | None:
        if self.targets is None:
            self.targets = self._discover(compiled, shapes, arrays)
            if self.targets is None:
                return None
        values = compiled._values(self.targets, arrays)
        key = tuple((v.dtype.str, v.shape, v.tobytes()) for v in values)
        if key not in self.plans:
            graph = compiled._shaped_copy(shapes)
            _substitute(graph, self.targets, values)
            try:
                self.plans[key] = compiled._lower(graph)
            except ValueDependentShapeError:
                self.plans[key] = None
        return self.plans[key]

    @staticmethod
    def _discover(
        compiled: CompiledGraph, shapes: tuple[tuple[int, ...], ...], arrays: Sequence[np.ndarray]
    ) -> list[tuple[str, int]] | None:
        graph = compiled._shaped_copy(shapes)
        targets: list[tuple[str, int]] = []
        for _ in range(4):  # each round can reveal shapes that decide the next ones
            unknown = _unknown_nodes(graph)
            if not unknown:
                return targets
            new = [t for n in unknown for t in _value_candidates(n) if t not in targets]
            if not new:
                return None
            targets += list(dict.fromkeys(new))
            _substitute(graph, new, compiled._values(new, arrays))
        return None


def _substitute(
    graph: Graph, targets: Sequence[tuple[str, int]], values: Sequence[np.ndarray]
) -> None:
    """Replace each target tensor by a Const of its value, then re-infer."""
    from ge.compiler._graphs import fresh_name, make_const  # noqa: PLC0415

    for (name, port), value in zip(targets, values, strict=True):
        node = graph._nodes.get(name)
        if node is None or node.type == "Const":
            continue
        const = make_const(graph, fresh_name(graph, f"{name}_value{port}"), value, node, port)
        graph.replace_all_uses(node, port, const, 0)
    infer_graph(graph)


Alloc = Callable[[int], tuple[int, Callable[[], None]]]


class GraphRunner(PlanRunner):
    """A ``PlanRunner`` of a compiled graph, with the graph's output descs (what sessions
    wrap results in)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan)
        self.output_descs = [
            TensorDesc(list(spec.shape), data_type=data_type_from_numpy(spec.dtype))
            for spec in (plan.buffers[b] for b in plan.outputs)
        ]


class InputSpec:
    """A graph input as callers must feed it: slot, Data node name, dtype, shape (-1 free)."""

    def __init__(self, slot: int, node: Node) -> None:
        self.slot = slot
        self.name = node.name
        self.desc: TensorDesc = node.get_output_desc(0)
        self.dtype = numpy_dtype(self.desc.get_data_type())
        self.shape = list(self.desc.get_shape())

    def check(self, dtype: np.dtype[Any], shape: Sequence[int]) -> None:
        if dtype != self.dtype:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {format_desc(self.desc)}, got "
                f"dtype {dtype}"
            )
        if self.shape == [-2]:
            return
        fits = len(shape) == len(self.shape) and all(
            want in (-1, have) for want, have in zip(self.shape, shape, strict=True)
        )
        if not fits:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {format_desc(self.desc)}, got "
                f"shape {list(shape)}"
            )


def _default_alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
    block = memory.malloc(max(nbytes, 1))
    return block.addr, lambda: memory.free(block)


class CompiledGraph:
    """Run ``graph`` many times: ``run_arrays`` (host arrays in and out) or ``execute`` (device
    addresses, used by sessions and streams). ``input_offset`` is for subgraphs, whose Data
    nodes may name parent inputs through ``_parent_node_index``; ``fuse=False`` compiles every
    op on its own (see ``optimize_graph``); ``options`` are the compile options lowerings may
    read (``LowerContext.options``; ``None``: the global ones). ``ge_options`` (default
    ``current_options()`` when constructed) is the ``ge.options`` record the graph is
    optimized, generated and compiled with, kept for every plan built later (new shapes,
    subgraphs): changing the environment afterwards does not change a compiled graph."""

    def __init__(
        self,
        graph: Graph,
        *,
        input_offset: int = 0,
        optimize: bool = True,
        fuse: bool = True,
        options: dict[str, str] | None = None,
        ge_options: Options | None = None,
    ) -> None:
        self.options = None if options is None else dict(options)
        self.ge_options = current_options() if ge_options is None else ge_options
        with using_options(self.ge_options):  # what custom-op compile callbacks read, too
            self._compile(graph, optimize, fuse, input_offset)

    def _compile(self, graph: Graph, optimize: bool, fuse: bool, input_offset: int) -> None:
        options, ge_options = self.options, self.ge_options
        if optimize:
            graph = optimize_graph(graph, fuse=fuse, options=options, ge_options=ge_options)
        self.graph = graph
        self._offset = input_offset
        data = [n for n in self.graph.get_direct_nodes() if get_op(n.type).io == "input"]
        by_slot = {_subgraph_slot(n, input_offset): n for n in data}
        if sorted(by_slot) != list(range(len(by_slot))):
            raise GeError(
                f"graph '{self.graph.name}' input indexes {sorted(by_slot)} must be "
                f"0..{len(by_slot) - 1}"
            )
        self.inputs = [InputSpec(i, by_slot[i]) for i in range(len(by_slot))]
        self.output_descs = graph_output_descs(self.graph)
        self._plans: dict[tuple[tuple[int, ...], ...], Plan | _ByValue] = {}
        self._lock = threading.Lock()
        self._subgraphs: dict[int, CompiledGraph] = {}
        self._runners: dict[int, GraphRunner] = {}
        # input (type, *dims) signatures already checked -> their plan (filled by callers)
        self.checked_plans: dict[tuple[Any, ...], Plan] = {}
        self.static = all(-1 not in s.shape and s.shape != [-2] for s in self.inputs)
        if self.static:
            self.plan_for([tuple(s.shape) for s in self.inputs])

    @property
    def peak_intermediate_bytes(self) -> int | None:
        """Arena size of the compile-time plan (static shapes), ``None`` otherwise."""
        plan = next(iter(self._plans.values()), None) if self.static else None
        return plan.arena_size if isinstance(plan, Plan) else None

    # --- plans ----------------------------------------------------------------------------------
    def plan_for(
        self,
        shapes: Sequence[Sequence[int]],
        arrays: Sequence[np.ndarray] | Callable[[], Sequence[np.ndarray]] | None = None,
    ) -> Plan | None:
        """The plan for these input shapes. When some shape depends on input *values* (a
        Reshape target fed at run time, a Range), the plan is specialized on the values of
        the small tensors that decide those shapes, read from ``arrays``; ``None`` means no
        plan exists (values not given, or shapes undecidable), and the graph then runs on the
        reference interpreter."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        entry = self._plans.get(key)
        if entry is None:
            with self._lock:
                entry = self._plans.get(key)
                if entry is None:
                    try:
                        entry = self._build(key)
                    except ValueDependentShapeError:
                        entry = _ByValue()
                    self._plans[key] = entry
        if isinstance(entry, Plan):
            return entry
        if arrays is None:
            return None
        with self._lock:
            return entry.plan(self, key, arrays() if callable(arrays) else arrays)

    def _shaped_copy(self, shapes: tuple[tuple[int, ...], ...]) -> Graph:
        graph = copy_graph(self.graph)
        if self._offset == 0:
            infer_graph(graph, [list(s) for s in shapes])
        else:
            self._infer_subgraph(graph, shapes)
        return graph

    def _build(self, shapes: tuple[tuple[int, ...], ...]) -> Plan:
        graph = self.graph if self.static else self._shaped_copy(shapes)
        return self._lower(graph)

    def _lower(self, graph: Graph) -> Plan:
        with using_options(self.ge_options):
            return lower_graph(
                graph, self._run_subgraph, self._offset, self.options, self.ge_options
            )

    def _infer_subgraph(self, graph: Graph, shapes: tuple[tuple[int, ...], ...]) -> None:
        from ge.ops.infer import infer_subgraph  # noqa: PLC0415

        descs = [
            TensorDesc(list(s), spec.desc.get_format(), spec.desc.get_data_type())
            for s, spec in zip(shapes, self.inputs, strict=True)
        ]
        infer_subgraph(graph, descs, self._offset)

    def _run_subgraph(
        self, graph: Graph, arrays: Sequence[np.ndarray], offset: int
    ) -> list[np.ndarray]:
        compiled = self._subgraphs.get(id(graph))
        if compiled is None:
            compiled = CompiledGraph(
                graph,
                input_offset=offset,
                optimize=False,
                options=self.options,
                ge_options=self.ge_options,
            )
            compiled._keep = graph  # type: ignore[attr-defined]
            self._subgraphs[id(graph)] = compiled
        # a branch may read fewer of the parent's inputs than another branch (its last ones)
        return compiled.run_arrays(list(arrays)[: len(compiled.inputs)])

    # --- running --------------------------------------------------------------------------------
    def _values(
        self, targets: Sequence[tuple[str, int]], arrays: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        nodes = [(self.graph.find_node_by_name(name), port) for name, port in targets]
        return [np.asarray(v) for v in eval_tensors(self.graph, arrays, nodes, self._offset)]

    def check_inputs(
        self, dtypes: Sequence[np.dtype[Any]], shapes: Sequence[Sequence[int]]
    ) -> None:
        if len(dtypes) != len(self.inputs):
            raise GeValueError(
                f"the graph takes {len(self.inputs)} inputs "
                f"({', '.join(s.name for s in self.inputs)}), got {len(dtypes)}"
            )
        for spec, dtype, shape in zip(self.inputs, dtypes, shapes, strict=True):
            spec.check(dtype, shape)

    def execute(
        self, plan: Plan, input_addrs: Sequence[int], alloc: Alloc = _default_alloc
    ) -> tuple[list[int], list[Callable[[], None]]]:
        """Run ``plan`` now, on this thread, reading inputs at ``input_addrs``. Returns the
        output addresses and, for each, the function that releases it (caller owns them)."""
        arena, free_arena = alloc(plan.arena_size)
        outputs: list[int] = []
        releases: list[Callable[[], None]] = []
        try:
            for buf in plan.outputs:
                addr, release = alloc(plan.buffers[buf].nbytes)
                outputs.append(addr)
                releases.append(release)
            plan.execute(plan.addresses(input_addrs, outputs, arena))
        except BaseException:
            for release in releases:
                release()
            raise
        finally:
            free_arena()
        return outputs, releases

    def run_arrays(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        """Run on host arrays (on the calling thread) and return host arrays."""
        values = [np.asarray(a) for a in arrays]
        self.check_inputs([v.dtype for v in values], [v.shape for v in values])
        plan = self.plan_for([v.shape for v in values], values)
        if plan is None:
            return [np.array(r, copy=True) for r in run_reference(self.graph, values, self._offset)]
        raw = self.runner(plan).run([np.ascontiguousarray(v) for v in values])
        specs = [plan.buffers[b] for b in plan.outputs]
        return [r.view(s.dtype).reshape(s.shape) for r, s in zip(raw, specs, strict=True)]

    def shape_only(self, plan: Plan) -> bool:
        """Whether ``plan`` depends on input shapes alone (not on input values)."""
        return any(entry is plan for entry in self._plans.values())

    def runner(self, plan: Plan) -> GraphRunner:
        """The runner of one of this graph's plans (made on first use)."""
        runner = self._runners.get(id(plan))
        if runner is None or runner.plan is not plan:
            runner = self._runners[id(plan)] = GraphRunner(plan)
        return runner
