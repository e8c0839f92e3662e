"""Data-dependent control flow for traced functions: ``cond`` and ``while_loop``.

Inside a trace, Python's ``if`` and ``while`` cannot look at a traced value (its value is known
only when the graph runs), so these build GE's ``If`` and ``While`` ops: each branch, loop
condition and loop body is traced into a subgraph of its own. Outside a trace (concrete
values) they simply run the Python functions, as ``jax.lax.cond`` does when not traced.

Operands and loop state are pytrees of traced values (and arrays or scalars, which become
constants). Branches, conditions and bodies may also use traced values of the enclosing
function (closures): each becomes an extra input of the subgraph (and of the loop, carried
unchanged). Both branches must return the same structure and dtypes; the loop body must
return the structure and dtypes it was given.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

import ge.es
from ge.error import GeTypeError, GeValueError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import to_const
from ge.graph.graph import Graph
from ge.jit._pytree import TreeDef, flatten, unflatten

__all__ = ["cond", "while_loop"]

_NAMES = itertools.count()


def _builder_of(values: list[Any]) -> GraphBuilder | None:
    for v in values:
        if isinstance(v, TensorHolder):
            return v.get_owner_builder()
    return None


def _holders(builder: GraphBuilder, values: list[Any]) -> list[TensorHolder]:
    return [v if isinstance(v, TensorHolder) else to_const(builder, np.asarray(v)) for v in values]


def _subgraph(
    parent: GraphBuilder,
    role: str,
    fn: Callable[..., Any],
    tree: TreeDef,
    like: list[TensorHolder],
    seed: list[TensorHolder],
    carry_captures: bool = False,
) -> tuple[Graph, TreeDef, list[str], list[TensorHolder]]:
    """Trace ``fn`` on fresh inputs shaped like ``like`` into a graph of its own. Values of
    the enclosing graph that ``fn`` uses (closures) become extra inputs after ``like``: first
    those in ``seed`` (another branch's, so both branches agree on input positions), then new
    ones. Returns the graph, its output tree, its outputs' dtype names and the captured
    values (of ``parent``) in input order. ``carry_captures`` appends the captured inputs to
    the outputs unchanged (a loop body passes them on)."""
    builder = GraphBuilder(f"{parent.name}_{role}_{next(_NAMES)}")
    builder._trace_note = parent._trace_note
    builder._outer = parent
    builder._capture_at = len(like)
    inputs = [
        builder.create_input(i, shape=list(h.shape), data_type=h.data_type)
        for i, h in enumerate(like)
    ]
    for value in seed:
        builder._capture(value)
    result = fn(*unflatten(tree, inputs))
    leaves, out_tree = flatten(result)
    outputs = _holders(builder, leaves)
    dtypes = [o.dtype.name for o in outputs]
    if carry_captures:
        outputs += [inner for _, inner in builder._captures]
    captured = [outer for outer, _ in builder._captures]
    return builder.build_and_reset(outputs), out_tree, dtypes, captured


def cond(
    pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], *operands: Any
) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, as one ``If`` node."""
    leaves, tree = flatten(tuple(operands))
    builder = _builder_of([pred, *leaves])
    if builder is None:  # nothing traced: plain Python
        return true_fn(*operands) if bool(np.asarray(pred)) else false_fn(*operands)
    (pred_h,) = _holders(builder, [pred])
    inputs = _holders(builder, leaves)
    then_graph, then_tree, then_types, then_caps = _subgraph(
        builder, "then", true_fn, tree, inputs, []
    )
    else_graph, else_tree, else_types, captured = _subgraph(
        builder, "else", false_fn, tree, inputs, then_caps
    )
    if then_tree != else_tree or then_types != else_types:
        raise GeValueError(
            f"ge.jit.cond: the branches return different structures or dtypes: "
            f"{then_tree} {then_types} vs {else_tree} {else_types}"
        )
    outs = ge.es.If(pred_h, inputs + captured, len(then_types), then_graph, else_graph)
    return unflatten(then_tree, list(outs))


def while_loop(cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], init: Any) -> Any:
    """``state = init; while cond_fn(state): state = body_fn(state); return state``, as one
    ``While`` node (``state`` is a pytree of traced values)."""
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
    cond_graph, cond_tree, cond_types, cond_caps = _subgraph(
        builder, "cond", lambda *v: cond_fn(as_state(*v)), flat_tree, inputs, []
    )
    if len(cond_types) != 1:
        raise GeValueError(f"ge.jit.while_loop: cond_fn must return one value, got {cond_tree}")
    body_graph, body_tree, body_types, captured = _subgraph(
        builder, "body", lambda *v: body_fn(as_state(*v)), flat_tree, inputs, cond_caps, True
    )
    if body_tree != tree or body_types != [h.dtype.name for h in inputs]:
        raise GeTypeError(
            f"ge.jit.while_loop: body_fn must return the loop state's structure and dtypes "
            f"{tree} {[h.dtype.name for h in inputs]}, got {body_tree} {body_types}"
        )
    carried = inputs + captured  # values the loop reads from outside ride along unchanged
    outs = ge.es.While(carried, len(carried), cond_graph, body_graph)
    return unflatten(tree, list(outs)[: len(inputs)])
