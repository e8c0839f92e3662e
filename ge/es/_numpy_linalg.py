"""numpy's products and norms on traced values (``np.outer``, ``np.tensordot``, ``np.einsum``,
``np.linalg.norm``), registered into ``_numpy_api``'s table.

Decisions where numpy is silent or a graph cannot follow it:

- ``einsum`` contracts its operands pairwise in opt_einsum's greedy order (the pair whose
  result grows memory least first), whatever ``optimize=`` says (accepted: numpy's answer does
  not depend on it). A letter an operand alone has and the output lacks is summed first; each
  pair sharing a summed letter is one Transpose + Reshape + MatMulV2/BatchMatMulV2 (float
  dtypes: the matmul kernels' types); a pair sharing none (outer or Hadamard products), and any
  integer or bool pair, multiplies with broadcasting and ``ReduceSum``s in the operands' dtype.
  Operands are cast to their numpy result type first; size-1 axes broadcast as in numpy.
  ``'...'`` subscripts are refused. ``dtype=`` casts the operands (checked against
  ``casting=``, numpy's default ``'safe'``) and computes in it; ``order='F'`` is refused.
- ``np.linalg.norm`` (dispatched by its ``__name__`` ``"norm"``) supports ``ord`` None, 'fro',
  1, 2 (vectors only), inf, -inf; a matrix ``ord=2``/'nuc' needs an SVD and raises.
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es._numpy_common import (
    FUNCTIONS,
    _axes,
    _base,
    _cast_to,
    _check_order,
    _dtype_arg,
    _h,
    _known,
    _reshape,
    _transpose,
    rule_registrar,
)
from ge.es._numpy_shape import _diagonal
from ge.es.tensor_holder import TensorHolder

__all__: list[str] = []  # the rules register into _numpy_common.FUNCTIONS

_register = rule_registrar(FUNCTIONS)


# --- products ------------------------------------------------------------------------------------
@_register("outer")
def _outer(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _reshape(_h(anchor, a), [-1, 1]), _reshape(_h(anchor, b), [1, -1])
    return x * y  # type: ignore[no-any-return]


@_register("inner")
def _inner(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _h(anchor, a), _h(anchor, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y  # type: ignore[no-any-return]
    return _tensordot(anchor, x, y, ([-1], [-1]))


@_register("vdot")
def _vdot(anchor: TensorHolder, a: Any, b: Any) -> TensorHolder:
    x, y = _reshape(_h(anchor, a), [-1]), _reshape(_h(anchor, b), [-1])
    if _known(x, "vdot") != _known(y, "vdot"):
        raise GeValueError(f"np.vdot: the inputs have {x.shape[0]} and {y.shape[0]} elements")
    return _base("matmul")(x, x, y)  # type: ignore[no-any-return]


@_register("tensordot")
def _tensordot(anchor: TensorHolder, a: Any, b: Any, axes: Any = 2) -> TensorHolder:
    x, y = _h(anchor, a), _h(anchor, b)
    xs, ys = _known(x, "tensordot"), _known(y, "tensordot")
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        if k < 0 or k > min(x.ndim, y.ndim):
            raise GeValueError(f"np.tensordot: axes={k} does not fit ranks {x.ndim} and {y.ndim}")
        ax, bx = list(range(x.ndim - k, x.ndim)), list(range(k))
    else:
        pa, pb = axes
        ax = _axes(pa, x.ndim, "tensordot")
        bx = _axes(pb, y.ndim, "tensordot")
        if len(ax) != len(bx):
            raise GeValueError("np.tensordot: the two axes lists must have the same length")
    for i, j in zip(ax, bx, strict=True):
        if xs[i] != ys[j]:
            raise GeValueError(f"np.tensordot: shape mismatch for sum: {xs[i]} != {ys[j]}")
    free_a = [n for n in range(x.ndim) if n not in ax]
    free_b = [n for n in range(y.ndim) if n not in bx]
    inner = int(np.prod([xs[i] for i in ax], dtype=np.int64))
    m = int(np.prod([xs[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([ys[j] for j in free_b], dtype=np.int64))
    x2 = _reshape(_transpose(x, [*free_a, *ax]), [m, inner])
    y2 = _reshape(_transpose(y, [*bx, *free_b]), [inner, n])
    out = _base("matmul")(x2, x2, y2)
    return _reshape(out, [*(xs[i] for i in free_a), *(ys[j] for j in free_b)])


# dtypes whose pairwise contractions lower to MatMulV2/BatchMatMulV2 (the matmul kernels' float
# types; an integer or bool einsum multiplies and sums each pair instead, numpy's wrap-around and
# bool semantics kept by computing in the operands' own dtype).
_MATMUL_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _einsum_spec(subscripts: Any, count: int) -> tuple[list[str], str]:
    """The input terms and the output term of ``subscripts`` (numpy's implicit output: the
    letters used once, sorted)."""
    if not isinstance(subscripts, str):
        raise GeTypeError("np.einsum of a traced value takes a subscripts string first")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise GeValueError("np.einsum of a traced value does not support '...' subscripts")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise GeValueError(f"np.einsum: {len(terms)} subscript terms for {count} operands")
    letters = inputs.replace(",", "")
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if any(c not in letters for c in output) or len(set(output)) != len(output):
        raise GeValueError(f"np.einsum: bad output subscripts {output!r}")
    return terms, output


def _einsum_operand(x: TensorHolder, term: str) -> tuple[TensorHolder, str]:
    """Operand ``x`` of einsum term ``term`` with each letter once: a repeated letter takes that
    diagonal (its axis goes last)."""
    if len(term) != x.ndim:
        raise GeValueError(
            f"np.einsum: term {term!r} has {len(term)} subscripts for a {x.ndim}-d operand"
        )
    _known(x, "einsum")
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        x = _diagonal(x, x, 0, i, j)
        term = "".join(t for n, t in enumerate(term) if n not in (i, j)) + c
    return x, term


def _einsum_sizes(operands: list[tuple[TensorHolder, str]]) -> dict[str, int]:
    """Each letter's size; a size-1 axis broadcasts against the others, as numpy's does."""
    sizes: dict[str, int] = {}
    for x, term in operands:
        for c, d in zip(term, x.shape, strict=True):
            known = sizes.setdefault(c, d)
            if known != d and 1 not in (known, d):
                raise GeValueError(f"np.einsum: size of {c!r} is {known} and {d}")
            sizes[c] = max(known, d)
    return sizes


def _broadcast_operand(x: TensorHolder, term: str, sizes: dict[str, int]) -> TensorHolder:
    full = [sizes[c] for c in term]
    if list(x.shape) == full:
        return x
    return _base("broadcast_to")(x, x, full)  # type: ignore[no-any-return]


def _count(sizes: dict[str, int], letters: str) -> int:
    return int(np.prod([sizes[c] for c in letters], dtype=np.int64))


def _sum_out(x: TensorHolder, term: str, keep: set[str]) -> tuple[TensorHolder, str]:
    """``x`` summed over its letters outside ``keep`` (numpy's einsum sums in the operands'
    dtype, no int64 accumulator; a bool sum is ``any``, as numpy's)."""
    summed = [n for n, c in enumerate(term) if c not in keep]
    if not summed:
        return x, term
    if x.dtype == np.bool_:
        total = cast(TensorHolder, np.any(x, axis=tuple(summed)))
    else:
        total = x.sum(axis=summed, dtype=x.dtype)
    return total, "".join(c for c in term if c in keep)


def _arrange(x: TensorHolder, term: str, order: str, sizes: dict[str, int]) -> TensorHolder:
    """``x`` (letters ``term``) transposed to ``order``'s letters and reshaped to one axis per
    letter of ``order`` (size 1 where ``term`` lacks it)."""
    x = _transpose(x, [term.index(c) for c in order if c in term])
    shape = [sizes[c] if c in term else 1 for c in order]
    return x if list(x.shape) == shape else _reshape(x, shape)


def _contract_pair(
    a: tuple[TensorHolder, str], b: tuple[TensorHolder, str], keep: set[str], sizes: dict[str, int]
) -> tuple[TensorHolder, str]:
    """The product of ``a`` and ``b`` summed over the letters they share outside ``keep``:
    a (batched) matmul when there is such a letter and the dtype has a matmul kernel, else a
    broadcast multiply (and ``ReduceSum``). The result's letters: shared kept ones, ``a``'s own,
    ``b``'s own."""
    (x, ta), (y, tb) = _sum_out(*a, keep | set(b[1])), _sum_out(*b, keep | set(a[1]))
    batch = "".join(c for c in ta if c in tb and c in keep)
    inner = "".join(c for c in ta if c in tb and c not in keep)
    free_a = "".join(c for c in ta if c not in tb)
    free_b = "".join(c for c in tb if c not in ta)
    if not inner or x.dtype not in _MATMUL_DTYPES:
        order = batch + free_a + free_b + inner
        product = _arrange(x, ta, order, sizes) * _arrange(y, tb, order, sizes)
        return _sum_out(product, order, keep)
    return _matmul_pair((x, ta), (y, tb), batch, inner, sizes)


# The matmul op and its two transpose flags, by whether the operands have batch axes.
_MATMUL_OPS = {
    False: ("MatMulV2", "transpose_x1", "transpose_x2"),
    True: ("BatchMatMulV2", "adj_x1", "adj_x2"),
}


class _Side(NamedTuple):
    """One matmul operand: its holder and letters, the letter order it takes (batch, free and
    inner letters, or batch, inner and free with ``flag``: the matmul transposes it) and its
    free letters."""

    x: TensorHolder
    term: str
    layout: str
    flag: bool
    free: str


def _side(x: TensorHolder, term: str, batch: str, inner: str, lhs: bool) -> _Side:
    free = "".join(c for c in term if c not in batch and c not in inner)
    plain, flagged = (free + inner, inner + free) if lhs else (inner + free, free + inner)
    flag = term == batch + flagged and term != batch + plain
    return _Side(x, term, batch + (flagged if flag else plain), flag, free)


def _moved(side: _Side, sizes: dict[str, int]) -> int:
    """Elements a Transpose moves to give ``side`` its layout."""
    return 0 if side.layout == side.term else _count(sizes, side.term)


def _matmul_sides(
    a: tuple[TensorHolder, str],
    b: tuple[TensorHolder, str],
    batch: str,
    inner: str,
    sizes: dict[str, int],
) -> tuple[_Side, _Side, str, str]:
    """The left and right matmul operands and the batch and inner letter orders: of either
    operand on the left and either operand's letter order, the choice moving fewest elements
    through Transposes (the first such)."""
    best: tuple[int, tuple[_Side, _Side, str, str]] | None = None
    for (x, tx), (y, ty) in ((a, b), (b, a)):
        for source in (tx, ty):
            batch_order = "".join(c for c in source if c in batch)
            inner_order = "".join(c for c in source if c in inner)
            left = _side(x, tx, batch_order, inner_order, True)
            right = _side(y, ty, batch_order, inner_order, False)
            moved = _moved(left, sizes) + _moved(right, sizes)
            if best is None or moved < best[0]:
                best = (moved, (left, right, batch_order, inner_order))
    assert best is not None
    return best[1]


def _matmul_operand(
    side: _Side, lead: list[int], k: int, sizes: dict[str, int], lhs: bool
) -> TensorHolder:
    x = _transpose(side.x, [side.term.index(c) for c in side.layout])
    free = _count(sizes, side.free)
    return _reshape(x, [*lead, *((free, k) if lhs != side.flag else (k, free))])


def _matmul_pair(
    a: tuple[TensorHolder, str],
    b: tuple[TensorHolder, str],
    batch: str,
    inner: str,
    sizes: dict[str, int],
) -> tuple[TensorHolder, str]:
    """``a`` times ``b`` summed over the ``inner`` letters as one (batched) matmul, the
    ``batch`` letters its batch axes."""
    left, right, batch, inner = _matmul_sides(a, b, batch, inner, sizes)
    lead, k = ([_count(sizes, batch)] if batch else []), _count(sizes, inner)
    x = _matmul_operand(left, lead, k, sizes, True)
    y = _matmul_operand(right, lead, k, sizes, False)
    op, flag_x, flag_y = _MATMUL_OPS[bool(batch)]
    out = x._op(op, x, y, None, None, attrs={flag_x: left.flag, flag_y: right.flag})
    term = batch + left.free + right.free
    return _reshape(out, [sizes[c] for c in term]), term


def _greedy_pair(terms: list[str], output: str, sizes: dict[str, int]) -> tuple[int, int]:
    """The two operands to contract next: opt_einsum's greedy choice, a pair sharing a letter
    if there is one (an outer product only when nothing else is left), the one whose result
    grows memory least (result size minus both operands' sizes), the earliest on a tie."""
    best: tuple[tuple[bool, int], int, int] | None = None
    for i in range(len(terms)):
        for j in range(i + 1, len(terms)):
            rest = set(output).union(*(t for n, t in enumerate(terms) if n not in (i, j)))
            result = "".join(c for c in set(terms[i] + terms[j]) if c in rest)
            grows = _count(sizes, result) - _count(sizes, terms[i]) - _count(sizes, terms[j])
            key = (not set(terms[i]) & set(terms[j]), grows)
            if best is None or key < best[0]:
                best = (key, i, j)
    assert best is not None  # called with at least two operands
    return best[1], best[2]


def _contract(
    operands: list[tuple[TensorHolder, str]], output: str, sizes: dict[str, int]
) -> tuple[TensorHolder, str]:
    """All ``operands`` contracted pairwise in greedy order, to one holder with ``output``'s
    letters (in some order)."""
    while len(operands) > 1:
        i, j = _greedy_pair([t for _, t in operands], output, sizes)
        rest = [o for n, o in enumerate(operands) if n not in (i, j)]
        keep = set(output).union(*(t for _, t in rest))
        operands = [*rest, _contract_pair(operands[i], operands[j], keep, sizes)]
    return _sum_out(*operands[0], set(output))


@_register("einsum")
def _einsum(
    anchor: TensorHolder,
    subscripts: Any,
    *operands: Any,
    dtype: Any = None,
    order: Any = "K",
    casting: Any = "safe",
    optimize: Any = False,
) -> TensorHolder:
    _check_order(order, "einsum")
    terms, output = _einsum_spec(subscripts, len(operands))
    holders = [_h(anchor, o) for o in operands]
    target = _dtype_arg(dtype, "einsum")
    if target is not None:
        holders = [_cast_to(h, target, casting, "einsum") for h in holders]
    common = np.result_type(*(h.dtype for h in holders))
    holders = [h if h.dtype == common else h.astype(common) for h in holders]
    parts = [_einsum_operand(h, t) for h, t in zip(holders, terms, strict=True)]
    sizes = _einsum_sizes(parts)
    parts = [(_broadcast_operand(x, t, sizes), t) for x, t in parts]
    result, term = _contract(parts, output, sizes)
    return _transpose(result, [term.index(c) for c in output])


@_register("norm")
def _norm(  # noqa: PLR0912  (one branch per ord)
    anchor: TensorHolder, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False
) -> TensorHolder:
    v = _h(anchor, x)
    if v.dtype.kind in "biu":
        v = v.astype(np.float64)
    axes = _axes(axis, v.ndim, "linalg.norm")
    vector = len(axes) == 1 or (axis is None and v.ndim == 1)
    mag = np.abs(v)
    if axis is None and ord is None:
        return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
    if vector:
        if ord is None or ord == 2:
            return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
        if ord == np.inf:
            return mag.max(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == -np.inf:
            return mag.min(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == 1:
            return mag.sum(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if ord == 0:
            return (v != 0).astype(v.dtype).sum(axis=axes, keepdims=keepdims)  # type: ignore[no-any-return]
        if isinstance(ord, (int, float)) and not isinstance(ord, bool):
            p = float(ord)
            return ((mag**p).sum(axis=axes, keepdims=keepdims)) ** (1.0 / p)  # type: ignore[no-any-return]
        raise GeValueError(f"np.linalg.norm: invalid norm order {ord!r} for vectors")
    if len(axes) != 2:
        raise GeValueError(f"np.linalg.norm: improper number of dimensions to norm: {len(axes)}")
    r, c = axes
    if ord in (None, "fro"):
        return np.sqrt((v * v).sum(axis=axes, keepdims=keepdims))  # type: ignore[no-any-return]
    if ord in (1, -1, np.inf, -np.inf):
        sum_axis, then = (r, c) if ord in (1, -1) else (c, r)
        sums = mag.sum(axis=sum_axis, keepdims=True)
        pick = sums.max if ord in (1, np.inf) else sums.min
        out = pick(axis=then, keepdims=True)
        if not keepdims:
            out = _base("squeeze")(out, out, axis=[r, c])
        return out  # type: ignore[no-any-return]
    raise GeValueError(
        f"np.linalg.norm of a traced matrix supports ord None, 'fro', 1, -1, inf, -inf, got {ord!r}"
    )
