"""Task plans: what a compiled graph is at run time.

A ``Plan`` is a list of tasks over numbered buffers. Compiling fixed everything but addresses:
each ``KernelTask`` holds its argument vector with the address slots marked, and a run only
writes the buffers' current addresses into those slots and launches. A ``HostTask`` runs
Python on views of its buffers: a ``HOST_OPS`` entry named by data (copies, BLAS matmuls,
control flow over sub-plans), or a closure (an op's reference implementation, control flow
in a live compile). Buffers are graph inputs, graph outputs, constants (device memory owned
by the plan) or intermediates (offsets into one arena sized by the memory plan). The compiler
produces plans; ``ge.runtime.executor`` runs them; ``ge.runtime.om`` writes them to files.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from ge.error import GeError, GeValueError
from ge.runtime import _launcher, memory
from ge.runtime.kernel import KernelFunction, describe_failure, run_blocks
from ge.runtime.memory import device_view

__all__ = [
    "HOST_OPS",
    "BufferKind",
    "BufferSpec",
    "HostTask",
    "KernelTask",
    "Plan",
    "buffers_of",
    "host_task",
    "kernel_task",
]


class BufferKind(Enum):
    INPUT = "input"
    OUTPUT = "output"
    CONST = "const"
    INTERMEDIATE = "intermediate"


@dataclass
class BufferSpec:
    kind: BufferKind
    index: int  # input/output index, const slot, or arena offset for intermediates
    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


PYTHON_TASK = "python"  # HostTask.op of a closure that is not data


def view(addr: int, spec: BufferSpec) -> np.ndarray:
    """A numpy array over the device memory of a buffer."""
    raw = device_view(addr, spec.nbytes)
    array: np.ndarray = raw.view(spec.dtype).reshape(spec.shape)
    return array


@dataclass
class KernelTask:
    """One kernel launch: ``args = template`` with ``args[pos] = addr(buffer) + offset``."""

    name: str
    function: KernelFunction
    block_dim: int
    template: np.ndarray
    patch_pos: np.ndarray
    patch_buf: np.ndarray
    patch_off: np.ndarray
    # inputs each element of which is read before the same element of every output is
    # written (elementwise kernels): an output may share memory with one of them
    same_index_inputs: frozenset[int] = frozenset()
    # host code run only after a launch failed, to say why: it gets views of
    # ``explain_buffers`` and returns the message, or None (a successful run never calls it)
    explain: Callable[[list[np.ndarray]], str | None] | None = None
    explain_buffers: tuple[int, ...] = ()

    def failure_detail(self, addrs: np.ndarray, specs: Sequence[BufferSpec]) -> str | None:
        """Why this task's launch at ``addrs`` failed, from ``explain`` (``None`` if it has
        nothing to say)."""
        if self.explain is None:
            return None
        return self.explain([view(int(addrs[b]), specs[b]) for b in self.explain_buffers])

    def run(self, addrs: np.ndarray, specs: Sequence[BufferSpec]) -> None:
        args = self.template.copy()
        args[self.patch_pos] = addrs[self.patch_buf] + self.patch_off
        status = run_blocks(self.function, self.block_dim, args)
        if status:
            raise GeError(describe_failure(self.function.name, status, args))


def kernel_task(
    name: str,
    function: KernelFunction,
    block_dim: int,
    template: Sequence[int],
    patches: Sequence[tuple[int, int]],
    offsets: Sequence[int] | None = None,
) -> KernelTask:
    """A ``KernelTask`` from an argument list and its ``(position, buffer)`` address slots,
    each at byte ``offsets[k]`` into its buffer (0 by default)."""
    return KernelTask(
        name,
        function,
        block_dim,
        np.asarray(template, np.int64),
        np.asarray([p for p, _ in patches], np.int64),
        np.asarray([b for _, b in patches], np.int64),
        np.asarray(offsets, np.int64) if offsets is not None else np.zeros(len(patches), np.int64),
    )


@dataclass
class HostTask:
    """Python run on views of ``buffers`` (inputs first, then outputs).

    ``op`` names the task as data: a ``HOST_OPS`` entry whose ``fn`` is made from ``params``
    (``host_task``), which a model file can hold, or ``PYTHON_TASK`` for any other closure
    (an op's numpy reference, control flow), which only runs in the process that made it."""

    name: str
    fn: Callable[[list[np.ndarray]], None]
    buffers: list[int]
    op: str = PYTHON_TASK
    params: dict[str, Any] = field(default_factory=dict)

    def run(self, addrs: np.ndarray, specs: Sequence[BufferSpec]) -> None:
        self.fn([view(int(addrs[b]), specs[b]) for b in self.buffers])


Task = KernelTask | HostTask


def buffers_of(task: Task) -> set[int]:
    """The buffers a task reads or writes."""
    return {int(b) for b in task.patch_buf} if isinstance(task, KernelTask) else set(task.buffers)


HostFn = Callable[[list[np.ndarray]], None]


def _copy(params: dict[str, Any]) -> HostFn:
    """The bytes of ``views[0]`` into ``views[1]`` (the same size; dtypes may differ)."""

    def run(views: list[np.ndarray]) -> None:
        views[1].reshape(-1).view(np.uint8)[...] = views[0].reshape(-1).view(np.uint8)

    return run


def _matmul(params: dict[str, Any]) -> HostFn:
    """``out = a @ b (+ bias)`` through numpy's BLAS, ``a``/``b`` transposed as ``params``
    say (``transpose_a``, ``transpose_b``, ``bias``: views are ``a, b[, bias], out``)."""
    ta, tb, bias = bool(params["transpose_a"]), bool(params["transpose_b"]), bool(params["bias"])

    def run(views: list[np.ndarray]) -> None:
        a, b, out = views[0], views[1], views[-1]
        np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b, out=out)
        if bias:
            out += views[2]

    return run


