"""Shape and dtype helpers that infer rules are written with.

Shapes are lists of ints where ``-1`` is an unknown dim and ``[-2]`` an unknown rank, as in GE.
Every failure raises ``ge.error.InferError`` with a short reason; the builder adds the op, the
input descs and the user's line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ge.error import GeTypeError, InferError
from ge.graph._dtypes import (
    BOOL_TYPES,
    COMPLEX_TYPES,
    FLOAT_TYPES,
    INT_TYPES,
    data_type_from_numpy,
    numpy_dtype,
)
from ge.graph.tensor_desc import Shape, TensorDesc
from ge.graph.types import DataType, Format

__all__ = [
    "UNKNOWN_RANK",
    "broadcast_shapes",
    "desc",
    "is_unknown_rank",
    "may_be_scalar",
    "normalize_axes",
    "normalize_axis",
    "one_int",
    "promote_types",
    "shape_of",
]

UNKNOWN_RANK = [-2]

FLOATS = FLOAT_TYPES
INTS = INT_TYPES
COMPLEX = COMPLEX_TYPES
BOOL = BOOL_TYPES
REAL = FLOATS | INTS
NUMBER = REAL | COMPLEX
ALL = NUMBER | BOOL
INDEX = frozenset({DataType.DT_INT32, DataType.DT_INT64})


def desc(shape: Iterable[int], data_type: DataType, fmt: Format = Format.FORMAT_ND) -> TensorDesc:
    """A fresh output desc (the dims copied once: ``shape`` may be the input desc's list)."""
    return TensorDesc._of(shape, fmt, data_type)


def shape_of(d: TensorDesc) -> list[int]:
    return list(d._shape)


def is_unknown_rank(shape: Sequence[int]) -> bool:
    return list(shape) == UNKNOWN_RANK


def may_be_scalar(shape: Sequence[int]) -> bool:
    """Whether a tensor of ``shape`` can hold exactly one value: ``[]`` or ``[1]``, or a shape
    that may turn out to be one at run time (``[-1]``, an unknown rank), where the rule that
    reads the value runs again on the real shape (``infer_on_values``).

    >>> may_be_scalar([]), may_be_scalar([-2]), may_be_scalar([-1]), may_be_scalar([2])
    (True, True, True, False)
    """
    return list(shape) in ([], [1], [-1], UNKNOWN_RANK)


def broadcast_shapes(*shapes: Sequence[int]) -> list[int]:
    """numpy broadcasting extended to unknown dims (``-1``) and ranks (``[-2]``).

    The result is read only: when it equals an operand that is a desc's ``Shape`` (equal
    shapes, or a scalar other operand: most calls) that ``Shape`` itself comes back, so that
    ``desc()`` shares it instead of copying (nothing changes a desc's shape in place). Copy
    it before changing it.

    >>> broadcast_shapes([2, 1], [3]), broadcast_shapes([-1, 3], [1]), broadcast_shapes([-2], [3])
    ([2, 3], [-1, 3], [-2])
    """
    if len(shapes) == 2:  # most calls: equal shapes, or a scalar operand (what follows agrees)
        a, b = shapes
        if a == b or not b:
            return a if type(a) is Shape else list(a)
        if not a:
            return b if type(b) is Shape else list(b)
    if any(is_unknown_rank(s) for s in shapes):
        return list(UNKNOWN_RANK)
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-rank, 0):
        dims = {s[i] for s in shapes if len(s) >= -i} - {1}
        known = dims - {-1}
        if len(known) > 1:
            listed = " and ".join(str(list(s)) for s in shapes)
            raise InferError(
                f"shapes {listed} cannot broadcast: dim {i} is "
                f"{' vs '.join(map(str, sorted(known)))}"
            )
        if known:
            out.append(known.pop())
        elif -1 in dims:
            out.append(-1)
        else:
            out.append(1)
    return out


def _category(t: DataType) -> int:
    return 0 if t in BOOL else 1 if t in INTS else 2 if t in FLOATS else 3 if t in COMPLEX else 4


