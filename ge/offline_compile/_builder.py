"""One graph into a model: compile it to a task plan and add the plan, as data, to the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ge.compiler.executable import CompiledGraph
from ge.error import GeError, GeValueError
from ge.graph import Graph
from ge.ops.infer import _subgraphs_of, graph_outputs
from ge.ops.registry import find_op
from ge.options import Options, current_options, using_options
from ge.runtime.om import (
    MAX_DEPTH,
    GraphEntry,
    HostTaskData,
    ModelData,
    PlanData,
    Translate,
    plan_data,
)
from ge.runtime.plan import BufferSpec, HostTask, Plan

__all__ = ["add_graph", "parse_input_shape"]


def add_graph(model: ModelData, graph: Graph, options: dict[str, str]) -> None:
    """Compile ``graph`` (the whole pipeline, custom-op ``compile`` and
    ``declare_launch_args`` callbacks included) and add its plan to ``model``."""
    if any(entry.name == graph.name for entry in model.graphs):
        raise GeValueError(f"two graphs are named {graph.name!r}; a model's graph names differ")
    settings = _settings(model)
    with using_options(settings):  # what custom-op compile callbacks read, too
        compiled = CompiledGraph(graph, options=options, ge_options=settings)
    outputs = tuple(f"{node.name}:{port}" for node, port in graph_outputs(compiled.graph))
    names = tuple(spec.name for spec in compiled.inputs)
    for shapes in _gear_shapes(compiled, options):
        plan = compiled.plan_for(shapes)  # compiled with its record
        if plan is None:
            raise GeError(
                f"graph {graph.name!r}: its shapes depend on input values; an offline model "
                f"needs shapes fixed at build time"
            )
        data = _as_data(compiled, plan, model, options, graph.name)
        model.graphs.append(GraphEntry(graph.name, names, outputs, data))


def _settings(model: ModelData) -> Options:
    """The record the model is compiled with (``ModelData.ge_options``, set by ``_build``:
    the caller's, with bounds checks on, since a model's kernel arguments come from a file)."""
    if model.ge_options is None:
        model.ge_options = current_options().replace(kernel_boundscheck=True)
    return model.ge_options


MAX_GEARS = 100  # as ATC: at most 100 shape gears per graph


def _gear_shapes(compiled: CompiledGraph, options: dict[str, str]) -> list[list[list[int]]]:
    """The input shapes to compile plans for: ``input_shape`` fixes declared ``-1`` dims; dims
    still ``-1`` take each gear's values, from ``dynamic_dims`` (``"1,2;4,8"``: one value per
    ``-1`` dim, in input order, per gear) or ``dynamic_batch_size`` (``"1,2,4"``: one value
    for every ``-1`` dim, per gear), as ATC's options do."""
    gears = _gears(options)
    fixed = parse_input_shape(options.get("input_shape", ""), allow_unknown=gears is not None)
    unknown = sorted(set(fixed) - {spec.name for spec in compiled.inputs})
    if unknown:
        raise GeValueError(f"input_shape names {unknown}, which are not inputs of the graph")
    base = [
        _shape_of(spec.name, spec.slot, spec.shape, fixed, gears is not None)
        for spec in compiled.inputs
    ]
    holes = [(i, d) for i, shape in enumerate(base) for d, v in enumerate(shape) if v == -1]
    if gears is None:
        return [base]
    if not holes:
        raise GeValueError("dynamic_dims/dynamic_batch_size given, but no input dim is -1")
    batch = bool(options.get("dynamic_batch_size"))  # one value per gear, for every -1 dim
    shapes = []
    for gear in gears:
        values = gear * len(holes) if batch else gear
        if len(values) != len(holes):
            raise GeValueError(
                f"dynamic_dims gear {gear} gives {len(gear)} values for {len(holes)} -1 dims"
            )
        shape = [list(s) for s in base]
        for (i, d), v in zip(holes, values, strict=True):
            shape[i][d] = v
        if shape in shapes:
            raise GeValueError(f"dynamic_dims repeats the gear {gear}")
        shapes.append(shape)
    return shapes


def _gears(options: dict[str, str]) -> list[list[int]] | None:
    dims, batch = options.get("dynamic_dims", ""), options.get("dynamic_batch_size", "")
    if dims and batch:
        raise GeValueError("give dynamic_dims or dynamic_batch_size, not both")
    text = dims or batch.replace(",", ";")
    if not text.strip():
        return None
    try:
        gears = [[int(v) for v in g.split(",")] for g in text.split(";") if g.strip()]
    except ValueError:
        raise GeValueError(
            f"dynamic_dims/dynamic_batch_size {text!r}: values must be integers"
        ) from None
    if not 0 < len(gears) <= MAX_GEARS or any(v < 0 for g in gears for v in g):
        raise GeValueError(
            f"dynamic gears must be 1 to {MAX_GEARS} lists of dims >= 0, got {text!r}"
        )
    return gears


