"""``CompiledGraph``: an optimized graph plus its task plans, ready to run.

A graph whose inputs all have known shapes gets its plan at compile time and never infers
again. A graph with ``-1`` dims gets one plan per distinct set of input shapes, built on the
first run with those shapes (GE's runtime infers from the actual inputs the same way) and
cached. Control-flow nodes run their subgraphs through nested ``CompiledGraph``s. Decision:
when an output shape depends on input *values* (a Reshape whose target is fed at run time),
there is no static plan yet; such a graph runs on the reference interpreter.

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
from ge.compiler.plan import Plan
from ge.error import GeError, GeValueError
from ge.graph._dtypes import numpy_dtype
from ge.graph._printer import format_desc
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.ops.infer import _subgraph_slot, graph_output_descs, infer_graph
from ge.ops.interpreter import _run as run_reference
from ge.ops.registry import get_op
from ge.runtime import memory

__all__ = ["CompiledGraph", "InputSpec"]

Alloc = Callable[[int], tuple[int, Callable[[], None]]]


class InputSpec:
    """A graph input as callers must feed it: slot, Data node name, dtype, shape (-1 free)."""

    def __init__(self, slot: int, node: Node) -> None:
        self.slot = slot
        self.name = node.name
        self.desc: TensorDesc = node._output_descs[0]._clone()
        self.dtype = numpy_dtype(self.desc.get_data_type())
        self.shape = list(self.desc.get_shape())

    def check(self, dtype: np.dtype[Any], shape: Sequence[int]) -> None:
        expected = format_desc(self.desc)
        if dtype != self.dtype:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {expected}, got dtype {dtype}"
            )
        if self.shape == [-2]:
            return
        fits = len(shape) == len(self.shape) and all(
            want in (-1, have) for want, have in zip(self.shape, shape, strict=True)
        )
        if not fits:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {expected}, got shape {list(shape)}"
            )


def _default_alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
    block = memory.malloc(max(nbytes, 1))
    return block.addr, lambda: memory.free(block)


class CompiledGraph:
    """Run ``graph`` many times: ``run_arrays`` (host arrays in and out) or ``execute`` (device
    addresses, used by sessions and streams). ``input_offset`` is for subgraphs, whose Data
    nodes may name parent inputs through ``_parent_node_index``."""

    def __init__(self, graph: Graph, *, input_offset: int = 0, optimize: bool = True) -> None:
        self.graph = optimize_graph(graph) if optimize else graph
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
        self._plans: dict[tuple[tuple[int, ...], ...], Plan | None] = {}
        self._lock = threading.Lock()
        self._subgraphs: dict[int, CompiledGraph] = {}
        self.static = all(-1 not in s.shape and s.shape != [-2] for s in self.inputs)
        if self.static:
            self.plan_for([tuple(s.shape) for s in self.inputs])

    # --- plans ----------------------------------------------------------------------------------
    def plan_for(self, shapes: Sequence[Sequence[int]]) -> Plan | None:
        """The plan for these input shapes, or ``None`` when output shapes depend on input
        values (the graph then runs on the reference interpreter, see ``run_arrays``)."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        if key in self._plans:
            return self._plans[key]
        with self._lock:
            if key not in self._plans:
                try:
                    self._plans[key] = self._build(key)
                except ValueDependentShapeError:
                    self._plans[key] = None
            return self._plans[key]

    def _build(self, shapes: tuple[tuple[int, ...], ...]) -> Plan:
        graph = self.graph
        if not self.static:
            graph = copy_graph(self.graph)
            if self._offset == 0:
                infer_graph(graph, [list(s) for s in shapes])
            else:
                self._infer_subgraph(graph, shapes)
        return lower_graph(graph, self._run_subgraph, self._offset)

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
            compiled = CompiledGraph(graph, input_offset=offset, optimize=False)
            compiled._keep = graph  # type: ignore[attr-defined]
            self._subgraphs[id(graph)] = compiled
        return compiled.run_arrays(list(arrays))

    # --- running --------------------------------------------------------------------------------
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
        plan = self.plan_for([v.shape for v in values])
        if plan is None:
            return [np.array(r, copy=True) for r in run_reference(self.graph, values, self._offset)]
        staged = []
        try:
            for value in values:
                block = memory.malloc(max(value.nbytes, 1))
                staged.append(block)
                memory.memcpy_h2d(block.addr, np.ascontiguousarray(value))
            outputs, releases = self.execute(plan, [b.addr for b in staged])
        finally:
            for block in staged:
                memory.free(block)
        results = []
        for buf, addr, release in zip(plan.outputs, outputs, releases, strict=True):
            spec = plan.buffers[buf]
            result = np.empty(spec.shape, spec.dtype)
            memory.memcpy_d2h(result, addr)
            release()
            results.append(result)
        return results
