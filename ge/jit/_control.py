"""Data-dependent control flow for traced functions: ``cond`` and ``while_loop``.

Inside a trace, Python's ``if`` and ``while`` cannot look at a traced value (its value is known
only when the graph runs), so these build GE's ``If`` and ``While`` ops: each branch, loop
condition and loop body is traced into a subgraph of its own. Outside a trace (concrete
values) they simply run the Python functions, as ``jax.lax.cond`` does when not traced.

Operands and loop state are pytrees of traced values (and arrays or scalars, which become
constants). Branches, conditions and bodies may also use traced values of the enclosing
function (closures): each becomes an extra input of the subgraph (and of the loop, carried
unchanged). As in JAX, both branches must return the same structure, dtypes and shapes; the
loop body must return the structure, dtypes and shapes it was given; a predicate or loop
condition must be one value (size 1): GE's own ``If``/``While`` would read a longer tensor as
"true if it has elements", which loops forever on ``x < 10`` of a vector.

Inside a body being traced, a construct goes into that body even when all its operands are
values of an enclosing graph (captured), so it runs, and ``ge.jit.debug_print`` in it prints,
each time the body runs. A construct whose bodies print is ordered after the previous print of
its graph (``ge.jit._debug``).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import ge.es
from ge.error import GeError, GeTypeError, GeValueError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import to_const
from ge.graph.graph import Graph
from ge.jit import _debug
from ge.jit._pytree import TreeDef, flatten, unflatten

__all__ = ["cond", "fori_loop", "while_loop"]

_NAMES = itertools.count()
_Aval = str  # a traced value's dtype and shape, as "float32[2, 3]"


def _aval(holder: TensorHolder) -> _Aval:
    return f"{holder.dtype.name}{list(holder.shape)}"


def _check_callable(api: str, **fns: Any) -> None:
    for name, fn in fns.items():
        if not callable(fn):
            raise GeTypeError(f"ge.jit.{api}: {name} must be callable, got {type(fn).__name__}")


def _check_one_value(api: str, what: str, holder: TensorHolder) -> None:
    """Refuse a condition of a known shape with more (or fewer) than one element."""
    shape = list(holder.shape)
    if any(d < 0 for d in shape):
        return  # known only at run time
    if int(np.prod(shape)) != 1:
        raise GeValueError(
            f"ge.jit.{api}: {what} must be a scalar (one element), got shape {shape}; "
            f"reduce it first (e.g. with .all() or .any())"
        )


def _builder_of(values: list[Any]) -> GraphBuilder | None:
    """The graph a construct over ``values`` goes into: the body being traced when the values
    are of it or of graphs enclosing it (so a construct in a loop body runs, and prints, each
    iteration), else the graph of the first traced value; ``None`` if none is traced."""
    for v in values:
        if isinstance(v, TensorHolder):
            return _debug.innermost(v.get_owner_builder())
    return None


def _holders(builder: GraphBuilder, values: list[Any]) -> list[TensorHolder]:
    """``values`` as values of ``builder``: arrays and scalars as constants, values of graphs
    enclosing it captured (as the inputs standing for them)."""
    out: list[TensorHolder] = []
    for v in values:
        if not isinstance(v, TensorHolder):
            out.append(to_const(builder, np.asarray(v)))
            continue
        inner = builder._capture(v) if v._builder is not builder else None
        out.append(v if inner is None else inner)
    return out


def _subgraph(
    parent: GraphBuilder,
    role: str,
    fn: Callable[..., Any],
    tree: TreeDef,
    like: list[TensorHolder],
    seed: list[TensorHolder],
    carry_captures: bool = False,
) -> tuple[Graph, TreeDef, list[_Aval], list[TensorHolder], _debug.Scope]:
    """Trace ``fn`` on fresh inputs shaped like ``like`` into a graph of its own. Values of
    the enclosing graph that ``fn`` uses (closures) become extra inputs after ``like``: first
    those in ``seed`` (another branch's, so both branches agree on input positions), then new
    ones. Returns the graph, its output tree, its outputs' dtypes and shapes and the captured
    values (of ``parent``) in input order, and the body's ``debug_print`` scope (whether it
    prints). ``carry_captures`` appends the captured inputs to the outputs unchanged (a loop
    body passes them on)."""
    builder = GraphBuilder(f"{parent.name}_{role}_{next(_NAMES)}")
    builder._trace_note = parent._trace_note
    builder._numpy_semantics = parent._numpy_semantics
    builder._outer = parent
    builder._capture_at = len(like)
    inputs = [
        builder.create_input(i, shape=list(h.shape), data_type=h.data_type)
        for i, h in enumerate(like)
    ]
    for value in seed:
        builder._capture(value)
    with _debug.body(builder) as scope:
        result = fn(*unflatten(tree, inputs))
        leaves, out_tree = flatten(result)
        outputs = _holders(builder, leaves)
    avals = [_aval(o) for o in outputs]
    if role == "cond" and len(outputs) == 1:
        _check_one_value("while_loop", "cond_fn's result", outputs[0])
    if carry_captures:
        outputs += [inner for _, inner in builder._captures]
    captured = [outer for outer, _ in builder._captures]
    return builder.build_and_reset(outputs), out_tree, avals, captured, scope


def cond(
    pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], *operands: Any
) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, as one ``If`` node."""
    _check_callable("cond", true_fn=true_fn, false_fn=false_fn)
    leaves, tree = flatten(tuple(operands))
    builder = _builder_of([pred, *leaves])
    if builder is None:  # nothing traced: plain Python
        return true_fn(*operands) if bool(np.asarray(pred)) else false_fn(*operands)
    (pred_h,) = _holders(builder, [pred])
    _check_one_value("cond", "pred", pred_h)
    inputs = _holders(builder, leaves)
    then_graph, then_tree, then_types, then_caps, then_scope = _subgraph(
        builder, "then", true_fn, tree, inputs, []
    )
    else_graph, else_tree, else_types, captured, else_scope = _subgraph(
        builder, "else", false_fn, tree, inputs, then_caps
    )
    if then_tree != else_tree or then_types != else_types:
        raise GeValueError(
            f"ge.jit.cond: the branches return different structures, dtypes or shapes: "
            f"{then_tree} {then_types} vs {else_tree} {else_types}"
        )
    outs = ge.es.If(pred_h, inputs + captured, len(then_types), then_graph, else_graph)
    _check_built("cond", outs, len(then_types))
    _sequence(builder, outs, [then_scope, else_scope])
    return unflatten(then_tree, list(outs))


