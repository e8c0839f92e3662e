"""The ``reference`` host task's function: an op without a kernel, run by its numpy reference
on views of the plan's buffers (``ge.runtime.host_ops.HOST_OPS["reference"]``).

It lives with the op library rather than the compiler, so that binding a loaded model that
holds such a task needs ``ge.ops`` (the references) but never ``ge.compiler``: the runtime
imports this module by name when it binds the first one (``ge.runtime.plan``), and plans
without one never import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.error import GeError
from ge.graph._dtypes import data_type_from_numpy
from ge.graph.tensor_desc import TensorDesc
from ge.ops.interpreter import run_reference
from ge.ops.registry import find_op
from ge.ops.schema import ExecContext, OpDef

__all__ = ["grouped", "make_reference"]


def grouped(op: OpDef, groups: Sequence[Sequence[int]], views: Sequence[Any]) -> list[Any]:
    """Per IR input of ``op``, its value (a list for a dynamic input) from ``views``:
    ``groups`` gives each port's position in ``views`` (-1: an unconnected optional input)."""
    inputs: list[Any] = []
    for spec, positions in zip(op.inputs, groups, strict=True):
        values = [views[p] if p >= 0 else None for p in positions]
        inputs.append(values if spec.dynamic else values[0])
    return inputs


def make_reference(params: dict[str, Any]) -> Callable[[list[np.ndarray]], None]:
    """The function of a ``reference`` host task (``ge.runtime.host_ops.HOST_OPS``): the op's
    numpy reference on the task's views. A task without descs (read from a model file) gets
    descs made from its output views, and may only name ge's own ops: a model runs no user
    Python, so a custom op's reference is refused."""
    op_type = params["op_type"]
    op = find_op(op_type)
    descs = params["descs"]
    if op is None or op.reference is None:
        raise GeError(f"host op reference: no op {op_type!r} with a numpy reference is known")
    if descs is None and op.source != "ge":
        raise GeError(f"host op reference: {op_type} is not one of ge's ops ({op.source})")
    groups, n_out, attrs = params["inputs"], int(params["outputs"]), dict(params["attrs"])
    node = str(params["node"])
    empty_required = any(  # a dynamic input may have no members (a cond without operands)
        not g and not spec.dynamic for g, spec in zip(groups, op.inputs, strict=False)
    )
    if len(groups) != len(op.inputs) or empty_required:
        raise GeError(f"host op reference: {op_type} takes {len(op.inputs)} inputs")
    graphs, runner = params["subgraphs"] or ([], None)

    def run(views: list[np.ndarray]) -> None:
        present, outs = views[: len(views) - n_out], views[len(views) - n_out :]
        inputs = grouped(op, groups, present)
        out_descs = descs if descs is not None else [_desc_of(v) for v in outs]
        exec_ctx = ExecContext(
            op, inputs, attrs, outputs=out_descs, subgraphs=graphs, run_subgraph=runner
        )
        results = run_reference(op, exec_ctx, node)
        flat: list[Any] = []
        for spec, result in zip(op.outputs, results, strict=True):
            flat += list(result) if spec.dynamic else [result]
        for out, result in zip(outs, flat, strict=True):
            value = np.asarray(result)
            if value.shape != out.shape:
                raise GeError(
                    f"{op.type} produced shape {list(value.shape)}, the plan "
                    f"expected {list(out.shape)}"
                )
            out[...] = value

    return run


def _desc_of(array: np.ndarray) -> TensorDesc:
    return TensorDesc(list(array.shape), data_type=data_type_from_numpy(array.dtype))
