"""The task-plan executor: runs a ``Plan`` from host arrays or device addresses.

The compiler produces plans; the runtime runs them, for ``Session``, ``ge.jit`` and loaded
offline models alike. A ``PlanRunner`` owns workspaces (device blocks holding staged inputs,
outputs and the arena of intermediates) and reuses them run after run; ``ResultBlocks`` pools
the device blocks that large results are returned in.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.runtime import memory
from ge.runtime._record import FrozenRecord
from ge.runtime.memory import data_address
from ge.runtime.plan import BufferKind, HostTask, KernelTask, Plan, buffers_of

__all__ = [
    "DIRECT_BYTES",
    "RESULT_BLOCKS",
    "Alloc",
    "PlanRunner",
    "ResultBlocks",
    "Target",
    "execute_plan",
    "lend_array",
    "owning_array",
]

_ALIGN = 64
Target = tuple[int, np.ndarray]  # device memory for an output: (address, uint8 view)


def _aligned(n: int) -> int:
    return -(-max(n, 1) // _ALIGN) * _ALIGN


# device memory for one run: ``alloc(nbytes)`` gives an address and the function releasing it
Alloc = Callable[[int], tuple[int, Callable[[], None]]]


def _default_alloc(nbytes: int) -> tuple[int, Callable[[], None]]:
    block = memory.malloc(max(nbytes, 1))
    return block.addr, lambda: memory.free(block)


def execute_plan(
    plan: Plan, input_addrs: Sequence[int], alloc: Alloc = _default_alloc
) -> tuple[list[int], list[Callable[[], None]]]:
    """Run ``plan`` once, now, on this thread, reading inputs at ``input_addrs``, with its
    outputs and arena in fresh memory from ``alloc`` (what a stream's queued run does: no
    workspace outlives it). Returns the output addresses and, for each, the function that
    releases it (the caller owns them); the arena is released before returning."""
    arena, free_arena = alloc(plan.arena_size)
    outputs: list[int] = []
    releases: list[Callable[[], None]] = []
    try:
        for buf in plan.outputs:
            addr, release = alloc(plan.buffers[buf].nbytes)
            outputs.append(addr)
            releases.append(release)
        plan.execute(plan.addresses(input_addrs, outputs, arena))
    except BaseException:
        for release in releases:
            release()
        raise
    finally:
        free_arena()
    return outputs, releases


class PlanRunner:
    """Runs a plan from host data or device addresses with no allocation per run.

    A *workspace* is one device block laid out as ``[staged inputs | outputs | arena]``; runs
    take a workspace from the runner's free list (allocating one only when every workspace is
    in use by a concurrent run) and give it back, so large outputs and intermediates never
    fault fresh pages after the first run. Everything that does not change between runs (the
    buffer address vector with constants filled in, the workspace layout) is computed once.
    Results come back as fresh host bytes.
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.program = plan.bind()  # the one bind: kernels and host functions resolved
        buffers = plan.buffers
        self.input_nbytes = [buffers[b].nbytes for b in plan.inputs]
        self.output_nbytes = [buffers[b].nbytes for b in plan.outputs]
        offsets, at = [], 0
        for nbytes in self.input_nbytes + self.output_nbytes:
            offsets.append(at)
            at += _aligned(nbytes)
        self.input_offsets = offsets[: len(plan.inputs)]
        self.output_offsets = offsets[len(plan.inputs) :]
        self.arena_offset = at
        self.size = at + _aligned(plan.arena_size)
        self._base = plan.addresses([0] * len(plan.inputs), [0] * len(plan.outputs), 0)
        kinds = [spec.kind for spec in buffers]
        self._inter = np.array(
            [b for b, k in enumerate(kinds) if k is BufferKind.INTERMEDIATE and b not in plan.views]
        )
        # views, placed where their sources are once those are (a source is never a view)
        self._views = np.array(list(plan.views), np.int64)
        self._view_sources = np.array(list(plan.views.values()), np.int64)
        self._inputs = np.asarray(plan.inputs, np.int64)
        self._outputs = np.array(
            [b for b in plan.outputs if kinds[b] is BufferKind.OUTPUT], np.int64
        )
        self._output_offsets = np.array(
            [
                o
                for b, o in zip(plan.outputs, self.output_offsets, strict=True)
                if kinds[b] is BufferKind.OUTPUT
            ],
            np.int64,
        )
        self._direct = _direct_slots(plan)
        self._plain = not (self._direct.inputs or self._direct.outputs or self._direct.lent)
        self._free: list[_Workspace] = []
        self._blocks: list[Any] = []
        weakref.finalize(self, _free_blocks, self._blocks)

    def aliasable(self, slot: int, output: int) -> bool:
        """Whether output ``output`` may be written over input ``slot``'s memory (buffer
        donation): every task reading the input runs before the first task writing the
        output, or is that task and reads each element before writing it (elementwise)."""
        plan = self.plan
        src, dst = plan.inputs[slot], plan.outputs[output]
        srcs = {src} | {v for v, s in plan.views.items() if s == src}  # a view reads its source
        dsts = {dst} | {v for v, s in plan.views.items() if s == dst}
        tasks = plan.tasks
        reads = [t for t, task in enumerate(tasks) if srcs & buffers_of(task)]
        writes = [t for t, task in enumerate(tasks) if dsts & buffers_of(task)]
        if not writes:
            return False
        if not reads:
            return True
        last_read, first_write = max(reads), min(writes)
        if last_read < first_write:
            return True
        task = tasks[first_write]
        # a view's elements are its source's in the same order: reading one element before
        # writing it holds for a view as for its source
        return (
            last_read == first_write
            and isinstance(task, KernelTask)
            and all(b in task.same_index_inputs for b in srcs & buffers_of(task))
        )

    def _acquire(self) -> _Workspace:
        try:
            return self._free.pop()
        except IndexError:
            block = memory.malloc(self.size)
            self._blocks.append(block)
            return _Workspace(self, block.addr, memory.device_view(block.addr, self.size))

    def run(
        self, sources: Sequence[int | np.ndarray], targets: Sequence[Target | None] = ()
    ) -> list[np.ndarray]:
        """Run with input ``i`` read from device address ``sources[i]`` (an int) or staged
        from host bytes (a contiguous array). Output ``j`` is written to ``targets[j]``
        (device memory given as ``(addr, uint8 view)``) when given, else into the workspace
        and copied out. Returns each output's bytes (the target views, or fresh copies)."""
        ws = self._free.pop() if self._free else self._acquire()
        try:
            space, bound = ws.space, ws.bound
            moved = False
            for k, source in enumerate(sources):  # every input is placed explicitly
                home = ws.homes[k]
                if isinstance(source, np.ndarray):
                    at = self.input_offsets[k]
                    space[at : at + source.nbytes] = source.reshape(-1).view(np.uint8)
                    addr = home
                else:
                    addr = source
                    moved = moved or addr != home
                if ws.inputs[k] != addr:
                    ws.inputs[k] = addr
                    bound.set_buffer(self.plan.inputs[k], addr)
            for j, home in enumerate(ws.outputs):  # and every output
                target = targets[j] if j < len(targets) else None
                addr = home if target is None else target[0]
                moved = moved or addr != home
                if addr != ws.current[j]:
                    ws.current[j] = addr
                    bound.set_buffer(self.plan.outputs[j], addr)
            ws.moved = moved
            bound.run()
            results = []
            for j, (at, n) in enumerate(zip(self.output_offsets, self.output_nbytes, strict=True)):
                target = targets[j] if j < len(targets) else None
                results.append(space[at : at + n].copy() if target is None else target[1])
            return results
        finally:
            self._free.append(ws)

    def call(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The fast path for host arrays, each exactly its input's dtype and shape (callers
        have checked); returns fresh arrays of the outputs.

        Small inputs are copied into the workspace and small outputs out of it. Large ones
        (``DIRECT_BYTES`` and up) that only kernels touch skip both copies: kernels read the
        caller's array and write the fresh result array in place (host memory is the same
        memory on this device; host tasks, which check device ranges, keep the copies)."""
        ws = self._free.pop() if self._free else self._acquire()
        try:
            if self._plain:  # everything through the workspace
                if ws.moved:  # an earlier run() read or wrote elsewhere: home again
                    ws.home()
                for view, array in zip(ws.in_views, arrays):  # noqa: B905  (checked by callers)
                    view[...] = array
                ws.bound.run()
                return [view.copy() for view in ws.out_views]
            loans: list[int] = []
            kernel_loans: list[tuple[int, int]] = []
            try:
                self._place_inputs(ws, arrays, loans, kernel_loans)
                results = self._place_outputs(ws)
                ws.moved = True  # inputs and outputs may be outside the workspace now
                ws.bound.run()
            finally:
                for addr in loans:
                    memory.end_loan(addr)
                for addr, nbytes in kernel_loans:
                    memory.end_kernel_loan(addr, nbytes)
            if len(results) == len(ws.out_views):
                return results
            it = iter(results)
            direct = self._direct.outputs
            return [next(it) if j in direct else view.copy() for j, view in enumerate(ws.out_views)]
        finally:
            self._free.append(ws)

    def _place_inputs(
        self,
        ws: _Workspace,
        arrays: Sequence[np.ndarray],
        loans: list[int],
        kernel_loans: list[tuple[int, int]],
    ) -> None:
        """Large contiguous inputs are read where they are; the rest are staged at home.
        Adds the addresses lent to device memory to ``loans``, and those lent to kernels
        alone (which check every view against live memory) to ``kernel_loans``, to end
        after the run."""
        direct, bound, bufs = self._direct, ws.bound, self.plan.inputs
        for k, (view, array) in enumerate(zip(ws.in_views, arrays, strict=True)):
            addr = None
            if array.flags.c_contiguous:
                if k in direct.inputs:
                    addr = data_address(array)
                    memory.lend_to_kernels(addr, array.nbytes)
                    kernel_loans.append((addr, array.nbytes))
                elif k in direct.lent:
                    addr = lend_array(array, loans)
            if addr is None:
                view[...] = array
                addr = ws.homes[k]
            if ws.inputs[k] != addr:
                ws.inputs[k] = addr
                bound.set_buffer(bufs[k], addr)

    def _place_outputs(self, ws: _Workspace) -> list[np.ndarray]:
        """Large outputs go to pooled result blocks (returned); the rest to their homes.

        The workspace keeps the last result array of each large output: when the caller has
        dropped it (no reference to it or to any view of it is left), the same array object
        is written and returned again. Making a fresh result array costs ~6 µs right after a
        kernel that streamed megabytes through the caches, against ~1 µs for this check."""
        direct, bound, bufs = self._direct.outputs, ws.bound, self.plan.outputs
        results: list[np.ndarray] = []
        for j, view in enumerate(ws.out_views):
            if j in direct:
                kept = ws.kept[j]
                if kept is not None and _counts(kept) == _UNUSED:
                    result, addr = kept
                else:
                    result, addr = RESULT_BLOCKS.array(view)
                    ws.kept[j] = (result, addr)
                results.append(result)
            else:
                addr = ws.outputs[j]
            if ws.current[j] != addr:
                ws.current[j] = addr
                bound.set_buffer(bufs[j], addr)
        return results


# from this size up, host arrays are read and written in place rather than copied (below it a
# copy is cheaper than lending the memory to the device)
DIRECT_BYTES = 1 << 16
_SPARE_PER_SIZE = 4


class _Slot:
    """One pooled block, with the array interface of each typed view of it asked for so far
    (making an array from a ready interface is the cheap part of returning a result)."""

    __slots__ = ("addr", "block", "interfaces", "nbytes", "pool", "raw")

    def __init__(self, pool: ResultBlocks, nbytes: int) -> None:
        self.pool = pool
        self.block = memory.malloc(nbytes)
        self.addr = self.block.addr
        self.nbytes = nbytes
        self.raw = memory.device_view(self.addr, nbytes)
        self.interfaces: dict[tuple[Any, ...], dict[str, Any]] = {}

    def interface(self, dtype: np.dtype[Any], shape: tuple[int, ...]) -> dict[str, Any]:
        key = (dtype, shape)
        found = self.interfaces.get(key)
        if found is None:
            found = self.interfaces[key] = self.raw.view(dtype).reshape(shape).__array_interface__
        return found

    def give_back(self) -> None:
        self.pool.give(self)


class ResultBlocks:
    """Device blocks that large results are written to and returned in: no copy and, once an
    earlier result is collected, no fresh pages to fault in (a fresh 4 MiB array costs more
    in page faults than a fused kernel takes to fill it). A collected result's block goes
    back on a free list for its size (a few per size; more go back to device memory)."""

    def __init__(self) -> None:
        self._spare: dict[int, list[_Slot]] = {}

    def take(self, nbytes: int) -> _Slot:
        spare = self._spare.get(nbytes)
        if spare:
            try:
                return spare.pop()
            except IndexError:  # another thread took the last one
                pass
        return _Slot(self, nbytes)

    def clear(self) -> None:
        """Give every spare block back to device memory (results still alive keep theirs)."""
        spare, self._spare = self._spare, {}
        for slots in spare.values():
            for slot in slots:
                memory.free(slot.block)

    def spare_bytes(self) -> int:
        """Bytes of device memory held by spare blocks (counted in ``live_bytes``)."""
        return sum(slot.nbytes for slots in list(self._spare.values()) for slot in list(slots))

    def give(self, slot: _Slot) -> None:
        spare = self._spare.setdefault(slot.nbytes, [])
        if len(spare) < _SPARE_PER_SIZE:
            spare.append(slot)
        else:
            memory.free(slot.block)

    def array(self, like: np.ndarray) -> tuple[np.ndarray, int]:
        """A result array shaped and typed as ``like``, in a pooled block that goes back to
        the pool once the array (and every view of it) is collected; and its address."""
        slot = self.take(like.nbytes)
        interface = slot.interface(like.dtype, like.shape)
        return np.asarray(_Owner(interface, slot.give_back)), slot.addr


RESULT_BLOCKS = ResultBlocks()


class _Owner:
    """The base of a result array over device memory: keeps the memory alive while any view
    of it lives, then runs ``release`` (a ``__del__``, cheaper than ``weakref.finalize`` on a
    path taken every call)."""

    __slots__ = ("__array_interface__", "_keep", "_release")

    def __init__(
        self, interface: dict[str, Any], release: Callable[[], None] | None, keep: Any = None
    ) -> None:
        self.__array_interface__ = interface
        self._release = release
        self._keep = keep

    def __del__(self) -> None:
        if self._release is not None:
            self._release()


def owning_array(view: np.ndarray, release: Callable[[], None] | None) -> np.ndarray:
    """``view`` as an array that runs ``release`` once it and every array made from it are
    collected (how results own the device memory they were written into)."""
    return np.asarray(_Owner(view.__array_interface__, release, view))


def _counts(kept: tuple[np.ndarray, int]) -> tuple[int, int]:
    """References to a kept result array and to its base (the owner that every view of it
    points to: numpy collapses view chains onto the first base that is not a view)."""
    array = kept[0]
    return sys.getrefcount(array), sys.getrefcount(array.base)


def _unused_counts() -> tuple[int, int]:
    """``_counts`` of a result nobody but its workspace holds, measured rather than assumed
    (the interpreter's own temporaries differ between Python versions)."""
    raw = np.empty(1, np.uint8)
    kept = [(owning_array(raw, None), 0)]
    return _counts(kept[0])


_UNUSED = _unused_counts()


def lend_array(array: np.ndarray, loans: list[int]) -> int | None:
    """The array's address once device memory covers it: lent for this run (the handle goes
    on ``loans``), or already device memory (an earlier result, say); ``None`` if neither."""
    addr = data_address(array)
    handle = memory.lend(array)
    if handle is not None:
        loans.append(handle)
        return addr
    return addr if memory.contains(addr, array.nbytes) else None


class _Direct(FrozenRecord):
    __match_args__ = ("inputs", "outputs", "lent")
    __slots__ = ("inputs", "lent", "outputs")
    inputs: frozenset[int]  # read in place by kernels
    outputs: frozenset[int]  # written in place by kernels
    lent: frozenset[int]  # read in place, host tasks too: lent to device memory for the run

    def __init__(self, inputs: frozenset[int], outputs: frozenset[int], lent: frozenset[int]):
        self._set("inputs", inputs)
        self._set("outputs", outputs)
        self._set("lent", lent)


def _direct_slots(plan: Plan) -> _Direct:
    """Inputs and outputs large enough to use in place: those no host task touches as they
    are, large inputs that host tasks read (a BLAS matmul's operands) by lending their memory
    to the device for the run (host tasks check device ranges)."""
    views = plan.views  # a host task reading a view reads its source's memory
    host = {views.get(b, b) for t in plan.tasks if isinstance(t, HostTask) for b in t.buffers}
    big = {b for b, spec in enumerate(plan.buffers) if spec.nbytes >= DIRECT_BYTES}
    inputs = [k for k, b in enumerate(plan.inputs) if b in big and b not in host]
    lent = [k for k, b in enumerate(plan.inputs) if b in big and b in host]
    outputs = [j for j, b in enumerate(plan.outputs) if b in big and b not in host]
    once = [j for j in outputs if plan.outputs.count(plan.outputs[j]) == 1]
    return _Direct(frozenset(inputs), frozenset(once), frozenset(lent))


class _Workspace:
    """One workspace block of a ``PlanRunner`` and the plan bound to it."""

    def __init__(self, runner: PlanRunner, addr: int, space: np.ndarray) -> None:
        self.addr = addr
        self.space = space
        addrs = runner._base.copy()
        if len(runner._inter):
            addrs[runner._inter] += addr + runner.arena_offset
        addrs[runner._outputs] = runner._output_offsets + addr
        self.inputs = [addr + at for at in runner.input_offsets]
        addrs[runner._inputs] = self.inputs
        addrs[runner._views] = addrs[runner._view_sources]
        self.outputs = [addr + at for at in runner.output_offsets]  # their workspace homes
        self.current = list(self.outputs)
        # the last result array of each large output, with its address (see _place_outputs)
        self.kept: list[tuple[np.ndarray, int] | None] = [None] * len(self.outputs)
        self.bound = runner.program.at(addrs)
        self.moved = False
        plan = runner.plan
        self._input_bufs, self._output_bufs = list(plan.inputs), list(plan.outputs)
        self.homes = [addr + at for at in runner.input_offsets]  # no cycle back to runner
        specs = [runner.plan.buffers[b] for b in runner.plan.inputs + runner.plan.outputs]
        offsets = runner.input_offsets + runner.output_offsets
        views = [
            space[at : at + spec.nbytes].view(spec.dtype).reshape(spec.shape)
            for at, spec in zip(offsets, specs, strict=True)
        ]
        self.in_views = views[: len(runner.input_offsets)]
        self.out_views = views[len(runner.input_offsets) :]

    def home(self) -> None:
        """Inputs and outputs back at their places in the workspace."""
        for k, (buf, addr) in enumerate(zip(self._input_bufs, self.inputs, strict=True)):
            home = self.homes[k]
            if addr != home:
                self.inputs[k] = home
                self.bound.set_buffer(buf, home)
        for j, (buf, addr) in enumerate(zip(self._output_bufs, self.current, strict=True)):
            if addr != self.outputs[j]:
                self.current[j] = self.outputs[j]
                self.bound.set_buffer(buf, self.outputs[j])
        self.moved = False


def _free_blocks(blocks: list[Any]) -> None:
    for block in blocks:
        memory.free(block)
    blocks.clear()
