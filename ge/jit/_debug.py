"""``ge.jit.debug_print``: print run-time values from inside a compiled function (JAX's
``jax.debug.print``).

``debug_print(fmt, *args, **kwargs)`` formats ``fmt`` with ``str.format`` (``{}``, ``{0}``,
``{name}``, format specs such as ``{:.3f}`` for 0-d values) on the values the compiled
function computes, every time it is called, as numpy arrays. Outside a trace it prints at
once. Arguments may be pytrees (tuples, lists, dicts, dataclasses) of traced values, numpy
arrays and Python values.

How it runs, in the function itself: the traced values a trace prints become extra outputs of
its graph (after the results and the in-place write-backs), so they are computed by the same
compiled plan as the results (or by the reference interpreter while kernels compile in the
background); after each call the entry formats and prints them, in the order the
``debug_print`` calls were traced.

Inside a ``ge.jit.cond`` / ``while_loop`` / ``fori_loop`` body (branch, loop condition, loop
body, at any depth): the print is a ``JitDebugPrint`` node of the body's graph
(``ge.ops.debug``) whose inputs are the values printed (values of an enclosing trace are
captured into the body, as any closure is) and whose sink formats and prints them. It runs
each time the body runs: once per loop iteration (a ``while_loop`` condition once per test:
one more time than the body), in the branch taken only; on the reference interpreter and on
the compiled plan (a ``debug_print`` host task) alike, with the same text.

Decisions (ours):

- Order. Within one graph (the function's, or one body's) the prints of bodies and the
  constructs holding them run in trace order: each is chained to the previous one by a
  control edge, so no reordering of independent nodes can swap them. Prints in bodies run
  while the call runs; the prints of the function's own values (above) come after the call's
  computation, so after every body print of that call, even one traced later. (JAX's
  unordered ``jax.debug.print`` guarantees no order at all.)
- A call that fails prints nothing of the function's own values; body prints that ran before
  the failure have printed.
- ``fmt`` is checked when tracing, by formatting it with zeros of each value's shape and dtype:
  a placeholder without a value, or a format spec a value does not take (``{:.3f}`` of an
  array of more than one element), raises ``GeValueError`` naming ``fmt`` there, not at run
  time (in bodies too).
- A value of a body printed outside it (leaked through a closure) raises ``GeError``: that
  body's trace has ended, as for any leaked value. A Python ``for`` loop in the function is
  unrolled into the trace, and prints each step.
- ``.trace()`` and ``.lower()`` show the function's printed values as extra graph outputs and
  body prints as ``JitDebugPrint`` nodes.
- A body print runs only in the process that traced it: an offline model (``build_model`` of
  a graph holding one) refuses it with ``GeError`` naming the node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ge.error import GeError, GeTypeError, GeValueError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.graph.node import Node
from ge.jit._pytree import TreeDef, flatten, unflatten
from ge.ops.debug import PRINT_OP, register_sink

__all__ = [
    "Print",
    "Recorder",
    "Scope",
    "body",
    "debug_print",
    "emit",
    "innermost",
    "recording",
    "sequenced",
]


@dataclass
class Print:
    """One traced ``debug_print``: its format, arguments' structure, and per leaf either a
    constant or ``_TRACED`` (a traced value: the next printed graph output, or the next input
    of its ``JitDebugPrint`` node)."""

    fmt: str
    tree: TreeDef
    leaves: list[Any]  # a constant, or _TRACED
    n_traced: int


_TRACED = object()


@dataclass
class Scope:
    """One graph being traced (the function's or a body's): the last node of it that prints
    (a ``JitDebugPrint`` node, or a construct whose bodies print), which the next one runs
    after, and whether it has one."""

    builder: GraphBuilder
    last: Node | None = None

    @property
    def prints(self) -> bool:
        return self.last is not None


@dataclass
class Recorder:
    """What one trace prints: its ``Print`` records and the traced values they read, and the
    stack of graphs being traced (the function's first, then the bodies being traced in it)."""

    builder: GraphBuilder
    prints: list[Print] = field(default_factory=list)
    values: list[TensorHolder] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)


_active = threading.local()


