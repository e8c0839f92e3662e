"""Context accessors of the custom-op callbacks: valid only while their callback runs.

``get_execute_ctx()`` inside a schema-bound ``execute``, ``get_compile_ctx()`` and
``get_compile_platform_info()`` inside ``compile``, ``get_declare_launch_args_ctx()`` inside
``declare_launch_args``; anywhere else each raises ``RuntimeError`` with GE-PY's text
(GE_ERRORS.md §10.4), including after the callback returned. The values live in
``ContextVar``s, so threads and asyncio tasks each see their own callback's context. The
engine binds them with ``_bound(...)`` around a callback (``ge.custom_op._eager`` around each
schema-bound ``execute``; a legacy ``execute(self, ctx)`` gets its context as the argument and
``get_execute_ctx()`` raises inside it, as in GE-PY).

    >>> get_execute_ctx()
    Traceback (most recent call last):
    ...
    ge.error.GeError: get_execute_ctx() is only available inside schema-bound execute
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ge.error import GeError

__all__ = [
    "get_compile_ctx",
    "get_compile_platform_info",
    "get_declare_launch_args_ctx",
    "get_execute_ctx",
]

_EXECUTE: ContextVar[Any] = ContextVar("ge_custom_op_execute_ctx", default=None)
_COMPILE: ContextVar[Any] = ContextVar("ge_custom_op_compile_ctx", default=None)
_PLATFORM: ContextVar[Any] = ContextVar("ge_custom_op_platform_info", default=None)
_DECLARE: ContextVar[Any] = ContextVar("ge_custom_op_declare_launch_args_ctx", default=None)

_VARS = {
    "execute": (_EXECUTE,),
    "compile": (_COMPILE, _PLATFORM),
    "declare_launch_args": (_DECLARE,),
}


def _get(var: ContextVar[Any], message: str) -> Any:
    value = var.get()
    if value is None:
        raise GeError(message)
    return value


def get_execute_ctx() -> Any:
    """The ``EagerOpExecutionContext`` of the running schema-bound ``execute``."""
    ctx = _EXECUTE.get()  # _get written out: called on every run of the execute path
    if ctx is None:
        raise GeError("get_execute_ctx() is only available inside schema-bound execute")
    return ctx


def get_compile_ctx() -> Any:
    """The ``OpCompileContext`` of the running ``compile``."""
    return _get(_COMPILE, "get_compile_ctx() is only available inside schema-bound compile")


def get_compile_platform_info() -> Any:
    """The ``CompilePlatformInfo`` of the running ``compile``."""
    return _get(
        _PLATFORM, "get_compile_platform_info() is only available inside schema-bound compile"
    )


def get_declare_launch_args_ctx() -> Any:
    """The ``AnnotatedArgsContext`` of the running ``declare_launch_args``."""
    return _get(
        _DECLARE,
        "get_declare_launch_args_ctx() is only available inside declare_launch_args",
    )


@contextmanager
def _bound(callback: str, *values: Any) -> Iterator[None]:
    """Make ``values`` the contexts of ``callback`` (``"execute"``, ``"compile"`` with
    context and platform info, ``"declare_launch_args"``) until the block ends."""
    variables = _VARS[callback]
    if len(values) != len(variables) or any(v is None for v in values):
        raise GeError(f"{callback} binds {len(variables)} non-None context object(s)")
    tokens = [var.set(value) for var, value in zip(variables, values, strict=True)]
    try:
        yield
    finally:
        for var, token in zip(reversed(variables), reversed(tokens), strict=True):
            var.reset(token)