SubRun = Callable[[list[np.ndarray]], list[np.ndarray]]  # a sub-plan run on host arrays


def truthy(value: np.ndarray) -> bool:
    """A condition tensor's truth, as ``ge.ops.control`` decides it for If and While: the value
    of a one-element tensor of rank 0 or 1, else whether it has elements (so a [1, 1] tensor
    holding 0 is true)."""
    array = np.asarray(value)
    return bool(array.reshape(())) if array.size == 1 and array.ndim <= 1 else array.size > 0


def _outputs(views: list[np.ndarray], start: int, results: list[np.ndarray]) -> None:
    for out, result in zip(views[start:], results, strict=True):
        out[...] = result


def _branch(params: dict[str, Any]) -> HostFn:
    """If/Case: ``views`` are ``[cond or index, inputs..., outputs...]``; the chosen branch
    (a sub-plan) runs on the inputs it takes (a branch may take fewer, the last ones first
    dropped) and its results are the outputs. Case runs the last branch for an index out of
    range; If's branches are ``[then, else]``."""
    branches: list[SubRun] = params["branches"]
    takes: list[int] = params["branch_inputs"]
    count, case = int(params["inputs"]), bool(params["case"])

    def run(views: list[np.ndarray]) -> None:
        if case:
            index = int(np.asarray(views[0]).reshape(-1)[0])
            k = index if 0 <= index < len(branches) else len(branches) - 1
        else:
            k = 0 if truthy(views[0]) else 1
        inputs = [np.array(v) for v in views[1 : 1 + count][: takes[k]]]
        _outputs(views, 1 + count, branches[k](inputs))

    return run


def _loop(params: dict[str, Any]) -> HostFn:
    """While: ``views`` are ``[vars..., outputs...]``; while ``cond(vars)`` (a sub-plan with
    one result) is true, ``vars = body(vars)``."""
    cond: SubRun = params["cond"]
    body: SubRun = params["body"]
    count = int(params["inputs"])

    def run(views: list[np.ndarray]) -> None:
        values = [np.array(v) for v in views[:count]]
        while truthy(cond(values)[0]):
            values = body(values)
        _outputs(views, count, values)

    return run


