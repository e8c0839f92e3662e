"""numpy's products and norms on traced values (``np.outer``, ``np.tensordot``, ``np.einsum``,
``np.linalg.norm``), registered into ``_numpy_api``'s table.

Decisions where numpy is silent or a graph cannot follow it:

- ``einsum`` broadcasts every operand to one axis order, multiplies and ``ReduceSum``s (no
  contraction-order optimisation, so large contractions use more memory than numpy's);
  ``'...'`` subscripts are refused. ``dtype=`` casts the operands (checked against
  ``casting=``, numpy's default ``'safe'``) and computes in it; ``optimize=`` is accepted
  and changes nothing (there is one contraction order); ``order='F'`` is refused.
- ``np.linalg.norm`` (dispatched by its ``__name__`` ``"norm"``) supports ``ord`` None, 'fro',
  1, 2 (vectors only), inf, -inf; a matrix ``ord=2``/'nuc' needs an SVD and raises.
"""

from __future__ import annotations

from typing import Any

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


def _einsum_operand(
    x: TensorHolder, term: str, sizes: dict[str, int], letters: list[str]
) -> TensorHolder:
    """Operand ``x`` of einsum term ``term`` with one axis per letter of ``letters`` (in that
    order; size 1 where ``term`` lacks it); a repeated letter takes that diagonal."""
    if len(term) != x.ndim:
        raise GeValueError(
            f"np.einsum: term {term!r} has {len(term)} subscripts for a {x.ndim}-d operand"
        )
    shape = _known(x, "einsum")
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        x = _diagonal(x, x, 0, i, j)
        term = "".join(t for n, t in enumerate(term) if n not in (i, j)) + c
        shape = x.shape
    for c, d in zip(term, shape, strict=True):
        if sizes.setdefault(c, d) != d:
            raise GeValueError(f"np.einsum: size of {c!r} is {sizes[c]} and {d}")
    present = [c for c in letters if c in term]
    x = _transpose(x, [term.index(c) for c in present])
    return _reshape(x, [sizes[c] if c in term else 1 for c in letters])


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
    if not isinstance(subscripts, str):
        raise GeTypeError("np.einsum of a traced value takes a subscripts string first")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise GeValueError("np.einsum of a traced value does not support '...' subscripts")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise GeValueError(f"np.einsum: {len(terms)} subscript terms for {len(operands)} operands")
    if not arrow:
        counts: dict[str, int] = {}
        for c in inputs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    letters = sorted(set(inputs.replace(",", "")))
    if any(c not in letters for c in output) or len(set(output)) != len(output):
        raise GeValueError(f"np.einsum: bad output subscripts {output!r}")
    holders = [_h(anchor, o) for o in operands]
    target = _dtype_arg(dtype, "einsum")
    if target is not None:
        holders = [_cast_to(h, target, casting, "einsum") for h in holders]
    sizes: dict[str, int] = {}
    product: TensorHolder | None = None
    for term, holder in zip(terms, holders, strict=True):
        x = _einsum_operand(holder, term, sizes, letters)
        product = x if product is None else product * x
    assert product is not None  # at least one operand (terms matched operands)
    full = _base("broadcast_to")(product, product, [sizes[c] for c in letters])
    summed = [n for n, c in enumerate(letters) if c not in output]
    if summed:  # numpy's einsum keeps the operands' result type (no int64 accumulator)
        full = full.sum(axis=summed, dtype=product.dtype)
    kept = [c for c in letters if c in output]
    return _transpose(full, [kept.index(c) for c in output])


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
