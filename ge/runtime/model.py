"""Offline models: load an ``.om`` file and run it, with no compiler and no user Python.

``load_model(path_or_bytes)`` reads a model written by ``ge.offline_compile`` (format:
``ge.runtime.om``), loads its kernel binaries with llvmlite, places its weights and returns a
``Model``. Loading is all-or-nothing: a file that is not sound raises ``ModelFormatError``
(a ``GeError``) and leaves nothing allocated. Nothing a model holds runs on load except the
kernel binaries it declares; no Python callback of any kind runs, and neither ``ge.compiler``,
``ge.ops`` nor Numba is needed.

    >>> import numpy as np
    >>> from ge import offline_compile
    >>> from ge.es import GraphBuilder
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[3])
    >>> offline_compile.build_initialize({})
    >>> om = offline_compile.build_model(b.build_and_reset([x * 2.0 + 1.0]))
    >>> model = load_model(om.get_bytes())
    >>> model.execute([np.arange(3, dtype=np.float32)])[0]
    array([1., 3., 5.], dtype=float32)

Inputs are host arrays (exactly the input's dtype and shape) or device memory (``MemBlock``,
``DeviceRange``) holding at least the input's bytes, at any address, new or not, every run.
Outputs are returned as fresh arrays, or written to the device memory or host arrays given as
``outputs`` (address refresh: the plan's argument slots are rewritten for each run). A model
from a path maps its weights from the file (private copy-on-write pages shared with the OS
page cache: loading reads them once to check their SHA-256 but copies nothing, the file is
never written, and ``live_bytes()`` counts them as device memory lent to the model); one from
bytes copies them into device memory. Replace a model file by writing a new one and renaming
it over the old (as ``save_model`` does): truncating a mapped file in place is undefined.

A bundle (``offline_compile.bundle_build_model``) holds several graphs: ``model.graph(name)``
runs one, and ``model.set_weights({...})`` replaces constants in place by name.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ge._device.memory import DeviceMemoryError, device_memory
from ge.allocator import MemBlock
from ge.error import GeError, GeTypeError, GeValueError
from ge.runtime import memory
from ge.runtime._om_data import GraphEntry, KernelTaskData, ModelData, ModelFormatError, PlanData
from ge.runtime._om_read import unpack  # not ge.runtime.om, which imports the writer too
from ge.runtime.executor import DIRECT_BYTES, PlanRunner, Target, lend_array
from ge.runtime.kernel import DeviceRange
from ge.runtime.plan import BufferSpec, HostTask, KernelRef, Plan, kernel_task, load_binary

if TYPE_CHECKING:
    import mmap

    from ge.options import Options
    from ge.runtime.types import TensorDesc

__all__ = ["Model", "ModelFormatError", "ModelGraph", "load_model"]


def load_model(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> Model:
    """The model in the file at ``source`` (a path) or in ``source``'s bytes."""
    if isinstance(source, (str, os.PathLike)):
        import mmap  # noqa: PLC0415  (only a model read from a path maps it: a plan load does not)

        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    raise ModelFormatError(f"model file {path!r} is empty")
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except OSError as e:
            raise GeValueError(f"load_model: cannot read {path!r}: {e.strerror}") from None
        return Model._load(unpack(mapped), mapped)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return Model._load(unpack(source), None)
    raise GeTypeError(f"load_model: source must be a path or bytes, got {type(source).__name__}")


def _binary(data: bytes, index: int) -> str:
    """The kernel-table key of kernel binary ``data`` (``kernels[index]`` of a model); loaded
    once per process, however many models hold it."""
    try:
        return load_binary(data)
    except GeError as e:
        raise ModelFormatError(f"kernels[{index}] does not load: {e}") from None


