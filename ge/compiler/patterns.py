"""Multi-node patterns that have a dedicated kernel: recognised and replaced by one op.

Code traced from numpy (``@ge.jit``) spells a softmax as five ops; the row kernel of
``SoftmaxV2`` does it in one pass over each row with a vectorised exponential. Each pattern
is a ``ge.passes.rewrite.Rule`` returning the replacement op with its inputs and attributes,
or ``None``, run by that module's one driver; a match is accepted only when every inner value
is used inside the pattern alone (so nothing else needs it), and the driver applies it only
when the replacement has exactly the matched output's shape and dtype.

    softmax      Div(e, ReduceSum(e, axes, keep_dims=True)),
                 e = Exp(Sub(x, ReduceMax(x, axes, keep_dims=True)))    -> SoftmaxV2(x, axes)
    box update   SelectV2(mask, Reshape(GatherV2(v, index, 0)), x), mask and index Consts
                 selecting a strided box of x in order (``x[1:-1, ::2] = v`` traced from
                 numpy)                    -> TensorScatterUpdate(x, box coords, Reshape(v))
                 SelectV2(mask, c, x), c a Const (``x[1:-1] = 0``)
                                           -> TensorScatterUpdate(x, box coords, c[box])

The box update's coordinates are a Const that the TensorScatterUpdate lowering recognises
as a box (``ge.compiler.kernels.indexing``): a copy of x and one strided copy of v, instead
of gathering every element of x through an index and selecting it through a mask. Its
coordinates cover the leading dims up to the last one the box does not span whole (int32
when x is small enough), so ``x[2:5] = v`` has one coordinate per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.compiler._graphs import const_array, fresh_name
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.passes.rewrite import NewOp, Rule, rewrite

__all__ = ["PATTERNS", "recognize_patterns"]

Match = tuple[str, list[Any], dict[str, Any]]  # op type, inputs, attributes
Port = tuple[Node, int]
Box = list[tuple[int, int, int]]  # (start, step, count) per dim


def _producer(node: Node, port: int, op_type: str) -> Node | None:
    edge = node.input(port) if port < len(node.inputs) else None
    return edge[0] if edge is not None and edge[0].type == op_type and edge[1] == 0 else None


def _uses(node: Node) -> int:
    return sum(len(consumers) for consumers in node.users_by_port)


def _attr(node: Node, name: str) -> object:
    """The stored value of attribute ``name``; ``None`` if the node has none."""
    stored = node.attr_value(name)
    return None if stored is None else stored.value


def _axes(reduce: Node) -> list[int] | None:
    """The reduction's axes, normalised, when they are a Const and it keeps dims."""
    axes = reduce.input(1)
    values = const_array(axes[0]) if axes is not None else None
    if not _attr(reduce, "keep_dims") or values is None:
        return None
    rank = len(reduce.output_desc(0)._shape)
    return sorted(int(a) % rank for a in np.asarray(values).reshape(-1))


def _softmax(div: Node) -> Match | None:
    total = _producer(div, 1, "ReduceSum")
    exp = _producer(div, 0, "Exp")
    if total is None or exp is None or _producer(total, 0, "Exp") is not exp:
        return None
    sub = _producer(exp, 0, "Sub")
    top = _producer(sub, 1, "ReduceMax") if sub is not None else None
    if sub is None or top is None:
        return None
    x = sub.input(0)
    if x is None or x != top.input(0):  # max of the same x that is shifted
        return None
    axes = _axes(total)
    if axes is None or axes != _axes(top) or _attr(exp, "base") != -1.0:
        return None
    if _uses(exp) != 2 or _uses(total) != 1 or _uses(sub) != 1 or _uses(top) != 1:
        return None
    if _attr(exp, "scale") != 1.0 or _attr(exp, "shift") != 0.0:
        return None
    return "SoftmaxV2", [x], {"axes": axes}


def _softmax_rule(div: Node, state: object) -> NewOp | None:
    match = _softmax(div)
    return None if match is None else NewOp(*match)


def _axis_progression(along: np.ndarray) -> tuple[int, int, int] | None:
    """(start, step, count) when the True positions of a 1-D mask are an arithmetic run."""
    at = np.flatnonzero(along)
    if at.size == 0:
        return None
    step = int(at[1] - at[0]) if at.size > 1 else 1
    if not np.array_equal(at, at[0] + step * np.arange(at.size)):
        return None
    return int(at[0]), step, int(at.size)


def _box(mask: np.ndarray) -> Box | None:
    """The strided box ``mask`` is True on (one progression per dim), or ``None``."""
    if mask.ndim == 0 or mask.dtype != np.bool_:
        return None
    box = []
    for k in range(mask.ndim):
        other = tuple(a for a in range(mask.ndim) if a != k)
        progression = _axis_progression(np.asarray(mask.any(axis=other) if other else mask))
        if progression is None:
            return None
        box.append(progression)
    picked = mask[_box_slices(box)]
    return box if int(np.count_nonzero(mask)) == picked.size and picked.all() else None


