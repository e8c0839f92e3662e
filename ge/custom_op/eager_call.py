"""Eager calls: a custom op called on numpy arrays or ``ge.graph.Tensor``s outside any graph
runs at once and returns its results, as a ``torch.library.custom_op`` does.

``from ge.es.custom import MyOp; y = MyOp(a, b, alpha=2.0)`` with ``a``, ``b`` numpy arrays
(no ``TensorHolder`` among the inputs and no ``owner_builder``) is routed here by the
generated ``ge.es`` function (``ge.es._generator``). Built-in ``ge.es`` ops never are: they keep
GE-PY's "Please ensure at least one input tensor or an explicit owner_builder" error.

How: the call becomes a one-node graph (a ``Data`` per present input instance -> the op ->
every output), compiled by ``ge.compiler.executable.CompiledGraph`` like any graph, so the op
runs by the path its plan gives it: ``declare_launch_args``' declared launches when the
implementation has it, else its ``execute``, with ``compile`` before either; a prototype
registered through ``ge.ops.register_op_def`` runs its numpy reference. The compiled graph is
cached per (op type, input structure, dtypes and shapes, attributes and output counts) in a
bounded LRU cache of ``CACHE_SIZE`` entries, so a second call with the same signature runs
the cached plan (``declare_launch_args`` and ``compile`` do not run again). An entry is
dropped, and the op compiled anew, once its prototype or implementation was registered again
(the entry remembers the ``OpDef`` and ``OpImplDescriptor`` it was built from).
``cache_info()`` / ``cache_clear()`` inspect and empty it.

Decisions (ours):

* **What comes back.** numpy arrays in -> numpy arrays out (fresh arrays the caller owns);
  any ``ge.graph.Tensor`` among the inputs -> host ``ge.graph.Tensor``s out. One output is
  returned as is, one dynamic output as a list, several outputs as the op's
  ``<OpType>Output`` object, exactly as the function returns ``TensorHolder``s in a graph.
  Inputs may be numpy arrays (numpy scalars count as 0-d arrays) or ``ge.graph.Tensor``s
  (host or device); ``None`` for an absent optional input, a list for a dynamic one.
* **``mutates_args``.** The new value of a mutated input is written back into the caller's
  numpy array (``np.copyto``; a read-only array or a numpy scalar is refused before anything
  runs) or ``ge.graph.Tensor`` (a device tensor is passed by address and written in place; a
  host one gets the new bytes). The output that writes that input in place is *the caller's
  object itself*, holding the new value (as torch's in-place ops return ``self``). Inputs not
  named in ``mutates_args`` are staged into the run's own memory, so an op that writes them
  anyway cannot change the caller's numpy arrays (``opcheck`` reports such an op).
* **Errors**, all ``GeError``s naming the op and the argument: an input that is neither a
  numpy array nor a ``ge.graph.Tensor`` (``GeTypeError``), an array of a dtype ge has no
  ``DataType`` for, a missing required input, a tensor with unknown dims (``GeValueError``); a
  shape ``infer_meta`` refuses raises its ``InferError`` (``Op(x: f32[3], y: f32[4]) at
  file:line: ...``) before anything runs; a Python op without implementation raises the
  reference's "has no implementation" error; a failing callback or kernel raises the plan's
  ``GeError`` naming the node and the method.

    >>> import numpy as np
    >>> from ge.runtime import Tensor, TensorDesc
    >>> from ge.custom_op import get_execute_ctx, register_op, register_op_impl
    >>> @register_op(op_type="DocEagerIdentity")
    ... def identity(x: TensorDesc) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> @register_op_impl(op_type="DocEagerIdentity")
    ... class Identity:
    ...     def execute(self, x: Tensor) -> None:
    ...         get_execute_ctx().make_output_ref_input(0, 0)  # output 0 is x's bytes
    >>> from ge.es.custom import DocEagerIdentity
    >>> DocEagerIdentity(np.arange(3, dtype=np.float32))
    array([0., 1., 2.], dtype=float32)
    >>> from ge.custom_op import proto, registry
    >>> registry._unregister("DocEagerIdentity"); proto._unregister("DocEagerIdentity")
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ge.custom_op._execution import CustomOpNotImplementedError
from ge.error import GeError, GeTypeError, GeValueError
from ge.graph._dtypes import data_type_from_numpy, numpy_dtype
from ge.graph.tensor import Tensor
from ge.graph.types import DataType
from ge.ops.schema import OpDef

__all__ = ["CACHE_SIZE", "CacheInfo", "cache_clear", "cache_info", "call", "lookup", "prepare"]

CACHE_SIZE = 64  # compiled one-node graphs kept (each holds a plan and its workspaces)


class CacheInfo(NamedTuple):
    """``cache_info()``: hits and misses since the last ``cache_clear()``, entries kept."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


