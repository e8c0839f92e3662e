"""``Session``: add graphs, run them synchronously or on a stream (GE-PY's ``ge.session``).

Graphs are compiled on their first run (``ge.compiler``) and the compiled form is reused.
``run_graph`` takes host or device ``ge.graph.Tensor`` inputs, runs on the calling thread
(concurrent callers run concurrently; plans are reentrant) and returns host tensors;
``run_graph_with_stream_async`` queues the run on a ``ge.runtime.Stream`` and returns device
tensors at once, whose memory comes from the allocator registered for that stream (or ge's
device memory) and is given back when the tensor is collected. Failures are ``GeError``s
reading like GE-PY's ``"RunGraph failed; graph_id=1; <what>"``; wrong inputs are also
``ValueError``s.

Checks follow GE_ERRORS.md §4 and §13.1: GE-PY's exception types, with its text first in each
message and ours after it (``"Graph_id must be an integer, got str"``); all argument type
checks first, in parameter order; then, for ``run_graph_with_stream_async`` only, GE's
default-allocator registration for the stream (a stream that names no live stream, and has no
external allocator registered, fails as ``"RegisterDefaultAllocator failed; stream=0x<hex>;
..."``); then what GE's own call checks: initialisation (GE's E10062 text), the options' values,
the graph id. As in GE-PY, ``graph_id`` and ``stream`` pass any ``int`` check, ``bool``
included, and a graph id is a ``uint32`` (``-1`` names the graph ``2**32 - 1``; messages show the
id as given); ``inputs`` must be a ``list``.

Decisions where GE-PY is silent or differs: a ``ge.runtime.Stream`` is accepted wherever a
stream handle is; ``add_graph`` takes a snapshot, so editing the Graph object afterwards does
not change what runs; ``add_graph`` returns 0 like GE-PY's implementation; a session option
value GE would refuse is reported by ``add_graph`` (GE's session create accepts any); when
output shapes depend on input values, ``run_graph_with_stream_async`` reads those (small)
inputs when it is called, so they must be ready then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ge._device.memory import DeviceMemoryError, device_memory
from ge._options import encode_options, invalid_option
from ge.allocator import Allocator, MemBlock
from ge.compiler.executable import CompiledGraph
from ge.compiler.pipeline import copy_graph
from ge.compiler.runners import GraphRunner
from ge.error import GeError, GeTypeError, GeValueError, GraphError
from ge.ge_global.geapi import global_options, is_initialized
from ge.graph._verify import describe_cycle, topological_order, verify_graph
from ge.graph.graph import Graph
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import Placement
from ge.runtime import memory
from ge.runtime.executor import RESULT_BLOCKS, Target
from ge.runtime.plan import Plan
from ge.runtime.stream import Stream, resolve_stream

__all__ = ["Session"]


_GRAPH_ID_MASK = 0xFFFFFFFF  # GE-PY passes graph ids as ctypes.c_uint32: they wrap


def _check_graph_id(graph_id: object) -> int:
    """The table key of ``graph_id`` (an ``int``, ``bool`` included, as GE-PY's check)."""
    if not isinstance(graph_id, int):
        raise GeTypeError(f"Graph_id must be an integer, got {type(graph_id).__name__}")
    return int(graph_id) & _GRAPH_ID_MASK


def _check_inputs(inputs: object) -> list[Tensor]:
    if not isinstance(inputs, list):
        raise GeTypeError(f"inputs must be a list of Tensor, got {type(inputs).__name__}")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise GeTypeError(
                f"All elements in inputs must be the type of Tensor, got "
                f"{type(t).__name__} at inputs[{i}]"
            )
    return list(inputs)


def _check_stream(stream: object, message: str) -> Stream | int:
    """``stream`` as given (a ``Stream`` or an ``int``, ``bool`` included), after GE-PY's
    type check (``message``: its text, which differs between methods)."""
    if isinstance(stream, (Stream, int)):
        return stream
    raise GeTypeError(f"{message}, got {type(stream).__name__}")


def _handle(stream: Stream | int) -> int:
    return stream.handle if isinstance(stream, Stream) else int(stream)


def _stream_text(stream: Stream | int) -> str:
    """GE-PY's ``f"0x{stream:x}"`` (a negative handle reads ``0x-<hex>``)."""
    return f"0x{_handle(stream):x}"


def _resolve(api: str, stream: Stream | int, **context: Any) -> Stream:
    """The live ``Stream`` for ``stream``; else ``GeError`` ``"<api> failed; ...,
    stream=0x<hex>; <why>"``."""
    try:
        return resolve_stream(stream if isinstance(stream, Stream) else int(stream))
    except GeError as e:
        raise GeError(api, str(e), **context, stream=_stream_text(stream)) from None


# GE's E10062 ("Failed to %s. Reason: %s."), which GE reports when a session API is called
# before GEInitialize; the action per API is GE's for AddGraph, ours for the others
_NOT_INITIALIZED_ACTION = {
    "AddGraph": "adding a graph",
    "RemoveGraph": "removing a graph",
    "RunGraph": "running a graph",
    "RunGraphWithStreamAsync": "running a graph",
}


def _not_initialized(api: str) -> str:
    return (
        f"E10062: Failed to call {api}. Reason: GE is not correctly initialized. Ensure that "
        f"the GEInitialize API has been correctly executed before "
        f"{_NOT_INITIALIZED_ACTION[api]}. (call ge.ge_global.GeApi.ge_initialize(config) first)"
    )


class _Repeat:
    """What ``run_graph`` needs to run a graph again on inputs of the last call's types and
    shapes, found by comparing each input's desc with them (a plan that depends only on
    shapes is valid for any such inputs, and these were checked when it was made). It skips
    the argument, plan and runner lookups, which cost more than they seem right after a
    kernel has streamed megabytes through the caches (~10 µs then, against ~3 µs warm)."""

    __slots__ = ("expect", "runner")

    def __init__(self, runner: GraphRunner, inputs: list[Tensor]) -> None:
        self.runner = runner
        self.expect = [
            (t._desc._data_type, list(t._desc._shape), need)
            for t, need in zip(inputs, runner.input_nbytes, strict=True)
        ]

    def sources(self, inputs: list[Tensor]) -> list[int | np.ndarray] | None:
        """Each input's device address or host bytes, as ``_sources`` gives them; ``None``
        if any input differs from the expected kind (the full path then checks it)."""
        if len(inputs) != len(self.expect):
            return None
        sources: list[int | np.ndarray] = []
        for t, (dtype, shape, need) in zip(inputs, self.expect):  # noqa: B905  (lengths equal)
            if type(t) is not Tensor or t._donated is not None:
                return None
            desc = t._desc
            if desc._data_type is not dtype or desc._shape != shape:
                return None
            addr = t._device_addr
            if addr is not None:
                if t._device_nbytes < need:
                    return None
                sources.append(addr)
                continue
            raw = t._bytes
            if raw is None or raw.size < need:
                return None
            sources.append(raw if raw.size == need else raw[:need])
        return sources


# what a failed run raises, as "RunGraph failed; graph_id=N; ..." GeErrors (device memory
# running out is a DeviceMemoryError)
_RUN_ERRORS = (
    GeError,
    ValueError,
    TypeError,
    ArithmeticError,
    IndexError,
    MemoryError,
    DeviceMemoryError,
)


def _run_error(graph_id: object, error: BaseException) -> GeError:
    """``RunGraph failed; graph_id=N; <what>``, still a ``ValueError`` or ``TypeError`` when
    the failure was one (an input that does not fit, as the module docstring promises)."""
    text = str(error) if isinstance(error, GeError) else f"{type(error).__name__}: {error}"
    kind = (
        GeValueError
        if isinstance(error, ValueError)
        else GeTypeError
        if isinstance(error, TypeError)
        else GeError
    )
    return kind("RunGraph", text, graph_id=graph_id)


def _refuse_cycles(graph: Graph) -> None:
    """Name the nodes of a cycle before the snapshot is taken (copying cannot represent
    one: it would surface as a graph that failed to load from AIR)."""
    for g in (graph, *graph.get_all_subgraphs()):
        _, stuck = topological_order(g)
        if stuck:
            raise GraphError(f"{describe_cycle(g, stuck)}; remove one of its edges")


@dataclass
class _Entry:
    graph: Graph
    options: dict[str, str]
    compiled: CompiledGraph | None = None
    repeat: _Repeat | None = None  # run_graph's quick path for the last inputs' signature


_Alloc = Callable[[int], tuple[int, Callable[[], None]]]


def _allocator_alloc(allocator: Allocator) -> _Alloc:
    """``alloc(nbytes) -> (addr, release)`` from an external allocator, whose blocks are
    checked before any kernel can use them: a MemBlock of at least ``nbytes`` bytes, inside
    live device memory, not freed already (by its generation, where it carries one)."""

    def alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
        block = allocator.malloc(max(nbytes, 1))
        name = f"allocator {type(allocator).__name__}.malloc({max(nbytes, 1)})"
        if not isinstance(block, MemBlock):
            raise GeError(f"{name} returned {block!r}, not a MemBlock of at least {nbytes} bytes")
        try:  # MemBlock validates nothing, as GE-PY's: its fields are checked here
            addr, size = block.checked()
        except GeError as e:
            raise GeError(f"{name} returned {block!r}: {e}") from None
        if size < nbytes:
            raise GeError(f"{name} returned {block!r}, not a MemBlock of at least {nbytes} bytes")
        try:
            device_memory().require([(addr, nbytes, block.generation)])
        except DeviceMemoryError as e:
            raise GeError(
                f"{name} returned {block!r}, which is not live device memory: {e}"
            ) from None
        return addr, lambda: allocator.free(block)

    return alloc


def _device_alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
    block = memory.malloc(max(nbytes, 1))
    return block.addr, lambda: memory.free(block)


class Session:
    """A set of graphs to run; ``Session(options=None)`` (options: dict of str to str)."""

    def __init__(self, options: dict[str, str] | None = None) -> None:
        if options is not None and not isinstance(options, dict):
            raise GeTypeError(f"option must be a dictionary, got {type(options).__name__}")
        self._options = encode_options(options or {}, "Session option")
        self._graphs: dict[int, _Entry] = {}
        self._allocators: dict[int, Allocator] = {}
        self._lock = threading.RLock()

    # --- graphs ---------------------------------------------------------------------------------
    def _require_init(self, api: str, context: dict[str, Any]) -> None:
        if not is_initialized():
            raise GeError(api, _not_initialized(api), **context)

    def add_graph(
        self, graph_id: int, add_graph: Graph, options: dict[str, str] | None = None
    ) -> int:
        """Add ``add_graph`` under ``graph_id`` (a snapshot of it); returns 0.

        The graph must be able to run: ``GeError`` ``"AddGraph failed; graph_id=N; ..."``
        lists what ``Graph.verify()`` finds (duplicate or missing input indexes, a Const
        without its value, unconnected required inputs, ...), except recorded descs that
        differ from inference, which compiling recomputes anyway."""
        key = _check_graph_id(graph_id)
        if not isinstance(add_graph, Graph):
            raise GeTypeError(f"Add_graph must be a Graph, got {type(add_graph).__name__}")
        if options is not None and not isinstance(options, dict):
            raise GeTypeError(f"options must be a dictionary, got {type(options).__name__}")
        graph_options = encode_options(options or {}, "add_graph option")
        context = {"graph_id": graph_id}
        self._require_init("AddGraph", context)
        why = invalid_option(self._options, "session option") or invalid_option(graph_options)
        if why is not None:
            raise GeValueError("AddGraph", why, **context)
        with self._lock:
            if key in self._graphs:
                raise GeError(
                    "AddGraph",
                    f"a graph is already added under this id; call remove_graph({graph_id}) first",
                    **context,
                )
            try:
                _refuse_cycles(add_graph)
                snapshot = copy_graph(add_graph)
                # everything that would stop a run (structure, ports, attributes, input
                # indexes, Const values) but not stale descs: compiling infers them again
                verify_graph(snapshot, infer=False)
            except GeError as e:
                raise GeError("AddGraph", str(e), **context) from e
            self._graphs[key] = _Entry(snapshot, graph_options)
        return 0

    def remove_graph(self, graph_id: int) -> None:
        key = _check_graph_id(graph_id)
        context = {"graph_id": graph_id}
        self._require_init("RemoveGraph", context)
        with self._lock:
            if self._graphs.pop(key, None) is None:
                raise GeError("RemoveGraph", "no graph is added under this id", **context)

    def _compiled(self, api: str, key: int, context: dict[str, Any]) -> CompiledGraph:
        with self._lock:
            entry = self._graphs.get(key)
            if entry is None:
                raise GeError(
                    api, "no graph is added under this id; call add_graph first", **context
                )
            if entry.compiled is None:
                try:
                    options = {**global_options(), **self._options, **entry.options}
                    entry.compiled = CompiledGraph(entry.graph, options=options)
                except GeError as e:
                    raise GeError(api, f"compiling the graph failed: {e}", **context) from e
            return entry.compiled

    def _plan(
        self, api: str, context: dict[str, Any], compiled: CompiledGraph, inputs: list[Tensor]
    ) -> Plan | None:
        signature = tuple((t._desc._data_type, *t._desc._shape) for t in inputs)
        plan = compiled.checked_plans.get(signature)
        if plan is not None:  # these input types and shapes were checked and planned before
            return plan
        try:
            dtypes = [np.dtype(_numpy_type(t)) for t in inputs]
            compiled.check_inputs(dtypes, [list(t.shape) for t in inputs])
            plan = compiled.plan_for(
                [list(t.shape) for t in inputs], lambda: [_array_view(t) for t in inputs]
            )
        except GeValueError as e:
            raise GeValueError(api, str(e), **context) from e
        except GeError as e:
            raise GeError(api, str(e), **context) from e
        if plan is not None and compiled.shape_only(plan):
            compiled.checked_plans[signature] = plan
        return plan

    # --- running --------------------------------------------------------------------------------
    def run_graph(self, graph_id: int, inputs: list[Tensor]) -> list[Tensor]:
        """Run graph ``graph_id`` on ``inputs`` (``inputs[i]`` feeds the Data node with index
        ``i``) and wait; returns the outputs as host tensors, in graph-output order."""
        entry = self._graphs.get(graph_id) if type(graph_id) is int else None
        repeat = entry.repeat if entry is not None else None
        if repeat is not None and type(inputs) is list and is_initialized():
            sources = repeat.sources(inputs)
            if sources is not None:  # the last call's input types and shapes again
                return self._run_plan(graph_id, repeat.runner, sources)
        key = _check_graph_id(graph_id)
        tensors = _check_inputs(inputs)
        context = {"graph_id": graph_id}
        self._require_init("RunGraph", context)
        compiled = self._compiled("RunGraph", key, context)
        plan = self._plan("RunGraph", context, compiled, tensors)
        if plan is None:  # value-dependent shapes: the reference interpreter runs it
            try:
                arrays = compiled.run_arrays([t.numpy() for t in tensors])
            except _RUN_ERRORS as e:
                raise _run_error(graph_id, e) from e
            return [Tensor.from_numpy(a) for a in arrays]
        try:
            runner = compiled.runner(plan)
            sources = _sources(tensors, runner.input_nbytes)
        except _RUN_ERRORS as e:
            raise _run_error(graph_id, e) from e
        entry = self._graphs.get(key)
        if entry is not None and compiled.shape_only(plan):
            entry.repeat = _Repeat(runner, tensors)
        return self._run_plan(graph_id, runner, sources)

    def _run_plan(
        self, graph_id: object, runner: GraphRunner, sources: list[int | np.ndarray]
    ) -> list[Tensor]:
        """Run on the caller's thread (no stream hand-off); large outputs are written into
        pooled blocks that the result tensors give back when collected."""
        places: list[tuple[Target | None, Any]] = []
        try:
            for nbytes in runner.output_nbytes:
                places.append(_target(nbytes))
            raw = runner.run(sources, [t for t, _ in places])
        except BaseException as e:
            for _, slot in places:
                if slot is not None:
                    slot.give_back()
            if isinstance(e, _RUN_ERRORS):
                raise _run_error(graph_id, e) from e
            raise
        return [
            Tensor._adopt(desc, data, None if slot is None else slot.give_back)
            for desc, data, (_, slot) in zip(runner.output_descs, raw, places, strict=True)
        ]

    def run_graph_with_stream_async(
        self, graph_id: int, stream: Stream | int, inputs: list[Tensor]
    ) -> list[Tensor]:
        """Queue a run of ``graph_id`` on ``stream`` and return its outputs as device tensors
        at once; read them after ``stream.synchronize()``."""
        api = "RunGraphWithStreamAsync"
        key = _check_graph_id(graph_id)
        given = _check_stream(stream, "Stream must be an integer")
        tensors = _check_inputs(inputs)
        target = self._run_stream(given)
        context = {"graph_id": graph_id, "stream": _stream_text(given)}
        self._require_init(api, context)
        compiled = self._compiled(api, key, context)
        if target is None:  # an external allocator is registered for it: the run fails
            target = _resolve(api, given, graph_id=graph_id)
        plan = self._plan(api, context, compiled, tensors)
        if plan is None:
            raise GeError(
                api,
                "the graph's output shapes depend on input values, so its outputs cannot be "
                "allocated before it runs; use run_graph",
                **context,
            )
        try:  # a host input short of bytes would only fail on the stream, later
            _sources(tensors, [plan.buffers[b].nbytes for b in plan.inputs])
        except GeValueError as e:
            raise GeValueError(api, str(e), **context) from e
        allocator = self._allocators.get(target.handle)
        alloc = _device_alloc if allocator is None else _allocator_alloc(allocator)
        outputs: list[tuple[int, Callable[[], None]]] = []
        try:
            for buf in plan.outputs:
                outputs.append(alloc(plan.buffers[buf].nbytes))
        except BaseException:
            for _, release in outputs:
                release()
            raise
        addresses = [addr for addr, _ in outputs]
        # the outputs are in use until the run is over: a result tensor dropped meanwhile
        # frees its block only then (stream-ordered), never under the kernels writing it
        held = device_memory().use(
            (addr, plan.buffers[buf].nbytes, 0)
            for buf, addr in zip(plan.outputs, addresses, strict=True)
        )

        def run() -> None:
            with _Staged(tensors) as addrs:
                arena, free_arena = alloc(plan.arena_size)
                try:
                    plan.execute(plan.addresses(addrs, addresses, arena))
                finally:
                    free_arena()

        target.submit(run, name=f"graph {graph_id}", settle=lambda: device_memory().unuse(held))
        return [
            Tensor._on_device(_desc_of(plan, buf), addr, plan.buffers[buf].nbytes, release)
            for buf, (addr, release) in zip(plan.outputs, outputs, strict=True)
        ]

    def _run_stream(self, stream: Stream | int) -> Stream | None:
        """The stream an async run goes on, resolved where GE-PY registers the session's
        default allocator for it: after the type checks, before the run call. With an
        external allocator registered for it GE registers none, so a stream that names no
        live one is ``None`` here and fails as the run (after GE's own checks); without one
        it fails now, as ``RegisterDefaultAllocator``. Decision: every run without an external
        allocator counts as registering (GE registers once per stream; a stream gone after
        its first run would fail as the run there)."""
        if _handle(stream) in self._allocators:
            try:
                return resolve_stream(stream if isinstance(stream, Stream) else int(stream))
            except GeError:
                return None
        return _resolve("RegisterDefaultAllocator", stream)

    # --- allocators -----------------------------------------------------------------------------
    def register_external_allocator(self, stream: Stream | int, allocator: Allocator) -> None:
        """Serve outputs and workspace of async runs on ``stream`` from ``allocator``."""
        given = _check_stream(stream, "stream must be an integer")
        if not isinstance(allocator, Allocator):
            raise GeTypeError(
                f"allocator must be an Allocator instance, got {type(allocator).__name__}"
            )
        target = _resolve("RegisterExternalAllocator", given)
        self._allocators[target.handle] = allocator

    def unregister_external_allocator(self, stream: Stream | int) -> None:
        """Stop serving ``stream`` from its external allocator (the stream need not be live
        any more); ``GeError`` if none is registered for it."""
        given = _check_stream(stream, "stream must be an integer")
        if self._allocators.pop(_handle(given), None) is None:
            raise GeError(
                "UnregisterExternalAllocator",
                "no allocator is registered for this stream",
                stream=_stream_text(given),
            )

    def __copy__(self) -> NoReturn:  # GE-PY: RuntimeError (a GeError is one)
        raise GeError("Session does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("Session does not support deepcopy")


def _array_view(tensor: Tensor) -> np.ndarray:
    """The tensor's values as an array: a view of device memory, or the host data."""
    if tensor.placement != Placement.PLACEMENT_DEVICE:
        return tensor.numpy()
    raw = memory.device_view(tensor.addr, tensor.nbytes)
    dtype = _numpy_type(tensor)
    count = int(np.prod(list(tensor.shape), dtype=np.int64))
    view: np.ndarray = raw[: count * dtype.itemsize].view(dtype).reshape(list(tensor.shape))
    return view


def _numpy_type(tensor: Tensor) -> np.dtype[Any]:
    from ge.graph._dtypes import numpy_dtype  # noqa: PLC0415

    return numpy_dtype(tensor.data_type)


def _desc_of(plan: Plan, buf: int) -> TensorDesc:
    from ge.graph._dtypes import data_type_from_numpy  # noqa: PLC0415

    spec = plan.buffers[buf]
    return TensorDesc(list(spec.shape), data_type=data_type_from_numpy(spec.dtype))


_ADOPT_MIN_BYTES = 1 << 16


def _target(nbytes: int) -> tuple[Target | None, Any]:
    """Where output bytes go: a pooled result block for a large output (the result tensor
    gives it back when collected), else the workspace."""
    if nbytes < _ADOPT_MIN_BYTES:
        return None, None
    slot = RESULT_BLOCKS.take(nbytes)
    return (slot.addr, slot.raw), slot


def _sources(tensors: Sequence[Tensor], nbytes: Sequence[int]) -> list[int | np.ndarray]:
    """Each input as a device address, or its host bytes (to be staged)."""
    sources: list[int | np.ndarray] = []
    for i, (tensor, need) in enumerate(zip(tensors, nbytes, strict=True)):
        tensor._check_not_donated()
        if tensor._device_addr is not None:
            if tensor._device_nbytes < need:  # kernels would read past its block
                raise GeValueError(
                    f"inputs[{i}] holds {tensor._device_nbytes} bytes of device memory, its "
                    f"shape and type need {need}"
                )
            sources.append(tensor._device_addr)
            continue
        raw = tensor._bytes
        have = 0 if raw is None else raw.size
        if have < need:
            raise GeValueError(f"inputs[{i}] holds {have} bytes, its shape and type need {need}")
        assert raw is not None
        sources.append(raw[:need])
    return sources


class _Staged:
    """Device addresses of the inputs: device tensors as they are, host ones copied in."""

    def __init__(self, tensors: Sequence[Tensor]) -> None:
        self._tensors = tensors
        self._blocks: list[MemBlock] = []

    def __enter__(self) -> list[int]:
        addrs = []
        for tensor in self._tensors:
            if tensor.placement == Placement.PLACEMENT_DEVICE:
                addrs.append(tensor.addr)
                continue
            data = np.ascontiguousarray(tensor.numpy())
            block = memory.malloc(max(data.nbytes, 1))
            self._blocks.append(block)
            memory.memcpy_h2d(block.addr, data)
            addrs.append(block.addr)
        return addrs

    def __exit__(self, *exc: object) -> None:
        for block in self._blocks:
            memory.free(block)