class _Gear:
    """One compiled set of input shapes of a graph: its runner and buffer specs."""

    def __init__(self, runner: PlanRunner) -> None:
        plan = runner.plan
        self.runner = runner
        self.inputs = [plan.buffers[b] for b in plan.inputs]
        self.outputs = [plan.buffers[b] for b in plan.outputs]

    def takes(self, inputs: Sequence[Any], exact: bool) -> bool:
        """Whether ``inputs`` fit these shapes: host arrays of the same shape and dtype,
        device memory of at least (``exact``: exactly) the bytes."""
        for x, spec in zip(inputs, self.inputs, strict=True):
            if isinstance(x, np.ndarray):
                if x.shape != spec.shape or x.dtype != spec.dtype:
                    return False
            else:
                size = x.checked()[1] if isinstance(x, MemBlock) else getattr(x, "nbytes", None)
                if isinstance(size, int) and (size != spec.nbytes if exact else size < spec.nbytes):
                    return False
        return True


class ModelGraph:
    """One graph of a model: its descs and ``execute``. A graph compiled for several shape
    gears (``dynamic_dims``) runs the gear its inputs' shapes name."""

    def __init__(self, holdings: _Holdings, entry: GraphEntry, runners: list[PlanRunner]) -> None:
        self._holdings = holdings  # keeps the weights alive while the graph is
        self.name = entry.name
        self._gears = [_Gear(r) for r in runners]
        self.input_names = list(entry.input_names)
        self.output_names = list(entry.output_names)

    @property
    def input_descs(self) -> list[TensorDesc]:
        """The inputs' descs; a dim that differs between shape gears is ``-1``."""
        return [_desc(specs) for specs in zip(*(g.inputs for g in self._gears), strict=True)]

    @property
    def output_descs(self) -> list[TensorDesc]:
        return [_desc(specs) for specs in zip(*(g.outputs for g in self._gears), strict=True)]

    @property
    def runner(self) -> PlanRunner:
        """The executor of a graph compiled for one set of input shapes (``ge.jit``'s plan
        cache runs a loaded plan through it); ``GeValueError`` for one of several gears."""
        if len(self._gears) != 1:
            raise GeValueError(f"graph {self.name!r} has {len(self._gears)} shape gears")
        return self._gears[0].runner

    @property
    def gears(self) -> list[list[list[int]]]:
        """The input shapes this graph was compiled for (one list per gear)."""
        return [[list(s.shape) for s in g.inputs] for g in self._gears]

    def _gear(self, inputs: Sequence[Any]) -> _Gear:
        if len(self._gears) == 1:
            return self._gears[0]
        fits = [g for g in self._gears if g.takes(inputs, exact=False)]
        exact = [g for g in fits if g.takes(inputs, exact=True)]
        if len(fits) == 1 or len(exact) == 1:
            return fits[0] if len(fits) == 1 else exact[0]
        compiled = [[_typed(s.dtype, s.shape) for s in g.inputs] for g in self._gears]
        got = [
            _typed(x.dtype, x.shape) if isinstance(x, np.ndarray) else "device memory"
            for x in inputs
        ]
        hint = " (several fit this device memory: pass host arrays to say which)" if fits else ""
        raise GeValueError(
            f"execute: graph {self.name!r} was compiled for the inputs {compiled}; got {got}" + hint
        )

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        """Run once. ``inputs[i]``: a host array or device memory for input ``i``;
        ``outputs`` (optional): device memory or host arrays to write each output to. Returns
        the outputs: ``outputs`` itself when given, else fresh host arrays."""
        count = len(self.input_names)
        if not isinstance(inputs, Sequence) or len(inputs) != count:
            got = len(inputs) if isinstance(inputs, Sequence) else type(inputs).__name__
            raise GeValueError(f"execute: graph {self.name!r} takes {count} inputs, got {got}")
        gear = self._gear(inputs)
        if outputs is None and _exact_host(inputs, gear.inputs):
            return gear.runner.call(inputs)  # the executor's host fast path (as ge.jit's)
        return self._run(gear, inputs, outputs)

    def _run(self, gear: _Gear, inputs: Sequence[Any], outputs: Sequence[Any] | None) -> list[Any]:
        ranges: list[tuple[int, int, int]] = []
        sources = [self._source(i, x, ranges, gear.inputs[i]) for i, x in enumerate(inputs)]
        targets: list[Target | None] = []
        host_outputs: list[tuple[int, np.ndarray]] = []  # written by a copy after the run
        loans: list[int] = []  # host output arrays lent to the device for the run
        if outputs is not None:
            if not isinstance(outputs, Sequence) or len(outputs) != len(gear.outputs):
                raise GeValueError(
                    f"execute: graph {self.name!r} has {len(gear.outputs)} outputs; "
                    f"outputs must list as many"
                )
            try:
                for j, out in enumerate(outputs):
                    targets.append(
                        self._target(j, out, ranges, host_outputs, loans, gear.outputs[j])
                    )
            except BaseException:
                _end_loans(loans)
                raise
        try:
            held = device_memory().use(ranges)
        except DeviceMemoryError as e:
            _end_loans(loans)
            raise GeValueError(f"execute: {e}") from None
        try:
            results = gear.runner.run(sources, targets)
        finally:
            device_memory().unuse(held)
            _end_loans(loans)
        if outputs is not None:
            for j, array in host_outputs:
                array.reshape(-1).view(np.uint8)[...] = results[j]
            return list(outputs)
        return [
            r.view(s.dtype).reshape(s.shape) for r, s in zip(results, gear.outputs, strict=True)
        ]

    def _source(
        self, i: int, x: Any, ranges: list[tuple[int, int, int]], spec: BufferSpec
    ) -> int | np.ndarray:
        if isinstance(x, np.ndarray):
            if x.dtype != spec.dtype or x.shape != spec.shape:
                raise GeValueError(
                    f"execute: input {i} ({self.input_names[i]}) must be {spec.dtype.name}"
                    f"{list(spec.shape)}, got {x.dtype.name}{list(x.shape)}"
                )
            return np.asarray(x, order="C")
        return _device(x, spec.nbytes, f"input {i} ({self.input_names[i]})", ranges)

    def _target(
        self,
        j: int,
        out: Any,
        ranges: list[tuple[int, int, int]],
        host_outputs: list[tuple[int, np.ndarray]],
        loans: list[int],
        spec: BufferSpec,
    ) -> Target | None:
        """Where output ``j`` goes: device memory as given; a large host array lent to the
        device for the run and written in place, a small one (or one that cannot be lent)
        copied into after the run."""
        if isinstance(out, np.ndarray):
            if out.dtype != spec.dtype or out.shape != spec.shape or not out.flags.c_contiguous:
                raise GeValueError(
                    f"execute: outputs[{j}] must be a C-contiguous {spec.dtype.name}"
                    f"{list(spec.shape)} array, got {out.dtype.name}{list(out.shape)}"
                )
            if not out.flags.writeable:
                raise GeValueError(f"execute: outputs[{j}] is not writeable")
            addr = lend_array(out, loans) if out.nbytes >= DIRECT_BYTES else None
            if addr is not None:
                return addr, out.reshape(-1).view(np.uint8)
            host_outputs.append((j, out))
            return None
        addr = _device(out, spec.nbytes, f"outputs[{j}]", ranges)
        return addr, memory.device_view(addr, spec.nbytes) if spec.nbytes else np.zeros(0, np.uint8)


