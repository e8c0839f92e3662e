"""``Options``: the settings that change what ge compiles or how it runs, as one frozen record.

Each field has an environment variable (``GE_*``), the way users set it; the record is read
from the environment by ``Options.from_env`` and passed explicitly to the places that generate
or compile code: the compile pipeline (``fusion``, ``dump_graph``), kernel codegen
(``approx_math``, ``kernel_boundscheck``, ``kernel_source``), the kernel caches
(``kernel_cache``, ``kernel_cache_dir``), ``ge.jit`` (``jit_background``, ``jit_explain``,
``jit_plan_cache``) and the launcher (``num_threads``).

========================  ========================  ==========  ===========================
field                     variable                  default     meaning
========================  ========================  ==========  ===========================
``fusion``                ``GE_FUSION``             ``True``    fuse elementwise groups
``approx_math``           ``GE_APPROX_MATH``        ``True``    float32 exp/log/sin/... use
                                                                ge's vectorised approximations
``kernel_boundscheck``    ``GE_KERNEL_BOUNDSCHECK`` ``False``   index bounds checks in kernels
``num_threads``           ``GE_NUM_THREADS``        ``0``       threads running kernel blocks
                                                                (0: ``os.cpu_count()``)
``jit_background``        ``GE_JIT_BACKGROUND``     ``True``    ``ge.jit`` compiles in a worker
``kernel_cache``          ``GE_KERNEL_CACHE``       ``True``    use the on-disk kernel cache
``kernel_cache_dir``      ``GE_KERNEL_CACHE_DIR``   ``""``      its directory ("": the default)
``kernel_source``         ``GE_KERNEL_SOURCE``      ``False``   print each kernel's source
``dump_graph``            ``GE_DUMP_GRAPH``         ``""``      dump the graph after each step
``jit_explain``           ``GE_JIT_EXPLAIN``        ``"info"``  level of ``ge.jit``'s retrace
                                                                notices (``info`` or ``warn``)
``jit_plan_cache``        ``GE_JIT_PLAN_CACHE``     ``True``    ``ge.jit`` keeps compiled plans
                                                                on disk (with the kernel cache)
========================  ========================  ==========  ===========================

Decisions (ours):

- Switches take ``0`` or ``1`` (surrounding blanks ignored; unset or empty means the
  default); ``GE_NUM_THREADS`` a positive integer. Any other value raises ``GeValueError``
  naming the variable, what it takes and what it got, from the first read of the record: a
  typo must not silently change results. ``GE_JIT_EXPLAIN`` is the exception: it changes
  no result, only how loudly retraces are logged, so the record keeps its text as given and
  ``ge.jit._explain`` reads it, logging a bad value instead of failing the user's call.
- ``current_options()`` is the record in force on this thread: the innermost
  ``using_options(opts)`` block, else the environment's. The environment is re-read only when
  one of the variables changed (a dozen dict lookups, compared to the last snapshot), and only
  where code is compiled: a compiled graph, a ``ge.jit`` trace and a loaded model keep the
  record they were built with, and no per-call path reads it.
- ``kernel_key()`` covers only the fields that change generated kernel code (approximate math,
  bounds checks): in-memory and on-disk kernel caches key on it, so two settings never share a
  kernel, while a thread count or a dump directory does not split the cache.
- Importing this module imports neither the compiler, the op registry nor Numba, so the
  runtime (offline models) reads the same record.

    >>> opts = Options.from_env({"GE_FUSION": "0", "GE_NUM_THREADS": "2"})
    >>> opts.fusion, opts.num_threads, opts.approx_math
    (False, 2, True)
    >>> opts.replace(fusion=True) == Options(num_threads=2)
    True
    >>> Options().kernel_key()
    'approx_math=1,kernel_boundscheck=0'
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ge.error import GeTypeError, GeValueError

__all__ = ["Options", "current_options", "using_options"]


def _switch(text: str) -> bool | None:
    value = text.strip()
    return {"0": False, "1": True}.get(value)


def _positive(text: str) -> int | None:
    try:
        count = int(text)
    except ValueError:
        return None
    return count if count >= 1 else None


def _path(text: str) -> str:
    return text


# type -> (parse the variable's text (None: invalid), what the variable takes)
_PARSERS: dict[type, tuple[Callable[[str], Any], str]] = {
    bool: (_switch, "0 or 1"),
    int: (_positive, "a positive integer"),
    str: (_path, "a path or a word"),
}


def _option(default: Any, env: str, *, code: bool = False) -> Any:
    """A field read from ``env``; ``code``: it changes generated kernel code."""
    return field(default=default, metadata={"env": env, "code": code})


@dataclass(frozen=True, slots=True)
class Options:
    """The settings that change results or code; see the module docstring for each."""

    fusion: bool = _option(True, "GE_FUSION")
    approx_math: bool = _option(True, "GE_APPROX_MATH", code=True)
    kernel_boundscheck: bool = _option(False, "GE_KERNEL_BOUNDSCHECK", code=True)
    num_threads: int = _option(0, "GE_NUM_THREADS")
    jit_background: bool = _option(True, "GE_JIT_BACKGROUND")
    kernel_cache: bool = _option(True, "GE_KERNEL_CACHE")
    kernel_cache_dir: str = _option("", "GE_KERNEL_CACHE_DIR")
    kernel_source: bool = _option(False, "GE_KERNEL_SOURCE")
    dump_graph: str = _option("", "GE_DUMP_GRAPH")
    jit_explain: str = _option("info", "GE_JIT_EXPLAIN")
    jit_plan_cache: bool = _option(True, "GE_JIT_PLAN_CACHE")

    def __post_init__(self) -> None:
        for f in _FIELDS:
            value = getattr(self, f.name)
            kind = _TYPES[f.name]
            if type(value) is not kind:  # bool is an int: exact types
                raise GeTypeError(
                    f"Options.{f.name} must be {kind.__name__}, got {type(value).__name__}"
                )
        if self.num_threads < 0:
            raise GeValueError(
                f"Options.num_threads must be >= 0 (0: one per CPU), got {self.num_threads}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Options:
        """The record the variables of ``environ`` give (unset or empty: the default)."""
        values: dict[str, Any] = {}
        for f in _FIELDS:
            env = f.metadata["env"]
            text = environ.get(env)
            if text is None or not text.strip():
                continue
            parse, expected = _PARSERS[_TYPES[f.name]]
            value = parse(text)
            if value is None:
                raise GeValueError(f"{env} must be {expected}, got {text!r}")
            values[f.name] = value
        return cls(**values)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Options:
        """The record ``as_dict()`` gave (a model header, a worker job); fields it lacks take
        their defaults, names it has that are no field raise ``GeValueError``."""
        if not isinstance(values, Mapping):
            raise GeTypeError(f"options must be a mapping, got {type(values).__name__}")
        unknown = sorted(set(values) - set(_TYPES))
        if unknown:
            raise GeValueError(f"options: unknown fields {unknown}; known: {sorted(_TYPES)}")
        return cls(**values)

    def replace(self, **changes: Any) -> Options:
        """A copy with ``changes`` (field names), checked like a new record."""
        unknown = sorted(set(changes) - set(_TYPES))
        if unknown:
            raise GeTypeError(f"Options.replace: unknown fields {unknown}")
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name: JSON-ready (bools, ints and strings)."""
        return {f.name: getattr(self, f.name) for f in _FIELDS}

    def key(self) -> str:
        """A stable text of every field (sorted JSON), for headers and cache keys."""
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    def kernel_key(self) -> str:
        """A stable text of the fields that change generated kernel code."""
        return ",".join(f"{f.name}={int(getattr(self, f.name))}" for f in _CODE_FIELDS)

    @staticmethod
    def variables() -> dict[str, str]:
        """Field name -> its environment variable."""
        return {f.name: f.metadata["env"] for f in _FIELDS}