def _as_data(
    compiled: CompiledGraph,
    plan: Plan,
    model: ModelData,
    options: dict[str, str],
    name: str,
    depth: int = 0,
) -> PlanData:
    if depth > MAX_DEPTH:
        raise GeError(f"{name}: control flow nests deeper than {MAX_DEPTH}, the most a model holds")
    translate = _control_flow(compiled, plan, model, options, name, depth)
    return plan_data(plan, model, name, translate)


# control-flow op -> (the host op it becomes, where its subgraphs' inputs start among its own)
_CONTROL = {"If": ("branch", 1), "Case": ("branch", 1), "While": ("while", 0)}


def _control_flow(
    compiled: CompiledGraph,
    plan: Plan,
    model: ModelData,
    options: dict[str, str],
    name: str,
    depth: int,
) -> Translate:
    """Makes the plan's control-flow host tasks (If, Case, While) data: each subgraph is
    compiled into a sub-plan for the shapes the node feeds it, and the task becomes a
    ``branch`` or ``while`` host op running those sub-plans."""

    def translate(task: HostTask, subplans: list[PlanData]) -> HostTaskData | None:
        node = compiled.graph.find_node_by_name(task.name)
        if node is None or node.type not in _CONTROL:
            _check_ours(task)
            return None  # written as it is: the op type, its attributes and buffers
        op, offset = _CONTROL[node.type]
        n_out = node.get_outputs_size()
        n_in = len(task.buffers) - n_out
        specs = [plan.buffers[b] for b in task.buffers]
        feeds = [tuple(s.shape) for s in specs[offset:n_in]]
        first = len(subplans)
        takes = []
        for sub in _subgraphs_of(node):
            settings = _settings(model)
            with using_options(settings):
                inner = CompiledGraph(
                    sub, input_offset=offset, optimize=False, options=options, ge_options=settings
                )
                sub_plan = inner.plan_for([list(s) for s in feeds[: len(inner.inputs)]])
            if sub_plan is None:
                raise GeError(
                    f"node {node.name}: the shapes of its subgraph {sub.name!r} depend on "
                    f"input values; an offline model needs them fixed at build time"
                )
            where = f"{name}/{sub.name}"
            subplans.append(_as_data(inner, sub_plan, model, options, where, depth + 1))
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


def _check_ours(task: HostTask) -> None:
    """A reference task a model may hold runs one of ge's own ops: a custom op's reference
    is the user's Python (its ``execute``), which a model never runs."""
    op_type = str(task.params["op_type"])
    op = find_op(op_type)
    if op is None or op.source != "ge":
        raise GeError(
            f"node {task.name} runs Python on the host (custom op {op_type}'s execute); an "
            f"offline model holds kernels, copies, matmuls, control flow over them and ge's "
            f"own ops' references only"
        )


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
    name: str, slot: int, declared: Sequence[int], fixed: dict[str, list[int]], gears: bool
) -> list[int]:
    shape = fixed.get(name)
    if shape is None:
        if (-1 in declared and not gears) or list(declared) == [-2]:
            raise GeValueError(
                f"input {slot} ({name}) has shape {list(declared)}; give its shape in the "
                f'build option input_shape (e.g. "{name}:1,3"), or compile shape gears for it '
                f"with dynamic_dims"
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


def parse_input_shape(text: str, allow_unknown: bool = False) -> dict[str, list[int]]:
    """ATC's ``input_shape`` option: ``"x:1,3,224;y:2"`` (an empty shape is a scalar; ``-1``
    dims, with ``allow_unknown``, are filled by shape gears)."""
    shapes: dict[str, list[int]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, dims = part.rpartition(":")
        if not sep or not name:
            raise GeValueError(f"input_shape entry {part!r} must read name:d0,d1,...")
        try:
            shape = [int(d) for d in dims.split(",")] if dims.strip() else []
        except ValueError:
            raise GeValueError(f"input_shape entry {part!r}: dims must be integers") from None
        if any(d < (-1 if allow_unknown else 0) for d in shape):
            raise GeValueError(
                f"input_shape entry {part!r}: dims must be >= 0"
                + (
                    " (or -1, filled by the shape gears)"
                    if allow_unknown
                    else " (-1 needs shape gears: dynamic_dims or dynamic_batch_size)"
                )
            )
        if name in shapes:
            raise GeValueError(f"input_shape names {name!r} twice")
        shapes[name] = shape
    return shapes