def _gathered_value(select: Node) -> tuple[Port, np.ndarray] | None:
    """``(v, index)`` of the select's ``Reshape(GatherV2(v, index, 0))`` branch."""
    reshape = _producer(select, 1, "Reshape")
    gather = _producer(reshape, 0, "GatherV2") if reshape is not None else None
    if reshape is None or gather is None or _uses(reshape) != 1 or _uses(gather) != 1:
        return None
    values = [gather.input(p) for p in range(3)]
    index = const_array(values[1][0]) if values[1] is not None else None
    axis = const_array(values[2][0]) if values[2] is not None else None
    if values[0] is None or index is None or axis is None or np.asarray(axis).size != 1:
        return None
    if int(np.asarray(axis).reshape(-1)[0]) != 0 or _attr(gather, "batch_dims") not in (0, None):
        return None
    return values[0], np.asarray(index)


def _box_slices(box: Box) -> tuple[slice, ...]:
    return tuple(slice(a, a + s * (n - 1) + 1 if s > 0 else None, s) for a, s, n in box)


def _box_update(select: Node) -> tuple[Port, Box, Port | np.ndarray] | None:
    """``(x, box, v)`` when the select writes ``v`` (a flat value, or a Const's values), in
    order, into a box of ``x``."""
    mask_edge, then, x = select.input(0), select.input(1), select.input(2)
    mask = const_array(mask_edge[0]) if mask_edge is not None else None
    if mask is None or x is None or then is None:
        return None
    shape = list(select.output_desc(0)._shape)
    if list(mask.shape) != shape or list(x[0].output_desc(x[1])._shape) != shape:
        return None
    box = _box(np.asarray(mask))
    if box is None:
        return None
    constant = const_array(then[0])
    if constant is not None:  # a constant written (the gather folded): its values in the box
        return x, box, np.broadcast_to(np.asarray(constant), shape)[_box_slices(box)]
    found = _gathered_value(select)
    if found is None:
        return None
    v, index = found
    v_shape = list(v[0].output_desc(v[1])._shape)
    if index.shape != (mask.size,) or len(v_shape) != 1:
        return None
    count = int(np.prod([n for _, _, n in box]))
    in_order = np.array_equal(index.reshape(shape)[mask], np.arange(count))
    return (x, box, v) if in_order and v_shape == [count] else None


def _box_coords(box: Box, shape: list[int]) -> np.ndarray:
    """TensorScatterUpdate's indices for ``box``: coordinates of the leading dims up to the
    last one the box does not span whole."""
    spans = [a == 0 and s == 1 and n == d for (a, s, n), d in zip(box, shape, strict=True)]
    depth = max(k + 1 for k, whole in enumerate(spans) if not whole)
    dtype = np.int32 if max(shape) < 2**31 else np.int64
    grids = np.indices([n for _, _, n in box[:depth]], dtype=dtype)
    coords = [a + s * grids[k] for k, (a, s, _) in enumerate(box[:depth])]
    return np.stack(coords, axis=-1).astype(dtype)


def _box_update_rule(select: Node, state: object) -> NewOp | None:
    match, graph = _box_update(select), select.graph
    if match is None or graph is None:
        return None
    x, box, v = match
    shape = list(select.output_desc(0)._shape)
    coords = _box_coords(box, shape)
    updates_shape = list(coords.shape[:-1]) + shape[coords.shape[-1] :]
    if isinstance(v, np.ndarray):
        values = Tensor.from_numpy(np.ascontiguousarray(v).reshape(updates_shape))
        updates = _add(graph, f"{select.name}_v", "Const", [], values)
    else:
        dims = Tensor.from_numpy(np.asarray(updates_shape, np.int64))
        dims_port = _add(graph, f"{select.name}_dims", "Const", [], dims)
        updates = _add(graph, f"{select.name}_v", "Reshape", [v, dims_port], None)
    index = _add(graph, f"{select.name}_box", "Const", [], Tensor.from_numpy(coords))
    return NewOp("TensorScatterUpdate", [x, index, updates])


def _add(graph: Graph, base: str, op_type: str, inputs: list[Port], value: Tensor | None) -> Port:
    """A new node's output 0 (a Const holding ``value`` when one is given)."""
    from ge.ops.construct import add_op_node  # noqa: PLC0415  (construct imports infer)

    attrs = {} if value is None else {"value": value}
    return add_op_node(graph, op_type, inputs, attrs, name=fresh_name(graph, base)), 0


# each rule is anchored at the op that produces the pattern's result and looks at what feeds it
PATTERNS: tuple[Rule, ...] = (
    Rule("softmax", frozenset({"Div"}), _softmax_rule),
    Rule("box_update", frozenset({"SelectV2"}), _box_update_rule),
)


def recognize_patterns(graph: Graph) -> bool:
    """Replace every match in ``graph`` (one sweep); returns whether anything changed."""
    return rewrite(graph, PATTERNS, "recognize")
