"""Short constructors for op tables: ``inp``/``out``/``attr`` and the common infer rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ge.graph._dtypes import numpy_dtype
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops.schema import (
    REQUIRED,
    AttrSpec,
    ExecContext,
    InferContext,
    PortKind,
    SubgraphSpec,
    TensorSpec,
)

__all__ = ["attr", "binary_infer", "dyn", "inp", "opt", "out", "same_infer", "sub"]

VT = AttrValueType


def inp(name: str, dtypes: Iterable[DataType] | None = None) -> TensorSpec:
    return TensorSpec(name, PortKind.REQUIRED, None if dtypes is None else frozenset(dtypes))


def opt(name: str, dtypes: Iterable[DataType] | None = None) -> TensorSpec:
    return TensorSpec(name, PortKind.OPTIONAL, None if dtypes is None else frozenset(dtypes))


def dyn(name: str, dtypes: Iterable[DataType] | None = None) -> TensorSpec:
    return TensorSpec(name, PortKind.DYNAMIC, None if dtypes is None else frozenset(dtypes))


out = inp


def attr(name: str, kind: AttrValueType, default: Any = REQUIRED) -> AttrSpec:
    return AttrSpec(name, kind, default)


def sub(name: str, dynamic: bool = False) -> SubgraphSpec:
    return SubgraphSpec(name, dynamic)


def same_infer(ctx: InferContext) -> list[TensorDesc]:
    """Output 0 looks like input 0."""
    x = ctx.inputs[0]
    return [rules.desc(x._shape, x._data_type, x._format)]


def binary_infer(out_type: DataType | None = None) -> Callable[[InferContext], list[TensorDesc]]:
    """Broadcast the two inputs; the output type is ``out_type`` or the promoted input type."""

    def infer(ctx: InferContext) -> list[TensorDesc]:
        a, b = ctx.inputs[0], ctx.inputs[1]
        shape = rules.broadcast_shapes(a._shape, b._shape)
        dtype = out_type or rules.promote_types(a._data_type, b._data_type)
        return [rules.desc(shape, dtype, a._format)]

    return infer


def np_type(d: DataType) -> np.dtype[Any]:
    return numpy_dtype(d)


def out_dtype(ctx: ExecContext, i: int = 0) -> np.dtype[Any]:
    """numpy dtype of inferred output ``i``."""
    desc: TensorDesc = ctx.outputs[i]
    return numpy_dtype(desc._data_type)


def compute_float(fn: Callable[..., np.ndarray], *arrays: np.ndarray) -> np.ndarray:
    """Run ``fn`` in float32 for half types (as GE's kernels do), else in the input's type."""
    narrow = arrays[0].dtype.itemsize < 4 and arrays[0].dtype.kind not in "biu"
    if narrow:
        arrays = tuple(a.astype(np.float32) for a in arrays)
    with np.errstate(all="ignore"):
        result = fn(*arrays)
    return np.asarray(result)