def promote_types(*types: DataType) -> DataType:
    """Result type of mixing ``types``, as PyTorch and JAX do: when categories differ
    (``bool < int < float < complex``) the highest category's type wins
    (``int32 + float32 -> float32``, not numpy's float64); within one category numpy's rule
    applies (``int32 + int64 -> int64``, ``float16 + float32 -> float32``).

    >>> promote_types(DataType.DT_INT32, DataType.DT_FLOAT).name
    'DT_FLOAT'
    """
    distinct = list(dict.fromkeys(types))
    if len(distinct) == 1:
        return distinct[0]
    top = max(_category(t) for t in distinct)
    if top == 4:
        names = ", ".join(t.name for t in distinct)
        raise InferError(f"no common type for {names}")
    best = [t for t in distinct if _category(t) == top]
    if len(best) == 1:
        return best[0]
    try:
        return data_type_from_numpy(np.result_type(*(numpy_dtype(t) for t in best)))
    except (GeTypeError, TypeError):
        if top == 2:  # float16 with bfloat16: numpy knows no common type; float32 holds both
            return DataType.DT_FLOAT
        names = ", ".join(t.name for t in distinct)
        raise InferError(f"no common type for {names}") from None


MAX_TENSOR_BYTES = 1 << 48
"""The largest tensor ge computes: the 48-bit address space of x86-64 and arm64. A shape that
input values decide (``Tile`` multiples, a ``BroadcastTo`` target of ``2**63 - 1``) can ask
for more; evaluation and lowering refuse it with this rule's message."""


def too_big(shape: Sequence[int], data_type: DataType) -> str | None:
    """Why a tensor of ``shape`` and ``data_type`` cannot exist, or ``None`` if it can (or its
    size is not known yet)."""
    if any(d < 0 for d in shape):
        return None
    # the dims other than 0 count too: an empty [0, 2**31, 2**40] has strides past int64,
    # which numpy refuses as "too big" as well
    span = math.prod(d for d in shape if d) * numpy_dtype(data_type).itemsize
    if span <= MAX_TENSOR_BYTES:
        return None
    return (
        f"a tensor of shape {list(shape)} and type {data_type.name} spans {span:.3g} bytes "
        f"(its dims other than 0 times the element size), more than any address space holds "
        f"(2**48); check the inputs that decide its shape"
    )


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Map a possibly negative axis into ``[0, rank)``."""
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise InferError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def one_int(value: object, what: str) -> int:
    """The single integer an axis-like input holds (a scalar or a one-element tensor).

    >>> one_int(np.array([2]), "split_dim")
    2
    """
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise InferError(f"{what} must hold one value, got {flat.size}: {flat.tolist()[:8]}")
    return _integer(flat[0], what)


def _integer(value: object, what: str) -> int:
    """``value`` as an int; an ``InferError`` for inf, NaN or a fraction (a float tensor fed
    where axes belong), which ``int()`` would turn into OverflowError or truncate."""
    try:
        as_int: int = int(value)  # type: ignore[call-overload]
    except (OverflowError, ValueError, TypeError):
        raise InferError(f"{what} must be integers, got {value!r}") from None
    if as_int != value:
        raise InferError(f"{what} must be integers, got {value!r}")
    return as_int


def normalize_axes(axes: Iterable[int], rank: int, what: str = "axes") -> list[int]:
    """Normalised, de-duplicated, sorted axes; duplicates after normalisation are an error."""
    norm = [normalize_axis(_integer(a, what), rank, what) for a in axes]
    if len(set(norm)) != len(norm):
        raise InferError(f"{what} {list(axes)} repeat an axis")
    return sorted(norm)


def check_dtype(d: TensorDesc, allowed: frozenset[DataType] | None, what: str) -> None:
    if allowed is not None and d._data_type not in allowed:
        raise InferError(
            f"{what} has type {d._data_type.name}; expected one of "
            f"{', '.join(sorted(t.name for t in allowed))}"
        )


def np_type_check(data_type: DataType) -> None:
    """Refuse types that have no numpy equivalent (``InferError``)."""
    try:
        numpy_dtype(data_type)
    except GeTypeError as e:
        raise InferError(str(e)) from None
