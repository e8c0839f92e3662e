"""The plan cache of a compiled graph: one task plan per input-shape signature, built on first use.

A graph whose inputs all have known shapes gets its one plan at compile time. A graph with
``-1`` dims gets one plan per distinct set of input shapes (GE's runtime infers from the actual
inputs the same way). When a shape depends on input *values* (a Reshape whose target shape is a
graph input, a Range with run-time bounds), the small tensors that decide it (the ops'
``value_inputs``) are evaluated from the inputs and the plan is specialized on their values —
one cached plan per distinct set of them. Only a graph whose shapes stay undecidable after that
has no plan (``None``: it runs on the reference interpreter).

The cache knows nothing of how a plan is made: the ``Planner`` (``CompiledGraph``) that owns it
builds them, passed to each lookup (the cache keeps no reference back to its owner, so dropping
a compiled graph frees its plans at once, with no cyclic collection).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ge.compiler.lower import ValueDependentShapeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.ops.infer import infer_graph
from ge.ops.registry import get_op
from ge.runtime.plan import Plan

__all__ = ["PlanCache", "Planner", "Shapes"]

_MAX_VALUE_ELEMENTS = 1024  # tensors that decide shapes are small (shapes, axes, bounds)

Shapes = tuple[tuple[int, ...], ...]
Arrays = Sequence[np.ndarray] | Callable[[], Sequence[np.ndarray]]


class Planner(Protocol):
    """What the cache asks of a compiled graph."""

    def build(self, shapes: Shapes) -> Plan:
        """The plan for these input shapes (``ValueDependentShapeError`` if values decide)."""
        ...

    def shaped_copy(self, shapes: Shapes) -> Graph:
        """A copy of the graph inferred for these input shapes."""
        ...

    def lower(self, graph: Graph) -> Plan:
        """The plan of an inferred graph (``ValueDependentShapeError`` if values decide)."""
        ...

    def values(
        self, targets: Sequence[tuple[str, int]], arrays: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """The values of the tensors ``targets`` (node name, port) for these inputs."""
        ...


class PlanCache(Mapping[Shapes, "Plan | _ByValue"]):
    """Plans by input-shape signature (and, where values decide shapes, by those values); a
    read-only mapping of the signatures seen so far to their entries (a ``Plan``, or the
    plans of that signature by value)."""

    def __init__(self) -> None:
        self._plans: dict[Shapes, Plan | _ByValue] = {}
        self._lock = threading.Lock()

    def __getitem__(self, shapes: Shapes) -> Plan | _ByValue:
        return self._plans[shapes]

    def __iter__(self) -> Iterator[Shapes]:
        return iter(self._plans)

    def __len__(self) -> int:
        return len(self._plans)

    def first(self) -> Plan | None:
        """The plan built first (a static graph's only plan), if it depends on shapes alone."""
        plan = next(iter(self._plans.values()), None)
        return plan if isinstance(plan, Plan) else None

    def plan_for(
        self, planner: Planner, shapes: Sequence[Sequence[int]], arrays: Arrays | None = None
    ) -> Plan | None:
        """The plan for these input shapes (built by ``planner`` on first use), specialized on
        input values read from ``arrays`` where values decide shapes; ``None`` if no plan
        exists (values not given, or shapes undecidable)."""
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        entry = self._plans.get(key)
        if entry is None:
            with self._lock:
                entry = self._plans.get(key)
                if entry is None:
                    try:
                        entry = planner.build(key)
                    except ValueDependentShapeError:
                        entry = _ByValue()
                    self._plans[key] = entry
        if isinstance(entry, Plan):
            return entry
        if arrays is None:
            return None
        with self._lock:
            return entry.plan(planner, key, arrays() if callable(arrays) else arrays)

    def shape_only(self, plan: Plan) -> bool:
        """Whether ``plan`` depends on input shapes alone (not on input values)."""
        return any(entry is plan for entry in self._plans.values())


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

    def plan(self, planner: Planner, shapes: Shapes, arrays: Sequence[np.ndarray]) -> Plan | None:
        if self.targets is None:
            self.targets = self._discover(planner, shapes, arrays)
            if self.targets is None:
                return None
        values = planner.values(self.targets, arrays)
        key = tuple((v.dtype.str, v.shape, v.tobytes()) for v in values)
        if key not in self.plans:
            graph = planner.shaped_copy(shapes)
            _substitute(graph, self.targets, values)
            try:
                self.plans[key] = planner.lower(graph)
            except ValueDependentShapeError:
                self.plans[key] = None
        return self.plans[key]

    @staticmethod
    def _discover(
        planner: Planner, shapes: Shapes, arrays: Sequence[np.ndarray]
    ) -> list[tuple[str, int]] | None:
        graph = planner.shaped_copy(shapes)
        targets: list[tuple[str, int]] = []
        for _ in range(4):  # each round can reveal shapes that decide the next ones
            unknown = _unknown_nodes(graph)
            if not unknown:
                return targets
            new = [t for n in unknown for t in _value_candidates(n) if t not in targets]
            if not new:
                return None
            targets += list(dict.fromkeys(new))
            _substitute(graph, new, planner.values(new, arrays))
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