def _exact_host(inputs: Sequence[Any], specs: Sequence[BufferSpec]) -> bool:
    """Whether every input is a host array of exactly its buffer's dtype and shape (any
    layout: the executor stages or lends it as it needs)."""
    for x, spec in zip(inputs, specs, strict=True):
        if type(x) is not np.ndarray or x.dtype != spec.dtype or x.shape != spec.shape:
            return False
    return True


def _end_loans(loans: list[int]) -> None:
    for handle in loans:
        memory.end_loan(handle)
    loans.clear()


def _device(x: Any, nbytes: int, what: str, ranges: list[tuple[int, int, int]]) -> int:
    """The address of device memory ``x`` (a MemBlock or DeviceRange of at least ``nbytes``)."""
    if isinstance(x, MemBlock):
        (addr, size), generation = x.checked(), x.generation
    elif isinstance(x, DeviceRange):
        addr, size, generation = x.addr, x.nbytes, x.generation
    else:
        raise GeTypeError(
            f"execute: {what} must be a numpy array, MemBlock or DeviceRange, got "
            f"{type(x).__name__}"
        )
    if size < nbytes:
        raise GeValueError(f"execute: {what} holds {size} bytes; it needs {nbytes}")
    ranges.append((addr, nbytes, generation))
    return addr


