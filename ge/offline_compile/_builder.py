"""One graph into a model: compile it to a task plan and add the plan, as data, to the model."""

from __future__ import annotations

from collections.abc import Sequence

from ge.compiler.executable import CompiledGraph
from ge.error import GeError, GeValueError
from ge.graph import Graph
from ge.ops.infer import graph_outputs
from ge.runtime.kernel import bounds_checks
from ge.runtime.om import GraphEntry, ModelData, plan_data

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
        plan_data(plan, model, graph.name),
    )
    model.graphs.append(entry)


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
