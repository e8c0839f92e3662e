"""Data-dependent control flow for traced functions: ``cond`` and ``while_loop``.

Inside a trace, Python's ``if`` and ``while`` cannot look at a traced value (its value is known
only when the graph runs), so these build GE's ``If`` and ``While`` ops: each branch, loop
condition and loop body is traced into a subgraph of its own. Outside a trace (concrete
values) they simply run the Python functions, as ``jax.lax.cond`` does when not traced.

Operands and loop state are pytrees of traced values (and arrays or scalars, which become
constants). Both branches must return the same structure and dtypes; the loop body must return
the structure and dtypes it was given.
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
) -> tuple[Graph, TreeDef, list[str]]:
    """Trace ``fn`` on fresh inputs shaped like ``like`` into a graph; returns it, its output
    tree and its outputs' dtype names."""
    builder = GraphBuilder(f"{parent.name}_{role}_{next(_NAMES)}")
    builder._trace_note = parent._trace_note
    inputs = [
        builder.create_input(i, shape=list(h.shape), data_type=h.data_type)
        for i, h in enumerate(like)
    ]
    result = fn(*unflatten(tree, inputs))
    leaves, out_tree = flatten(result)
    outputs = _holders(builder, leaves)
    dtypes = [o.dtype.name for o in outputs]
    return builder.build_and_reset(outputs), out_tree, dtypes


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
    then_graph, then_tree, then_types = _subgraph(builder, "then", true_fn, tree, inputs)
    else_graph, else_tree, else_types = _subgraph(builder, "else", false_fn, tree, inputs)
    if then_tree != else_tree or then_types != else_types:
        raise GeValueError(
            f"ge.jit.cond: the branches return different structures or dtypes: "
            f"{then_tree} {then_types} vs {else_tree} {else_types}"
        )
    outs = ge.es.If(pred_h, inputs, len(then_types), then_graph, else_graph)
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
    cond_graph, cond_tree, cond_types = _subgraph(
        builder, "cond", lambda *v: cond_fn(as_state(*v)), flat_tree, inputs
    )
    if len(cond_types) != 1:
        raise GeValueError(f"ge.jit.while_loop: cond_fn must return one value, got {cond_tree}")
    body_graph, body_tree, body_types = _subgraph(
        builder, "body", lambda *v: body_fn(as_state(*v)), flat_tree, inputs
    )
    if body_tree != tree or body_types != [h.dtype.name for h in inputs]:
        raise GeTypeError(
            f"ge.jit.while_loop: body_fn must return the loop state's structure and dtypes "
            f"{tree} {[h.dtype.name for h in inputs]}, got {body_tree} {body_types}"
        )
    outs = ge.es.While(inputs, len(inputs), cond_graph, body_graph)
    return unflatten(tree, list(outs))
