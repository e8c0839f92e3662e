"""Task plans: what a compiled graph is at run time, as data.

A ``Plan`` is a list of tasks over numbered buffers, and nothing in it is live code: a
``KernelTask`` names its kernel by key (``KernelRef``: the SHA-256 of the kernel binary and the
function's name) and holds its argument vector with the address slots marked; a ``HostTask``
names a ``HOST_OPS`` entry (``ge.runtime.host_ops``: copies, BLAS matmuls, control flow over
the plan's ``subplans``) with its parameters. ``Plan.bind()`` resolves all of it, once per
plan, to live functions: kernel keys through the process's kernel table (``register_binary`` /
``load_binary``), host ops to the functions ``HOST_OPS`` makes from their parameters, sub-plans
to runners of their own. Session, ``ge.jit`` and loaded models all run plans through that one
``bind()`` (and the executor in ``ge.runtime.executor``); ``ge.runtime.om`` writes the same
data to files.

An op with no kernel is a ``reference`` host task: its op type, attributes and buffers, bound
to the op's numpy reference through ge's op library (imported only by plans holding one). A
Python custom op run by its ``execute`` is a ``custom_op`` host task: its op type, attributes
and buffer wiring, bound to the implementation registered for the type through
``ge.custom_op`` (imported only by plans holding one). One kind of task is not data: a Python
host task (``op == PYTHON_TASK``), a closure a caller made. It runs only in the process that
made it, and a model file refuses it.

Buffers are graph inputs, graph outputs, constants (device memory owned by the plan) or
intermediates (offsets into one arena sized by the memory plan). Per run, only addresses change.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np

from ge.error import GeError, GeValueError
from ge.runtime import _launcher, memory
from ge.runtime._record import FrozenRecord, Record
from ge.runtime.host_ops import HOST_OPS, SubRun, host_function
from ge.runtime.kernel import (
    KernelBinary,
    KernelFunction,
    describe_failure,
    load_kernel_binary,
    run_blocks,
)
from ge.runtime.memory import device_view

__all__ = [
    "HOST_OPS",
    "BoundPlan",
    "BufferKind",
    "BufferSpec",
    "HostTask",
    "KernelRef",
    "KernelTask",
    "Plan",
    "Program",
    "binary_data",
    "buffers_of",
    "host_function",
    "host_task",
    "kernel_ref",
    "kernel_task",
    "load_binary",
    "register_binary",
    "resolve_kernel",
]


class BufferKind(Enum):
    INPUT = "input"
    OUTPUT = "output"
    CONST = "const"
    INTERMEDIATE = "intermediate"


class BufferSpec(Record):
    __match_args__ = ("kind", "index", "shape", "dtype")
    __slots__ = ("dtype", "index", "kind", "shape")

    def __init__(
        self,
        kind: BufferKind,
        index: int,  # input/output index, const slot, or arena offset for intermediates
        shape: tuple[int, ...],
        dtype: np.dtype[Any],
    ) -> None:
        self.kind = kind
        self.index = index
        self.shape = shape
        self.dtype = dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


PYTHON_TASK = "python"  # HostTask.op of a closure that is not data


def view(addr: int, spec: BufferSpec) -> np.ndarray:
    """A numpy array over the device memory of a buffer."""
    raw = device_view(addr, spec.nbytes)
    array: np.ndarray = raw.view(spec.dtype).reshape(spec.shape)
    return array


class KernelRef(FrozenRecord):
    """A kernel by key: the SHA-256 (hex) of its binary's bytes and the function's name."""

    __match_args__ = ("binary", "function")
    __slots__ = ("binary", "function")
    binary: str
    function: str

    def __init__(self, binary: str, function: str) -> None:
        self._set("binary", binary)
        self._set("function", function)


# the process's kernel table: binary key -> the loaded binary. Binaries stay loaded for the
# life of the process (as the compiler's and the custom-op kernel caches keep them anyway).
_KERNELS: dict[str, KernelBinary] = {}
_KEYS: dict[int, tuple[KernelBinary, str]] = {}  # id(binary) -> (binary, key): hash once
_KERNELS_LOCK = threading.Lock()


def register_binary(binary: KernelBinary) -> str:
    """Put a loaded binary in the kernel table (a no-op if it is there); returns its key."""
    known = _KEYS.get(id(binary))
    if known is not None and known[0] is binary:
        return known[1]
    key = hashlib.sha256(binary.data).hexdigest()
    with _KERNELS_LOCK:
        _KERNELS.setdefault(key, binary)
        _KEYS[id(binary)] = (binary, key)
    return key


def load_binary(data: bytes) -> str:
    """The key of kernel binary ``data``, loading it into the kernel table unless a binary of
    the same bytes is there already (each binary loads once per process, however many models
    and plans hold it). Raises what ``load_kernel_binary`` raises for a binary that does not
    load."""
    key = hashlib.sha256(data).hexdigest()
    with _KERNELS_LOCK:
        if key not in _KERNELS:
            binary = load_kernel_binary(data)
            _KERNELS[key] = binary
            _KEYS[id(binary)] = (binary, key)
    return key


def kernel_ref(function: KernelFunction) -> KernelRef:
    """The key of a loaded kernel function (its binary goes into the kernel table)."""
    return KernelRef(register_binary(function.binary), function.name)


def resolve_kernel(ref: KernelRef) -> KernelFunction:
    """The live function ``ref`` names; ``GeError`` if its binary is not loaded in this
    process or has no such function."""
    binary = _KERNELS.get(ref.binary)
    if binary is None:
        raise GeError(f"kernel binary {ref.binary[:16]}... is not loaded in this process")
    return binary.get_function(ref.function)


def binary_data(ref: KernelRef) -> bytes:
    """The bytes of the binary ``ref`` names (what a model file stores)."""
    return resolve_kernel(ref).binary.data


class KernelTask(Record):
    """One kernel launch: ``args = template`` with ``args[pos] = addr(buffer) + offset``.

    ``same_index_inputs``: inputs each element of which is read before the same element of
    every output is written (elementwise kernels): an output may share memory with one of
    them. ``explain`` and ``explain_buffers`` are diagnostics, not plan data (a model file
    drops them): host code run only after a launch failed, to say why: it gets views of
    ``explain_buffers`` and returns the message, or None (a successful run never calls it)."""

    __match_args__ = (
        "name",
        "kernel",
        "block_dim",
        "template",
        "patch_pos",
        "patch_buf",
        "patch_off",
        "same_index_inputs",
        "explain",
        "explain_buffers",
    )
    __slots__ = (
        "block_dim",
        "explain",
        "explain_buffers",
        "kernel",
        "name",
        "patch_buf",
        "patch_off",
        "patch_pos",
        "same_index_inputs",
        "template",
    )

    def __init__(
        self,
        name: str,
        kernel: KernelRef,
        block_dim: int,
        template: np.ndarray,
        patch_pos: np.ndarray,
        patch_buf: np.ndarray,
        patch_off: np.ndarray,
        same_index_inputs: frozenset[int] = frozenset(),
        explain: Callable[[list[np.ndarray]], str | None] | None = None,
        explain_buffers: tuple[int, ...] = (),
    ) -> None:
        self.name = name
        self.kernel = kernel
        self.block_dim = block_dim
        self.template = template
        self.patch_pos = patch_pos
        self.patch_buf = patch_buf
        self.patch_off = patch_off
        self.same_index_inputs = same_index_inputs
        self.explain = explain
        self.explain_buffers = explain_buffers

    @property
    def function(self) -> KernelFunction:
        """The live function the task's key names (``resolve_kernel``)."""
        return resolve_kernel(self.kernel)

    def failure_detail(self, addrs: np.ndarray, specs: Sequence[BufferSpec]) -> str | None:
        """Why this task's launch at ``addrs`` failed, from ``explain`` (``None`` if it has
        nothing to say)."""
        if self.explain is None:
            return None
        return self.explain([view(int(addrs[b]), specs[b]) for b in self.explain_buffers])

    def run_with(self, function: KernelFunction, addrs: np.ndarray) -> None:
        """Launch ``function`` (this task's, resolved) with the buffers at ``addrs``."""
        args = self.template.copy()
        args[self.patch_pos] = addrs[self.patch_buf] + self.patch_off
        status = run_blocks(function, self.block_dim, args)
        if status:
            raise GeError(describe_failure(function.name, status, args))


