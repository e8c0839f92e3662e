"""One graph into a model: compile it to a task plan and add the plan, as data, to the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ge.compiler.executable import CompiledGraph
from ge.error import GeError, GeValueError
from ge.graph import Graph
from ge.ops.infer import _subgraphs_of, graph_outputs
from ge.runtime.kernel import bounds_checks
from ge.runtime.om import GraphEntry, HostTaskData, ModelData, PlanData, Translate, plan_data
from ge.runtime.plan import BufferSpec, HostTask, Plan

__all__ = ["add_graph", "parse_input_shape"]


def add_graph(model: ModelData, graph: Graph, options: dict[str, str]) -> None:
    """Compile ``graph`` (the whole pipeline, custom-op ``compile`` and
    ``declare_launch_args`` callbacks included) and add its plan to ``model``."""
    if any(entry.name == graph.name for entry in model.graphs):
        raise GeValueError(f"two graphs are named {graph.name!r}; a model's graph names differ")
    with bounds_checks():  # the model's kernel arguments will come from a file
        compiled = CompiledGraph(graph, options=options)
    fixed = parse_input_shape(options.get("input_shape", ""))
    unknown = sorted(set(fixed) - {spec.name for spec in compiled.inputs})
    if unknown:
        raise GeValueError(f"input_shape names {unknown}, which are not inputs of the graph")
    shapes = [_shape_of(spec.name, spec.slot, spec.shape, fixed) for spec in compiled.inputs]
    with bounds_checks():
        plan = compiled.plan_for(shapes)
    if plan is None:
        raise GeError(
            f"graph {graph.name!r}: its shapes depend on input values; an offline model needs "
            f"shapes fixed at build time"
        )
    outputs = [f"{node.name}:{port}" for node, port in graph_outputs(compiled.graph)]
    entry = GraphEntry(
        graph.name,
        tuple(spec.name for spec in compiled.inputs),
        tuple(outputs),
        _as_data(compiled, plan, model, options, graph.name),
    )
    model.graphs.append(entry)


def _as_data(
    compiled: CompiledGraph, plan: Plan, model: ModelData, options: dict[str, str], name: str
) -> PlanData:
    return plan_data(plan, model, name, _control_flow(compiled, plan, model, options, name))


# control-flow op -> (the host op it becomes, where its subgraphs' inputs start among its own)
_CONTROL = {"If": ("branch", 1), "Case": ("branch", 1), "While": ("while", 0)}


def _control_flow(
    compiled: CompiledGraph, plan: Plan, model: ModelData, options: dict[str, str], name: str
) -> Translate:
    """Makes the plan's control-flow host tasks (If, Case, While) data: each subgraph is
    compiled into a sub-plan for the shapes the node feeds it, and the task becomes a
    ``branch`` or ``while`` host op running those sub-plans."""

    def translate(task: HostTask, subplans: list[PlanData]) -> HostTaskData | None:
        node = compiled.graph.find_node_by_name(task.name)
        if node is None or node.type not in _CONTROL:
            return None
        op, offset = _CONTROL[node.type]
        n_out = len(node._output_descs)
        n_in = len(task.buffers) - n_out
        specs = [plan.buffers[b] for b in task.buffers]
        feeds = [tuple(s.shape) for s in specs[offset:n_in]]
        first = len(subplans)
        takes = []
        for sub in _subgraphs_of(node):
            with bounds_checks():
                inner = CompiledGraph(sub, input_offset=offset, optimize=False, options=options)
                sub_plan = inner.plan_for([list(s) for s in feeds[: len(inner.inputs)]])
            if sub_plan is None:
                raise GeError(
                    f"node {node.name}: the shapes of its subgraph {sub.name!r} depend on "
                    f"input values; an offline model needs them fixed at build time"
                )
            subplans.append(_as_data(inner, sub_plan, model, options, f"{name}/{sub.name}"))
            takes.append(len(inner.inputs))
        _check_types(node.name, node.type, specs, n_in, offset, subplans[first:])
        params: dict[str, Any]
        if op == "while":
            params = {"inputs": n_in, "cond": first, "body": first + 1}
        else:
            branches = list(range(first, len(subplans)))
            params = {
                "case": node.type == "Case",
                "inputs": n_in - 1,
                "branches": branches,
                "branch_inputs": takes,
            }
        return HostTaskData(task.name, op, tuple(task.buffers), params)

    return translate


def _check_types(
    node: str, op: str, specs: list[BufferSpec], n_in: int, offset: int, subs: list[PlanData]
) -> None:
    """Each sub-plan writes exactly the node's output types (a While's body, its loop vars'):
    a model's buffers are fixed, so a branch or loop that changes a shape cannot go into one."""

    def types(plan: PlanData) -> list[tuple[tuple[int, ...], str]]:
        return [(plan.buffers[b].shape, plan.buffers[b].dtype) for b in plan.outputs]

    outputs = [(tuple(s.shape), s.dtype.name) for s in specs[n_in:]]
    produced = subs[1:] if op == "While" else subs  # While's cond returns its one test
    for sub in produced:
        if types(sub) != outputs:
            raise GeError(
                f"node {node} ({op}): a subgraph returns {types(sub)}, the node's outputs are "
                f"{outputs}; an offline model needs every branch and loop step to keep them"
            )


def _shape_of(
    name: str, slot: int, declared: Sequence[int], fixed: dict[str, list[int]]
) -> list[int]:
    shape = fixed.get(name)
    if shape is None:
        if -1 in declared or list(declared) == [-2]:
            raise GeValueError(
                f"input {slot} ({name}) has shape {list(declared)}; give its shape in the "
                f'build option input_shape (e.g. "{name}:1,3")'
            )
        return list(declared)
    fits = list(declared) == [-2] or (
        len(shape) == len(declared)
        and all(d in (-1, s) for d, s in zip(declared, shape, strict=True))
    )
    if not fits:
        raise GeValueError(
            f"input_shape gives input {slot} ({name}) shape {shape}; it was declared "
            f"{list(declared)}"
        )
    return shape


def parse_input_shape(text: str) -> dict[str, list[int]]:
    """ATC's ``input_shape`` option: ``"x:1,3,224;y:2"`` (an empty shape is a scalar)."""
    shapes: dict[str, list[int]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, dims = part.rpartition(":")
        if not sep or not name:
            raise GeValueError(f"input_shape entry {part!r} must read name:d0,d1,...")
        try:
            shape = [int(d) for d in dims.split(",")] if dims.strip() else []
        except ValueError:
            raise GeValueError(f"input_shape entry {part!r}: dims must be integers") from None
        if any(d < 0 for d in shape):
            raise GeValueError(f"input_shape entry {part!r}: dims must be >= 0")
        if name in shapes:
            raise GeValueError(f"input_shape names {name!r} twice")
        shapes[name] = shape
    return shapes
