"""Per-launch overhead of an empty kernel, by launch path, in microseconds (median of repeats):

- ``launch_kernel + sync``: ``ge.runtime.launch_kernel`` on a stream, then ``synchronize()``,
  with no arguments (the checked path) and with three plain ints (the fast path);
- ``Python pool``: blocks submitted to the ``ThreadPoolExecutor``, as ``KernelTask.run`` does;
- ``native launch``: ``ge.runtime._launcher.launch``, one ctypes call per launch;
- ``native run_tasks``: ``_launcher.run_tasks`` over a table of 10 launches, per launch.

Run: python benchmarks/launch_overhead.py [--calls N] [--block-dims 1,2]
(``GE_NUM_THREADS`` sets the native pool's thread count.)
"""

from __future__ import annotations

import argparse
import ctypes
from collections.abc import Callable

import numpy as np
from _timing import median_seconds

from ge.runtime import Stream, compile_kernel, launch_kernel, load_kernel_binary
from ge.runtime import _launcher as launcher
from ge.runtime._launch import KernelFunction, _pool

TASKS = 10


def empty_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--block-dims", default="1,2")
    args = parser.parse_args()
    dims = [int(d) for d in args.block_dims.split(",")]

    fn: KernelFunction = load_kernel_binary(compile_kernel(empty_kernel, "empty")).get_function(
        "empty"
    )
    status = ctypes.cast(fn._status, ctypes.c_void_p).value or 0
    packed = np.zeros(1, np.int64)
    address = packed.ctypes.data
    stream = Stream()

    def per_launch(launch: Callable[[], object], launches: int) -> float:
        def loop() -> None:
            for _ in range(args.calls):
                launch()

        return float(median_seconds(loop, repeat=7, warmup=1)) / (args.calls * launches) * 1e6

    def stream_launch(dim: int, args: list[int]) -> Callable[[], object]:
        def go() -> None:
            launch_kernel(fn, dim, stream, args)
            stream.synchronize()

        return go

    def checked_launch(dim: int) -> Callable[[], object]:  # no args: the checked path
        return stream_launch(dim, [])

    def int_launch(dim: int) -> Callable[[], object]:  # plain ints: the fast path
        return stream_launch(dim, [address, address, 8])

    def python_pool(dim: int) -> Callable[[], object]:
        def go() -> None:  # the body of KernelTask.run, less the argument patching
            if dim == 1:
                statuses = [fn(0, 1, packed)]
            else:
                futures = [_pool().submit(fn, b, dim, packed) for b in range(dim)]
                statuses = [f.result() for f in futures]
            assert not any(statuses)

        return go

    def native(dim: int) -> Callable[[], object]:
        return lambda: launcher.launch(status, dim, address)

    def native_tasks(dim: int) -> Callable[[], object]:
        table = np.array([(status, dim, address)] * TASKS, np.int64)
        table_address = table.ctypes.data
        native_tasks.keep = table  # type: ignore[attr-defined]
        return lambda: launcher.run_tasks(table_address, TASKS)

    rows = [
        ("launch_kernel([]) + sync", checked_launch, 1),
        ("launch_kernel([3 ints]) + sync", int_launch, 1),
        ("Python pool (KernelTask.run)", python_pool, 1),
        ("native launch", native, 1),
        (f"native run_tasks ({TASKS} tasks), per task", native_tasks, TASKS),
    ]
    print(f"native pool: {launcher.threads()} threads; {args.calls} calls per repeat")
    print(f"{'path':40}" + "".join(f"{f'block_dim={d}':>14}" for d in dims) + "   (us/launch)")
    for name, make, launches in rows:
        cells = [per_launch(make(d), launches) for d in dims]
        print(f"{name:40}" + "".join(f"{us:14.2f}" for us in cells))
    stream.close()


if __name__ == "__main__":
    main()
