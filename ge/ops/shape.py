"""Shape and data-movement ops: Reshape, Transpose, Squeeze, Unsqueeze, ExpandDims, ConcatV2,
SplitV, StridedSlice, Slice, GatherV2, Pad, Tile, BroadcastTo, Fill, Range, ZerosLike,
OnesLike, Shape.

Shapes that depend on an input's *value* (Reshape's ``shape``, Slice's ``size``, ...) are exact
when that input is a known constant, and fall back to unknown dims (``-1``) or an unknown rank
(``[-2]``) otherwise; they become exact at run time. Slicing shapes are computed by applying the
very same index to a zero-stride dummy array, so infer and reference cannot disagree.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ge.error import GeValueError, InferError
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, dyn, inp, out, out_dtype, same_infer
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef, ScalarBody

__all__ = ["gather_index_problem"]

VT = AttrValueType
_ANY = rules.ALL
# Stand-ins for unknown dims when deriving a shape: small sizes catch clamping slices, large
# ones catch dims that scale with the input.
_PROBES = (0, 1, 2, 3, 1_000_003, 1_000_033)


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _register(
    name: str,
    inputs: tuple[Any, ...],
    infer: Any,
    reference: Any,
    attrs: tuple[Any, ...] = (),
    outputs: tuple[Any, ...] = (),
    doc: str = "",
) -> None:
    register_op_def(
        OpDef(
            name,
            inputs=inputs,
            outputs=outputs or (out("y", _ANY),),
            attrs=attrs,
            infer=infer,
            reference=reference,
            group="array",
            doc=doc,
            value_inputs=_VALUE_INPUTS.get(name, frozenset()),
        )
    )


# The inputs each op's shape rule reads the values of.
_VALUE_INPUTS: dict[str, frozenset[str]] = {
    "Reshape": frozenset({"shape"}),
    "Transpose": frozenset({"perm"}),
    "ExpandDims": frozenset({"axis"}),
    "ConcatV2": frozenset({"concat_dim"}),
    "SplitV": frozenset({"size_splits", "split_dim"}),
    "StridedSlice": frozenset({"begin", "end", "strides"}),
    "Slice": frozenset({"offsets", "size"}),
    "GatherV2": frozenset({"axis"}),
    "Pad": frozenset({"paddings"}),
    "Tile": frozenset({"multiples"}),
    "BroadcastTo": frozenset({"shape"}),
    "Fill": frozenset({"dims"}),
    "Range": frozenset({"start", "limit", "delta"}),
}


def _probe_shape(shape: list[int], index_fn: Any) -> list[int]:
    """Result shape of ``index_fn(array)`` for an array of ``shape`` with unknown dims."""
    if -1 not in shape:
        return list(index_fn(np.broadcast_to(np.zeros((), np.int8), shape)).shape)
    results = []
    for probe in _PROBES:
        dummy = np.broadcast_to(np.zeros((), np.int8), [probe if d == -1 else d for d in shape])
        try:
            results.append(list(index_fn(dummy).shape))
        except IndexError:  # e.g. an integer index past a small stand-in size
            continue
    if not results:
        raise IndexError(f"the index fits no size of the unknown dims of {shape}")
    return [dims[0] if len(set(dims)) == 1 else -1 for dims in zip(*results, strict=True)]


# --- Reshape -----------------------------------------------------------------------------------
def _resolve_reshape(in_shape: list[int], target: list[int]) -> list[int]:
    if target.count(-1) > 1:
        raise InferError(f"shape {target} has more than one -1")
    if any(d < -1 for d in target):
        raise InferError(f"shape {target} has a negative dim other than -1")
    if -1 in in_shape:
        return target
    total = math.prod(in_shape)
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        if known == 0 or total % known:
            raise InferError(f"cannot reshape {in_shape} ({total} elements) into {target}")
        return [total // known if d == -1 else d for d in target]
    if known != total:
        raise InferError(f"cannot reshape {in_shape} ({total} elements) into {target}")
    return target


def _reshape_span(ctx: InferContext | ExecContext, rank: int) -> tuple[int, int]:
    axis, num_axes = ctx.attrs["axis"], ctx.attrs["num_axes"]
    start = axis + rank + 1 if axis < 0 else axis
    stop = rank if num_axes == -1 else start + num_axes
    if not 0 <= start <= stop <= rank:
        raise InferError(f"axis={axis}, num_axes={num_axes} do not fit rank {rank}")
    return start, stop


def _reshape_infer(ctx: InferContext) -> list[Any]:
    x, shape_desc = ctx.inputs
    rules.check_dtype(shape_desc, rules.INDEX, "shape")
    in_shape = list(x._shape)
    if ctx.values[1] is None:
        n = shape_desc._shape[0] if len(shape_desc._shape) == 1 else -1
        if n < 0 or rules.is_unknown_rank(in_shape):
            return [rules.desc(rules.UNKNOWN_RANK, x._data_type, x._format)]
        start, stop = _reshape_span(ctx, len(in_shape))
        middle = [-1] * n
        return [rules.desc(in_shape[:start] + middle + in_shape[stop:], x._data_type, x._format)]
    target = _ints(ctx.values[1])
    if rules.is_unknown_rank(in_shape):
        whole = ctx.attrs["axis"] == 0 and ctx.attrs["num_axes"] == -1
        # replacing all dims, the target is the shape (its -1, if any, unknown until run time);
        # replacing some, the dims kept around it are unknown in number
        shape = _resolve_reshape([-1], target) if whole else rules.UNKNOWN_RANK
        return [rules.desc(shape, x._data_type, x._format)]
    start, stop = _reshape_span(ctx, len(in_shape))
    middle = _resolve_reshape(in_shape[start:stop], target)
    return [rules.desc(in_shape[:start] + middle + in_shape[stop:], x._data_type, x._format)]


def _reshape_reference(ctx: ExecContext) -> list[Any]:
    x, shape = ctx.inputs
    start, stop = _reshape_span(ctx, x.ndim)
    middle = _resolve_reshape(list(x.shape[start:stop]), _ints(shape))
    return [x.reshape(list(x.shape[:start]) + middle + list(x.shape[stop:])).copy()]


_register(
    "Reshape",
    (inp("x", _ANY), inp("shape", rules.INDEX)),
    _reshape_infer,
    _reshape_reference,
    (attr("axis", VT.VT_INT, 0), attr("num_axes", VT.VT_INT, -1)),
    doc="y = x with dims [axis, axis+num_axes) replaced by `shape` (one -1 inferred).",
)


# --- Transpose ---------------------------------------------------------------------------------
def _perm(value: Any, rank: int) -> list[int]:
    perm = _ints(value)
    if (
        sorted(rules.normalize_axis(p, rank, "perm") for p in perm) != list(range(rank))
        or len(perm) != rank
    ):
        raise InferError(f"perm {perm} is not a permutation of {rank} axes")
    return [p % rank for p in perm]


def _transpose_infer(ctx: InferContext) -> list[Any]:
    x, perm_desc = ctx.inputs
    rules.check_dtype(perm_desc, rules.INDEX, "perm")
    shape = list(x._shape)
    if rules.is_unknown_rank(shape):
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    if ctx.values[1] is None:
        return [rules.desc([-1] * len(shape), x._data_type)]
    return [rules.desc([shape[p] for p in _perm(ctx.values[1], len(shape))], x._data_type)]


_register(
    "Transpose",
    (inp("x", _ANY), inp("perm", rules.INDEX)),
    _transpose_infer,
    lambda ctx: [np.transpose(ctx.inputs[0], _perm(ctx.inputs[1], ctx.inputs[0].ndim)).copy()],
    doc="y = x with its axes permuted by `perm`.",
)


# --- Squeeze / Unsqueeze / ExpandDims ----------------------------------------------------------
def _squeeze_shape(shape: list[int], axis: list[int]) -> list[int]:
    if not axis:
        if -1 in shape:  # an unknown dim may be 1 or not: the rank is unknown until run time
            return list(rules.UNKNOWN_RANK)
        return [d for d in shape if d != 1]
    if not shape:  # numpy: a 0-d array has no axis to squeeze
        raise InferError(f"cannot squeeze axis {axis} of a scalar: it has no axes")
    axes = rules.normalize_axes(axis, len(shape), "axis")
    for a in axes:
        if shape[a] not in (1, -1):
            raise InferError(f"cannot squeeze axis {a} of size {shape[a]}")
    return [d for i, d in enumerate(shape) if i not in axes]


def _unsqueeze_shape(shape: list[int], axes: list[int]) -> list[int]:
    rank = len(shape) + len(axes)
    where = rules.normalize_axes(axes, rank, "axes")
    dims = iter(shape)
    return [1 if i in where else next(dims) for i in range(rank)]


def _attr_shape_infer(fn: Any, name: str) -> Any:
    def infer(ctx: InferContext) -> list[Any]:
        x = ctx.inputs[0]
        if rules.is_unknown_rank(x._shape):
            return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
        return [rules.desc(fn(list(x._shape), list(ctx.attrs[name])), x._data_type)]

    return infer


def _attr_shape_reference(fn: Any, name: str) -> Any:
    return lambda ctx: [
        ctx.inputs[0].reshape(fn(list(ctx.inputs[0].shape), list(ctx.attrs[name]))).copy()
    ]


_register(
    "Squeeze",
    (inp("x", _ANY),),
    _attr_shape_infer(_squeeze_shape, "axis"),
    _attr_shape_reference(_squeeze_shape, "axis"),
    (attr("axis", VT.VT_LIST_INT, []),),
    doc="y = x without the size-1 dims listed in `axis` (all of them when empty).",
)
_register(
    "Unsqueeze",
    (inp("x", _ANY),),
    _attr_shape_infer(_unsqueeze_shape, "axes"),
    _attr_shape_reference(_unsqueeze_shape, "axes"),
    (attr("axes", VT.VT_LIST_INT, []),),
    doc="y = x with size-1 dims inserted at `axes` (positions in the output).",
)


def _expand_dims_infer(ctx: InferContext) -> list[Any]:
    x, axis_desc = ctx.inputs
    rules.check_dtype(axis_desc, rules.INDEX, "axis")
    if rules.is_unknown_rank(x._shape):
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    if ctx.values[1] is None:
        return [rules.desc([-1] * (len(x._shape) + 1), x._data_type)]
    return [
        rules.desc(
            _unsqueeze_shape(list(x._shape), [rules.one_int(ctx.values[1], "axis")]), x._data_type
        )
    ]


_register(
    "ExpandDims",
    (inp("x", _ANY), inp("axis", rules.INDEX)),
    _expand_dims_infer,
    lambda ctx: [np.expand_dims(ctx.inputs[0], rules.one_int(ctx.inputs[1], "axis")).copy()],
    doc="y = x with a size-1 dim inserted at `axis`.",
)


# --- ConcatV2 / SplitV -------------------------------------------------------------------------
def _concat_infer(ctx: InferContext) -> list[Any]:
    xs, dim_desc = ctx.inputs
    rules.check_dtype(dim_desc, rules.INDEX, "concat_dim")
    if not xs:
        raise InferError("ConcatV2 needs at least one input")
    if ctx.attrs["N"] != len(xs):
        raise InferError(f"attribute N is {ctx.attrs['N']} but {len(xs)} inputs were given")
    dtype = rules.promote_types(*(x._data_type for x in xs))
    shapes = [list(x._shape) for x in xs]
    if any(rules.is_unknown_rank(s) for s in shapes):
        return [rules.desc(rules.UNKNOWN_RANK, dtype)]
    if len({len(s) for s in shapes}) != 1:
        raise InferError(f"inputs have different ranks: {shapes}")
    if not shapes[0]:
        raise InferError("cannot concatenate scalars; expand them to rank 1 first")
    if ctx.values[1] is None:
        return [rules.desc([-1] * len(shapes[0]), dtype)]
    axis = rules.normalize_axis(
        rules.one_int(ctx.values[1], "concat_dim"), len(shapes[0]), "concat_dim"
    )
    out_shape = []
    for i, dims in enumerate(zip(*shapes, strict=True)):
        if i == axis:
            out_shape.append(-1 if -1 in dims else sum(dims))
            continue
        known = {d for d in dims if d != -1}
        if len(known) > 1:
            raise InferError(f"inputs differ in dim {i}: {shapes}")
        out_shape.append(known.pop() if known else -1)
    return [rules.desc(out_shape, dtype, xs[0]._format)]


def _concat_reference(ctx: ExecContext) -> list[Any]:
    xs, dim = ctx.inputs
    dtype = out_dtype(ctx)
    return [np.concatenate([x.astype(dtype) for x in xs], axis=rules.one_int(dim, "concat_dim"))]


_register(
    "ConcatV2",
    (dyn("x", _ANY), inp("concat_dim", rules.INDEX)),
    _concat_infer,
    _concat_reference,
    (attr("N", VT.VT_INT, 1),),
    doc="y = the N inputs joined along `concat_dim`.",
)


def _split_sizes(sizes: list[int], total: int, num_split: int) -> list[int]:
    if len(sizes) != num_split:
        raise InferError(f"size_splits has {len(sizes)} entries but num_split is {num_split}")
    if sizes.count(-1) > 1:
        raise InferError(f"size_splits {sizes} has more than one -1")
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes and total != -1:
        sizes = [total - known if s == -1 else s for s in sizes]
    unbalanced = total != -1 and -1 not in sizes and sum(sizes) != total
    if unbalanced or any(s < -1 for s in sizes):
        raise InferError(f"size_splits {sizes} do not add up to dim size {total}")
    return sizes


def _split_infer(ctx: InferContext) -> list[Any]:
    x, sizes_desc, dim_desc = ctx.inputs
    rules.check_dtype(sizes_desc, rules.INDEX, "size_splits")
    rules.check_dtype(dim_desc, rules.INDEX, "split_dim")
    num_split = ctx.attrs["num_split"]
    if num_split != ctx.output_counts[0]:
        raise InferError(
            f"num_split is {num_split} but the node has {ctx.output_counts[0]} outputs"
        )
    shape = list(x._shape)
    if rules.is_unknown_rank(shape) or ctx.values[2] is None:
        unknown = rules.UNKNOWN_RANK if rules.is_unknown_rank(shape) else [-1] * len(shape)
        return [[rules.desc(unknown, x._data_type) for _ in range(num_split)]]
    if not shape:
        raise InferError("cannot split a scalar; x must have at least one dim")
    axis = rules.normalize_axis(rules.one_int(ctx.values[2], "split_dim"), len(shape), "split_dim")
    sizes = (
        [-1] * num_split
        if ctx.values[1] is None
        else _split_sizes(_ints(ctx.values[1]), shape[axis], num_split)
    )
    return [[rules.desc([*shape[:axis], s, *shape[axis + 1 :]], x._data_type) for s in sizes]]


def _split_reference(ctx: ExecContext) -> list[Any]:
    x, sizes, dim = ctx.inputs
    axis = rules.normalize_axis(rules.one_int(dim, "split_dim"), x.ndim, "split_dim")
    sizes_list = _split_sizes(_ints(sizes), x.shape[axis], ctx.attrs["num_split"])
    return [[p.copy() for p in np.split(x, np.cumsum(sizes_list)[:-1].tolist(), axis=axis)]]


register_op_def(
    OpDef(
        "SplitV",
        inputs=(inp("x", _ANY), inp("size_splits", rules.INDEX), inp("split_dim", rules.INDEX)),
        value_inputs=_VALUE_INPUTS["SplitV"],
        outputs=(dyn("y", _ANY),),
        attrs=(attr("num_split", VT.VT_INT),),
        infer=_split_infer,
        reference=_split_reference,
        group="array",
        doc="y = x cut along `split_dim` into pieces of `size_splits` (one -1 takes the rest).",
    )
)


# --- StridedSlice / Slice ----------------------------------------------------------------------
def _strided_index(
    ctx: Any, begin: list[int], end: list[int], strides: list[int]
) -> tuple[Any, ...]:
    if not len(begin) == len(end) == len(strides):
        raise InferError(f"begin {begin}, end {end}, strides {strides} differ in length")
    if 0 in strides:
        raise InferError("strides must be non-zero")
    masks = {
        k: ctx.attrs[k]
        for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    }
    index: list[Any] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides, strict=True)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            index.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            index.append(np.newaxis)
        elif masks["shrink_axis_mask"] & bit:
            index.append(b)
        else:
            index.append(
                slice(
                    None if masks["begin_mask"] & bit else b,
                    None if masks["end_mask"] & bit else e,
                    s,
                )
            )
    return tuple(index)


def _strided_slice_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    for desc, name in zip(ctx.inputs[1:], ("begin", "end", "strides"), strict=True):
        rules.check_dtype(desc, rules.INDEX, name)
    if rules.is_unknown_rank(x._shape) or any(v is None for v in ctx.values[1:]):
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    index = _strided_index(ctx, *(_ints(v) for v in ctx.values[1:]))
    try:
        return [rules.desc(_probe_shape(list(x._shape), lambda a: a[index]), x._data_type)]
    except IndexError as e:
        raise InferError(f"index does not fit shape {list(x._shape)}: {e}") from None


def _strided_slice_reference(ctx: ExecContext) -> list[Any]:
    x, *rest = ctx.inputs
    return [np.array(x[_strided_index(ctx, *(_ints(v) for v in rest))], copy=True)]


_register(
    "StridedSlice",
    (
        inp("x", _ANY),
        inp("begin", rules.INDEX),
        inp("end", rules.INDEX),
        inp("strides", rules.INDEX),
    ),
    _strided_slice_infer,
    _strided_slice_reference,
    tuple(
        attr(m, VT.VT_INT, 0)
        for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    ),
    doc="y = x[begin:end:strides] with TensorFlow's mask semantics.",
)


def _slice_index(shape: list[int], offsets: list[int], size: list[int]) -> tuple[slice, ...]:
    if not len(offsets) == len(size) == len(shape):
        raise InferError(f"offsets {offsets} and size {size} must both have {len(shape)} entries")
    index = []
    for dim, o, s in zip(shape, offsets, size, strict=True):
        stop = dim if s == -1 else o + s
        if o < 0 or s < -1 or (dim != -1 and stop > dim):
            raise InferError(f"slice offsets {offsets} size {size} fall outside shape {shape}")
        index.append(slice(o, None if s == -1 else stop))
    return tuple(index)


def _slice_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    if rules.is_unknown_rank(x._shape) or ctx.values[1] is None or ctx.values[2] is None:
        rank = -1 if rules.is_unknown_rank(x._shape) else len(x._shape)
        return [rules.desc(rules.UNKNOWN_RANK if rank < 0 else [-1] * rank, x._data_type)]
    shape = list(x._shape)
    index = _slice_index(shape, _ints(ctx.values[1]), _ints(ctx.values[2]))
    return [rules.desc(_probe_shape(shape, lambda a: a[index]), x._data_type)]


_register(
    "Slice",
    (inp("x", _ANY), inp("offsets", rules.INDEX), inp("size", rules.INDEX)),
    _slice_infer,
    lambda ctx: [
        ctx.inputs[0][
            _slice_index(list(ctx.inputs[0].shape), _ints(ctx.inputs[1]), _ints(ctx.inputs[2]))
        ].copy()
    ],
    doc="y = x[offsets : offsets + size] per dim (size -1 runs to the end).",
)


# --- GatherV2 ----------------------------------------------------------------------------------
def _gather_infer(ctx: InferContext) -> list[Any]:
    x, indices, axis_desc = ctx.inputs
    rules.check_dtype(indices, rules.INDEX, "indices")
    rules.check_dtype(axis_desc, rules.INDEX, "axis")
    shape, ishape = list(x._shape), list(indices._shape)
    batch = ctx.attrs["batch_dims"]
    if not shape:  # numpy's take: a 0-d array has no axis to gather along
        raise InferError("x is a scalar: it has no axis to gather along")
    if rules.is_unknown_rank(shape) or rules.is_unknown_rank(ishape) or ctx.values[2] is None:
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    axis = rules.normalize_axis(rules.one_int(ctx.values[2], "axis"), len(shape), "axis")
    batch = batch + len(ishape) if batch < 0 else batch
    if not 0 <= batch <= min(axis, len(ishape)):
        raise InferError(
            f"batch_dims {ctx.attrs['batch_dims']} must be in [0, min(axis, rank(indices))]"
        )
    return [rules.desc(shape[:axis] + ishape[batch:] + shape[axis + 1 :], x._data_type)]


def gather_index_problem(
    indices: np.ndarray, size: int, axis: int, negative_ok: bool
) -> str | None:
    """What is wrong with GatherV2 ``indices`` into an axis of ``size``, or ``None`` when
    every index is valid: the first bad value, where it is, and the valid range. The
    reference raises it; a compiled plan builds it on the host after its kernel failed.

    >>> problem = gather_index_problem(np.array([0, 5, 9]), 3, 0, False)
    >>> for part in problem.split("; "): print(part)
    GatherV2 input 'indices' holds 5 at [1], out of range [0, 3) for axis 0 of x (size 3)
    2 of 3 indices are out of range
    """
    low = -size if negative_ok else 0
    bad = (indices < low) | (indices >= size)
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (
        f"GatherV2 input 'indices' holds {int(indices[first])} at {list(first)}, out of range "
        f"[{low}, {size}) for axis {axis} of x (size {size}); {int(bad.sum())} of "
        f"{indices.size} indices are out of range"
    )


def _gather_reference(ctx: ExecContext) -> list[Any]:
    x, indices, axis_value = ctx.inputs
    if x.ndim == 0:
        raise GeValueError("GatherV2: x is a scalar: it has no axis to gather along")
    axis = rules.normalize_axis(rules.one_int(axis_value, "axis"), x.ndim, "axis")
    batch = ctx.attrs["batch_dims"]
    batch = batch + indices.ndim if batch < 0 else batch
    if not 0 <= batch <= min(axis, indices.ndim):
        raise GeValueError(
            f"GatherV2: batch_dims {ctx.attrs['batch_dims']} must be in [0, min(axis, "
            f"rank(indices))] = [0, {min(axis, indices.ndim)}]"
        )
    size = x.shape[axis]
    problem = gather_index_problem(indices, size, axis, ctx.attrs["negative_index_support"])
    if problem is not None:
        raise GeValueError(problem)
    idx = np.where(indices < 0, indices + size, indices)
    if batch == 0:
        return [np.take(x, idx, axis=axis)]
    # The result's shape comes from the arrays, never from the recorded output desc (which
    # may hold -1 dims or an unknown rank).
    shape = (*x.shape[:axis], *idx.shape[batch:], *x.shape[axis + 1 :])
    if idx.shape[:batch] != x.shape[:batch]:
        raise GeValueError(
            f"GatherV2: indices {list(idx.shape)} and x {list(x.shape)} differ in their "
            f"first batch_dims={batch} dims"
        )
    lead = math.prod(x.shape[:batch])
    xs = x.reshape((lead, *x.shape[batch:]))
    ids = idx.reshape((lead, *idx.shape[batch:]))
    parts = [np.take(xs[i], ids[i], axis=axis - batch) for i in range(xs.shape[0])]
    if not parts:
        return [np.zeros(shape, x.dtype)]
    return [np.stack(parts).reshape(shape)]


_register(
    "GatherV2",
    (inp("x", _ANY), inp("indices", rules.INDEX), inp("axis", rules.INDEX)),
    _gather_infer,
    _gather_reference,
    (
        attr("batch_dims", VT.VT_INT, 0),
        attr("is_preprocessed", VT.VT_BOOL, False),
        attr("negative_index_support", VT.VT_BOOL, False),
    ),
    doc="y = x[..., indices, ...] along `axis` (numpy take), with batch_dims.",
)


# --- Pad / Tile / BroadcastTo / Fill / Range ---------------------------------------------------
def _pairs(value: Any, rank: int) -> list[tuple[int, int]]:
    flat = _ints(value)
    if len(flat) != 2 * rank or any(p < 0 for p in flat):
        raise InferError(f"paddings must be {rank}x2 non-negative ints, got {flat}")
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]


def _pad_reference(ctx: ExecContext) -> list[Any]:
    x = ctx.inputs[0]
    pairs = _pairs(ctx.inputs[1], x.ndim)
    # np.pad reads an empty width list as floats and refuses it: a scalar pads to itself
    return [np.pad(x, pairs) if pairs else x.copy()]


def _pad_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    rules.check_dtype(ctx.inputs[1], rules.INDEX, "paddings")
    if rules.is_unknown_rank(x._shape):
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    if ctx.values[1] is None:
        return [rules.desc([-1] * len(x._shape), x._data_type)]
    pairs = _pairs(ctx.values[1], len(x._shape))
    return [
        rules.desc(
            [-1 if d == -1 else d + a + b for d, (a, b) in zip(x._shape, pairs, strict=True)],
            x._data_type,
        )
    ]


_register(
    "Pad",
    (inp("x", _ANY), inp("paddings", rules.INDEX)),
    _pad_infer,
    _pad_reference,
    doc="y = x padded with zeros by `paddings` ([rank, 2]: before, after).",
)


def _tile_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    rules.check_dtype(ctx.inputs[1], rules.INDEX, "multiples")
    if rules.is_unknown_rank(x._shape) or ctx.values[1] is None:
        rank = ctx.inputs[1]._shape[0] if len(ctx.inputs[1]._shape) == 1 else -1
        return [rules.desc([-1] * rank if rank >= 0 else rules.UNKNOWN_RANK, x._data_type)]
    mult = _ints(ctx.values[1])
    if len(mult) != len(x._shape) or any(m < 0 for m in mult):
        raise InferError(f"multiples {mult} must have {len(x._shape)} non-negative entries")
    return [
        rules.desc(
            [-1 if d == -1 else d * m for d, m in zip(x._shape, mult, strict=True)], x._data_type
        )
    ]


_register(
    "Tile",
    (inp("x", _ANY), inp("multiples", rules.INDEX)),
    _tile_infer,
    lambda ctx: [np.tile(ctx.inputs[0], _ints(ctx.inputs[1]))],
    doc="y = x repeated `multiples` times along each dim.",
)


def _shape_from_value(ctx: InferContext, index: int, name: str) -> list[int] | None:
    rules.check_dtype(ctx.inputs[index], rules.INDEX, name)
    if ctx.values[index] is not None:
        dims = _ints(ctx.values[index])
        if any(d < 0 for d in dims):
            raise InferError(f"{name} {dims} has negative dims")
        return dims
    n = ctx.inputs[index]._shape
    return [-1] * n[0] if len(n) == 1 and n[0] >= 0 else None


def _broadcast_to_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    target = _shape_from_value(ctx, 1, "shape")
    if target is None:
        return [rules.desc(rules.UNKNOWN_RANK, x._data_type)]
    if rules.is_unknown_rank(x._shape):  # the result is the target; run time checks x fits
        return [rules.desc(target, x._data_type)]
    result = rules.broadcast_shapes(x._shape, target)
    if len(result) != len(target) or any(
        t not in (r, -1) for r, t in zip(result, target, strict=True)
    ):
        raise InferError(f"cannot broadcast {list(x._shape)} to {target}")
    return [rules.desc(result, x._data_type)]


_register(
    "BroadcastTo",
    (inp("x", _ANY), inp("shape", rules.INDEX)),
    _broadcast_to_infer,
    lambda ctx: [np.broadcast_to(ctx.inputs[0], _ints(ctx.inputs[1])).copy()],
    doc="y = x broadcast to `shape`.",
)


def _fill_infer(ctx: InferContext) -> list[Any]:
    value = ctx.inputs[1]
    if not rules.may_be_scalar(value._shape):
        raise InferError(f"value must be a scalar, got shape {list(value._shape)}")
    dims = _shape_from_value(ctx, 0, "dims")
    return [rules.desc(rules.UNKNOWN_RANK if dims is None else dims, value._data_type)]


_register(
    "Fill",
    (inp("dims", rules.INDEX), inp("value", _ANY)),
    _fill_infer,
    lambda ctx: [
        np.full(
            _ints(ctx.inputs[0]), np.asarray(ctx.inputs[1]).reshape(())[()], dtype=out_dtype(ctx)
        )
    ],
    doc="y = a tensor of shape `dims` filled with the scalar `value`.",
)


def _range_len(start: float, limit: float, delta: float, closed: bool) -> int:
    for name, v in (("start", start), ("limit", limit), ("delta", delta)):
        if not math.isfinite(v):
            raise InferError(f"{name} must be a finite number, got {v}")
    if delta == 0:
        raise InferError("delta must be non-zero")
    span = (limit - start) / delta
    if not math.isfinite(span):
        raise InferError(f"(limit - start) / delta = {span} is not a finite element count")
    count = max(math.ceil(span) if not closed else math.floor(span) + 1, 0)
    if count >= 1 << 63:
        raise InferError(f"the range has {count} elements, more than a dim can hold (2**63 - 1)")
    return count


def _range_infer(ctx: InferContext) -> list[Any]:
    dtype = rules.promote_types(*(d._data_type for d in ctx.inputs))
    for d, name in zip(ctx.inputs, ("start", "limit", "delta"), strict=True):
        if not rules.may_be_scalar(d._shape):
            raise InferError(f"{name} must be a scalar, got shape {list(d._shape)}")
    if any(v is None for v in ctx.values):
        return [rules.desc([-1], dtype)]
    start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in ctx.values)
    return [rules.desc([_range_len(start, limit, delta, ctx.attrs["is_closed"])], dtype)]


def _range_reference(ctx: ExecContext) -> list[Any]:
    start, limit, delta = (np.asarray(v).reshape(-1)[0].item() for v in ctx.inputs)
    n = _range_len(start, limit, delta, ctx.attrs["is_closed"])
    return [(start + np.arange(n) * delta).astype(out_dtype(ctx))]


register_op_def(
    OpDef(
        "Range",
        inputs=(inp("start", rules.REAL), inp("limit", rules.REAL), inp("delta", rules.REAL)),
        value_inputs=_VALUE_INPUTS["Range"],
        outputs=(out("y", rules.REAL),),
        attrs=(attr("is_closed", VT.VT_BOOL, False),),
        infer=_range_infer,
        reference=_range_reference,
        group="array",
        doc="y = start, start+delta, ... up to `limit` (included when is_closed).",
    )
)


# --- ZerosLike / OnesLike / Shape --------------------------------------------------------------
def _filled_like(fill: int) -> Any:
    return lambda ctx: [np.full(ctx.inputs[0].shape, fill, out_dtype(ctx))]


for _name, _fill in (("ZerosLike", 0), ("OnesLike", 1)):
    register_op_def(
        OpDef(
            _name,
            inputs=(inp("x", _ANY),),
            outputs=(out("y", _ANY),),
            infer=same_infer,
            reference=_filled_like(_fill),
            group="array",
            elementwise=True,
            scalar=ScalarBody(str(_fill)),
            doc=f"y = {_fill} with x's shape and type.",
        )
    )


def _shape_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    try:
        dtype = DataType(ctx.attrs["dtype"])
    except ValueError:
        raise InferError(f"dtype {ctx.attrs['dtype']} is not a DataType value") from None
    if dtype not in rules.INDEX:
        raise InferError(f"dtype must be DT_INT32 or DT_INT64, got {dtype.name}")
    rank = -1 if rules.is_unknown_rank(x._shape) else len(x._shape)
    return [rules.desc([rank], dtype)]


register_op_def(
    OpDef(
        "Shape",
        inputs=(inp("x", _ANY),),
        outputs=(out("y", rules.INDEX),),
        attrs=(attr("dtype", VT.VT_INT, int(DataType.DT_INT32)),),
        infer=_shape_infer,
        reference=lambda ctx: [np.array(ctx.inputs[0].shape, dtype=out_dtype(ctx))],
        group="array",
        doc="y = the dims of x, as a 1-D tensor of `dtype` (a raw ge::DataType).",
    )
)
