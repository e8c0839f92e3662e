"""Indexing ops: ReverseV2, MirrorPad, GatherNd, ScatterNd, TensorScatterUpdate, TensorScatterAdd.

GE has no reference text for these ops in OPS_REFERENCE.md; the prototypes are GE's (and
TensorFlow's) well-known ones:

* ``ReverseV2(x, axis) -> y``: ``axis`` a value input (int32/int64, a scalar or 1-D list of
  axes, negative counting from the end); the axes are reversed. Repeated axes are an error
  (TF's rule).
* ``MirrorPad(x, paddings) -> y``, attr ``mode`` ``"REFLECT"`` (the edge is not repeated) or
  ``"SYMMETRIC"`` (it is); ``paddings`` is ``[rank, 2]``. As in TF, a pad may not exceed
  ``dim - 1`` (REFLECT) or ``dim`` (SYMMETRIC): one reflection, never a repeated one.
* ``GatherNd(x, indices) -> y``: the last dim ``K`` of ``indices`` indexes the first ``K``
  dims of ``x``; ``y.shape = indices.shape[:-1] + x.shape[K:]``.
* ``ScatterNd(indices, x, shape) -> y``: zeros of ``shape`` with the slices of ``x`` (the
  updates) *added* at ``indices`` (duplicates accumulate, as TF's ScatterNd does).
* ``TensorScatterUpdate(x, indices, updates) -> y``: ``x`` with the slices at ``indices``
  replaced by ``updates``. Decision (TF leaves it unspecified): with duplicate indices the
  *last* update in row-major order of ``indices`` wins, in the reference and in the kernel.
* ``TensorScatterAdd(x, indices, updates) -> y``: ``x`` with ``updates`` added at ``indices``
  (duplicates accumulate).

Decisions: indices are never wrapped: a negative or too-large index is an error (as in TF)
naming the op, the input, the bad value, where it is and the valid range (``GeValueError``;
compiled kernels check every index before they write anything, and the message is built by
the reference on the host, as for GatherV2). The add ops take real numbers (no bool).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ge.error import GeValueError, InferError
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, inp, out, same_infer
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__ = ["mirror_pad_pairs", "nd_index_problem", "reverse_axes"]

VT = AttrValueType
_ANY = rules.ALL

# The most a mirror pad may add on one side, per mode: dim - 1 (REFLECT) or dim (SYMMETRIC).
MIRROR_SLACK: dict[str, int] = {"REFLECT": 1, "SYMMETRIC": 0}


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _known(shape: Any) -> bool:
    return not rules.is_unknown_rank(shape) and -1 not in list(shape)


# --- ReverseV2 ---------------------------------------------------------------------------------
def reverse_axes(value: Any, rank: int) -> list[int]:
    """The normalised axes ``ReverseV2`` reverses (``InferError`` when out of range/repeated)."""
    return rules.normalize_axes(_ints(value), rank, "axis")


def _reverse_infer(ctx: InferContext) -> list[Any]:
    x, axis = ctx.inputs
    rules.check_dtype(axis, rules.INDEX, "axis")
    if len(axis._shape) > 1:
        raise InferError(f"axis must be a scalar or 1-D, got shape {list(axis._shape)}")
    value = ctx.values[1]
    if value is not None and not rules.is_unknown_rank(x._shape):
        reverse_axes(value, len(x._shape))
    return same_infer(ctx)


def _reverse_reference(ctx: ExecContext) -> list[Any]:
    x, axis = ctx.inputs
    axes = reverse_axes(axis, x.ndim)
    return [np.flip(x, tuple(axes)).copy() if axes else x.copy()]


register_op_def(
    OpDef(
        "ReverseV2",
        inputs=(inp("x", _ANY), inp("axis", rules.INDEX)),
        outputs=(out("y", _ANY),),
        infer=_reverse_infer,
        reference=_reverse_reference,
        group="array",
        value_inputs=frozenset({"axis"}),
        doc="y = x with the dims listed in `axis` reversed.",
    )
)


# --- MirrorPad ---------------------------------------------------------------------------------
def mirror_pad_pairs(value: Any, shape: list[int], mode: str) -> list[tuple[int, int]]:
    """``paddings`` as (before, after) per dim, checked against ``shape`` (``-1``: unknown)
    and ``mode`` (``InferError`` for a bad mode, a negative pad or one past the mirror)."""
    if mode not in MIRROR_SLACK:
        raise InferError(f"mode must be 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    flat, rank = _ints(value), len(shape)
    if len(flat) != 2 * rank or any(p < 0 for p in flat):
        raise InferError(f"paddings must be {rank}x2 non-negative ints, got {flat}")
    pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]
    slack = MIRROR_SLACK[mode]
    for k, (dim, (a, b)) in enumerate(zip(shape, pairs, strict=True)):
        if dim >= 0 and max(a, b) > dim - slack:
            raise InferError(
                f"paddings {[a, b]} of dim {k} (size {dim}) exceed the {mode} limit "
                f"{max(dim - slack, 0)} (pads may not exceed the dim{' - 1' if slack else ''})"
            )
    return pairs


def _mirror_pad_infer(ctx: InferContext) -> list[Any]:
    x, paddings = ctx.inputs
    rules.check_dtype(paddings, rules.INDEX, "paddings")
    mode = ctx.attrs["mode"]
    if mode not in MIRROR_SLACK:
        raise InferError(f"mode must be 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    if rules.is_unknown_rank(x._shape):
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    if ctx.values[1] is None:
        return [rules.desc([-1] * len(x._shape), x._data_type)]
    pairs = mirror_pad_pairs(ctx.values[1], list(x._shape), mode)
    dims = [-1 if d == -1 else d + a + b for d, (a, b) in zip(x._shape, pairs, strict=True)]
    return [rules.desc(dims, x._data_type, x._format)]


def _mirror_pad_reference(ctx: ExecContext) -> list[Any]:
    x, paddings = ctx.inputs
    mode = ctx.attrs["mode"]
    pairs = mirror_pad_pairs(paddings, list(x.shape), mode)
    if not any(a or b for a, b in pairs):
        return [x.copy()]
    return [np.pad(x, pairs, mode=mode.lower())]


register_op_def(
    OpDef(
        "MirrorPad",
        inputs=(inp("x", _ANY), inp("paddings", rules.INDEX)),
        outputs=(out("y", _ANY),),
        attrs=(attr("mode", VT.VT_STRING, "REFLECT"),),
        infer=_mirror_pad_infer,
        reference=_mirror_pad_reference,
        group="array",
        value_inputs=frozenset({"paddings"}),
        doc="y = x padded by mirroring its edges (`mode` REFLECT or SYMMETRIC).",
    )
)


# --- index checks shared by the gathers and scatters -------------------------------------------
def nd_index_problem(
    op: str, indices: np.ndarray, dims: list[int], target: str = "x"
) -> str | None:
    """What is wrong with the ``[..., K]`` ``indices`` of ``op`` into the first ``K`` ``dims``
    of ``target``, or ``None`` when every index is in range (TF's rule: no negatives).

    >>> problem = nd_index_problem("GatherNd", np.array([[0, 1], [2, 0]]), [2, 3])
    >>> for part in problem.split("; "): print(part)
    GatherNd input 'indices' holds 2 at [1, 0], out of range [0, 2) for dim 0 of x (size 2)
    1 of 4 indices are out of range
    """
    if indices.size == 0:
        return None
    sizes = np.asarray(dims, dtype=np.int64)
    bad = (indices < 0) | (indices >= sizes)
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    dim = first[-1]
    return (
        f"{op} input 'indices' holds {int(indices[first])} at {list(first)}, out of range "
        f"[0, {dims[dim]}) for dim {dim} of {target} (size {dims[dim]}); {int(bad.sum())} of "
        f"{indices.size} indices are out of range"
    )


def _index_depth(indices: Any, rank: int, target: str) -> int:
    """``K``, the last dim of ``indices`` (``-1``: unknown), checked against ``rank``."""
    shape = list(indices._shape)
    if rules.is_unknown_rank(shape):
        return -1
    if not shape:
        raise InferError("indices must have at least one dim (the last holds the index)")
    depth: int = shape[-1]
    if depth > rank >= 0:
        raise InferError(
            f"indices have {depth} entries per index (last dim) but {target} has rank {rank}"
        )
    return depth


def _check_indices(op: str, indices: np.ndarray, dims: list[int], target: str) -> np.ndarray:
    if indices.ndim == 0:
        raise GeValueError(f"{op}: indices must have at least one dim, got a scalar")
    if indices.shape[-1] > len(dims):
        raise GeValueError(
            f"{op}: indices have {indices.shape[-1]} entries per index but {target} has rank "
            f"{len(dims)}"
        )
    problem = nd_index_problem(op, indices, dims[: indices.shape[-1]], target)
    if problem is not None:
        raise GeValueError(problem)
    return indices.astype(np.int64)


def _flat_rows(indices: np.ndarray, dims: list[int]) -> np.ndarray:
    """Row-major positions of the indexed slices among ``prod(dims[:K])``."""
    depth = indices.shape[-1]
    flat = indices.reshape(math.prod(indices.shape[:-1]), depth)
    if depth == 0:
        return np.zeros(flat.shape[0], np.int64)
    rows: np.ndarray = np.ravel_multi_index(tuple(flat.T), tuple(dims[:depth]))
    return rows.astype(np.int64)


# --- GatherNd ----------------------------------------------------------------------------------
def _gather_nd_infer(ctx: InferContext) -> list[Any]:
    x, indices = ctx.inputs
    rules.check_dtype(indices, rules.INDEX, "indices")
    shape = list(x._shape)
    rank = -1 if rules.is_unknown_rank(shape) else len(shape)
    depth = _index_depth(indices, rank, "x")
    if depth < 0 or rank < 0:
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    return [rules.desc(list(indices._shape)[:-1] + shape[depth:], x._data_type)]


def _gather_nd_reference(ctx: ExecContext) -> list[Any]:
    x, indices = ctx.inputs
    idx = _check_indices("GatherNd", np.asarray(indices), list(x.shape), "x")
    depth = idx.shape[-1]
    lead = idx.shape[:-1]
    rows = x.reshape((math.prod(x.shape[:depth]), *x.shape[depth:]))
    picked = rows[_flat_rows(idx, list(x.shape))]
    return [picked.reshape((*lead, *x.shape[depth:]))]  # fancy indexing made a copy


register_op_def(
    OpDef(
        "GatherNd",
        inputs=(inp("x", _ANY), inp("indices", rules.INDEX)),
        outputs=(out("y", _ANY),),
        infer=_gather_nd_infer,
        reference=_gather_nd_reference,
        group="array",
        doc="y[i...] = x[indices[i..., :]] (the last dim of indices indexes x's first dims).",
    )
)


# --- ScatterNd / TensorScatterUpdate / TensorScatterAdd ----------------------------------------
def _check_updates(
    op: str, updates: list[int], indices: list[int], dims: list[int], depth: int
) -> None:
    """``updates`` must be ``indices[:-1] + dims[depth:]`` (``-1``: unknown, matches)."""
    want = indices[:-1] + dims[depth:]
    same = len(want) == len(updates) and all(
        a == b or -1 in (a, b) for a, b in zip(want, updates, strict=True)
    )
    if not same:
        raise InferError(
            f"{op}: updates have shape {updates}; indices {indices} into shape {dims} need {want}"
        )


def _scatter_nd_infer(ctx: InferContext) -> list[Any]:
    indices, updates, shape_desc = ctx.inputs
    rules.check_dtype(indices, rules.INDEX, "indices")
    rules.check_dtype(shape_desc, rules.INDEX, "shape")
    value = ctx.values[2]
    if value is None:
        n = list(shape_desc._shape)
        dims = [-1] * n[0] if len(n) == 1 and n[0] >= 0 else None
    else:
        dims = _ints(value)
        if any(d < 0 for d in dims):
            raise InferError(f"shape {dims} has negative dims")
    if dims is None:
        return [rules.desc(rules.UNKNOWN_RANK, updates._data_type)]
    depth = _index_depth(indices, len(dims), "shape")
    if depth >= 0 and not rules.is_unknown_rank(updates._shape):
        _check_updates("ScatterNd", list(updates._shape), list(indices._shape), dims, depth)
    return [rules.desc(dims, updates._data_type)]


def _scatter(
    op: str, base: np.ndarray, indices: np.ndarray, updates: np.ndarray, add: bool, target: str
) -> np.ndarray:
    dims = list(base.shape)
    idx = _check_indices(op, np.asarray(indices), dims, target)
    depth = idx.shape[-1]
    want = (*idx.shape[:-1], *dims[depth:])
    if tuple(updates.shape) != want:
        raise GeValueError(
            f"{op}: updates have shape {list(updates.shape)}; indices {list(idx.shape)} into "
            f"shape {dims} need {list(want)}"
        )
    inner = (*dims[depth:],)
    rows = base.reshape((math.prod(dims[:depth]), *inner))
    flat = _flat_rows(idx, dims)
    values = updates.reshape((math.prod(idx.shape[:-1]), *inner)).astype(base.dtype)
    if add:
        np.add.at(rows, flat, values)
    else:
        for r, row in enumerate(flat.tolist()):  # last write wins, in index order
            rows[row] = values[r]
    return rows.reshape(dims)


def _scatter_nd_reference(ctx: ExecContext) -> list[Any]:
    indices, updates, shape = ctx.inputs
    dims = _ints(shape)
    if any(d < 0 for d in dims):
        raise GeValueError(f"ScatterNd: shape {dims} has negative dims")
    base = np.zeros(dims, dtype=updates.dtype)
    return [_scatter("ScatterNd", base, indices, updates, True, "shape")]


register_op_def(
    OpDef(
        "ScatterNd",
        inputs=(inp("indices", rules.INDEX), inp("x", rules.REAL), inp("shape", rules.INDEX)),
        outputs=(out("y", rules.REAL),),
        infer=_scatter_nd_infer,
        reference=_scatter_nd_reference,
        group="array",
        value_inputs=frozenset({"shape"}),
        doc="y = zeros(shape) with the slices of x added at indices (duplicates add up).",
    )
)


def _tensor_scatter_infer(op: str) -> Any:
    def infer(ctx: InferContext) -> list[Any]:
        x, indices, updates = ctx.inputs
        rules.check_dtype(indices, rules.INDEX, "indices")
        if updates._data_type != x._data_type:
            raise InferError(
                f"{op}: updates have type {updates._data_type.name}, x has {x._data_type.name}"
            )
        shape = list(x._shape)
        if not rules.is_unknown_rank(shape):
            depth = _index_depth(indices, len(shape), "x")
            if depth >= 0 and not rules.is_unknown_rank(updates._shape):
                _check_updates(op, list(updates._shape), list(indices._shape), shape, depth)
        return same_infer(ctx)

    return infer


def _tensor_scatter_reference(op: str, add: bool) -> Any:
    def reference(ctx: ExecContext) -> list[Any]:
        x, indices, updates = ctx.inputs
        return [_scatter(op, np.array(x, copy=True), indices, np.asarray(updates), add, "x")]

    return reference


_SCATTERS: tuple[tuple[str, bool, frozenset[DataType], str], ...] = (
    (
        "TensorScatterUpdate",
        False,
        _ANY,
        "y = x with the slices at indices replaced by updates (the last duplicate wins).",
    ),
    ("TensorScatterAdd", True, rules.REAL, "y = x with updates added at indices."),
)

for _name, _add, _types, _doc in _SCATTERS:
    register_op_def(
        OpDef(
            _name,
            inputs=(inp("x", _types), inp("indices", rules.INDEX), inp("updates", _types)),
            outputs=(out("y", _types),),
            infer=_tensor_scatter_infer(_name),
            reference=_tensor_scatter_reference(_name, _add),
            group="array",
            doc=_doc,
        )
    )