# --- the inputs of one call -----------------------------------------------------------------------
@dataclass
class _Instance:
    """One present input instance: where it came from and what the run reads."""

    name: str  # the argument's name (with "[k]" for an instance of a dynamic input)
    ir_index: int
    value: Any  # the caller's object (np.ndarray, np.generic or ge.graph.Tensor)
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    device_addr: int | None = None  # a device ge.graph.Tensor, read in place
    host: np.ndarray | None = None  # the bytes to stage otherwise (contiguous)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class _Call:
    """A call's inputs, flattened, and the key of its compiled graph."""

    op: OpDef
    fn: Callable[..., Any]
    values: dict[str, Any]
    input_names: list[str]  # the Python parameter of each IR input
    instances: list[_Instance]
    structure: list[Any]  # per IR input: None (absent), -1 (one instance) or a count
    tensors_out: bool
    key: tuple[Any, ...] = ()
    builder_param: str | None = None  # the parameter of ``fn`` that takes the graph builder


def _describe(value: Any) -> str:
    module = type(value).__module__
    return (
        type(value).__qualname__ if module == "builtins" else f"{module}.{type(value).__qualname__}"
    )


def _instance(op: OpDef, name: str, ir_index: int, value: Any) -> _Instance:
    if isinstance(value, (np.ndarray, np.generic)):
        try:
            data_type_from_numpy(value.dtype)
        except (GeError, TypeError, ValueError):
            raise GeTypeError(
                f"{op.type}: input '{name}' is a numpy array of dtype {value.dtype}, which has "
                f"no ge DataType; convert it (e.g. a.astype(np.float32))"
            ) from None
        host = np.asarray(value)  # a numpy scalar: a 0-d array (ascontiguousarray: 1-d)
        host = host if host.flags.c_contiguous else np.ascontiguousarray(host)
        return _Instance(name, ir_index, value, host.dtype, tuple(host.shape), host=host)
    if isinstance(value, Tensor):
        dims = tuple(int(d) for d in value.shape)
        if any(d < 0 for d in dims):
            raise GeValueError(
                f"{op.type}: input '{name}' is a ge.graph.Tensor of shape {list(dims)} with "
                f"unknown dims; an eager call needs its real shape"
            )
        dtype = np.dtype(numpy_dtype(value.data_type))
        inst = _Instance(name, ir_index, value, dtype, dims)
        if value._device_addr is not None:  # as Session reads a device input: in place
            if value.nbytes < inst.nbytes:
                raise GeValueError(
                    f"{op.type}: input '{name}' holds {value.nbytes} bytes of device memory; "
                    f"its shape {list(dims)} of {value.data_type.name} needs {inst.nbytes}"
                )
            inst.device_addr = value.addr
        else:
            inst.host = value.numpy()
        return inst
    raise GeTypeError(
        f"{op.type}: input '{name}' must be a numpy array or a ge.graph.Tensor to run the op "
        f"at once (or a TensorHolder to add it to a graph), got {_describe(value)}"
    )


def _flatten(op: OpDef, values: dict[str, Any], input_names: list[str]) -> _Call:
    instances: list[_Instance] = []
    structure: list[Any] = []
    tensors_out = False
    for ir_index, (spec, name) in enumerate(zip(op.inputs, input_names, strict=True)):
        value = values[name]
        if spec.dynamic:
            if not isinstance(value, (list, tuple)):
                raise GeTypeError(
                    f"{op.type}: input '{name}' is dynamic; pass a list of numpy arrays or "
                    f"ge.graph.Tensors, got {_describe(value)}"
                )
            structure.append(len(value))
            for k, v in enumerate(value):
                instances.append(_instance(op, f"{name}[{k}]", ir_index, v))
                tensors_out = tensors_out or isinstance(v, Tensor)
        elif value is None:
            if not spec.optional:
                raise GeValueError(f"{op.type}: input '{name}' is required")
            structure.append(None)
        else:
            structure.append(-1)
            instances.append(_instance(op, name, ir_index, value))
            tensors_out = tensors_out or isinstance(value, Tensor)
    return _Call(op, lambda: None, values, input_names, instances, structure, tensors_out)


def _frozen(value: Any) -> Any:
    """A hashable stand-in for an argument value (type-tagged: 1, 1.0 and True differ)."""
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_frozen(v) for v in value))
    if isinstance(value, Tensor):
        return ("tensor", int(value.data_type), tuple(value.shape), value._host_bytes())
    if isinstance(value, DataType):
        return ("dt", int(value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))  # a Graph (a subgraph argument): the same object only
    return (type(value).__name__, value)


