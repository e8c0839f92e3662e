"""``ge.jit.debug_print``: print run-time values from inside a compiled function (JAX's
``jax.debug.print``).

``debug_print(fmt, *args, **kwargs)`` formats ``fmt`` with ``str.format`` (``{}``, ``{0}``,
``{name}``, format specs such as ``{:.3f}`` for 0-d values) on the values the compiled
function computes, every time it is called, as numpy arrays. Outside a trace it prints at
once. Arguments may be pytrees (tuples, lists, dicts, dataclasses) of traced values, numpy
arrays and Python values.

How it runs: the traced values a trace prints become extra outputs of its graph (after the
results and the in-place write-backs), so they are computed by the same compiled plan as the
results (or by the reference interpreter while kernels compile in the background); after each
call the entry formats and prints them, in the order the ``debug_print`` calls were traced.

Decisions (ours):

- Prints come after the call's computation, in trace order, once per call (JAX's unordered
  ``jax.debug.print`` gives no order either). A call that fails prints nothing.
- ``fmt`` is checked when tracing, by formatting it with zeros of each value's shape and dtype:
  a placeholder without a value, or a format spec a value does not take (``{:.3f}`` of an
  array of more than one element), raises ``GeValueError`` naming ``fmt`` there, not at run
  time.
- Inside a ``ge.jit.cond``/``while_loop``/``fori_loop`` body (a value of the body's own graph)
  it raises ``GeValueError``: a subgraph has no outputs to print from yet; print the values the
  construct returns instead. A Python ``for`` loop in the function is unrolled into the trace,
  and prints each step. Values of the enclosing trace printed from inside a branch print on
  every call, whichever branch runs.
- ``.trace()`` and ``.lower()`` show the printed values as extra graph outputs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.jit._pytree import TreeDef, flatten, unflatten

__all__ = ["Print", "Recorder", "debug_print", "emit", "recording"]


@dataclass
class Print:
    """One traced ``debug_print``: its format, arguments' structure, and per leaf either a
    constant or ``None`` (a traced value, the next printed graph output)."""

    fmt: str
    tree: TreeDef
    leaves: list[Any]  # a constant, or _TRACED
    n_traced: int


_TRACED = object()


@dataclass
class Recorder:
    """What one trace prints: its ``Print`` records and the traced values they read."""

    builder: GraphBuilder
    prints: list[Print] = field(default_factory=list)
    values: list[TensorHolder] = field(default_factory=list)


_active = threading.local()


class recording:  # noqa: N801  (used as ``with recording(builder) as recorder``)
    """While a trace runs the user's function: ``debug_print`` records into it."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.recorder = Recorder(builder)

    def __enter__(self) -> Recorder:
        stack = getattr(_active, "stack", None)
        if stack is None:
            stack = _active.stack = []
        stack.append(self.recorder)
        return self.recorder

    def __exit__(self, *exc: object) -> None:
        _active.stack.pop()


def _current() -> Recorder | None:
    stack = getattr(_active, "stack", None)
    return stack[-1] if stack else None


def debug_print(fmt: str, *args: Any, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the values each call computes (inside
    ``@ge.jit``), or at once (outside). See ``ge.jit._debug`` for the rules."""
    if not isinstance(fmt, str):
        raise GeTypeError(
            f"ge.jit.debug_print: fmt must be a str (a str.format template), got "
            f"{type(fmt).__name__}"
        )
    leaves, tree = flatten((args, kwargs))
    recorder = _current()
    if recorder is None:
        for leaf in leaves:
            if isinstance(leaf, TensorHolder):
                leaf._builder._check_live("debug_print")  # a value leaked out of a trace
                raise GeTypeError(
                    f"ge.jit.debug_print: {leaf!r} is a value of a graph under construction "
                    f"outside ge.jit; debug_print prints values inside @ge.jit functions"
                )
        print(_format(fmt, tree, leaves))
        return
    _record(recorder, fmt, tree, leaves)


def _record(recorder: Recorder, fmt: str, tree: TreeDef, leaves: list[Any]) -> None:
    kept: list[Any] = []
    values: list[TensorHolder] = []
    samples: list[Any] = []
    for leaf in leaves:
        if not isinstance(leaf, TensorHolder):
            kept.append(leaf)
            samples.append(leaf)
            continue
        if leaf._builder is not recorder.builder:
            leaf._builder._check_live("debug_print")
            if recorder.builder._encloses(leaf._builder):
                raise GeValueError(
                    "ge.jit.debug_print of a value computed inside a ge.jit.cond / while_loop "
                    "/ fori_loop body is not supported: print the values the construct "
                    "returns instead"
                )
            raise GeValueError(
                f"ge.jit.debug_print: {leaf!r} belongs to another graph than the one traced"
            )
        kept.append(_TRACED)
        # the value now: an in-place update later (x[0] = 1) rebinds ``leaf`` to a new node
        values.append(recorder.builder._holder(leaf._node, leaf._port))
        samples.append(np.zeros([max(d, 0) for d in leaf.shape], leaf.dtype))
    _format(fmt, tree, samples)  # a template that cannot format fails here, when tracing
    recorder.prints.append(Print(fmt, tree, kept, len(values)))
    recorder.values += values


def _format(fmt: str, tree: TreeDef, leaves: list[Any]) -> str:
    args, kwargs = unflatten(tree, leaves)
    try:
        return fmt.format(*args, **kwargs)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as error:
        raise GeValueError(
            f"ge.jit.debug_print: fmt {fmt!r} does not format with the values given "
            f"({len(args)} positional, keywords {sorted(kwargs)}): "
            f"{type(error).__name__}: {error}"
        ) from None


def emit(prints: list[Print], values: list[np.ndarray]) -> None:
    """Print each traced ``debug_print`` with this call's ``values`` (in trace order)."""
    it = iter(values)
    for record in prints:
        leaves = [next(it) if leaf is _TRACED else leaf for leaf in record.leaves]
        print(_format(record.fmt, record.tree, leaves))