_FIELDS = dataclasses.fields(Options)
_TYPES: dict[str, type] = {f.name: type(f.default) for f in _FIELDS}  # bool, int or str
_CODE_FIELDS = tuple(sorted((f for f in _FIELDS if f.metadata["code"]), key=lambda f: f.name))
_VARIABLES = tuple(f.metadata["env"] for f in _FIELDS)

_LOCAL = threading.local()  # .stack: the using_options records in force on this thread
_LAST: list[Any] = [None, None]  # the environment snapshot last read, and its record


def _from_environment() -> Options:
    environ = os.environ
    snapshot = tuple(environ.get(name) for name in _VARIABLES)
    seen, record = _LAST
    if snapshot == seen and record is not None:
        return record  # type: ignore[no-any-return]
    record = Options.from_env(dict(zip(_VARIABLES, snapshot, strict=True)))  # type: ignore[arg-type]
    _LAST[:] = [snapshot, record]
    return record


def current_options() -> Options:
    """The record in force on this thread: the innermost ``using_options`` block's, else the
    environment's (re-read when a variable changed; a bad value raises ``GeValueError``)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        return stack[-1]  # type: ignore[no-any-return]
    return _from_environment()


@contextlib.contextmanager
def using_options(options: Options) -> Iterator[Options]:
    """Within the block, ``current_options()`` on this thread is ``options``."""
    if not isinstance(options, Options):
        raise GeTypeError(f"options must be an Options, got {type(options).__name__}")
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(options)
    try:
        yield options
    finally:
        stack.pop()