# --- the cache ------------------------------------------------------------------------------------
@dataclass
class _Entry:
    """A compiled one-node graph and how to read its results."""

    op: OpDef
    impl: Any  # the OpImplDescriptor it was compiled with (None: no Python implementation)
    compiled: Any  # CompiledGraph
    runner: Any  # its PlanRunner
    out_specs: list[tuple[np.dtype[Any], tuple[int, ...]]]
    template: Any  # the function's result with each TensorHolder replaced by its port
    refs: dict[int, int]  # output port -> the input instance it writes in place
    output_descs: list[Any] = field(default_factory=list)  # the node's inferred descs
    keep: Any = None  # what the key's ("id", ...) stand-ins point to
    node_name: str = ""  # the op's node in the one-node graph (errors name it)


_LOCK = threading.Lock()
_CACHE: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
_STATS = [0, 0]  # hits, misses


def cache_info() -> CacheInfo:
    """Hits, misses and size of the compiled-graph cache of eager calls."""
    with _LOCK:
        return CacheInfo(_STATS[0], _STATS[1], CACHE_SIZE, len(_CACHE))


def cache_clear() -> None:
    """Forget every compiled graph of eager calls (and the statistics)."""
    with _LOCK:
        _CACHE.clear()
        _STATS[:] = [0, 0]


def _current(op_type: str) -> tuple[OpDef, Any]:
    from ge.custom_op.registry import get_registered_op_impl_for_type  # noqa: PLC0415
    from ge.ops.registry import registry  # noqa: PLC0415

    ops = registry()
    if op_type not in ops:
        raise GeValueError(f"{op_type}: the op is no longer registered; register it again")
    return ops.get(op_type), get_registered_op_impl_for_type(op_type)


def lookup(call: _Call) -> _Entry:
    """The cached compiled graph of ``call`` (compiled on a miss, or when the op's prototype
    or implementation was registered again since)."""
    op, impl = _current(call.op.type)
    with _LOCK:
        entry = _CACHE.get(call.key)
        if entry is not None and entry.op is op and entry.impl is impl:
            _CACHE.move_to_end(call.key)
            _STATS[0] += 1
            return entry
        if entry is not None:  # re-registered since: drop every entry of the old op
            for key in [k for k, e in _CACHE.items() if e.op.type == op.type]:
                if _CACHE[key].op is not op or _CACHE[key].impl is not impl:
                    del _CACHE[key]
        _STATS[1] += 1
    entry = _compile(call, op, impl)  # outside the lock: callbacks may call eagerly too
    with _LOCK:
        _CACHE[call.key] = entry
        _CACHE.move_to_end(call.key)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return entry


# --- compiling ------------------------------------------------------------------------------------
def _ref_ports(call: _Call, op: OpDef, counts: list[int]) -> dict[int, int]:
    """Output port -> input instance for the outputs that write an input in place."""
    from ge.custom_op.proto import get_registered_op_proto  # noqa: PLC0415

    proto = get_registered_op_proto(op.type)
    if proto is None or not proto.mutates_args:
        return {}
    first_port = [sum(counts[:i]) for i in range(len(counts))]
    by_input: dict[int, list[int]] = {}
    for k, inst in enumerate(call.instances):
        by_input.setdefault(inst.ir_index, []).append(k)
    names = [s.name for s in op.inputs]
    refs: dict[int, int] = {}
    for input_name, out_index in proto.mutates_args:
        instances = by_input.get(names.index(input_name), [])
        ports = range(first_port[out_index], first_port[out_index] + counts[out_index])
        refs.update(zip(ports, instances, strict=False))  # dynamic: instance k <-> port k
    return refs


def _output_counts(op: OpDef, template: Any) -> list[int]:
    groups = template if len(op.outputs) != 1 else [template]
    if len(op.outputs) > 1:
        groups = [getattr(template, f) for f in type(template)._fields]
    return [len(g) if spec.dynamic else 1 for spec, g in zip(op.outputs, groups, strict=True)]


