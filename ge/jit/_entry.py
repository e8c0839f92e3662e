"""``_Entry``: one trace of a ``ge.jit`` function, and how a call runs it.

The trace's graph runs compiled once its kernels are loaded; while a worker process compiles
them (``ge.compiler.background``) calls run on the reference interpreter, prepared once per
trace (``ge.ops.interpreter.Program``: numpy's own speed on elementwise chains), and the
first call after the job is done switches to the compiled plan. A call also checks and
performs the write-backs of arguments the trace updated in place, gives up donated tensors,
and prints the trace's ``ge.jit.debug_print`` values.

Before any of that, the trace's plan is looked up in the plan cache (``ge.jit._plan_cache``):
a plan an earlier process compiled for the same graph, options and ge code is loaded and run
by the runtime's executor, and ``ge.compiler`` is not imported. A plan compiled here (in the
foreground, or once the worker is done) is stored there for the next process. A loaded
entry's ``compiled`` graph (what ``.lower()`` shows) is compiled only when it is read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ge._device._code_cache import cache_directory
from ge.error import GeError, GeValueError
from ge.graph._dtypes import numpy_dtype
from ge.graph.graph import Graph
from ge.graph.tensor import Tensor
from ge.jit import _plan_cache
from ge.jit._debug import Print, emit
from ge.jit._pytree import TreeDef, unflatten
from ge.options import Options, current_options, using_options
from ge.passes.registry import get_registered_passes

if TYPE_CHECKING:
    from ge.ops.interpreter import Program
    from ge.runtime.executor import PlanRunner
    from ge.runtime.model import ModelGraph

__all__ = ["_Entry"]


class _Entry:
    """One trace: its graph, compiled form and how outputs come back.

    With ``background`` set, a graph whose kernels are not all in the disk cache yet runs on
    the reference interpreter while a worker process compiles them (``self.job``); the first
    call after the job is done loads them and switches to the compiled plan for good. The
    trace keeps the ``ge.options`` record in force when it was made (read once here, never
    per call) and compiles with it, in the foreground or in the worker. A trace whose plan is
    in the plan cache (``_plan_cache.plan_key``) loads it instead (``_loaded``: the model
    graph holding it) and neither compiles nor submits a job; a plan compiled here is stored
    there under the same key."""

    def __init__(
        self,
        graph: Graph,
        out_tree: TreeDef,
        consts: dict[int, Any],
        *,
        background: bool,
        writeback: Sequence[tuple[int, str]] = (),
        prints: Sequence[Print] = (),
    ) -> None:
        self.graph = graph
        # the trace's ge.jit.debug_print calls; the values they print are the graph's last
        # outputs (after the write-backs)
        self.prints = list(prints)
        self.n_printed = sum(p.n_traced for p in self.prints)
        # (array argument index, path) of each argument the trace updated in place; their
        # final values are the graph's last outputs, copied into the caller's arrays
        self.writeback = list(writeback)
        self.out_tree = out_tree
        self.consts = consts  # output leaf index -> Python value returned as it is
        self._compiled_graph: Any = None
        self.runner: Any = None
        self.out_specs: list[tuple[np.dtype[Any], tuple[int, ...]]] = []
        self.single = False
        self.job: Any = None
        self._program: Program | None = None  # the reference interpreter's, while the job runs
        self._switch = threading.Lock()
        self.ge_options = current_options()
        self._plan_key: str | None = None
        self._loaded: ModelGraph | None = None  # the plan cache's entry, when it was a hit
        if not (graph.get_direct_nodes() and self.n_graph_outputs()):
            return
        self._plan_key = _plan_cache.plan_key(graph, self.ge_options)
        if self._plan_key is not None:
            self._loaded = _plan_cache.load_plan(self._plan_key, graph, self.ge_options)
            if self._loaded is not None:
                self._use(_Loaded(self._loaded.runner, self._explaining_runner))
                return
        if not (background and _compiles_in_background(self.ge_options)):
            self._build()
            return
        from ge.compiler.kernels._codegen import KernelNotCached, cached_only  # noqa: PLC0415

        try:
            with cached_only():
                self._build()
        except KernelNotCached:
            # imported only here: with the kernels on disk the call needs no worker (nor
            # the subprocess module)
            from ge.compiler.background import compiler  # noqa: PLC0415

            with using_options(self.ge_options):
                self.job = compiler().submit(graph)

    def _build(self) -> None:
        from ge.compiler.executable import CompiledGraph  # noqa: PLC0415  (compiler is heavy)

        compiled = CompiledGraph(self.graph, ge_options=self.ge_options)
        plan = compiled.plan_for([list(s.shape) for s in compiled.inputs])
        self._compiled_graph = compiled
        self._use(compiled.runner(plan) if plan is not None else None)
        if plan is not None and self._plan_key is not None:
            _plan_cache.store_plan(self._plan_key, self.graph, plan, self.ge_options)

    def _use(self, runner: Any) -> None:
        """Run the trace on ``runner`` (a compiled or loaded plan's; ``None``: no plan)."""
        plan = runner.plan if runner is not None else None
        specs = (
            []
            if plan is None
            else [(plan.buffers[b].dtype, plan.buffers[b].shape) for b in plan.outputs]
        )
        self.runner, self.out_specs = runner, specs
        # one array out and nothing else: the result is the runner's output as it is
        self.single = (
            runner is not None
            and self.out_tree.kind == "leaf"
            and not self.consts
            and not self.writeback
            and not self.prints
        )

    @property
    def compiled(self) -> Any:
        """The ``CompiledGraph`` (``None``: nothing to compile); for a plan loaded from the
        plan cache, compiled on first read (``.lower()`` shows its optimised graph), while
        calls keep running the loaded plan."""
        if self._compiled_graph is None and self._loaded is not None:
            with self._switch:
                if self._compiled_graph is None:
                    from ge.compiler.executable import CompiledGraph  # noqa: PLC0415

                    self._compiled_graph = CompiledGraph(self.graph, ge_options=self.ge_options)
        return self._compiled_graph

    def _explaining_runner(self) -> Any:
        """The runner of the plan compiled here, which a loaded plan's failed call runs again
        (its kernels explain their failures); the entry runs on it from then on."""
        compiled = self.compiled
        plan = compiled.plan_for([list(s.shape) for s in compiled.inputs])
        if plan is None:
            return None
        runner = compiled.runner(plan)
        self._use(runner)
        return runner

    def n_graph_outputs(self) -> int:
        from ge.ops.infer import graph_outputs  # noqa: PLC0415

        return len(graph_outputs(self.graph))

    def ready(self) -> bool:
        """Whether the compiled plan runs (switching to it once the background job is done)."""
        job = self.job
        if job is None:
            return True
        if not job.done():
            return False
        with self._switch:
            if self.job is not None:
                self._build()  # loads what the worker stored (or compiles, if it failed)
                self.job = None
                self._program = None
        return True

    def run(
        self,
        arrays: Sequence[Any],
        donated: Sequence[Tensor] = (),
        to: str = "",
        targets: Sequence[Any] = (),
    ) -> Any:
        """The call's results. ``donated`` tensors are given up to the call (``to`` names it):
        outputs of their dtype and shape are written over their memory where the plan
        allows, and every one of them is unusable afterwards. ``targets`` are the caller's
        array arguments (as ``arrays``): those the trace updated in place get their final
        values (checked writeable before anything runs)."""
        for k, path in self.writeback:
            target = targets[k] if k < len(targets) else None
            if not isinstance(target, np.ndarray) or not target.flags.writeable:
                what = type(target).__name__ if not isinstance(target, np.ndarray) else None
                raise GeValueError(
                    f"argument {path} is updated in place by the function, but "
                    + (
                        f"it is a {what}, which cannot be written back into; pass a writeable "
                        f"numpy array"
                        if what
                        else "its numpy array is not writeable "
                        "(flags.writeable is False); pass a writeable copy"
                    )
                )
        if self.job is not None and not self.ready():
            outs = self._reference(arrays)
        elif donated and self.runner is not None:
            outs, donated = self._into_donated(arrays, donated, to), ()
        else:
            outs = self._compiled(arrays)
        for tensor in donated:
            release = tensor._donate(to)
            if release is not None:
                release()
        printed: list[Any] = []
        if self.prints:
            cut = len(outs) - self.n_printed
            outs, printed = list(outs[:cut]), list(outs[cut:])
        if self.writeback:
            n = len(self.writeback)
            outs, finals = list(outs[: len(outs) - n]), outs[len(outs) - n :]
            for (k, _), final in zip(self.writeback, finals, strict=True):
                np.copyto(targets[k], final)
        it = iter(outs)
        total = len(outs) + len(self.consts)
        leaves = [self.consts[i] if i in self.consts else next(it) for i in range(total)]
        if self.prints:
            emit(self.prints, printed)
        return unflatten(self.out_tree, leaves)

    def _compiled(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        host = all(type(a) is np.ndarray for a in arrays)
        if self.runner is not None and host:
            return list(self.runner.call(arrays))
        if self.runner is not None:
            sources = [int(a.addr) if isinstance(a, Tensor) else a for a in arrays]
            raw = self.runner.run(sources)
            return [r.view(d).reshape(s) for r, (d, s) in zip(raw, self.out_specs, strict=True)]
        if self._compiled_graph is not None:
            return list(self._compiled_graph.run_arrays([_host(a) for a in arrays]))
        return []

    def _into_donated(
        self, arrays: Sequence[Any], donated: Sequence[Tensor], to: str
    ) -> list[np.ndarray]:
        from ge.runtime.executor import owning_array  # noqa: PLC0415
        from ge.runtime.memory import device_view  # noqa: PLC0415

        runner = self.runner
        slots: dict[int, list[int]] = {}
        for k, a in enumerate(arrays):
            if isinstance(a, Tensor):
                slots.setdefault(id(a), []).append(k)
        spare = [t for t in donated if t._device_addr is not None and t._finalizer is not None]
        targets: list[Any] = [None] * len(self.out_specs)
        taker: dict[int, Tensor] = {}  # output -> the tensor whose memory it is written over
        for j, (dtype, shape) in enumerate(self.out_specs):
            for t in spare:
                fits = numpy_dtype(t.data_type) == dtype and tuple(t.shape) == shape
                if fits and all(runner.aliasable(k, j) for k in slots.get(id(t), ())):
                    targets[j] = (t.addr, device_view(t.addr, t.nbytes))
                    taker[j] = t
                    spare.remove(t)
                    break
        sources = [int(a.addr) if isinstance(a, Tensor) else a for a in arrays]
        raw = runner.run(sources, targets)
        releases = {id(t): t._donate(to) for t in donated}
        outs = []
        for j, (r, (dtype, shape)) in enumerate(zip(raw, self.out_specs, strict=True)):
            out = r.view(dtype).reshape(shape)
            if j in taker:
                out = owning_array(out, releases.pop(id(taker[j])))
            outs.append(out)
        for release in releases.values():
            if release is not None:
                release()
        return outs

    def _reference(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        """The outputs from the reference interpreter, as a ``Program`` prepared on the first
        such call (its buffers are reused by the next ones, and dropped with the switch)."""
        program = self._program
        if program is None:
            from ge.ops.interpreter import Program  # noqa: PLC0415

            program = self._program = Program(self.graph)
        return program.run([_host(a) for a in arrays])


class _Loaded:
    """A loaded plan's runner, as ``PlanRunner``: a call that fails is run again on the plan
    compiled here (``explaining()``), and its error is the one raised: a compiled kernel
    explains its failure (an index out of range, naming the value), which an offline model's
    kernels do not hold. A call writing over donated memory is not run again (the failed run
    may have overwritten its inputs): it raises the loaded plan's error."""

    def __init__(self, runner: PlanRunner, explaining: Callable[[], Any]) -> None:
        self._runner = runner
        self._explaining = explaining
        self.plan = runner.plan

    def aliasable(self, slot: int, output: int) -> bool:
        return bool(self._runner.aliasable(slot, output))

    def call(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        try:
            return self._runner.call(arrays)
        except GeError:
            runner = self._explaining()
            if runner is None:
                raise
        results: list[np.ndarray] = runner.call(arrays)
        return results

    def run(self, sources: Sequence[Any], targets: Sequence[Any] = ()) -> list[np.ndarray]:
        try:
            return self._runner.run(sources, targets)
        except GeError:
            runner = None if targets else self._explaining()
            if runner is None:
                raise
        results: list[np.ndarray] = runner.run(sources)
        return results


def _compiles_in_background(options: Options) -> bool:
    """``GE_JIT_BACKGROUND=0`` (``Options.jit_background``) compiles on the caller's thread;
    so does a process without a disk kernel cache (the worker hands kernels over through it),
    and one with ``ge.passes`` registered in Python (the worker process would not have them)."""
    if not options.jit_background or get_registered_passes():
        return False
    return cache_directory(options) is not None


def _host(source: Any) -> np.ndarray:
    return source.numpy() if isinstance(source, Tensor) else np.asarray(source)