def _typed(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    return f"{dtype.name}{list(shape)}"


def _desc(specs: Sequence[BufferSpec]) -> TensorDesc:
    """The desc of one input or output over the gears: a dim they disagree on is ``-1``, a
    rank they disagree on ``[-2]``. (The descs import the IR's dtype table: only asked for
    when read, so loading and executing a model do not import ``ge.graph``.)"""
    from ge.graph._dtypes import data_type_from_numpy  # noqa: PLC0415
    from ge.runtime.types import TensorDesc  # noqa: PLC0415

    if len({len(s.shape) for s in specs}) != 1:
        return TensorDesc([-2], data_type_from_numpy(specs[0].dtype))
    columns = zip(*(s.shape for s in specs), strict=True)
    dims = [col[0] if len(set(col)) == 1 else -1 for col in columns]
    return TensorDesc(dims, data_type_from_numpy(specs[0].dtype))


class _Holdings:
    """The memory a loaded model's graphs run on: device blocks of copied weights, mapped
    pages lent to the device, the map and the weights; released when the last holder (the
    model or one of its graphs) goes. Graphs and model both refer to it, not to each other, so
    dropping a model frees its memory at once, not at the next cyclic collection."""

    def __init__(self, mapped: mmap.mmap | None, weights: list[np.ndarray]) -> None:
        self.mapped = mapped
        self.weights = weights
        self.owned: list[int] = []  # device blocks (copied weights)
        self.loans: list[int] = []  # handles of host memory (mapped weights) lent to the device
        self.release = weakref.finalize(self, _release, self.owned, self.loans)

    def place(self, weight: np.ndarray) -> int:
        """The device address of a weight: the mapped file's pages, lent to the device, or
        a copy in device memory (weights from bytes, empty weights, or pages the device
        cannot borrow)."""
        if self.mapped is not None and weight.flags.writeable and weight.nbytes:
            handle = memory.lend(weight)
            if handle is not None:
                self.loans.append(handle)
                return memory.data_address(weight)
        block = memory.malloc(max(weight.nbytes, 1))
        self.owned.append(block.addr)
        if weight.nbytes:
            memory.memcpy_h2d(block.addr, np.asarray(weight, order="C"))
        return block.addr


class Model:
    """A loaded offline model: its graphs, ``execute`` (of the first graph) and weights.
    ``options`` are the build options it was compiled with (strings, as given to
    ``build_initialize`` / ``build_model``), ``ge_options`` the ``ge.options.Options`` record
    (fusion, approximate math, bounds checks...; ``None`` for a model that did not save one)."""

    options: dict[str, str]
    ge_options: Options | None
    _holdings: _Holdings
    _weights: list[np.ndarray]
    _weight_addrs: list[int]
    _graphs: dict[str, ModelGraph]
    _default: ModelGraph
    _weight_names: dict[str, int]

    def __init__(self) -> None:
        raise GeError("Model objects are made by ge.runtime.load_model")

    @classmethod
    def _load(cls, data: ModelData, mapped: mmap.mmap | None) -> Model:
        model = object.__new__(cls)
        model.options = dict(data.options)
        model.ge_options = data.ge_options
        holdings = model._holdings = _Holdings(mapped, data.weights)
        try:  # all or nothing: a failure releases what was placed at once
            kernels = [_binary(k, i) for i, k in enumerate(data.kernels)]
            weight_addrs = [holdings.place(w) for w in data.weights]
            model._weights = data.weights
            model._weight_addrs = weight_addrs
            gears: dict[str, tuple[GraphEntry, list[PlanRunner]]] = {}
            for entry in data.graphs:  # a name repeats for each shape gear of a graph
                runner = PlanRunner(_plan(entry, kernels, weight_addrs))
                gears.setdefault(entry.name, (entry, []))[1].append(runner)
            model._graphs = {
                name: ModelGraph(holdings, entry, runners)
                for name, (entry, runners) in gears.items()
            }
        except BaseException:
            holdings.release()
            raise
        model._default = next(iter(model._graphs.values()))
        model._weight_names = dict(data.weight_names)
        return model

    @property
    def graph_names(self) -> list[str]:
        return list(self._graphs)

    def graph(self, name: str) -> ModelGraph:
        """The graph ``name`` of a bundle."""
        found = self._graphs.get(name)
        if found is None:
            raise GeValueError(f"model has no graph {name!r}; it has {list(self._graphs)}")
        return found

    @property
    def input_descs(self) -> list[TensorDesc]:
        return self._default.input_descs

    @property
    def output_descs(self) -> list[TensorDesc]:
        return self._default.output_descs

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any] | None = None) -> list[Any]:
        """``execute`` of the model's first graph (see ``ModelGraph.execute``)."""
        return self._default.execute(inputs, outputs)

    @property
    def weight_names(self) -> list[str]:
        """Names of the weights ``set_weights`` can replace."""
        return sorted(self._weight_names)

    def set_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        """Replace named weights in place (every graph sharing one sees the new value); all
        are checked before any is written."""
        if not isinstance(weights, Mapping):
            raise GeTypeError(
                f"set_weights: weights must be a mapping, got {type(weights).__name__}"
            )
        writes = []
        for name, value in weights.items():
            index = self._weight_names.get(name)
            if index is None:
                raise GeValueError(
                    f"set_weights: model has no weight {name!r}; it has {self.weight_names}"
                )
            old = self._weights[index]
            array = np.asarray(value)
            if array.shape != old.shape or not np.can_cast(array.dtype, old.dtype, "same_kind"):
                raise GeValueError(
                    f"set_weights: weight {name!r} is {old.dtype.name}{list(old.shape)}, got "
                    f"{array.dtype.name}{list(array.shape)}"
                )
            writes.append((index, np.asarray(array, old.dtype, order="C")))
        for index, array in writes:
            if array.nbytes:
                raw = array.reshape(-1).view(np.uint8)
                memory.device_view(self._weight_addrs[index], array.nbytes)[...] = raw