@dataclass(frozen=True)
class HostOp:
    """A host task that is data: its parameters by kind (``bool``, ``int``, ``plan``: a
    sub-plan, ``plans``: a list of them, ``ints``) and the maker of its function from them
    (sub-plans given as ``SubRun``s)."""

    params: dict[str, str]
    make: Callable[[dict[str, Any]], HostFn]


HOST_OPS: dict[str, HostOp] = {
    "copy": HostOp({}, _copy),
    "matmul": HostOp({"transpose_a": "bool", "transpose_b": "bool", "bias": "bool"}, _matmul),
    "branch": HostOp(
        {"case": "bool", "inputs": "int", "branches": "plans", "branch_inputs": "ints"}, _branch
    ),
    "while": HostOp({"inputs": "int", "cond": "plan", "body": "plan"}, _loop),
}


def host_task(name: str, op: str, buffers: list[int], **params: Any) -> HostTask:
    """The ``HOST_OPS`` task ``op`` on ``buffers`` with ``params``."""
    spec = HOST_OPS[op]
    if set(params) != set(spec.params):
        raise GeValueError(
            f"host op {op!r} takes parameters {list(spec.params)}, got {sorted(params)}"
        )
    return HostTask(name, spec.make(params), buffers, op, dict(params))


@dataclass
class _Batch:
    """Every kernel task's arguments in one vector and a launcher table over it.

    ``table`` row k is ``(status entry, block_dim, offset of k's arguments in bytes)``; a run
    adds the address of its copy of ``args`` to the offsets. ``segments`` lists
    ``(first row, end row)`` for runs of kernels and ``(task index, -1)`` for host tasks."""

    args: np.ndarray
    patch_pos: np.ndarray
    patch_buf: np.ndarray
    patch_off: np.ndarray
    table: np.ndarray
    kernel_index: list[int]  # table row -> task index
    segments: list[tuple[int, int]]

    @staticmethod
    def of(tasks: Sequence[Task]) -> _Batch:
        kernels = [(i, t) for i, t in enumerate(tasks) if isinstance(t, KernelTask)]
        offsets = np.cumsum([0] + [len(t.template) for _, t in kernels])
        table = np.zeros((len(kernels), 3), np.int64)
        for row, (_, task) in enumerate(kernels):
            table[row] = (task.function.status_address, task.block_dim, offsets[row] * 8)
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


