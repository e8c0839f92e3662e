"""Linear algebra: Cholesky, MatrixSolve.

GE's ``OPS_REFERENCE.md`` has no text for these; the prototypes are TensorFlow's well-known ones:

- ``Cholesky(x) -> y``: ``x`` a batch of square matrices ``[..., N, N]``, ``y`` the lower
  triangular factor with ``x = y @ y.T`` (zeros above the diagonal). Only the lower triangle
  and the diagonal of ``x`` are read (numpy's and TensorFlow's rule).
- ``MatrixSolve(matrix, rhs) -> y``, attr ``adjoint=False``: ``matrix`` ``[..., N, N]``,
  ``rhs`` ``[..., N, K]``, ``y`` ``[..., N, K]`` with ``matrix @ y = rhs`` (``matrix.T`` with
  ``adjoint``: the inputs are real, so the adjoint is the transpose).

Decisions where TensorFlow is silent or a compiled graph cannot follow numpy:

- dtypes: float32 and float64, the two inputs of ``MatrixSolve`` of one type. The kernels
  accumulate in float64 and round to the output type once per stored value.
- A matrix that is not positive definite (a pivot ``<= 0`` or NaN, so any NaN in the lower
  triangle) gives a ``Cholesky`` result of NaN for that matrix of the batch, and a singular
  matrix (an exact zero pivot after partial pivoting) a ``MatrixSolve`` result of NaN for that
  batch element; numpy raises ``LinAlgError`` there, TensorFlow fails the run. The other
  matrices of the batch are unaffected.
- ``MatrixSolve`` broadcasts the batch dims of ``matrix`` and ``rhs`` (numpy's rule; TensorFlow
  wants them equal). It solves by LU with partial pivoting (LAPACK's ``gesv`` method), so
  ill-conditioned systems agree with numpy to the problem's conditioning only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, inp, out, out_dtype
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__: list[str] = []

VT = AttrValueType
_TYPES = frozenset({DataType.DT_FLOAT, DataType.DT_DOUBLE})


def _matrices(d: TensorDesc, what: str) -> list[int] | None:
    """``d``'s shape, checked to be ``[..., R, C]`` (``None`` for an unknown rank)."""
    shape = list(d._shape)
    if rules.is_unknown_rank(shape):
        return None
    if len(shape) < 2:
        raise InferError(f"{what} must have rank >= 2 ([..., N, N]), got shape {shape}")
    return shape


def _square(shape: list[int], what: str) -> None:
    if shape[-1] >= 0 and shape[-2] >= 0 and shape[-1] != shape[-2]:
        raise InferError(f"{what} must be square matrices [..., N, N], got shape {shape}")


def _cholesky_infer(ctx: InferContext) -> list[TensorDesc]:
    x = ctx.inputs[0]
    shape = _matrices(x, "x")
    if shape is not None:
        _square(shape, "x")
    return [rules.desc(x._shape if shape is None else shape, x._data_type, x._format)]


def _solve_infer(ctx: InferContext) -> list[TensorDesc]:
    matrix, rhs = ctx.inputs
    if matrix._data_type != rhs._data_type:
        raise InferError(
            f"matrix and rhs must have one type, got {matrix._data_type.name} and "
            f"{rhs._data_type.name}"
        )
    a, b = _matrices(matrix, "matrix"), _matrices(rhs, "rhs")
    if a is not None:
        _square(a, "matrix")
    if a is None or b is None:
        return [rules.desc(rules.UNKNOWN_RANK, matrix._data_type, matrix._format)]
    n = a[-1] if a[-1] >= 0 else a[-2]
    if n >= 0 and b[-2] >= 0 and b[-2] != n:
        raise InferError(f"rhs must have {n} rows (matrix is [..., {n}, {n}]), got shape {b}")
    batch = rules.broadcast_shapes(a[:-2], b[:-2])
    return [rules.desc([*batch, n if n >= 0 else b[-2], b[-1]], matrix._data_type, matrix._format)]


def _nan_where_failed(fn: Any, *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)``, NaN where numpy raises ``LinAlgError`` or the result has a NaN."""
    try:
        with np.errstate(all="ignore"):
            y = np.asarray(fn(*arrays))
    except np.linalg.LinAlgError:
        return np.full(arrays[-1].shape, np.nan)  # the result's shape: x's, or rhs's
    return y


def _cholesky_reference(ctx: ExecContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    n = x.shape[-1]
    flat = x.reshape(int(np.prod(x.shape[:-2], dtype=np.int64)), n, n)
    y = np.empty(flat.shape, out_dtype(ctx))
    for i, m in enumerate(flat):
        factor = _nan_where_failed(np.linalg.cholesky, m)
        y[i] = np.nan if np.isnan(factor).any() else factor
    return [y.reshape(x.shape)]


def _solve_reference(ctx: ExecContext) -> list[np.ndarray]:
    matrix, rhs = ctx.inputs
    if ctx.attrs["adjoint"]:
        matrix = np.swapaxes(matrix, -1, -2)
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    count = int(np.prod(batch, dtype=np.int64))
    a = np.broadcast_to(matrix, (*batch, *matrix.shape[-2:])).reshape(count, *matrix.shape[-2:])
    b = np.broadcast_to(rhs, (*batch, *rhs.shape[-2:])).reshape(count, *rhs.shape[-2:])
    y = np.empty(b.shape, out_dtype(ctx))
    for i in range(len(b)):
        y[i] = _nan_where_failed(np.linalg.solve, a[i], b[i])
    return [y.reshape(*batch, *rhs.shape[-2:])]


register_op_def(
    OpDef(
        "Cholesky",
        inputs=(inp("x", _TYPES),),
        outputs=(out("y", _TYPES),),
        infer=_cholesky_infer,
        reference=_cholesky_reference,
        group="math",
        doc="y = the lower Cholesky factor of each matrix of x (NaN where not positive definite).",
    )
)
register_op_def(
    OpDef(
        "MatrixSolve",
        inputs=(inp("matrix", _TYPES), inp("rhs", _TYPES)),
        outputs=(out("y", _TYPES),),
        attrs=(attr("adjoint", VT.VT_BOOL, False),),
        infer=_solve_infer,
        reference=_solve_reference,
        group="math",
        doc="y solves matrix @ y = rhs (matrix.T with adjoint), NaN where matrix is singular.",
    )
)
