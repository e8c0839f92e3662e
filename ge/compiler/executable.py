"""``CompiledGraph``: an optimized graph plus its task plans, ready to run.

The compiler *produces* plans; the runtime *runs* them. This module ties the two together for
one graph, and is split along those lines:

- ``ge.compiler.inputs``: what each input slot takes, and the errors naming it;
- ``ge.compiler.plan_cache``: one plan per input-shape signature (and per value of the small
  tensors that decide shapes, where input values do), built on first use;
- ``ge.compiler.runners``: the executor of each plan (``ge.runtime.executor.PlanRunner``, the
  same one loaded offline models run on) with the graph's output descs;
- ``ge.runtime.executor.execute_plan``: one run at given device addresses (streams);
- ``ge.runtime.plan``: plans as data, bound to live code by ``Plan.bind()``.

A graph whose inputs all have known shapes gets its plan at compile time and never infers
again; a graph with ``-1`` dims gets one plan per distinct set of input shapes; when a shape
depends on input *values* the plan is specialized on them (``plan_cache``). Control-flow nodes
run their subgraphs through nested ``CompiledGraph``s.

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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.compiler.inputs import InputSpec, check_inputs, input_specs
from ge.compiler.lower import lower_graph
from ge.compiler.pipeline import copy_graph, optimize_graph
from ge.compiler.plan_cache import PlanCache, Shapes
from ge.compiler.runners import GraphRunner, Runners
from ge.graph.graph import Graph
from ge.graph.tensor_desc import TensorDesc
from ge.ops.infer import graph_output_descs, infer_graph
from ge.ops.interpreter import _run as run_reference
from ge.ops.interpreter import eval_tensors
from ge.options import Options, current_options, using_options
from ge.runtime.executor import Alloc, _default_alloc, execute_plan
from ge.runtime.plan import Plan

__all__ = ["CompiledGraph", "GraphRunner", "InputSpec"]


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
        self.inputs = input_specs(graph, input_offset)
        self.output_descs = graph_output_descs(self.graph)
        self._plans = PlanCache()
        self._subgraphs: dict[int, CompiledGraph] = {}
        self._runners = Runners()
        # input (type, *dims) signatures already checked -> their plan (filled by callers)
        self.checked_plans: dict[tuple[Any, ...], Plan] = {}
        self.static = not any(s.free for s in self.inputs)
        if self.static:
            self.plan_for([tuple(s.shape) for s in self.inputs])

    @property
    def peak_intermediate_bytes(self) -> int | None:
        """Arena size of the compile-time plan (static shapes), ``None`` otherwise."""
        plan = self._plans.first() if self.static else None
        return plan.arena_size if plan is not None else None

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
        return self._plans.plan_for(self, shapes, arrays)

    # --- the Planner the plan cache asks -------------------------------------------------------
    def shaped_copy(self, shapes: Shapes) -> Graph:
        graph = copy_graph(self.graph)
        if self._offset == 0:
            infer_graph(graph, [list(s) for s in shapes])
        else:
            self._infer_subgraph(graph, shapes)
        return graph

    def build(self, shapes: Shapes) -> Plan:
        graph = self.graph if self.static else self.shaped_copy(shapes)
        return self.lower(graph)

    def lower(self, graph: Graph) -> Plan:
        with using_options(self.ge_options):
            return lower_graph(
                graph, self._run_subgraph, self._offset, self.options, self.ge_options
            )

    def values(
        self, targets: Sequence[tuple[str, int]], arrays: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        nodes = [(self.graph.find_node_by_name(name), port) for name, port in targets]
        return [np.asarray(v) for v in eval_tensors(self.graph, arrays, nodes, self._offset)]

    def _infer_subgraph(self, graph: Graph, shapes: Shapes) -> None:
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
    def check_inputs(
        self, dtypes: Sequence[np.dtype[Any]], shapes: Sequence[Sequence[int]]
    ) -> None:
        check_inputs(self.inputs, dtypes, shapes)

    def execute(
        self, plan: Plan, input_addrs: Sequence[int], alloc: Alloc = _default_alloc
    ) -> tuple[list[int], list[Callable[[], None]]]:
        """Run ``plan`` now, on this thread, reading inputs at ``input_addrs``. Returns the
        output addresses and, for each, the function that releases it (caller owns them):
        ``ge.runtime.executor.execute_plan``."""
        return execute_plan(plan, input_addrs, alloc)

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
        return self._plans.shape_only(plan)

    def runner(self, plan: Plan) -> GraphRunner:
        """The runner of one of this graph's plans (made on first use)."""
        return self._runners.of(plan)
