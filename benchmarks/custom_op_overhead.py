"""What a Python custom op costs per call, in one run (medians, after warm-up).

At seed 004's size (8192 float32, the add kernel launched with 8 blocks of 1024):

* a graph running one AnnotatedArgs custom op (``AnnotatedAddCustom``: ``declare_launch_args``
  recorded into the plan, no Python per run) against the same graph with the built-in ``Add``
  (goal: <= 1.2x);
* the execute path (``NoRefreshAddCustom``: its Python ``execute`` every run) against the
  same kernel launched bare from the plan: the microseconds the execute path adds per call
  (goal: <= 3 us);
* the seed sample's Annotated speedup (NoRefresh / Annotated);
* a breakdown of where each path's microseconds go, and the Python calls one run of the
  execute path makes (cProfile: the measure that does not depend on the machine's load).

Where the execute path's time inside ``run_graph`` goes (issue #13): the same graph with its
``custom_op`` task replaced by a bare launch of the same kernel costs what the Annotated graph
costs (+-0.3 us), so the plan's host-task segment, ``run_one`` and the stream handling around
the task cost next to nothing; the execute path's own calls (the loan, the callback, the
context, ``launch_kernel``) cost several microseconds more inside ``run_graph`` than back to
back, because there they run with cold caches and predictors: ``run_graph``'s own calls and
the 32 KiB copies evict their objects and code between runs (a task run right after any
``run_graph``, or after summing 128 KiB, is as slow). Only fewer calls and fewer objects
touched shrink that part.

What a run is made of now (issue #13): 15 Python frames, 7 of them the sample's own
(``execute``, ``_dims`` twice and its two generator expressions), and one each for the task's
``run``, the loan's ``open`` and ``close``, ``get_execute_ctx``, ``malloc_output_tensor``,
``get_stream`` and ``launch_kernel``; the Tensor and Shape reads (``addr``, ``shape``,
``storage_shape``, ``dims``, ``shape_size``...) run no Python. Of the loan, ``close``'s
reference counts of its 20 objects (``sys.getrefcount`` each: what keeps an object a callback
kept from coming back to life) are most; of ``launch_kernel``, the ctypes call into the pool
and packing the arguments. The 3 us goal is below what the sample's own Python costs here.

Timing on a shared machine: a sample is a short batch (``CALLS`` calls, well under a
scheduler time slice), so most samples run unpreempted and the median is what the code
costs; long batches fold other processes' time slices into every sample instead.

    python benchmarks/custom_op_overhead.py
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples/custom_op/annotated_args_refresh_add_custom/online"
os.environ["ASCEND_CUSTOM_OPP_PATH"] = str(SAMPLE / "ops")
sys.path.insert(0, str(ROOT))

from benchmarks._timing import interleaved_medians  # noqa: E402
from ge import runtime  # noqa: E402
from ge.custom_op._eager import _thread_stream  # noqa: E402
from ge.es import GraphBuilder  # noqa: E402
from ge.ge_global import GeApi  # noqa: E402
from ge.graph import DataType  # noqa: E402
from ge.graph import Tensor as GraphTensor  # noqa: E402
from ge.graph.types import Placement  # noqa: E402
from ge.runtime import _launcher  # noqa: E402
from ge.session import Session  # noqa: E402

N = 8192
CALLS = 10  # calls per timed sample (a short batch: see the module doc)


def per_call_us(fn: Callable[[], object], samples: int = 300) -> float:
    """Median over ``samples`` of the mean time of ``CALLS`` back-to-back calls, in µs."""
    for _ in range(CALLS):
        fn()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        times.append((time.perf_counter() - start) / CALLS)
    return statistics.median(times) * 1e6


def python_calls(fn: Callable[[], object], runs: int = 100) -> dict[str, int]:
    """Python-level calls (and builtins called) per ``fn()``, by where the callee lives: the
    load-independent measure of a path's cost."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(runs):
        fn()
    profile.disable()
    counts: dict[str, int] = {}
    for (filename, _, name), (_, ncalls, *_) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        key = _calls_group(filename, name)
        if key != "profiler":
            counts[key] = counts.get(key, 0) + ncalls // runs
    return counts


def _calls_group(filename: str, name: str) -> str:
    if filename == "~":
        return "profiler" if "disable" in name else "builtins (C)"
    path = Path(filename)
    if SAMPLE in path.parents:
        return "the sample's execute body"
    try:
        module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
    except ValueError:
        return path.name
    return module


BARE = "NoRefresh, task a bare launch"


def _sample() -> Any:
    """The sample's module (its kernel function)."""
    return next(m for n, m in sys.modules.items() if n.startswith("_ge_py_custom_op_annotated"))


def graph(name: str, op: Callable[..., object]) -> object:
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[N], data_type=DataType.DT_FLOAT)
    y = b.create_input(1, shape=[N], data_type=DataType.DT_FLOAT)
    return b.build_and_reset([op(x, y)])


