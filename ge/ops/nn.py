"""Neural-network ops: softmax, log-softmax, layer norm, bias add, and the matmul family
(with ``GEMM``, ``y = alpha * op(a) @ op(b) + beta * c``: its decisions are in its doc).

Decisions: softmax and layer norm on half types compute in float32 (GE's kernels do too);
``MatMul``/``MatMulV2`` take 2-D operands and ``BatchMatMulV2`` broadcasts batch dims like
numpy's ``matmul``; the int8 weight-offset path (``offset_w``) is refused at inference with a
clear error, since ge has no quantised matmul yet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph.types import AttrValueType, DataType
from ge.ops import _rules as rules
from ge.ops._define import attr, compute_float, inp, opt, out, out_dtype
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef, ScalarBody

__all__: list[str] = []

VT = AttrValueType
_MATMUL_TYPES = rules.FLOATS | {DataType.DT_INT32}


def _softmax_axes(ctx: InferContext | ExecContext, rank: int) -> list[int]:
    return rules.normalize_axes(ctx.attrs["axes"], rank)


def _softmax_infer(ctx: InferContext) -> list[Any]:
    x = ctx.inputs[0]
    if not rules.is_unknown_rank(x._shape):
        _softmax_axes(ctx, len(x._shape))
    half_to_float = ctx.attrs.get("half_to_float", False)
    dtype = (
        DataType.DT_FLOAT if half_to_float and x._data_type == DataType.DT_FLOAT16 else x._data_type
    )
    return [rules.desc(x._shape, dtype, x._format)]


def _log_softmax(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    shifted = x - np.max(x, axis=axes, keepdims=True)
    return np.asarray(shifted - np.log(np.sum(np.exp(shifted), axis=axes, keepdims=True)))


def _softmax_reference(log: bool) -> Any:
    def reference(ctx: ExecContext) -> list[Any]:
        x = ctx.inputs[0]
        axes = tuple(_softmax_axes(ctx, x.ndim)) if x.ndim else ()
        if x.size == 0 or not axes:
            y = np.zeros_like(x) if log else np.ones_like(x)
        else:
            y = compute_float(lambda a: _log_softmax(a, axes), x)
            if not log:
                y = np.exp(y)
        return [y.astype(out_dtype(ctx), copy=False)]

    return reference


register_op_def(
    OpDef(
        "SoftmaxV2",
        inputs=(inp("x", rules.FLOATS),),
        outputs=(out("y", rules.FLOATS),),
        attrs=(attr("axes", VT.VT_LIST_INT, [-1]), attr("half_to_float", VT.VT_BOOL, False)),
        infer=_softmax_infer,
        reference=_softmax_reference(log=False),
        group="nn",
        doc="y = exp(x) / sum(exp(x)) over `axes`, computed stably.",
    )
)
register_op_def(
    OpDef(
        "LogSoftmaxV2",
        inputs=(inp("logits", rules.FLOATS),),
        outputs=(out("logsoftmax", rules.FLOATS),),
        attrs=(attr("axes", VT.VT_LIST_INT, [-1]),),
        infer=_softmax_infer,
        reference=_softmax_reference(log=True),
        group="nn",
        doc="logsoftmax = logits - log(sum(exp(logits))) over `axes`.",
    )
)


def _layer_norm_axes(ctx: InferContext | ExecContext, rank: int) -> tuple[int, int]:
    norm = rules.normalize_axis(ctx.attrs["begin_norm_axis"], rank, "begin_norm_axis")
    params = rules.normalize_axis(ctx.attrs["begin_params_axis"], rank, "begin_params_axis")
    return norm, params


def _layer_norm_infer(ctx: InferContext) -> list[Any]:
    x, gamma, beta = ctx.inputs
    shape = list(x._shape)
    if rules.is_unknown_rank(shape):
        unknown = rules.desc(rules.UNKNOWN_RANK, x._data_type, x._format)
        return [unknown, unknown._clone(), unknown._clone()]
    if not shape:
        raise InferError("x must have at least one dim")
    norm, params = _layer_norm_axes(ctx, len(shape))
    for name, d in (("gamma", gamma), ("beta", beta)):
        rules.broadcast_shapes(shape[params:], d._shape)
        if len(d._shape) > len(shape) - params:
            raise InferError(f"{name} {list(d._shape)} has more dims than x{shape}[{params}:]")
    stat = shape[:norm] + [1] * (len(shape) - norm)
    return [
        rules.desc(shape, x._data_type, x._format),
        rules.desc(stat, x._data_type, x._format),
        rules.desc(stat, x._data_type, x._format),
    ]


def _layer_norm_reference(ctx: ExecContext) -> list[Any]:
    x, gamma, beta = ctx.inputs
    norm, _ = _layer_norm_axes(ctx, x.ndim)
    axes = tuple(range(norm, x.ndim))
    eps = ctx.attrs["epsilon"]

    def compute(a: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mean = np.mean(a, axis=axes, keepdims=True)
        var = np.mean(np.square(a - mean), axis=axes, keepdims=True)
        return np.stack(
            [
                (a - mean) / np.sqrt(var + eps) * g + b,
                np.broadcast_to(mean, a.shape),
                np.broadcast_to(var, a.shape),
            ]
        )

    y, mean, var = compute_float(compute, x, gamma, beta)
    dtype = out_dtype(ctx)
    # The statistics keep x's dims before begin_norm_axis and 1 after it, read from x itself:
    # a recorded output shape may hold unknown (-1) dims.
    index = tuple(slice(0, 1) if i >= norm else slice(None) for i in range(x.ndim))
    return [y.astype(dtype), mean[index].astype(dtype), var[index].astype(dtype)]


register_op_def(
    OpDef(
        "LayerNorm",
        inputs=(inp("x", rules.FLOATS), inp("gamma", rules.FLOATS), inp("beta", rules.FLOATS)),
        outputs=(out("y", rules.FLOATS), out("mean", rules.FLOATS), out("variance", rules.FLOATS)),
        attrs=(
            attr("begin_norm_axis", VT.VT_INT, 0),
            attr("begin_params_axis", VT.VT_INT, 0),
            attr("epsilon", VT.VT_FLOAT, 1e-7),
        ),
        infer=_layer_norm_infer,
        reference=_layer_norm_reference,
        group="nn",
        doc="y = (x - mean) / sqrt(variance + epsilon) * gamma + beta, statistics over the axes "
        "from begin_norm_axis on; also returns mean and variance (kept dims).",
    )
)


def _channel_axis(data_format: str, rank: int) -> int:
    if data_format not in ("NHWC", "NCHW", "ND", "NDHWC", "NCDHW"):
        raise InferError(f"data_format must be NHWC, NCHW, NDHWC, NCDHW or ND, got {data_format!r}")
    return 1 if data_format.startswith("NC") and rank > 1 else rank - 1


def _bias_size(shape: list[int]) -> int | None:
    """The element count of a 1-D bias (``-1`` when unknown, an unknown rank included);
    ``None`` when it is not 1-D."""
    if rules.is_unknown_rank(shape):
        return -1
    return shape[0] if len(shape) == 1 else None


def _bias_add_infer(ctx: InferContext) -> list[Any]:
    x, bias = ctx.inputs
    shape = list(x._shape)
    if not rules.is_unknown_rank(shape):
        if not shape:
            raise InferError("x must have at least one dim")
        channel = shape[_channel_axis(ctx.attrs["data_format"], len(shape))]
        size = _bias_size(list(bias._shape))
        if size is None or (-1 not in (channel, size) and channel != size):
            raise InferError(f"bias must be 1-D with {channel} elements, got {list(bias._shape)}")
    return [rules.desc(shape, rules.promote_types(x._data_type, bias._data_type), x._format)]


def _bias_add_reference(ctx: ExecContext) -> list[Any]:
    x, bias = ctx.inputs
    axis = _channel_axis(ctx.attrs["data_format"], x.ndim)
    shape = [1] * x.ndim
    shape[axis] = bias.shape[0]
    dtype = out_dtype(ctx)
    y = compute_float(np.add, x.astype(dtype), bias.reshape(shape).astype(dtype))
    return [y.astype(dtype, copy=False)]


register_op_def(
    OpDef(
        "BiasAdd",
        inputs=(inp("x", rules.REAL), inp("bias", rules.REAL)),
        outputs=(out("y", rules.REAL),),
        attrs=(attr("data_format", VT.VT_STRING, "NHWC"),),
        infer=_bias_add_infer,
        reference=_bias_add_reference,
        group="nn",
        elementwise=True,
        # the bias broadcasts along the data_format's channel axis, not numpy's way: not fused
        scalar=ScalarBody("a + b", numpy_broadcast=False),
        doc="y = x + bias along the channel dim of data_format (last for NHWC/ND, 1 for NCHW).",
    )
)


def _matmul_dims(a: list[int], b: list[int], ta: bool, tb: bool) -> tuple[int, int]:
    m, k1 = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if -1 not in (k1, k2) and k1 != k2:
        raise InferError(f"contracted dims differ: {k1} vs {k2}")
    return m, n


def _matmul_infer(batched: bool, flags: tuple[str, str]) -> Any:
    def infer(ctx: InferContext) -> list[Any]:
        x1, x2, bias = ctx.inputs[:3]
        if len(ctx.inputs) > 3 and ctx.inputs[3] is not None:
            raise InferError("offset_w (int8 weight offsets) is not supported by ge")
        a, b = list(x1._shape), list(x2._shape)
        dtype = rules.promote_types(x1._data_type, x2._data_type)
        if rules.is_unknown_rank(a) or rules.is_unknown_rank(b):
            return [rules.desc(rules.UNKNOWN_RANK, dtype, x1._format)]
        if (len(a) != 2 or len(b) != 2) if not batched else (len(a) < 2 or len(b) < 2):
            need = "at least 2-D" if batched else "2-D"
            raise InferError(f"x1 and x2 must be {need}, got {a} and {b}")
        m, n = _matmul_dims(a, b, ctx.attrs[flags[0]], ctx.attrs[flags[1]])
        shape = [*rules.broadcast_shapes(a[:-2], b[:-2]), m, n]
        if bias is not None:
            shape = rules.broadcast_shapes(shape, bias._shape)
        return [rules.desc(shape, dtype, x1._format)]

    return infer


def _matmul_reference(flags: tuple[str, str]) -> Any:
    def reference(ctx: ExecContext) -> list[Any]:
        x1, x2, bias = ctx.inputs[:3]
        dtype = out_dtype(ctx)
        if ctx.attrs[flags[0]]:
            x1 = np.swapaxes(x1, -1, -2)
        if ctx.attrs[flags[1]]:
            x2 = np.swapaxes(x2, -1, -2)
        compute = np.float32 if dtype.itemsize < 4 and dtype.kind == "f" else dtype
        y = np.matmul(x1.astype(compute), x2.astype(compute))
        if bias is not None:
            y = y + bias.astype(compute)
        return [y.astype(dtype)]

    return reference


_TRANSPOSE = ("transpose_x1", "transpose_x2")
_ADJ = ("adj_x1", "adj_x2")
register_op_def(
    OpDef(
        "MatMul",
        inputs=(inp("x1", _MATMUL_TYPES), inp("x2", _MATMUL_TYPES), opt("bias", _MATMUL_TYPES)),
        outputs=(out("y", _MATMUL_TYPES),),
        attrs=(attr("transpose_x1", VT.VT_BOOL, False), attr("transpose_x2", VT.VT_BOOL, False)),
        infer=_matmul_infer(False, _TRANSPOSE),
        reference=_matmul_reference(_TRANSPOSE),
        group="nn",
        doc="y = op(x1) @ op(x2) (+ bias), 2-D, op = transpose when the flag is set.",
    )
)
for _name, _flags, _batched in (("MatMulV2", _TRANSPOSE, False), ("BatchMatMulV2", _ADJ, True)):
    register_op_def(
        OpDef(
            _name,
            inputs=(
                inp("x1", _MATMUL_TYPES),
                inp("x2", _MATMUL_TYPES),
                opt("bias", _MATMUL_TYPES),
                opt("offset_w", {DataType.DT_INT8}),
            ),
            outputs=(out("y", _MATMUL_TYPES),),
            attrs=(
                attr(_flags[0], VT.VT_BOOL, False),
                attr(_flags[1], VT.VT_BOOL, False),
                attr("offset_x", VT.VT_INT, 0),
            ),
            infer=_matmul_infer(_batched, _flags),
            reference=_matmul_reference(_flags),
            group="nn",
            doc="y = op(x1) @ op(x2) (+ bias)"
            + (", batch dims broadcast." if _batched else ", 2-D."),
        )
    )


# GEMM: y = alpha * (op(a) @ op(b)) + beta * c, GE's fused form of MatMul + Add (fusion passes
# rewrite MatMul(a, b) + c into GEMM(a, b, c, 1.0, 1.0)).
_GEMM_AB = frozenset(
    {
        DataType.DT_FLOAT16,
        DataType.DT_FLOAT,
        DataType.DT_DOUBLE,
        DataType.DT_INT8,
        DataType.DT_INT32,
    }
)
_GEMM_C = _GEMM_AB - {DataType.DT_INT8}


_GEMM_DOC = """y = alpha * (op(a) @ op(b)) + beta * c; a and b 2-D, op = transpose when the flag
is set.