def _plan(entry: GraphEntry, kernels: list[str], weight_addrs: list[int]) -> Plan:
    return _build(entry.plan, f"graph {entry.name!r}", kernels, weight_addrs)


def _build(data: PlanData, where: str, kernels: list[str], weight_addrs: list[int]) -> Plan:
    """The plan a model file's plan data describes (kernels by key, constants at their
    weights, sub-plans for control flow), bound to live code: ``PlanRunner`` calls
    ``Plan.bind()``, the same bind a compiled graph's plan goes through."""
    plan = Plan()
    for b in data.buffers:
        plan.add_buffer(BufferSpec(b.kind, b.index, b.shape, np.dtype(b.dtype)))
    for buf, weight in data.consts.items():
        plan.const_addrs[buf] = weight_addrs[weight]
    plan.subplans = [
        _build(sub, f"{where}, sub-plan {i}", kernels, weight_addrs)
        for i, sub in enumerate(data.subplans)
    ]
    for task in data.tasks:
        if isinstance(task, KernelTaskData):
            made = kernel_task(
                task.name,
                KernelRef(kernels[task.kernel], task.function),
                task.block_dim,
                task.template,
                [(pos, buf) for pos, buf, _ in task.patches],
                [off for _, _, off in task.patches],
            )
            made.same_index_inputs = frozenset(task.same_index_inputs)
            plan.tasks.append(made)
        else:
            plan.tasks.append(
                HostTask(task.name, None, list(task.buffers), task.op, dict(task.params))
            )
    plan.inputs = list(data.inputs)
    plan.outputs = list(data.outputs)
    plan.views = dict(data.views)
    plan.arena_size = data.arena_size
    try:
        plan.bind()
    except GeError as e:
        raise ModelFormatError(f"{where}: {e}") from None
    return plan


def _release(owned: list[int], loans: list[int]) -> None:
    for addr in owned:
        memory.free(addr)
    owned.clear()
    for handle in loans:
        memory.end_loan(handle)
    loans.clear()
