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
raises an error saying so). Large array arguments are read in place and large results are
written straight into the fresh arrays returned (no staging copies); small ones are copied
through a reusable workspace. Decisions (ours): Python scalar arguments are constants of the
trace (a new value retraces, and says so); buffer donation (``donate_argnums``) is not
implemented yet and raises ``NotImplementedError``; a method's ``self`` (a first parameter
named ``self`` or ``cls``) is static, keyed by identity *and* by its simple attributes
(scalars, strings, tuples, arrays of up to 1024 elements), so ``self.scale = 5.0`` retraces
instead of running the graph traced with the old value.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from ge.jit._control import cond, while_loop
from ge.jit._function import CacheInfo, JitFunction, Lowered, logger

__all__ = ["CacheInfo", "JitFunction", "Lowered", "cond", "jit", "logger", "while_loop"]


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
) -> Any:
    """``@ge.jit`` or ``@ge.jit(static_argnums=..., static_argnames=...)``."""

    def wrap(f: Callable[..., Any]) -> JitFunction:
        return JitFunction(f, static_argnums, static_argnames, donate_argnums)

    return wrap if fun is None else wrap(fun)


class _CallableModule(types.ModuleType):
    """Lets ``ge.jit`` be both this module and the decorator."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