def while_loop(cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], init: Any) -> Any:
    """``state = init; while cond_fn(state): state = body_fn(state); return state``, as one
    ``While`` node (``state`` is a pytree of traced values)."""
    _check_callable("while_loop", cond_fn=cond_fn, body_fn=body_fn)
    leaves, tree = flatten(init)
    builder = _builder_of(leaves)
    if builder is None:
        state = init
        while bool(np.asarray(cond_fn(state))):
            state = body_fn(state)
        return state
    inputs = _holders(builder, leaves)

    def as_state(*values: Any) -> Any:
        return unflatten(tree, list(values))

    flat_tree = flatten(tuple(inputs))[1]
    cond_graph, cond_tree, cond_types, cond_caps, cond_scope = _subgraph(
        builder, "cond", lambda *v: cond_fn(as_state(*v)), flat_tree, inputs, []
    )
    if len(cond_types) != 1:
        raise GeValueError(f"ge.jit.while_loop: cond_fn must return one value, got {cond_tree}")
    body_graph, body_tree, body_types, captured, body_scope = _subgraph(
        builder, "body", lambda *v: body_fn(as_state(*v)), flat_tree, inputs, cond_caps, True
    )
    state_types = [_aval(h) for h in inputs]
    if body_tree != tree or body_types != state_types:
        raise GeTypeError(
            f"ge.jit.while_loop: body_fn must return the loop state's structure, dtypes and "
            f"shapes {tree} {state_types}, got {body_tree} {body_types}"
        )
    carried = inputs + captured  # values the loop reads from outside ride along unchanged
    outs = ge.es.While(carried, len(carried), cond_graph, body_graph)
    _check_built("while_loop", outs, len(carried))
    _sequence(builder, outs, [cond_scope, body_scope])
    return unflatten(tree, list(outs)[: len(inputs)])


def _check_built(name: str, outs: list[Any], count: int) -> None:
    """GE-PY's If/While return ``[]`` when their subgraph checks fail (and print why); the
    subgraphs traced here are built to pass them, so an empty result is our bug."""
    if len(outs) != count:
        raise GeError(
            f"ge.jit.{name}: the node was refused by its subgraph checks (see stderr); "
            f"expected {count} outputs, got {len(outs)}"
        )


def _sequence(builder: GraphBuilder, outs: list[Any], scopes: list[_debug.Scope]) -> None:
    """Order the construct just built (its outputs ``outs``) among the prints of ``builder``
    when one of its bodies prints (``ge.jit._debug``)."""
    if any(s.prints for s in scopes):
        node = outs[0]._node if outs else next(reversed(builder._graph._nodes.values()))
        _debug.sequenced(builder, node, scopes)


def fori_loop(lower: Any, upper: Any, body_fn: Callable[[Any, Any], Any], init: Any) -> Any:
    """``val = init; for i in range(lower, upper): val = body_fn(i, val); return val`` (JAX's
    ``fori_loop``), as one ``While`` node when a bound or the state is traced, else a plain
    Python loop.

    Decision (ours, numpy's rules): a traced counter ``i`` is an int64 array (or the dtype of a
    traced ``lower``), so ``i * x`` with a float32 ``x`` promotes to float64 as numpy does for
    an int64 array — cast it (``i.astype(x.dtype)``) where the state must stay float32.
    """
    _check_callable("fori_loop", body_fn=body_fn)
    for what, bound in (("lower", lower), ("upper", upper)):
        if not isinstance(bound, TensorHolder):
            try:
                operator.index(bound)
            except TypeError:
                raise GeTypeError(
                    f"ge.jit.fori_loop: {what} must be an int or a traced integer, got "
                    f"{type(bound).__name__}"
                ) from None
    leaves, tree = flatten(init)
    builder = _builder_of([lower, upper, *leaves])
    if builder is None:
        val = init
        for i in range(operator.index(lower), operator.index(upper)):
            val = body_fn(i, val)
        return val
    start = lower if isinstance(lower, TensorHolder) else np.int64(operator.index(lower))
    state = (_holders(builder, [start])[0], unflatten(tree, _holders(builder, leaves)))
    _, val = while_loop(lambda s: s[0] < upper, lambda s: (s[0] + 1, body_fn(s[0], s[1])), state)
    return val