def main() -> None:  # noqa: PLR0915  (one report, read top to bottom)
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    from ge.es import Add  # noqa: PLC0415
    from ge.es.custom import AnnotatedAddCustom, NoRefreshAddCustom  # noqa: PLC0415

    session = Session({})
    ids = {"builtin Add": 0, "AnnotatedAddCustom": 1, "NoRefreshAddCustom": 2}
    session.add_graph(0, graph("builtin", Add))
    session.add_graph(1, graph("annotated", AnnotatedAddCustom))
    session.add_graph(2, graph("no_refresh", NoRefreshAddCustom))
    rng = np.random.default_rng(0)
    a, c = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    inputs = [GraphTensor.from_numpy(v, placement=Placement.PLACEMENT_DEVICE) for v in (a, c)]
    for gid in ids.values():  # compile, and check every element
        (out,) = session.run_graph(gid, inputs)
        np.testing.assert_allclose(out.numpy(), a + c, rtol=1e-6)

    def batch(gid: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(CALLS):
                session.run_graph(gid, inputs)

        return run

    # the NoRefresh graph with its custom_op task replaced by a bare launch of the same kernel
    # at the same addresses: what a host task costs in the plan, around its own work
    plan = session._graphs[2].compiled.plan_for([[N], [N]])  # type: ignore[union-attr]
    index = next(k for k, t in enumerate(plan.tasks) if getattr(t, "op", "") == "custom_op")
    program = plan.bind()
    run_task = program.host[index]  # the bound custom_op task: _Execute.run
    assert run_task is not None
    runner = session._graphs[2].repeat.runner  # type: ignore[union-attr]
    bound_addrs = runner._free[-1].bound.addrs
    fn = _sample()._function()
    in_place = np.array([bound_addrs[b] for b in (*plan.inputs, *plan.outputs)], np.int64)
    in_place_at = in_place.ctypes.data

    def bare_task(addrs: np.ndarray) -> None:
        _launcher.launch(fn.status_address, N // 1024, in_place_at)

    def bare_batch() -> None:
        program.host[index] = bare_task
        try:
            for _ in range(CALLS):
                session.run_graph(2, inputs)
        finally:
            program.host[index] = run_task

    runs = {k: batch(g) for k, g in ids.items()}
    runs[BARE] = bare_batch
    medians = interleaved_medians(runs, repeat=300, rounds=6)
    graph_us = {k: v / CALLS * 1e6 for k, v in medians.items()}

    # --- the pieces -------------------------------------------------------------------------
    blocks = [runtime.malloc(N * 4) for _ in range(3)]
    addrs = [b.addr for b in blocks]
    packed = np.array(addrs, np.int64)
    stream = _thread_stream()
    address = packed.ctypes.data
    kernel_us = per_call_us(lambda: _launcher.launch(fn.status_address, N // 1024, address))
    blocks_us = per_call_us(lambda: runtime.kernel.run_blocks(fn, N // 1024, packed))

    def launch() -> None:
        runtime.launch_kernel(fn, N // 1024, stream.handle, addrs)

    launch_us = per_call_us(launch) - kernel_us
    task_addrs = np.zeros(len(plan.buffers), np.int64)
    order = [*plan.inputs, *plan.outputs]
    for buf, addr in zip(order, addrs, strict=True):
        task_addrs[buf] = addr
    eager_us = per_call_us(lambda: run_task(task_addrs))
    (loan,) = run_task.__self__.loans  # type: ignore[attr-defined]  # lent again every run

    def lend() -> None:
        loan.open(task_addrs, stream.handle)
        loan.close()

    lend_us = per_call_us(lend)
    calls = python_calls(lambda: run_task(task_addrs))

    # --- the report -------------------------------------------------------------------------
    builtin, annotated, no_refresh, bare = (graph_us[k] for k in (*ids, BARE))
    print(f"custom-op overhead at {N} float32 (add kernel, {N // 1024} blocks), medians, µs/call")
    print(f"{'':44}{'µs':>10}")
    for k in ids:
        print(f"  run_graph, one {k:28}{graph_us[k]:10.2f}")
    print()
    ratio, added = annotated / builtin, no_refresh - annotated
    print(f"  AnnotatedArgs graph / built-in Add graph    {ratio:10.3f}x  (goal <= 1.2x)")
    print(f"  execute path adds over the bare launch      {added:10.2f}  (goal <= 3 µs)")
    print(
        f"  sample's Annotated speedup (NoRefresh/Ann.) {no_refresh / annotated:10.3f}x  (goal > 1)"
    )
    print()
    print("  breakdown")
    print(f"    the kernel (8 blocks, native pool)        {kernel_us:10.2f}  (args ready)")
    around = annotated - kernel_us
    print(f"    run_graph around one kernel task          {around:10.2f}  (Annotated - kernel)")
    print(f"    NoRefresh graph, its task a bare launch   {bare:10.2f}  ", end="")
    print(f"(a host task in the plan: {bare - annotated:+.2f} over Annotated)")
    in_graph, alone = no_refresh - bare, eager_us - kernel_us
    print(
        f"    execute path inside run_graph             {in_graph:10.2f}  (NoRefresh - bare task)"
    )
    print(f"    execute path back to back, alone          {alone:10.2f}  (task's run - kernel)")
    print(f"    what running inside run_graph adds        {in_graph - alone:10.2f}  ", end="")
    print("(the same calls, caches and predictors cold)")
    print(f"    execute path: the task's run, whole       {eager_us:10.2f}  (incl. the kernel)")
    print(f"      open + close the loan (ctx, 3 Tensors)  {lend_us:10.2f}")
    in_blocks = blocks_us - kernel_us
    print(f"      launch_kernel over the kernel           {launch_us:10.2f}  ", end="")
    print(f"(run_blocks' array address: {in_blocks:.2f})")
    rest = eager_us - kernel_us - lend_us - launch_us
    print(f"      the sample's execute body + the rest    {rest:10.2f}  ", end="")
    print("(its checks, malloc_output)")
    print()
    print(f"  Python calls per custom_op task run (cProfile) {sum(calls.values()):7d}")
    for where, count in sorted(calls.items(), key=lambda kv: -kv[1]):
        print(f"    {where:42}{count:10d}")
    for b in blocks:
        runtime.free(b)
    GeApi.ge_finalize()


if __name__ == "__main__":
    main()
