"""Writing offline models (``ge.runtime.om``): a compiled ``Plan`` as data (``plan_data``)
and the bytes of a model file (``pack``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np

from ge.error import GeError
from ge.runtime._om_data import (
    ALIGN,
    FORMAT_VERSION,
    MAGIC,
    PREFIX,
    BufferData,
    GraphEntry,
    HostTaskData,
    KernelTaskData,
    ModelData,
    PlanData,
    Translate,
)
from ge.runtime.host_ops import HOST_OPS
from ge.runtime.plan import HostTask, KernelTask, Plan, binary_data, buffers_of

__all__ = ["pack", "plan_data"]


def plan_data(
    plan: Plan, model: ModelData, graph: str, translate: Translate | None = None
) -> PlanData:
    """``plan`` (of the graph named ``graph``) as data, adding its kernel binaries and
    constants to ``model``, each binary once. Weights are named ``<graph>/<Const node>``, and
    also ``<Const node>`` while every graph's constant of that name holds the same dtype, shape
    and bytes: those graphs of a bundle share one weight, which ``set_weights`` updates for all
    of them. An op's ``reference`` host task goes through ``translate`` (which makes control
    flow ``branch``/``while`` tasks over sub-plans), else is written as it is: its op type,
    attributes and buffers; a Python task, a custom op's ``execute`` (``custom_op``: a model
    runs no Python callback, so the op needs ``declare_launch_args``), or a reference
    ``_host_data`` cannot write, raises ``GeError`` naming the node."""
    kernels, weights = model.kernels, model.weights
    index = {data: k for k, data in enumerate(kernels)}  # a binary is stored once
    tasks: list[KernelTaskData | HostTaskData] = []
    # the plan's own sub-plans keep their indexes; ``translate`` appends after them
    subplans = [plan_data(sub, model, graph, translate) for sub in plan.subplans]
    for task in plan.tasks:
        if isinstance(task, KernelTask):
            data = binary_data(task.kernel)
            if data not in index:
                index[data] = len(kernels)
                kernels.append(data)
            patches = zip(task.patch_pos, task.patch_buf, task.patch_off, strict=True)
            tasks.append(
                KernelTaskData(
                    task.name,
                    index[data],
                    task.kernel.function,
                    int(task.block_dim),
                    tuple(int(v) for v in task.template),
                    tuple((int(p), int(b), int(o)) for p, b, o in patches),
                    tuple(sorted(int(i) for i in task.same_index_inputs)),
                )
            )
        elif isinstance(task, HostTask) and task.op in _PROCESS_ONLY:
            raise GeError(f"node {task.name} {_PROCESS_ONLY[task.op](task)}")
        elif isinstance(task, HostTask) and task.op in HOST_OPS:
            made = translate(task, subplans) if translate and task.op == "reference" else None
            tasks.append(made if made is not None else _host_data(task))
        else:
            raise GeError(
                f"node {task.name} runs Python on the host (a custom op's execute); an "
                f"offline model holds kernels, copies, matmuls, control flow over them and "
                f"ge's own ops' references only"
            )
    consts: dict[int, int] = {}
    read = set().union(*(buffers_of(task) for task in plan.tasks))
    for buf, addr in plan.const_addrs.items():
        spec = plan.buffers[buf]
        weight = np.empty(spec.shape, spec.dtype)
        weight.reshape(-1).view(np.uint8)[...] = _device_bytes(addr, spec.nbytes)
        name = plan.const_names.get(buf) if buf in read else None
        if name is None:  # a kernel's parameters, or a value the compiler used up: no name
            consts[buf] = len(weights)
            weights.append(weight)
            continue
        shared = model.weight_names.get(name)
        if shared is not None and _same(weights[shared], weight):
            consts[buf] = shared
        else:
            consts[buf] = len(weights)
            weights.append(weight)
            if shared is not None or name in model.ambiguous_names:  # two values: no shared name
                model.weight_names.pop(name, None)
                model.ambiguous_names.add(name)
            else:
                model.weight_names[name] = consts[buf]
        model.weight_names[f"{graph}/{name}"] = consts[buf]
    buffers = tuple(
        BufferData(s.kind, int(s.index), tuple(int(d) for d in s.shape), s.dtype.name)
        for s in plan.buffers
    )
    return PlanData(
        buffers,
        tuple(tasks),
        tuple(plan.inputs),
        tuple(plan.outputs),
        consts,
        dict(plan.views),
        int(plan.arena_size),
        tuple(subplans),
    )


# Host ops that run Python of the process that made the plan: a model never holds one (it runs
# no Python callback), so building one refuses them, saying why.
_PROCESS_ONLY: dict[str, Callable[[HostTask], str]] = {
    "custom_op": lambda task: (
        f"runs Python on the host (custom op {task.params['op_type']}'s execute); an offline "
        f"model runs no Python callback: give the implementation declare_launch_args (its "
        f"launches go into the model as kernels)"
    ),
    "debug_print": lambda task: (
        "(debug_print) prints through a Python function of the process that traced it "
        "(ge.jit.debug_print in a cond/while_loop/fori_loop body); an offline model cannot "
        "hold it"
    ),
}


def _host_data(task: HostTask) -> HostTaskData:
    """A data host task as a file holds it: ``hint`` parameters dropped, ``attrs`` as JSON
    values; ``GeError`` naming the node for a ``live`` parameter or an attribute JSON cannot
    hold."""
    kinds = HOST_OPS[task.op].params
    params: dict[str, Any] = {}
    for key, value in task.params.items():
        kind = kinds[key]
        if kind == "live" and value is not None:
            raise GeError(
                f"node {task.name} ({task.op}) runs over objects of this process ({key}: "
                f"subgraphs and their runner); an offline model cannot hold it"
            )
        if kind in ("hint", "live"):
            params[key] = None
        elif kind == "attrs":
            where = f"node {task.name}: attribute"
            params[key] = {n: _json_value(v, f"{where} {n!r}") for n, v in value.items()}
        else:
            params[key] = value
    return HostTaskData(task.name, task.op, tuple(task.buffers), params)


_JSON_SCALARS = (bool, int, float, str, type(None))


def _json_value(value: Any, where: str) -> Any:
    """``value`` as JSON holds it (tuples become lists, numpy scalars Python ones), or
    ``GeError``: only values that read back equal are written."""
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64)):
        value = value.item()
    if type(value) in _JSON_SCALARS:
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v, where) for v in value]
    raise GeError(
        f"{where} is a {type(value).__name__}; an offline model holds attributes that are "
        f"numbers, strings, booleans or lists of them"
    )


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _device_bytes(addr: int, nbytes: int) -> np.ndarray:
    from ge.runtime.memory import device_view  # noqa: PLC0415  (only packing reads devices)

    return device_view(addr, nbytes)


# --- writing ------------------------------------------------------------------------------------
def pack(model: ModelData) -> bytes:
    """The bytes of a model file holding ``model``."""
    blobs: list[bytes | np.ndarray] = [*model.kernels, *model.weights]
    header: dict[str, Any] = {
        "ge_version": model.ge_version,
        "options": dict(model.options),
        "kernels": list(range(len(model.kernels))),
        "weights": [
            {"section": len(model.kernels) + w, "dtype": a.dtype.name, "shape": list(a.shape)}
            for w, a in enumerate(model.weights)
        ],
        "graphs": [_graph_json(g) for g in model.graphs],
        "weight_names": dict(model.weight_names),
    }
    if model.ge_options is not None:
        header["ge_options"] = model.ge_options.as_dict()
    sections: list[dict[str, Any]] = []
    parts: list[bytes | memoryview] = []
    at = 0
    for blob in blobs:
        raw = _raw(blob)
        pad = -at % ALIGN
        parts.append(b"\0" * pad)
        at += pad
        sections.append(
            {"offset": at, "length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        )
        parts.append(raw)
        at += len(raw)
    header["sections"] = sections
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-(PREFIX.size + len(text)) % ALIGN)  # sections start aligned
    prefix = PREFIX.pack(MAGIC, FORMAT_VERSION, len(text), hashlib.sha256(text).digest())
    return b"".join([prefix, text, *parts])  # one copy of the weights, not three


def _raw(blob: bytes | np.ndarray) -> memoryview:
    """The bytes of a kernel binary or a weight, without copying."""
    if isinstance(blob, bytes):
        return memoryview(blob)
    raw: np.ndarray = np.ascontiguousarray(blob).reshape(-1).view(np.uint8)
    return memoryview(raw)  # type: ignore[arg-type]


def _graph_json(entry: GraphEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "input_names": list(entry.input_names),
        "output_names": list(entry.output_names),
        **_plan_json(entry.plan),
    }


def _plan_json(plan: PlanData) -> dict[str, Any]:
    return {
        "subplans": [_plan_json(sub) for sub in plan.subplans],
        "buffers": [[b.kind.value, b.index, list(b.shape), b.dtype] for b in plan.buffers],
        "tasks": [_task_json(t) for t in plan.tasks],
        "inputs": list(plan.inputs),
        "outputs": list(plan.outputs),
        "consts": [[b, w] for b, w in plan.consts.items()],
        "views": [[b, s] for b, s in plan.views.items()],
        "arena_size": plan.arena_size,
    }


def _task_json(task: KernelTaskData | HostTaskData) -> dict[str, Any]:
    if isinstance(task, KernelTaskData):
        return {
            "name": task.name,
            "kernel": task.kernel,
            "function": task.function,
            "block_dim": task.block_dim,
            "template": list(task.template),
            "patches": [list(p) for p in task.patches],
            "same_index_inputs": list(task.same_index_inputs),
        }
    return {
        "name": task.name,
        "host": task.op,
        "buffers": list(task.buffers),
        "params": dict(task.params),
    }