def _portify(result: Any) -> Any:
    """The function's result (holders) as the same structure of output ports."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    if isinstance(result, TensorHolder):
        return result._port
    if isinstance(result, list):
        return [_portify(r) for r in result]
    cls = type(result)
    return cls(*[_portify(getattr(result, f)) for f in cls._fields])


def build_graph(call: _Call) -> tuple[Any, Any, list[Any]]:
    """The one-node graph of ``call``: returns the graph, the result template (ports) and
    the node's inferred output descs. ``infer_meta`` runs here (an ``InferError`` for a
    shape it refuses)."""
    from ge.es.graph_builder import GraphBuilder  # noqa: PLC0415

    op = call.op
    if not op.outputs:
        raise CustomOpNotImplementedError(
            f"{op.type}: not implemented: an eager call of an op without outputs (it would "
            f"return nothing and be removed as dead code); add it to a graph instead"
        )
    b = GraphBuilder(f"{op.type}_eager")
    holders = [
        b.create_input(
            k, name=f"input_{k}", data_type=data_type_from_numpy(inst.dtype), shape=list(inst.shape)
        )
        for k, inst in enumerate(call.instances)
    ]
    values = dict(call.values)
    if call.builder_param is not None:  # an op with no or only optional inputs
        values[call.builder_param] = b
    it = iter(holders)
    for name, shape in zip(call.input_names, call.structure, strict=True):
        if shape == -1:
            values[name] = next(it)
        elif shape is not None:
            values[name] = [next(it) for _ in range(shape)]
    result = call.fn(**values)
    flat = sorted(_flat_holders(result), key=lambda h: h._port)
    descs = [h._desc() for h in flat]
    return b.build_and_reset(flat), _portify(result), descs


def _flat_holders(result: Any) -> list[Any]:
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    if isinstance(result, TensorHolder):
        return [result]
    if isinstance(result, list):
        return [h for r in result for h in _flat_holders(r)]
    return [h for f in type(result)._fields for h in _flat_holders(getattr(result, f))]


def compile_call(call: _Call, op: OpDef, impl: Any) -> _Entry:
    """Compile ``call``'s one-node graph (not cached: ``lookup`` caches)."""
    from ge.compiler.executable import CompiledGraph  # noqa: PLC0415
    from ge.custom_op._execution import missing_execution  # noqa: PLC0415

    if op.source.startswith("ge.custom_op:") and impl is None:
        raise missing_execution(op.type)
    graph, template, descs = build_graph(call)
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([inst.shape for inst in call.instances])
    if plan is None:
        raise GeError(f"{op.type}: no task plan could be built for the eager call")
    runner = compiled.runner(plan)
    out_specs = [
        (plan.buffers[b].dtype, tuple(int(d) for d in plan.buffers[b].shape)) for b in plan.outputs
    ]
    refs = _ref_ports(call, op, _output_counts(op, template))
    keep = [v for v in call.values.values() if not _hashable(v)]
    node = next((n.name for n in graph.get_all_nodes() if n.type == op.type), "")
    return _Entry(op, impl, compiled, runner, out_specs, template, refs, descs, keep, node)


