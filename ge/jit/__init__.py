"""``ge.jit``: trace numpy-style Python into GE graphs, compile once, call fast.

``@ge.jit`` (or ``@ge.jit(static_argnums=..., static_argnames=...)``) turns a function of
numpy arrays into one that is traced into a ``ge.graph.Graph`` on its first call with each
argument signature, compiled (fusion, shape-generic kernels) and then run from the cache.
Inside the function, arguments are ``ge.es.TensorHolder``s: Python operators, indexing,
methods (``x.T``, ``x.reshape``, ``x.sum(axis=...)``), numpy functions (``np.exp``,
``np.where``, ``np.maximum``, ``np.concatenate``, ``x @ w``...) and ``ge.es.*`` ops build the
graph. Results come back as numpy arrays in the structure the function returned.

    >>> import numpy as np
    >>> import ge
    >>> @ge.jit
    ... def affine(x, w, b):
    ...     return np.maximum(x @ w + b, 0.0)
    >>> affine(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32),
    ...        np.zeros(4, np.float32)).tolist()
    [[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]
    >>> affine.cache_info().traces
    1

``ge.jit`` is this module, made callable; ``ge.jit.cond`` and ``ge.jit.while_loop`` build
``If``/``While`` for control flow on traced values (Python ``if``/``bool()``/``int()`` on one
raises an error saying so).

**What numpy works, and seeing values.** ``ge.jit.numpy_support()`` is the table of every
numpy function, ufunc, ufunc method, ``ndarray`` method and operator with its status on
traced values (built from the live rule tables); anything without a rule raises one
``ge.jit.NotSupportedError``: ``ge.jit does not support numpy.<name> (...); supported: see
`ge.jit.numpy_support()```. ``ge.jit.debug_print("x={}", x)`` prints the values each call
computes (``jax.debug.print``). Retraces are explained on the ``ge.jit`` logger at ``INFO``
(``GE_JIT_EXPLAIN=warn``: at ``WARNING``). Traced graphs name their ``Data`` nodes after the
parameters (``x``, ``params_w``), and ``.lower()`` results draw themselves in Jupyter.

Large array arguments are read in place and large results are
written straight into the fresh arrays returned (no staging copies); small ones are copied
through a reusable workspace.

**Compiling in the background.** A new trace whose kernels are all in the disk cache (from
this process, an earlier run or another process) loads them in milliseconds and runs compiled
at once. One that needs new kernels hands the graph to a worker process
(``ge.compiler.background``) and runs on the reference interpreter (numpy) meanwhile; the
first call after the worker is done loads the kernels and runs compiled from then on. So a
first call never waits for Numba, and results are the same except for the last bits of
approximated float32 math (``exp``, ``sin``..., within 1-2 ULP) and summation order.
``ge.jit.wait_for_compiles()`` waits for the worker; ``GE_JIT_BACKGROUND=0`` (or a disabled
disk cache, ``GE_KERNEL_CACHE=0``) compiles on the first call instead.

**Plans on disk.** A trace's whole compiled plan (kernels and constants included, in the
offline-model format) is kept in the kernel cache directory too (``ge.jit._plan_cache``): a
fresh process tracing the same graph with the same settings and the same ge code loads it
and runs it without importing the compiler. ``GE_JIT_PLAN_CACHE=0`` turns it off; graphs
with custom ops, registered ``ge.passes`` and ``GE_DUMP_GRAPH`` bypass it (``docs/jit.md``).

**Buffer donation.** ``donate_argnums`` names positional arguments whose ``ge.graph.Tensor``
leaves the call may consume: a result of the same dtype and shape is written over a donated
device tensor's memory when the plan allows it (every read of the tensor comes before the
result is written, or in the same elementwise kernel at the same element: yes for elementwise
work, no for a matmul), and the returned array then owns that memory. Every donated tensor
is unusable after the call, reused or not: any later use raises a ``GeError`` naming the
call, so code never depends on whether the memory was reused. A call that fails donates
nothing. numpy arrays cannot be invalidated, so a donated numpy array is passed as usual,
with a one-time warning on the ``ge.jit`` logger.

Decisions (ours): Python scalar arguments are constants of the trace (a new value retraces,
and says so); a method's ``self`` (a first parameter named ``self`` or ``cls``) is static,
keyed by identity *and* by its simple attributes (scalars, strings, tuples, arrays of up to
1024 elements), so ``self.scale = 5.0`` retraces instead of running the graph traced with the
old value; ``donate_argnums`` is positional only, and a donated argument cannot be static.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from ge.jit._control import cond, fori_loop, while_loop
from ge.jit._debug import debug_print
from ge.jit._function import CacheInfo, JitFunction, Lowered, logger
from ge.jit._support import NotSupportedError, SupportRow, SupportTable, numpy_support

__all__ = [
    "CacheInfo",
    "JitFunction",
    "Lowered",
    "NotSupportedError",
    "SupportRow",
    "SupportTable",
    "cond",
    "debug_print",
    "fori_loop",
    "jit",
    "logger",
    "numpy_support",
    "wait_for_compiles",
    "while_loop",
]


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
) -> Any:
    """``@ge.jit`` or ``@ge.jit(static_argnums=..., static_argnames=..., donate_argnums=...)``."""

    def wrap(f: Callable[..., Any]) -> JitFunction:
        return JitFunction(f, static_argnums, static_argnames, donate_argnums)

    return wrap if fun is None else wrap(fun)


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until every kernel being compiled in the background is in the disk cache (each
    function's next call then runs compiled); ``False`` if ``timeout`` seconds passed first.
    Scripts that exit right after their first calls can call it so the next run starts warm.
    """
    from ge.compiler.background import compiler  # noqa: PLC0415

    return compiler().wait(timeout)


class _CallableModule(types.ModuleType):
    """Lets ``ge.jit`` be both this module and the decorator."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