Decisions: c may be any shape that broadcasts the numpy way to [M, N] without growing it
([M, N], [N], [1, N], [M, 1], [1], []), where GE requires [M, N]. alpha and beta have shape
[] or [1] and are read when the graph runs (Consts or graph inputs). Types: a and b float16,
float32, float64, int8 or int32; c float16, float32, float64 or int32; y is the promoted type
of a, b and c, so int8 a and b with an int32 c give int32 (GE's quantised form). alpha and
beta are cast to y's compute type and must be int32 when y is int32 (a float scale would
truncate). bfloat16 is left out, as GE leaves it out. Half types compute in float32 as MatMul
does, int32 wraps on overflow, and beta = 0 still reads c (a NaN in c stays NaN, unlike BLAS).
Errors (``InferError``, naming the input): a or b not 2-D, their contracted dims differing,
c not broadcasting to [M, N], alpha or beta not a scalar, a type outside these sets."""


def _gemm_operand(name: str, shape: list[int]) -> list[int]:
    if rules.is_unknown_rank(shape):
        return [-1, -1]
    if len(shape) != 2:
        raise InferError(f"{name} must be 2-D, got {shape}")
    return shape


def _gemm_scalar(name: str, shape: list[int]) -> None:
    if rules.is_unknown_rank(shape) or shape in ([], [1], [-1]):
        return
    raise InferError(f"{name} must be a scalar (shape [] or [1]), got {shape}")


def _gemm_c_shape(c: list[int], mn: list[int]) -> list[int]:
    """[M, N] with unknown dims taken from ``c`` where it has them; ``c`` must broadcast to
    [M, N] the numpy way without growing it."""
    if rules.is_unknown_rank(c):
        return mn
    fits = len(c) <= 2 and all(
        d in (1, -1) or o in (-1, d) for d, o in zip(reversed(c), reversed(mn), strict=False)
    )
    if not fits:
        raise InferError(f"c {c} does not broadcast to [M, N] = {mn}")
    return rules.broadcast_shapes(mn, c)


def _gemm_infer(ctx: InferContext) -> list[Any]:
    a, b, c, alpha, beta = ctx.inputs
    ta, tb = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"]
    sa, sb = _gemm_operand("a", list(a._shape)), _gemm_operand("b", list(b._shape))
    ka, kb = sa[0 if ta else 1], sb[1 if tb else 0]
    if -1 not in (ka, kb) and ka != kb:
        raise InferError(
            f"the contracted dims differ: a gives K={ka} (transpose_a={ta}), "
            f"b gives K={kb} (transpose_b={tb})"
        )
    _gemm_scalar("alpha", list(alpha._shape))
    _gemm_scalar("beta", list(beta._shape))
    shape = _gemm_c_shape(list(c._shape), list(_matmul_dims(sa, sb, ta, tb)))
    dtype = rules.promote_types(a._data_type, b._data_type, c._data_type)
    if dtype in rules.INTS:
        for name, d in (("alpha", alpha), ("beta", beta)):
            if d._data_type not in rules.INTS:
                raise InferError(
                    f"{name} must be DT_INT32 when y is {dtype.name} (a float scale would "
                    f"truncate), got {d._data_type.name}"
                )
    return [rules.desc(shape, dtype, a._format)]


def _gemm_reference(ctx: ExecContext) -> list[Any]:
    a, b, c, alpha, beta = ctx.inputs
    dtype = out_dtype(ctx)
    compute = np.float32 if dtype.itemsize < 4 and dtype.kind == "f" else dtype
    a = a.T if ctx.attrs["transpose_a"] else a
    b = b.T if ctx.attrs["transpose_b"] else b
    with np.errstate(all="ignore"):  # int32 wraps, float32 may overflow
        acc = np.matmul(a.astype(compute), b.astype(compute))
        scale = [np.asarray(s).astype(compute).reshape(()) for s in (alpha, beta)]
        y = scale[0] * acc + scale[1] * c.astype(compute)
    return [np.broadcast_to(y, acc.shape).astype(dtype)]


register_op_def(
    OpDef(
        "GEMM",
        inputs=(
            inp("a", _GEMM_AB),
            inp("b", _GEMM_AB),
            inp("c", _GEMM_C),
            inp("alpha", _GEMM_C),
            inp("beta", _GEMM_C),
        ),
        outputs=(out("y", _GEMM_C),),
        attrs=(attr("transpose_a", VT.VT_BOOL, False), attr("transpose_b", VT.VT_BOOL, False)),
        infer=_gemm_infer,
        reference=_gemm_reference,
        group="nn",
        doc=_GEMM_DOC,
    )
)
