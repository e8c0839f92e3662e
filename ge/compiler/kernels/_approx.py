"""Vectorisable float32 exp, log, sin, cos, tanh and erf for generated kernels.

LLVM does not vectorise a loop that calls libm (``expf``, ``sinf``, ...), so kernels call these
instead: straight-line Numba scalar functions (inlined into the kernel before LLVM sees it) with
no branches in the hot path (special cases are computed alongside and picked with selects), no
calls, no exceptions and no allocation, so ``for i in range(n): out[i] = exp_f32(x[i])``
compiles to AVX2/AVX-512 code. ``APPROX`` maps the libm spelling in kernel source to the helper.

Measured accuracy, in ULP (distance between the float32 bit patterns read as ordered integers,
so +0 and -0 are 0 apart): against the correctly rounded result (libm's float64 result rounded
to float32; math.erf for erf) and against numpy's float32 ufunc, whose own error is given for
comparison (numpy 2.4 on an AVX-512 CPU; numpy's float32 code differs by version and CPU). Every
one of the 2**32 float32 inputs was measured (tests/compiler/test_approx.py, ``-m slow``).

========  ===================  ==========  ========  ============
function  domain               vs rounded  vs numpy  numpy's own
========  ===================  ==========  ========  ============
exp_f32   all                  1           3         3
log_f32   all                  1           4         4
sin_f32   abs(x) < 2**33       1           1         1
cos_f32   abs(x) < 2**33       1           1         1
tanh_f32  all                  2           2         1
erf_f32   all                  2           --        --
========  ===================  ==========  ========  ============

Special values follow numpy float32: exp(-inf) = 0, exp(inf) = inf, exp(x) = inf from 88.72284
up, subnormal results below -87.33655 correctly rounded, 0 from -103.972084 down; log(+-0) =
-inf, log(x < 0) = nan, log(inf) = inf, subnormal inputs as accurate as normal ones;
sin/cos(+-inf) = nan; tanh(+-inf) = +-1, erf(+-inf) = +-1; sin, tanh and erf keep the sign of
zero (and of subnormal inputs, which they return unchanged); nan gives nan.

sin and cos reduce the argument modulo pi/2 in float64: j = round(x * 2/pi), r = x - j * pi/2
(Cody-Waite, pi/2 split into 21 + 21 + 53 bits, so j times each of the first two parts is exact
for j < 2**32, which covers abs(x) < 2**33 = 8.6e9), then evaluate FreeBSD's float kernels
(k_sinf.c, k_cosf.c; error < 2**-34 on [-pi/4, pi/4]) in float64. For abs(x) >= 2**33 the
reduction is not exact: the result is finite and within [-1, 1] but has no accuracy at all
(numpy reduces exactly at every size; use libm for such arguments).

Imported only when a kernel is compiled (it imports Numba).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types as nt
from numba.extending import intrinsic

__all__ = [
    "APPROX",
    "APPROX_HELPERS",
    "cos_f32",
    "erf_f32",
    "exp_f32",
    "log_f32",
    "sin_f32",
    "tanh_f32",
]

_F = np.float32
_D = np.float64
_U = np.uint32


@intrinsic  # type: ignore[untyped-decorator]
def _f64_bits(typingctx: Any, x: Any) -> Any:
    """The IEEE bits of a float64, as uint64 (a register bit-cast)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return nt.uint64(nt.float64), codegen