_compile = compile_call


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# --- running --------------------------------------------------------------------------------------
def run_entry(
    entry: _Entry, call: _Call, observe: bool = False, fill: int | None = None
) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Run the compiled graph once on ``call``'s inputs. Returns the outputs (fresh arrays)
    and, when ``observe``, every input instance's bytes after the run (every input then goes
    through device memory of its own, so writes to it are seen). ``fill``: every output is
    written into fresh device memory whose bytes are all ``fill`` first (opcheck: an op that
    reads an output before writing it, or leaves part of it unwritten, gives results that
    depend on the fill)."""
    from ge.runtime import memory  # noqa: PLC0415

    mutated = set(entry.refs.values())
    blocks: list[Any] = []
    try:
        sources, staged = _stage(call, mutated, observe, blocks)
        targets: list[Any] = []
        if fill is not None:
            for nbytes in entry.runner.output_nbytes:
                block = memory.malloc(max(nbytes, 1))
                blocks.append(block)
                view = memory.device_view(block.addr, nbytes)
                view[...] = fill
                targets.append((block.addr, view))
        raw = entry.runner.run(sources, targets)
        outputs = [
            r.copy().view(dtype).reshape(shape)
            if fill is not None
            else r.view(dtype).reshape(shape)
            for r, (dtype, shape) in zip(raw, entry.out_specs, strict=True)
        ]  # with fill, the results are views of blocks freed below
        after: list[np.ndarray] = []
        for k, addr in staged:
            inst = call.instances[k]
            view = memory.device_view(addr, inst.nbytes).view(inst.dtype).reshape(inst.shape)
            if observe:
                after.append(view.copy())
            elif k in mutated:
                _write_back(inst, view)
        return outputs, after if observe else None
    finally:
        for block in blocks:
            memory.free(block)


def _stage(
    call: _Call, mutated: set[int], observe: bool, blocks: list[Any]
) -> tuple[list[int | np.ndarray], list[tuple[int, int]]]:
    """The run's input sources: a device tensor's address (unless observed), host bytes to
    stage, or (mutated or observed inputs) a fresh device block holding a copy, whose
    (instance, address) is listed to read back after the run."""
    from ge.runtime import memory  # noqa: PLC0415

    sources: list[int | np.ndarray] = []
    staged: list[tuple[int, int]] = []
    for k, inst in enumerate(call.instances):
        if inst.device_addr is not None and not observe:
            sources.append(inst.device_addr)
        elif k in mutated or observe:
            block = memory.malloc(max(inst.nbytes, 1))
            blocks.append(block)
            data = inst.host if inst.host is not None else _device_bytes(inst)
            if inst.nbytes:
                memory.memcpy_h2d(block.addr, np.ascontiguousarray(data))
            sources.append(block.addr)
            staged.append((k, block.addr))
        else:
            assert inst.host is not None
            sources.append(inst.host)
    return sources, staged


def _device_bytes(inst: _Instance) -> np.ndarray:
    from ge.runtime import memory  # noqa: PLC0415

    assert inst.device_addr is not None
    data: np.ndarray = memory.device_view(inst.device_addr, inst.nbytes).copy()
    return data


def _write_back(inst: _Instance, new: np.ndarray) -> None:
    """A mutated input's new value into the caller's object."""
    value = inst.value
    if isinstance(value, np.ndarray):
        np.copyto(value, new.reshape(value.shape), casting="no")
        return
    assert isinstance(value, Tensor)
    if value._device_addr is not None:  # only in observe mode: never written in place then
        return
    # ge.graph.Tensor has no public setter for its data. Host bytes are never written in
    # place (clones share them, read-only), so fresh bytes take their place, as its own
    # setters do; Session reads the same field.
    value._bytes = np.ascontiguousarray(new).reshape(-1).view(np.uint8).copy()


def _check_writable(call: _Call, refs: dict[int, int]) -> None:
    for k in set(refs.values()):
        inst = call.instances[k]
        if isinstance(inst.value, np.ndarray) and not inst.value.flags.writeable:
            raise GeValueError(
                f"{call.op.type}: input '{inst.name}' is written in place (mutates_args), but "
                f"the numpy array is read-only; pass a writable array (a.copy())"
            )
        if isinstance(inst.value, np.generic):
            raise GeValueError(
                f"{call.op.type}: input '{inst.name}' is written in place (mutates_args); pass "
                f"a numpy array, not a numpy scalar"
            )


def _results(entry: _Entry, call: _Call, outputs: list[np.ndarray]) -> Any:
    values: list[Any] = []
    for port, array in enumerate(outputs):
        k = entry.refs.get(port)
        if k is not None:
            values.append(call.instances[k].value)  # the caller's object, written in place
        elif call.tensors_out:
            values.append(Tensor.from_numpy(array))
        else:
            values.append(array)
    return _fill(entry.template, values)


def _fill(template: Any, values: list[Any]) -> Any:
    if isinstance(template, int):
        return values[template]
    if isinstance(template, list):
        return [_fill(t, values) for t in template]
    cls = type(template)
    return cls(*[_fill(getattr(template, f), values) for f in cls._fields])


# --- the entry point ------------------------------------------------------------------------------
# set by opcheck around its calls: a probe that compiles afresh and observes (see opcheck)
PROBE: ContextVar[Any] = ContextVar("ge_custom_op_eager_probe", default=None)


def prepare(
    op: OpDef, fn: Callable[..., Any], values: dict[str, Any], input_names: Sequence[str]
) -> _Call:
    """Flatten a call's inputs and compute its cache key (raises on bad inputs)."""
    call = _flatten(op, values, list(input_names))
    call.fn = fn
    inputs = set(input_names)
    rest = tuple(
        (name, _frozen(v)) for name, v in values.items() if name not in inputs and v is not None
    )
    signature = tuple((str(i.dtype), i.shape) for i in call.instances)
    call.key = (op.type, tuple(call.structure), signature, rest)
    return call


def call(
    op: OpDef, fn: Callable[..., Any], values: dict[str, Any], input_names: Sequence[str]
) -> Any:
    """Run ``op`` at once on the arrays / tensors in ``values`` (the bound arguments of its
    ``ge.es`` function ``fn``; ``input_names`` are the parameters of its IR inputs) and return
    its results (see the module docstring)."""
    prepared = prepare(op, fn, values, input_names)
    probe = PROBE.get()
    if probe is not None:
        return probe.run(prepared)
    entry = lookup(prepared)
    _check_writable(prepared, entry.refs)
    outputs, _ = run_entry(entry, prepared)
    return _results(entry, prepared, outputs)
