"""TensorLike values (Python numbers, nested lists, numpy arrays) turned into Const nodes.

GE-PY's rule (GE_REFERENCE.md §3.4): ``int`` -> int64 scalar, ``float`` -> float32 scalar, a
nested list -> float32 if any element is a float, else int64. Decision (ours, as JAX's weak
types): when the constant meets a tensor (``x + 1``, ``Add(x, 0.5)``), a Python number or list
takes that tensor's dtype if its kind fits (an int fits any numeric tensor; a float fits a
floating tensor), so ``f16_tensor * 0.5`` stays float16. numpy arrays keep their own dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.graph._dtypes import FLOAT_TYPES, INT_TYPES, data_type_from_numpy, numpy_dtype
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import DataType

if TYPE_CHECKING:
    from ge.es.graph_builder import GraphBuilder
    from ge.es.tensor_holder import TensorHolder

__all__ = [
    "TensorLike",
    "as_array",
    "check_tensor_like",
    "convert_to_tensor_holder",
    "is_tensor_like",
    "resolve_builder",
    "to_const",
    "typed_const",
]

TensorLike = int | float | list["TensorLike"]


def is_tensor_like(value: object) -> bool:
    return isinstance(value, (bool, int, float, list, np.ndarray, np.generic))


def _default_type(array: np.ndarray) -> DataType:
    if array.dtype.kind == "b":
        return DataType.DT_BOOL
    return DataType.DT_FLOAT if array.dtype.kind == "f" else DataType.DT_INT64


def _weak_type(array: np.ndarray, like: DataType | None) -> DataType:
    if like is None or array.dtype.kind == "b":
        return _default_type(array)
    if like in FLOAT_TYPES:
        return like
    if like in INT_TYPES and array.dtype.kind in "iu":
        info = np.iinfo(numpy_dtype(like))  # type: ignore[type-var]
        if array.size == 0 or (info.min <= array.min() and array.max() <= info.max):
            return like
    return _default_type(array)


def as_array(value: Any) -> np.ndarray:
    """``value`` as a numpy array (numpy's own dtype for it); lists of numbers only."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    try:
        array = np.asarray(value)
    except ValueError:
        raise GeValueError(f"cannot make a constant of a ragged list: {value!r}") from None
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise GeTypeError(
            f"cannot make a constant of {value!r}: expected numbers or nested lists of numbers"
        )
    return array


# The tensor made for a Python number, by (type, repr, like): ``x * 0.5`` in a loop makes the
# same constant each time. Safe to share: the Const attribute stores its own copy.
_SCALARS: dict[tuple[type, str, DataType | None, bool], Tensor] = {}


def _tensor_of(value: Any, like: DataType | None) -> Tensor:
    array = as_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        data_type = data_type_from_numpy(array.dtype)
    else:
        data_type = _weak_type(array, like)
    array = np.array(array, dtype=numpy_dtype(data_type), order="C")  # a private copy
    if array.ndim == 0:
        desc = _SCALAR_DESCS.get(array.dtype)
        if desc is not None:
            return Tensor._adopt(desc, array.reshape(1).view(np.uint8))
    tensor = Tensor.from_numpy(array)
    if array.ndim == 0 and numpy_dtype(data_type_from_numpy(array.dtype)) == array.dtype:
        _SCALAR_DESCS[array.dtype] = tensor._desc
    return tensor


# The desc ``Tensor.from_numpy`` gives a 0-d array, by numpy dtype (only dtypes it makes
# directly, whose GE type maps back to them): a distinct number per constant (``x * c_i``)
# makes its tensor from this desc and the array's own bytes, the same tensor without
# from_numpy's copies and lookups (~3 µs a constant). Shared: a tensor never changes its desc
# in place (see ``Tensor._adopt``).
_SCALAR_DESCS: dict[np.dtype[Any], TensorDesc] = {}


def _cached(value: Any, data_type: DataType | None, exact: bool) -> Tensor:
    key = (type(value), repr(value), data_type, exact)  # repr: 0.0 and -0.0 differ, nan finds nan
    tensor = _SCALARS.get(key)
    if tensor is None:
        tensor = _exact_tensor(value, data_type) if exact else _tensor_of(value, data_type)
        if len(_SCALARS) >= 1024:
            _SCALARS.clear()
        _SCALARS[key] = tensor
    return tensor


def _exact_tensor(value: Any, data_type: DataType | None) -> Tensor:
    with np.errstate(over="ignore"):  # a float too large for float16 is inf, as in numpy
        if type(value) in (float, int, bool):  # numpy's OverflowError for an int that won't fit
            array = np.asarray(value, dtype=None if data_type is None else numpy_dtype(data_type))
        else:
            array = as_array(value)
            array = array if data_type is None else array.astype(numpy_dtype(data_type))
        return Tensor.from_numpy(np.array(array, order="C"))  # (ascontiguousarray makes 0-d 1-d)


def to_const(builder: GraphBuilder, value: Any, like: DataType | None = None) -> TensorHolder:
    """A Const node holding ``value``; see the module docstring for its dtype."""
    if type(value) is float or type(value) is int:
        tensor = _cached(value, like, exact=False)
    else:
        tensor = _tensor_of(value, like)
    return builder._holder(builder._add("Const", [], {"value": tensor}))


def typed_const(builder: GraphBuilder, value: Any, data_type: DataType) -> TensorHolder:
    """A Const node holding ``value`` converted to ``data_type`` as numpy converts it (the
    weak-scalar rule of ``ge.jit``'s numpy semantics; a Python int that does not fit raises
    numpy's ``OverflowError``)."""
    if type(value) in (float, int, bool):
        tensor = _cached(value, data_type, exact=True)
    else:
        tensor = _exact_tensor(value, data_type)
    return builder._holder(builder._add("Const", [], {"value": tensor}))


_LIKE_TEXT = "Value must be int|float or nested lists of int|float"
_ANY_TEXT = "Value must be TensorHolder or int|float or nested lists of int|float or None"


def _flatten(value: Any, leaves: tuple[type, ...] = (int, float)) -> tuple[list[Any], list[int]]:
    """``value`` (a nested list) flattened, and its shape (GE_ERRORS.md §3.4)."""
    if isinstance(value, leaves):
        return [value], []
    if not isinstance(value, list) or not value:
        raise GeTypeError(f"{_LIKE_TEXT}, got {value!r}")
    parts = [_flatten(v, leaves) for v in value]
    shape = parts[0][1]
    if any(p[1] != shape for p in parts):
        raise GeValueError("Irregular nested list: all sub-lists must have the same shape")
    return [x for p in parts for x in p[0]], [len(value), *shape]


def check_tensor_like(value: Any) -> None:
    """GE-PY's checks of ``convert_to_tensor_holder`` on a value that is not a
    ``TensorHolder`` (GE_ERRORS.md §3.4), without making a constant: a number, or a regular
    nested list of numbers (``[]`` too). Ours: numpy arrays and numpy scalars pass too, also
    as list leaves. ``None`` is not checked here."""
    if isinstance(value, (int, float, np.ndarray, np.generic)):
        return
    if not isinstance(value, list):
        raise GeTypeError(f"{_ANY_TEXT}, got {type(value).__name__}")
    if value:
        _flatten(value, (int, float, np.generic))


def convert_to_tensor_holder(value: Any, owner_builder: Any) -> TensorHolder | None:
    """GE-PY's conversion (GE_ERRORS.md §3.4): ``None`` -> ``None``; a ``TensorHolder`` as is
    (its builder unchecked); ``int``/``bool`` -> int64 scalar; ``float`` -> float scalar; a
    nested list -> float const if any leaf is a float, else int64 (``[]`` -> int64 shape
    ``[0]``)."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (cycle)

    if value is None or isinstance(value, TensorHolder):
        return value
    if isinstance(value, int):
        return owner_builder.create_scalar_int64(value)  # type: ignore[no-any-return]
    if isinstance(value, float):
        return owner_builder.create_scalar_float(value)  # type: ignore[no-any-return]
    if isinstance(value, list):
        if not value:
            return owner_builder.create_const_int64([], shape=[0])  # type: ignore[no-any-return]
        flat, shape = _flatten(value)
        if any(isinstance(v, float) for v in flat):
            return owner_builder.create_const_float(flat, shape=shape)  # type: ignore[no-any-return]
        return owner_builder.create_const_int64(flat, shape=shape)  # type: ignore[no-any-return]
    raise GeTypeError(f"{_ANY_TEXT}, got {type(value).__name__}")


def resolve_builder(*values: Any) -> GraphBuilder:
    """The first ``GraphBuilder``, or the first ``TensorHolder``'s builder, left to right
    (lists are not searched; GE_ERRORS.md §3.4)."""
    from ge.es.graph_builder import GraphBuilder  # noqa: PLC0415  (cycle)
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (cycle)

    if not values:
        raise GeValueError("At least one argument is required to resolve GraphBuilder")
    for value in values:
        if isinstance(value, GraphBuilder):
            return value
        if isinstance(value, TensorHolder):
            return value.get_owner_builder()
    raise GeValueError(
        "Please ensure at least one input tensor or an explicit owner_builder is provided "
        "when supported"
    )