def kernel_task(
    name: str,
    function: KernelFunction | KernelRef,
    block_dim: int,
    template: Sequence[int],
    patches: Sequence[tuple[int, int]],
    offsets: Sequence[int] | None = None,
) -> KernelTask:
    """A ``KernelTask`` from an argument list and its ``(position, buffer)`` address slots,
    each at byte ``offsets[k]`` into its buffer (0 by default). A live ``function`` is
    recorded by key (its binary goes into the kernel table)."""
    ref = function if isinstance(function, KernelRef) else kernel_ref(function)
    return KernelTask(
        name,
        ref,
        block_dim,
        np.asarray(template, np.int64),
        np.asarray([p for p, _ in patches], np.int64),
        np.asarray([b for _, b in patches], np.int64),
        np.asarray(offsets, np.int64) if offsets is not None else np.zeros(len(patches), np.int64),
    )


class HostTask(Record):
    """Host code run on views of ``buffers`` (inputs first, then outputs).

    A data task (``host_task``) names a ``HOST_OPS`` entry in ``op`` with its ``params``
    (sub-plans by index into ``Plan.subplans``) and has no ``fn``: ``Plan.bind()`` makes its
    function. A Python task (``op == PYTHON_TASK``) carries its closure in ``fn``: it runs
    only in the process that made it."""

    __match_args__ = ("name", "fn", "buffers", "op", "params")
    __slots__ = ("buffers", "fn", "name", "op", "params")

    def __init__(
        self,
        name: str,
        fn: Callable[[list[np.ndarray]], None] | None,
        buffers: list[int],
        op: str = PYTHON_TASK,
        params: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.fn = fn
        self.buffers = buffers
        self.op = op
        self.params: dict[str, Any] = {} if params is None else params

    def run(self, addrs: np.ndarray, specs: Sequence[BufferSpec]) -> None:
        """Run a Python task (data tasks run through ``Plan.bind()``)."""
        if self.fn is None:
            raise GeError(f"host task {self.name} ({self.op}) runs through its plan's bind()")
        self.fn([view(int(addrs[b]), specs[b]) for b in self.buffers])


Task = KernelTask | HostTask


def buffers_of(task: Task) -> set[int]:
    """The buffers a task reads or writes."""
    return {int(b) for b in task.patch_buf} if isinstance(task, KernelTask) else set(task.buffers)


def host_task(name: str, op: str, buffers: list[int], **params: Any) -> HostTask:
    """The ``HOST_OPS`` task ``op`` on ``buffers`` with ``params`` (data: no function yet)."""
    spec = HOST_OPS[op]
    if set(params) != set(spec.params):
        raise GeValueError(
            f"host op {op!r} takes parameters {list(spec.params)}, got {sorted(params)}"
        )
    return HostTask(name, None, buffers, op, dict(params))


class _Batch(Record):
    """Every kernel task's arguments in one vector and a launcher table over it.

    ``table`` row k is ``(status entry, block_dim, offset of k's arguments in bytes)``; a run
    adds the address of its copy of ``args`` to the offsets. ``segments`` lists
    ``(first row, end row)`` for runs of kernels and ``(task index, -1)`` for host tasks."""

    __match_args__ = (
        "args",
        "patch_pos",
        "patch_buf",
        "patch_off",
        "table",
        "kernel_index",
        "segments",
    )
    __slots__ = ("args", "kernel_index", "patch_buf", "patch_off", "patch_pos", "segments", "table")

    def __init__(
        self,
        args: np.ndarray,
        patch_pos: np.ndarray,
        patch_buf: np.ndarray,
        patch_off: np.ndarray,
        table: np.ndarray,
        kernel_index: list[int],  # table row -> task index
        segments: list[tuple[int, int]],
    ) -> None:
        self.args = args
        self.patch_pos = patch_pos
        self.patch_buf = patch_buf
        self.patch_off = patch_off
        self.table = table
        self.kernel_index = kernel_index
        self.segments = segments

    @staticmethod
    def of(tasks: Sequence[Task], functions: Sequence[KernelFunction | None]) -> _Batch:
        kernels = [(i, t) for i, t in enumerate(tasks) if isinstance(t, KernelTask)]
        offsets = np.cumsum([0] + [len(t.template) for _, t in kernels])
        table = np.zeros((len(kernels), 3), np.int64)
        for row, (i, task) in enumerate(kernels):
            function = functions[i]
            assert function is not None
            table[row] = (function.status_address, task.block_dim, offsets[row] * 8)
        segments: list[tuple[int, int]] = []
        row = 0
        for i, item in enumerate(tasks):
            if not isinstance(item, KernelTask):
                segments.append((i, -1))
            elif segments and segments[-1][1] == row:
                segments[-1] = (segments[-1][0], row + 1)
                row += 1
            else:
                segments.append((row, row + 1))
                row += 1
        parts = [t for _, t in kernels]
        return _Batch(
            np.concatenate([t.template for t in parts]) if parts else np.zeros(0, np.int64),
            _concat([t.patch_pos + offsets[k] for k, t in enumerate(parts)]),
            _concat([t.patch_buf for t in parts]),
            _concat([t.patch_off for t in parts]),
            table,
            [i for i, _ in kernels],
            segments,
        )


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


class Plan(Record):
    """Tasks in order, the buffers they use, and where graph inputs and outputs live.

    ``views``: intermediate buffer -> the buffer whose bytes it is under another shape (a
    Reshape's output, like a numpy view): an intermediate, a graph input (a view of the
    caller's input, never written) or a graph output (an intermediate whose reshape is the
    result: its producer writes the caller's output memory; see ``ge.compiler.lower``). At run
    time a view is at its source's address (``addresses``, ``BoundPlan.set_buffer``), and the
    memory plan keeps an intermediate source's bytes as long as the view is read. Never a
    chain: a source is not itself a view. ``subplans``: what the data host tasks of control
    flow run (``plan`` / ``plans`` parameters index it). ``owned``: device memory freed with
    the plan. ``_program``: the plan bound to live code (bind(), first run). A list or dict
    not given is a new empty one."""

    __match_args__ = (
        "buffers",
        "tasks",
        "inputs",
        "outputs",
        "const_addrs",
        "const_names",
        "views",
        "arena_size",
        "subplans",
        "owned",
        "_program",
    )
    __slots__ = (  # with a __dict__: callers may hang objects on a plan (to keep them alive)
        "__dict__",
        "__weakref__",
        "_program",
        "arena_size",
        "buffers",
        "const_addrs",
        "const_names",
        "inputs",
        "outputs",
        "owned",
        "subplans",
        "tasks",
        "views",
    )

    def __init__(
        self,
        buffers: list[BufferSpec] | None = None,
        tasks: list[Task] | None = None,
        inputs: list[int] | None = None,  # buffer id of graph input i
        outputs: list[int] | None = None,  # buffer id of graph output j
        const_addrs: dict[int, int] | None = None,  # buffer id -> device address
        const_names: dict[int, str] | None = None,  # buffer id -> its Const node
        views: dict[int, int] | None = None,
        arena_size: int = 0,
        subplans: list[Plan] | None = None,
        owned: list[int] | None = None,
        _program: Program | None = None,
    ) -> None:
        self.buffers: list[BufferSpec] = [] if buffers is None else buffers
        self.tasks: list[Task] = [] if tasks is None else tasks
        self.inputs: list[int] = [] if inputs is None else inputs
        self.outputs: list[int] = [] if outputs is None else outputs
        self.const_addrs: dict[int, int] = {} if const_addrs is None else const_addrs
        self.const_names: dict[int, str] = {} if const_names is None else const_names
        self.views: dict[int, int] = {} if views is None else views
        self.arena_size = arena_size
        self.subplans: list[Plan] = [] if subplans is None else subplans
        self.owned: list[int] = [] if owned is None else owned
        self._program = _program
        weakref.finalize(self, _free_all, self.owned)

    def device_constant(self, array: np.ndarray) -> int:
        """Copy ``array`` into device memory the plan owns (freed when the plan goes)."""
        data = np.ascontiguousarray(array)
        block = memory.malloc(max(data.nbytes, 1))
        memory.memcpy_h2d(block.addr, data)
        self.owned.append(block.addr)
        return block.addr

    def add_buffer(self, spec: BufferSpec) -> int:
        self.buffers.append(spec)
        return len(self.buffers) - 1

    def addresses(self, inputs: Sequence[int], outputs: Sequence[int], arena: int) -> np.ndarray:
        addrs = np.zeros(len(self.buffers), dtype=np.int64)
        for buf, spec in enumerate(self.buffers):
            if spec.kind is BufferKind.INTERMEDIATE:
                addrs[buf] = arena + spec.index
            elif spec.kind is BufferKind.CONST:
                addrs[buf] = self.const_addrs[buf]
        for buf, addr in zip(self.inputs, inputs, strict=True):
            addrs[buf] = addr
        for buf, addr in zip(self.outputs, outputs, strict=True):
            if self.buffers[buf].kind is BufferKind.OUTPUT:
                addrs[buf] = addr
        for view, source in self.views.items():  # a view is where its source is
            addrs[view] = addrs[source]
        return addrs

    def as_text(self) -> str:
        """The plan for people: buffers, tasks in launch order, and the memory plan."""
        lines = [
            f"plan: {len(self.tasks)} tasks, {len(self.buffers)} buffers, peak "
            f"intermediate memory {self.arena_size} bytes"
        ]
        for b, spec in enumerate(self.buffers):
            home = self.buffers[self.views.get(b, b)].kind  # a view is where its source is
            where = f"@{spec.index}" if home is BufferKind.INTERMEDIATE else f"#{spec.index}"
            view = f", a view of buf{self.views[b]}" if b in self.views else ""
            lines.append(
                f"  buf{b}: {spec.kind.value}{where} {spec.dtype.name}"
                f"{list(spec.shape)} ({spec.nbytes} bytes{view})"
            )
        for task in self.tasks:
            if isinstance(task, KernelTask):
                bufs = ", ".join(f"buf{int(b)}" for b in task.patch_buf)
                lines.append(
                    f"  launch {task.kernel.function} x{task.block_dim} for {task.name} ({bufs})"
                )
            else:
                bufs = ", ".join(f"buf{b}" for b in task.buffers)
                kind = "" if task.op == PYTHON_TASK else f" {task.op}"
                lines.append(f"  host{kind} {task.name} ({bufs})")
        return "\n".join(lines)

    def execute(self, addrs: np.ndarray) -> None:
        """Run every task (on the calling thread: the stream's worker). Runs of consecutive
        kernel tasks go to the native launcher in one call, with no Python per kernel."""
        self.bind().at(addrs).run()

    def bind(self) -> Program:
        """The plan bound to live code: every kernel key resolved to its loaded function, every
        host task to its function, sub-plans to runners of their own and the kernels laid out
        for the native launcher. Done once per plan (later calls return the same ``Program``);
        a plan is not changed after its first bind. Raises ``GeError`` naming the task whose
        kernel is not loaded."""
        program = self._program
        if program is None:
            program = self._program = Program(self)
        return program


class Program:
    """A plan bound to live code (``Plan.bind()``); ``at(addrs)`` binds it to addresses."""

    def __init__(self, plan: Plan) -> None:
        from ge.runtime.executor import PlanRunner  # noqa: PLC0415  (the executor runs plans)

        # the plan's lists, not the plan: a plan holds its program, and a cycle back would keep
        # a dropped plan's constants alive until the next cyclic collection
        self.tasks = plan.tasks
        self.buffers = plan.buffers
        # source buffer -> its views, which move with it (``BoundPlan.set_buffer``)
        self.followers: dict[int, list[int]] = {}
        for view, source in plan.views.items():
            self.followers.setdefault(source, []).append(view)
        self.functions: list[KernelFunction | None] = []
        for task in plan.tasks:
            try:
                function = resolve_kernel(task.kernel) if isinstance(task, KernelTask) else None
            except GeError as e:
                raise GeError(f"node {task.name}: {e}") from None
            self.functions.append(function)
        subruns = [PlanRunner(sub).call for sub in plan.subplans]
        self.host: list[Callable[[np.ndarray], None] | None] = [
            _host_runner(task, plan.buffers, subruns) if isinstance(task, HostTask) else None
            for task in plan.tasks
        ]
        self._batch: _Batch | None = None
        self._laid_out = False

    @property
    def batch(self) -> _Batch | None:
        """The kernels laid out for the native launcher (``None`` where it cannot run). Made
        on the first run, not at bind: asking whether the launcher runs starts its pool, which
        a model loaded but not yet run should not pay for."""
        if not self._laid_out:
            self._batch = _Batch.of(self.tasks, self.functions) if _launcher.available() else None
            self._laid_out = True
        return self._batch

    def at(self, addrs: np.ndarray) -> BoundPlan:
        """The program with its buffers at ``addrs``: every kernel argument filled in, ready to
        run again and again (``BoundPlan.set_buffer`` moves one buffer between runs)."""
        return BoundPlan(self, addrs.copy())

    def run_one(self, index: int, addrs: np.ndarray) -> None:
        task = self.tasks[index]
        try:
            host = self.host[index]
            if host is not None:
                host(addrs)
            else:
                function = self.functions[index]
                assert isinstance(task, KernelTask) and function is not None
                task.run_with(function, addrs)
        except GeError as e:
            detail = None
            if isinstance(task, KernelTask):  # its own account of the failure, if any
                detail = task.failure_detail(addrs, self.buffers)
            raise GeError(f"node {task.name} failed: {detail or e}") from e
        except (ValueError, TypeError, ArithmeticError, IndexError) as e:
            raise GeError(f"node {task.name} failed: {type(e).__name__}: {e}") from e


def _host_runner(
    task: HostTask, specs: Sequence[BufferSpec], subruns: Sequence[SubRun]
) -> Callable[[np.ndarray], None]:
    """Run ``task`` with its buffers at the given addresses: a Python task through its own
    ``run`` (subclasses run their own way), a data task through its ``HOST_OPS`` function
    (on the addresses themselves for an op that has ``make_addressed``)."""
    if task.op == PYTHON_TASK:
        return lambda addrs: task.run(addrs, specs)
    addressed = HOST_OPS[task.op].make_addressed
    if addressed is not None:
        return addressed(dict(task.params), [(b, specs[b]) for b in task.buffers])
    fn = host_function(task, subruns)
    buffers = [(b, specs[b]) for b in task.buffers]
    return lambda addrs: fn([view(int(addrs[b]), spec) for b, spec in buffers])


class BoundPlan:
    """A program bound to buffer addresses: its launcher table points at its own argument
    vector, so a run is one native call per run of kernels. Not for concurrent use: each
    concurrent runner binds its own."""

    def __init__(self, program: Program, addrs: np.ndarray) -> None:
        self.program = program
        self.tasks = program.tasks
        self.buffers = program.buffers
        self.addrs = addrs
        batch = self._batch = program.batch
        self._patches: dict[int, list[tuple[int, int]]] = {}
        self._only = 0
        if batch is None:
            return
        self.args = batch.args.copy()
        self.args[batch.patch_pos] = addrs[batch.patch_buf] + batch.patch_off
        self.table = batch.table.copy()
        self.table[:, 2] += self.args.ctypes.data
        self._table_addr = int(self.table.ctypes.data)
        for pos, buf, off in zip(batch.patch_pos, batch.patch_buf, batch.patch_off, strict=True):
            self._patches.setdefault(int(buf), []).append((int(pos), int(off)))
        # the common case, all kernels in one run: one native call with nothing to decide
        only = batch.segments[0] if len(batch.segments) == 1 else None
        self._only = only[1] - only[0] if only is not None and only[1] >= 0 else 0
        self._run_tasks = _launcher.run_tasks_function(parallel=bool((self.table[:, 1] > 1).any()))
        # else per segment: (the launcher's run for a run of kernels, its table address, its
        # length, its first row), or (None, 0, 0, task index) for a host task. A run of
        # single-block kernels runs serially on this thread: a host task next to it reads
        # what it wrote from this CPU's caches, and no worker is woken for it
        self._steps = [
            (None, 0, 0, start)
            if stop < 0
            else (
                _launcher.run_tasks_function(parallel=bool((self.table[start:stop, 1] > 1).any())),
                self._table_addr + start * 24,
                stop - start,
                start,
            )
            for start, stop in batch.segments
        ]

    def set_buffer(self, buf: int, addr: int) -> None:
        """Move buffer ``buf`` to ``addr`` for the next runs, and its views with it."""
        self._move(buf, addr)
        for view in self.program.followers.get(buf, ()):
            self._move(view, addr)

    def _move(self, buf: int, addr: int) -> None:
        self.addrs[buf] = addr
        for pos, off in self._patches.get(buf, ()):
            self.args[pos] = addr + off

    def run(self) -> None:
        if self._only:
            failed = self._run_tasks(self._table_addr, self._only)
            if failed:
                self._explain(failed - 1)
            return
        program, batch = self.program, self._batch
        if batch is None:
            for index in range(len(self.tasks)):
                program.run_one(index, self.addrs)
            return
        for run, at, count, start in self._steps:
            if run is None:  # a host task
                program.run_one(start, self.addrs)
                continue
            failed = run(at, count)
            if failed:
                self._explain(start + failed - 1)

    def _explain(self, row: int) -> None:
        """Raise for the failed kernel of table row ``row``: with the task's own account of
        the failure where it has one (``KernelTask.explain``), else as ``_fail`` does."""
        assert self._batch is not None
        task = self.tasks[self._batch.kernel_index[row]]
        assert isinstance(task, KernelTask)
        detail = task.failure_detail(self.addrs, self.buffers)
        if detail is not None:
            raise GeError(f"node {task.name} failed: {detail}")
        self._fail(row)

    def _fail(self, row: int) -> None:
        assert self._batch is not None
        task = self.tasks[self._batch.kernel_index[row]]
        assert isinstance(task, KernelTask)
        args = task.template.copy()
        args[task.patch_pos] = self.addrs[task.patch_buf] + task.patch_off
        raise GeError(f"node {task.name} failed: {describe_failure(task.name, 1, args)}")


def _free_all(addresses: list[int]) -> None:
    for addr in addresses:
        memory.free(addr)
    addresses.clear()