class recording:  # noqa: N801  (used as ``with recording(builder) as recorder``)
    """While a trace runs the user's function: ``debug_print`` records into it."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.recorder = Recorder(builder, scopes=[Scope(builder)])

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


@contextmanager
def body(builder: GraphBuilder) -> Iterator[Scope]:
    """While ``ge.jit._control`` traces a body into ``builder``: ``debug_print`` makes nodes
    of it. The scope says afterwards whether the body prints (outside a ``ge.jit`` trace it
    stays empty)."""
    scope = Scope(builder)
    recorder = _current()
    if recorder is None:
        yield scope
        return
    recorder.scopes.append(scope)
    try:
        yield scope
    finally:
        recorder.scopes.pop()


def sequenced(builder: GraphBuilder, node: Node, bodies: Sequence[Scope]) -> None:
    """``node`` (a construct just added to ``builder``) runs bodies ``bodies``: if one of them
    prints, ``node`` is ordered after the previous printing node of ``builder`` and the next
    one after it."""
    if not any(b.prints for b in bodies):
        return
    recorder = _current()
    if recorder is not None:
        _chain(_scope_of(recorder, builder), node)


def innermost(builder: GraphBuilder) -> GraphBuilder:
    """The body being traced, if ``builder`` is it or encloses it; else ``builder``."""
    recorder = _current()
    if recorder is None:
        return builder
    inner = recorder.scopes[-1].builder
    return inner if inner is builder or builder._encloses(inner) else builder


def _scope_of(recorder: Recorder, builder: GraphBuilder) -> Scope:
    for scope in reversed(recorder.scopes):
        if scope.builder is builder:
            return scope
    return recorder.scopes[-1]  # not a graph of this trace: order it with the innermost


def _chain(scope: Scope, node: Node) -> None:
    if scope.last is not None and scope.last.graph is not None:
        scope.builder._graph.add_control_edge(scope.last, node)
    scope.last = node


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
    scope = recorder.scopes[-1]
    if scope.builder is recorder.builder:
        _record(recorder, fmt, tree, leaves)
    else:
        _record_in_body(scope, fmt, tree, leaves)


def _sample(holder: TensorHolder) -> np.ndarray:
    """Zeros shaped like ``holder`` (unknown dims as 0), to check ``fmt`` on when tracing."""
    return np.zeros([max(d, 0) for d in holder.shape], holder.dtype)


def _foreign(leaf: TensorHolder, builder: GraphBuilder) -> GeError:
    """The error for printing ``leaf`` while tracing ``builder``, which it is no value of.
    A value of a finished trace or body (leaked through a closure) raises here the
    ``GeError`` that says so; one of an unrelated graph is a ``GeValueError``."""
    leaf._builder._check_live("debug_print")
    return GeValueError(
        f"ge.jit.debug_print: {leaf!r} belongs to another graph than the one traced"
    )


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
            raise _foreign(leaf, recorder.builder)
        kept.append(_TRACED)
        # the value now: an in-place update later (x[0] = 1) rebinds ``leaf`` to a new node
        values.append(recorder.builder._holder(leaf._node, leaf._port))
        samples.append(_sample(leaf))
    _format(fmt, tree, samples)  # a template that cannot format fails here, when tracing
    recorder.prints.append(Print(fmt, tree, kept, len(values)))
    recorder.values += values


def _record_in_body(scope: Scope, fmt: str, tree: TreeDef, leaves: list[Any]) -> None:
    """A ``JitDebugPrint`` node of the body ``scope`` traces, after its previous print."""
    builder = scope.builder
    kept: list[Any] = []
    samples: list[Any] = []
    traced: list[TensorHolder] = []
    for leaf in leaves:
        if not isinstance(leaf, TensorHolder):
            kept.append(leaf)
            samples.append(leaf)
            continue
        if leaf._builder is not builder and not leaf._builder._encloses(builder):
            raise _foreign(leaf, builder)
        kept.append(_TRACED)
        traced.append(leaf)
        samples.append(_sample(leaf))
    _format(fmt, tree, samples)  # a template that cannot format fails here, when tracing
    ports = []
    for leaf in traced:  # values of enclosing graphs come in as inputs of the body
        inner = leaf if leaf._builder is builder else builder._capture(leaf)
        assert inner is not None
        ports.append((inner._node, inner._port))
    record = Print(fmt, tree, kept, len(ports))
    print_id = register_sink(lambda values: emit([record], list(values)))
    node = builder._add(PRINT_OP, [ports], {"fmt": fmt, "print_id": print_id})
    _chain(scope, node)


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