@dataclass
class Plan:
    """Tasks in order, the buffers they use, and where graph inputs and outputs live."""

    buffers: list[BufferSpec] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)  # buffer id of graph input i
    outputs: list[int] = field(default_factory=list)  # buffer id of graph output j
    const_addrs: dict[int, int] = field(default_factory=dict)  # buffer id -> device address
    const_names: dict[int, str] = field(default_factory=dict)  # buffer id -> its Const node
    # intermediate buffer -> the intermediate whose bytes it is under another shape (a
    # Reshape's output, like a numpy view): no task writes it, and the memory plan keeps the
    # source's bytes as long as the view is read
    views: dict[int, int] = field(default_factory=dict)
    arena_size: int = 0
    owned: list[int] = field(default_factory=list)  # device memory freed with the plan
    _batch: _Batch | None = None  # the kernel tasks laid out for the launcher (first run)

    def __post_init__(self) -> None:
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
        return addrs

    def as_text(self) -> str:
        """The plan for people: buffers, tasks in launch order, and the memory plan."""
        lines = [
            f"plan: {len(self.tasks)} tasks, {len(self.buffers)} buffers, peak "
            f"intermediate memory {self.arena_size} bytes"
        ]
        for b, spec in enumerate(self.buffers):
            where = f"@{spec.index}" if spec.kind is BufferKind.INTERMEDIATE else f"#{spec.index}"
            view = f", a view of buf{self.views[b]}" if b in self.views else ""
            lines.append(
                f"  buf{b}: {spec.kind.value}{where} {spec.dtype.name}"
                f"{list(spec.shape)} ({spec.nbytes} bytes{view})"
            )
        for task in self.tasks:
            if isinstance(task, KernelTask):
                bufs = ", ".join(f"buf{int(b)}" for b in task.patch_buf)
                lines.append(
                    f"  launch {task.function.name} x{task.block_dim} for {task.name} ({bufs})"
                )
            else:
                bufs = ", ".join(f"buf{b}" for b in task.buffers)
                lines.append(f"  host {task.name} ({bufs})")
        return "\n".join(lines)

    def execute(self, addrs: np.ndarray) -> None:
        """Run every task (on the calling thread: the stream's worker). Runs of consecutive
        kernel tasks go to the native launcher in one call, with no Python per kernel."""
        self.bind(addrs).run()

    def bind(self, addrs: np.ndarray) -> BoundPlan:
        """The plan with its buffers at ``addrs``: every kernel argument filled in, ready to
        run again and again (``BoundPlan.set_buffer`` moves one buffer between runs)."""
        batch = self._batch if self._batch is not None else self._make_batch()
        return BoundPlan(self, addrs.copy(), batch)

    def _run_one(self, task: Task, addrs: np.ndarray) -> None:
        try:
            task.run(addrs, self.buffers)
        except GeError as e:
            detail = None
            if isinstance(task, KernelTask):  # its own account of the failure, if any
                detail = task.failure_detail(addrs, self.buffers)
            raise GeError(f"node {task.name} failed: {detail or e}") from e
        except (ValueError, TypeError, ArithmeticError, IndexError) as e:
            raise GeError(f"node {task.name} failed: {type(e).__name__}: {e}") from e

    def _make_batch(self) -> _Batch | None:
        if not _launcher.available():
            return None
        self._batch = _Batch.of(self.tasks)
        return self._batch


class BoundPlan:
    """A plan bound to buffer addresses: its launcher table points at its own argument vector,
    so a run is one native call per run of kernels. Not for concurrent use: each concurrent
    runner binds its own."""

    def __init__(self, plan: Plan, addrs: np.ndarray, batch: _Batch | None) -> None:
        self.plan = plan
        self.addrs = addrs
        self._batch = batch
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

    def set_buffer(self, buf: int, addr: int) -> None:
        """Move buffer ``buf`` to ``addr`` for the next runs."""
        self.addrs[buf] = addr
        for pos, off in self._patches.get(buf, ()):
            self.args[pos] = addr + off

    def run(self) -> None:
        if self._only:
            failed = self._run_tasks(self._table_addr, self._only)
            if failed:
                self._explain(failed - 1)
            return
        plan, batch = self.plan, self._batch
        if batch is None:
            for task in plan.tasks:
                plan._run_one(task, self.addrs)
            return
        for start, stop in batch.segments:
            if stop < 0:  # a host task
                plan._run_one(plan.tasks[start], self.addrs)
                continue
            failed = _launcher.run_tasks(self._table_addr + start * 24, stop - start)
            if failed:
                self._explain(start + failed - 1)

    def _explain(self, row: int) -> None:
        """Raise for the failed kernel of table row ``row``: with the task's own account of
        the failure where it has one (``KernelTask.explain``), else as ``_fail`` does."""
        assert self._batch is not None
        task = self.plan.tasks[self._batch.kernel_index[row]]
        assert isinstance(task, KernelTask)
        detail = task.failure_detail(self.addrs, self.plan.buffers)
        if detail is not None:
            raise GeError(f"node {task.name} failed: {detail}")
        self._fail(row)

    def _fail(self, row: int) -> None:
        assert self._batch is not None
        task = self.plan.tasks[self._batch.kernel_index[row]]
        assert isinstance(task, KernelTask)
        args = task.template.copy()
        args[task.patch_pos] = self.addrs[task.patch_buf] + task.patch_off
        raise GeError(f"node {task.name} failed: {describe_failure(task.name, 1, args)}")


def _free_all(addresses: list[int]) -> None:
    for addr in addresses:
        memory.free(addr)
    addresses.clear()
