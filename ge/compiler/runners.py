"""The runners of a compiled graph's plans: the runtime's executor (``PlanRunner``) with the
graph's output descs, one per plan, made on first use."""

from __future__ import annotations

from ge.graph._dtypes import data_type_from_numpy
from ge.graph.tensor_desc import TensorDesc
from ge.runtime.executor import PlanRunner
from ge.runtime.plan import Plan

__all__ = ["GraphRunner", "Runners"]


class GraphRunner(PlanRunner):
    """A ``PlanRunner`` of a compiled graph, with the graph's output descs (what sessions
    wrap results in)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan)
        self.output_descs = [
            TensorDesc(list(spec.shape), data_type=data_type_from_numpy(spec.dtype))
            for spec in (plan.buffers[b] for b in plan.outputs)
        ]


class Runners:
    """One ``GraphRunner`` per plan (by identity; a plan collected and another made at its
    address gets a runner of its own)."""

    def __init__(self) -> None:
        self._runners: dict[int, GraphRunner] = {}

    def of(self, plan: Plan) -> GraphRunner:
        runner = self._runners.get(id(plan))
        if runner is None or runner.plan is not plan:
            runner = self._runners[id(plan)] = GraphRunner(plan)
        return runner