@intrinsic  # type: ignore[untyped-decorator]
def _div(typingctx: Any, a: Any, b: Any) -> Any:
    """float32 a / b as one IEEE division: no zero-divisor check (Numba adds one, with an
    exception, under its default error model, and that stops vectorisation)."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.fdiv(args[0], args[1])

    return nt.float32(nt.float32, nt.float32), codegen


# --- exp --------------------------------------------------------------------------------------
# exp(x) = 2**n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite
# with ln 2 = _LN2_HI + _LN2_LO, _LN2_HI having 15 bits so n * _LN2_HI is exact), exp(r) by
# Cephes' expf polynomial. 2**n is applied as two factors 2**(n//2) * 2**(n - n//2), both normal,
# so results round once into the subnormal range and overflow exactly when exp(x) does.
_EXP_HI = _F(89.0)  # exp(89) > FLT_MAX: clamping here still overflows
_EXP_LO = _F(-104.0)  # exp(-104) < 2**-150 rounds to 0: clamping here still underflows
_LOG2E = _F(1.4426950408889634)
_LN2_HI = _F(0.693145751953125)
_LN2_LO = _F(1.428606765330187e-06)
_ROUND_F32 = _F(12582912.0)  # 1.5 * 2**23: t + it rounds t to an integer kept in the low bits
_EXP_N_BITS = _U(0x4B400000 - 150)  # f32_bits(t) - this = n + 150
_EXP_P = (
    _F(1.9875691500e-4),
    _F(1.3981999507e-3),
    _F(8.3334519073e-3),
    _F(4.1665795894e-2),
    _F(1.6666665459e-1),
    _F(5.0000001201e-1),
)
_ONE = _F(1.0)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def exp_f32(x: float) -> Any:
    """e**x for float32 ``x`` (max error 1 ULP)."""
    x = _F(x)
    xc = _EXP_HI if x > _EXP_HI else x  # nan passes through both clamps
    xc = _EXP_LO if xc < _EXP_LO else xc
    t = xc * _LOG2E + _ROUND_F32
    n = t - _ROUND_F32
    r = xc - n * _LN2_HI
    r = r - n * _LN2_LO
    z = r * r
    p = _EXP_P[0] * r + _EXP_P[1]
    p = p * r + _EXP_P[2]
    p = p * r + _EXP_P[3]
    p = p * r + _EXP_P[4]
    p = p * r + _EXP_P[5]
    p = p * z + r + _ONE
    # u = n + 150 in [0, 278]; 2**n = 2**(h - 75) * 2**(u - h - 75) with h = u // 2
    u = _U(f32_bits(t) - _EXP_N_BITS)
    h = u >> _U(1)
    s1 = bits_f32(_U((h + _U(52)) << _U(23)))
    s2 = bits_f32(_U((u - h + _U(52)) << _U(23)))
    return p * s1 * s2


# --- log --------------------------------------------------------------------------------------
# x = 2**k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)) taken from the bits (musl's trick);
# log(1 + f) by Cephes' logf polynomial; k ln 2 added in two parts. Subnormals are scaled by
# 2**23 first. Non-positive, infinite and nan inputs are patched in by the final selects.
_SQRT_HALF_BITS = _U(0x3F3504F3)
_LOG_SHIFT = _U(0x3F800000 - 0x3F3504F3)
_MANT_MASK = _U(0x007FFFFF)
_EXP_AS_FLOAT = _U(0x4B000000)  # bits of 2**23: OR-ing in an integer < 2**23 adds it
_EXP_AS_FLOAT_BIAS = _F(8388608.0 + 127.0)
_TINY = _F(1.1754943508222875e-38)  # smallest normal float32
_TWO_23 = _F(8388608.0)
_LOG_P = (
    _F(7.0376836292e-2),
    _F(-1.1514610310e-1),
    _F(1.1676998740e-1),
    _F(-1.2420140846e-1),
    _F(1.4249322787e-1),
    _F(-1.6668057665e-1),
    _F(2.0000714765e-1),
    _F(-2.4999993993e-1),
    _F(3.3333331174e-1),
)
_LOG_C1 = _F(0.693359375)
_LOG_C2 = _F(-2.12194440e-4)
_HALF = _F(0.5)
_INF = _F(np.inf)
_NAN = _F(np.nan)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def log_f32(x: float) -> Any:
    """Natural logarithm of float32 ``x`` (max error 1 ULP)."""
    x = _F(x)
    sub = x < _TINY
    xs = x * _TWO_23 if sub else x
    # the bits of xs moved so that [sqrt(1/2), sqrt(2)) is one binade: exponent k + 127, and
    # the mantissa of 1 + f once 0x3F3504F3 is added back (unsigned 32-bit math vectorises best)
    u = _U(f32_bits(xs) + _LOG_SHIFT)
    e = bits_f32(_U((u >> _U(23)) | _EXP_AS_FLOAT)) - _EXP_AS_FLOAT_BIAS
    k = e - (_F(23.0) if sub else _F(0.0))
    f = bits_f32(_U((u & _MANT_MASK) + _SQRT_HALF_BITS)) - _ONE
    z = f * f
    p = _LOG_P[0] * f + _LOG_P[1]
    p = p * f + _LOG_P[2]
    p = p * f + _LOG_P[3]
    p = p * f + _LOG_P[4]
    p = p * f + _LOG_P[5]
    p = p * f + _LOG_P[6]
    p = p * f + _LOG_P[7]
    p = p * f + _LOG_P[8]
    y = f * z * p
    y = y + k * _LOG_C2
    y = y - _HALF * z
    r = f + y
    r = r + k * _LOG_C1
    r = r if x < _INF else x  # inf -> inf, nan -> nan
    return r if x > 0 else (-_INF if x == 0 else _NAN)


# --- sin, cos ---------------------------------------------------------------------------------
# j = round(x * 2/pi) and r = x - j pi/2 in float64, pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 with the
# first two parts of 21 bits: for abs(x) < 2**33, j < 2**32 and j * part is exact, and so are
# both subtractions (their operands lie on a 2**-42 grid and the differences stay below 2**11);
# only the last step rounds, by about 2**-53 of r. Then sin(r) or cos(r), picked by the
# quadrant j mod 4 read from the bits of the rounding sum. r is clamped so that arguments past
# the exact range (and past 2**51, where the rounding trick breaks) still give finite results
# in [-1, 1].
_TWO_OVER_PI = 0.6366197723675814
_ROUND_F64 = 6755399441055744.0  # 1.5 * 2**52
_PIO2_1 = 1.570796012878418  # 0x1.921fbp+0
_PIO2_2 = 3.139164164167596e-07  # 0x1.5110bp-22
_PIO2_3 = 6.223372171896613e-14  # 0x1.18469898cc517p-44
_R_MAX = 0.7854  # pi/4 plus rounding slack; the polynomials hold to 0.79
# FreeBSD k_sinf.c / k_cosf.c: |sin(r)/r - s(r)| < 2**-37.5, |cos(r) - c(r)| < 2**-34.1.
_S1 = -0.166666666416265235595
_S2 = 0.0083333293858894631756
_S3 = -0.000198393348360966317347
_S4 = 0.0000027183114939898219064
_C0 = -0.499999997251031003120
_C1 = 0.0416666233237390631894
_C2 = -0.00138867637746099294692
_C3 = 0.0000243904487962774090654


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def _sin_quadrant(x: float, shift: int) -> Any:
    """sin(x + shift * pi/2) for float32 ``x``, in float32."""
    xd = _D(x)
    t = xd * _TWO_OVER_PI + _ROUND_F64
    j = t - _ROUND_F64
    q = (_f64_bits(t) + np.uint64(shift)) & np.uint64(3)
    r = xd - j * _PIO2_1
    r = r - j * _PIO2_2
    r = r - j * _PIO2_3
    r = _R_MAX if r > _R_MAX else r  # nan passes through both clamps
    r = -_R_MAX if r < -_R_MAX else r
    z = r * r
    s = r * (1.0 + z * (_S1 + z * (_S2 + z * (_S3 + z * _S4))))  # keeps the sign of r = -0
    c = 1.0 + z * _C0 + z * z * (_C1 + z * (_C2 + z * _C3))
    v = c if (q & np.uint64(1)) != 0 else s
    v = -v if q >= np.uint64(2) else v
    return _F(v)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def sin_f32(x: float) -> Any:
    """sin(x) for float32 ``x`` (max error 1 ULP for abs(x) < 2**33)."""
    return _sin_quadrant(_F(x), 0)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def cos_f32(x: float) -> Any:
    """cos(x) for float32 ``x`` (max error 1 ULP for abs(x) < 2**33)."""
    return _sin_quadrant(_F(x), 1)


# --- tanh -------------------------------------------------------------------------------------
# abs(x) < 0.625: Cephes' tanhf odd polynomial; above: (1 - e) / (1 + e) with e = exp(-2 abs(x))
# (e -> 0 gives exactly 1 past abs(x) ~ 9). The sign of x is copied back at the end.
_TANH_SPLIT = _F(0.625)
_TANH_P = (
    _F(-5.70498872745e-3),
    _F(2.06390887954e-2),
    _F(-5.37397155531e-2),
    _F(1.33314422036e-1),
    _F(-3.33332819422e-1),
)
_MINUS_TWO = _F(-2.0)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def tanh_f32(x: float) -> Any:
    """tanh(x) for float32 ``x`` (max error 2 ULP)."""
    x = _F(x)
    a = abs(x)
    z = a * a
    p = _TANH_P[0] * z + _TANH_P[1]
    p = p * z + _TANH_P[2]
    p = p * z + _TANH_P[3]
    p = p * z + _TANH_P[4]
    small = a + a * z * p
    e = exp_f32(a * _MINUS_TWO)
    large = _div(_ONE - e, _ONE + e)
    return math.copysign(small if a < _TANH_SPLIT else large, x)


# --- erf --------------------------------------------------------------------------------------
# abs(x) < 1: x + x Q(x**2) with Q(x**2) ~ erf(x)/x - 1 (rel. error 2**-27.8 after rounding the
# coefficients to float32). abs(x) >= 1: 1 - exp(-x**2) R(u), u = 1 / (1 + 0.6 abs(x)), with
# R ~ exp(x**2) erfc(x) on [1, 4] (rel. error 2**-31.8); abs(x) is clamped to 4, where the
# result already rounds to 1. Coefficients fitted for this module (weighted least squares
# iterated to minimax, each coefficient rounded to float32 before refitting the rest).
_ERF_SPLIT = _F(1.0)
_ERF_CLAMP = _F(4.0)
_ERF_U = _F(0.6)
_ERF_Q = (
    _F(0.12837916612625122),
    _F(-0.3761262595653534),
    _F(0.1128358542919159),
    _F(-0.026853810995817184),
    _F(0.00518832728266716),
    _F(-0.0008010192541405559),
    _F(7.853859278839082e-05),
)
_ERFC_R = (
    _F(-3.639115675468929e-05),
    _F(0.339371919631958),
    _F(0.3295590877532959),
    _F(0.3317253589630127),
    _F(-0.05224619060754776),
    _F(0.5254373550415039),
    _F(-0.9235824346542358),
    _F(0.5894638895988464),
    _F(-0.1398463100194931),
)


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def erf_f32(x: float) -> Any:
    """erf(x) for float32 ``x`` (max error 2 ULP)."""
    x = _F(x)
    a = abs(x)
    z = a * a
    q = _ERF_Q[6] * z + _ERF_Q[5]
    q = q * z + _ERF_Q[4]
    q = q * z + _ERF_Q[3]
    q = q * z + _ERF_Q[2]
    q = q * z + _ERF_Q[1]
    q = q * z + _ERF_Q[0]
    small = a + a * q
    ac = _ERF_CLAMP if a > _ERF_CLAMP else a  # nan passes through
    u = _div(_ONE, _ONE + _ERF_U * ac)
    r = _ERFC_R[8] * u + _ERFC_R[7]
    r = r * u + _ERFC_R[6]
    r = r * u + _ERFC_R[5]
    r = r * u + _ERFC_R[4]
    r = r * u + _ERFC_R[3]
    r = r * u + _ERFC_R[2]
    r = r * u + _ERFC_R[1]
    r = r * u + _ERFC_R[0]
    large = _ONE - exp_f32(-(ac * ac)) * r
    return math.copysign(small if a < _ERF_SPLIT else large, x)


APPROX: dict[str, str] = {
    "math.exp": "exp_f32",
    "math.log": "log_f32",
    "math.sin": "sin_f32",
    "math.cos": "cos_f32",
    "math.tanh": "tanh_f32",
    "math.erf": "erf_f32",
}

APPROX_HELPERS: dict[str, Any] = {
    "exp_f32": exp_f32,
    "log_f32": log_f32,
    "sin_f32": sin_f32,
    "cos_f32": cos_f32,
    "tanh_f32": tanh_f32,
    "erf_f32": erf_f32,
}

# Imported last, not first: _scalar imports this module at its end (to add APPROX_HELPERS to its
# HELPERS), and either may be imported first. Numba resolves these names when a kernel compiles.
from ge.compiler.kernels._scalar import bits_f32, f32_bits  # noqa: E402
