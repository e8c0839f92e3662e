"""``ge.compiler.kernels._approx``: the float32 exp/log/sin/cos/tanh/erf that kernels call.

Accuracy is measured in ULP against the correctly rounded result (libm's float64 result rounded
to float32) and against numpy's float32 ufunc, with the bounds of the table in the module
docstring (one ``Case`` per function here; a test checks that the two agree). The default tier
sweeps ~4.2M bit patterns evenly spaced over all 2**32 (every sign, binade and subnormal range,
nan and inf included); ``-m slow`` sweeps every pattern. Special values and thresholds are
checked bit for bit where the result is 0, inf, nan, +-1 or x itself. A standalone kernel
calling all six runs on ge's runtime, gives the bits of the plain Numba loop, and is vectorised
(vector float types, no libm call left in it).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pytest

from ge import runtime
from ge.compiler.kernels import _approx
from ge.compiler.kernels._codegen import kernel_from_source
from ge.compiler.kernels._scalar import HELPERS, bits_f32, f32_bits

NAMES = ("exp", "log", "sin", "cos", "tanh", "erf")
DENSE_STEP = 1021  # odd, so the sweep visits every low-bit pattern of the mantissa
SLOW_CHUNK = 1 << 24


@dataclass(frozen=True)
class Case:
    name: str
    bound: float  # abs(x) below which the ULP bounds hold (inf: everywhere)
    ulp: int  # max ULP vs the correctly rounded result
    ulp_numpy: int | None  # max ULP vs numpy's float32 ufunc (None: numpy has none)
    numpy_own: int | None  # numpy's own max ULP vs the correctly rounded result, as documented


CASES = {
    c.name: c
    for c in (
        Case("exp", math.inf, 1, 3, 3),
        Case("log", math.inf, 1, 4, 4),
        Case("sin", 2.0**33, 1, 1, 1),
        Case("cos", 2.0**33, 1, 1, 1),
        Case("tanh", math.inf, 2, 2, 1),
        Case("erf", math.inf, 2, None, None),
    )
}


# --- compiled helpers ---------------------------------------------------------------------------
@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def _ordered(x: float) -> Any:
    """float32 bits as an integer ordered like the floats (+0 and -0 both 0)."""
    b = np.int64(f32_bits(x))
    return b if b < 2**31 else 2**31 - b


@numba.njit(inline="always")  # type: ignore[untyped-decorator]
def _ulp(a: float, b: float) -> Any:
    if math.isnan(a) or math.isnan(b):
        return 0 if (math.isnan(a) and math.isnan(b)) else 1 << 40
    return abs(_ordered(a) - _ordered(b))


@functools.cache
def _values(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """A Numba loop applying ``<name>_f32`` to a float32 array (the loop LLVM vectorises)."""
    fn = getattr(_approx, f"{name}_f32")

    @numba.njit(nogil=True)  # type: ignore[untyped-decorator]
    def values(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            out[i] = fn(x[i])

    def apply(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        values(x, out)
        return out

    apply.compiled = values  # type: ignore[attr-defined]
    return apply


@functools.cache
def _sweeper(name: str) -> Callable[..., Any]:
    """``sweep(lo, count, step, bound, ref_numpy)``: over the bit patterns ``lo + i * step``,
    the max ULP vs rounded libm and its pattern, the max ULP vs ``ref_numpy`` (an array of
    numpy's float32 results, or empty) and its index, numpy's own max ULP vs rounded libm, and
    how many finite x with ``abs(x) >= bound`` gave a non-finite result or one outside [-1, 1]."""
    fn = getattr(_approx, f"{name}_f32")
    libm = getattr(math, name)

    @numba.njit(nogil=True)  # type: ignore[untyped-decorator]
    def sweep(lo: int, count: int, step: int, bound: float, ref_numpy: np.ndarray) -> Any:
        worst = np.int64(0)
        worst_bits = np.uint32(0)
        worst_np = np.int64(0)
        worst_np_at = np.int64(0)
        numpy_own = np.int64(0)
        wild = np.int64(0)
        for i in range(count):
            u = np.uint32((lo + i * step) & 0xFFFFFFFF)
            x = bits_f32(u)
            y = fn(x)
            if abs(x) < bound or math.isnan(x):
                rounded = np.float32(libm(np.float64(x)))
                e = _ulp(y, rounded)
                if e > worst:
                    worst, worst_bits = e, u
                if ref_numpy.size:
                    e = _ulp(y, ref_numpy[i])
                    if e > worst_np:
                        worst_np, worst_np_at = e, i
                    numpy_own = max(numpy_own, _ulp(ref_numpy[i], rounded))
            elif abs(x) < np.inf and not abs(y) <= 1.0:
                wild += 1
        return worst, worst_bits, worst_np, worst_np_at, numpy_own, wild

    return sweep  # type: ignore[no-any-return]


def _bits(lo: int, count: int, step: int) -> np.ndarray:
    return (lo + np.arange(count, dtype=np.uint64) * step).astype(np.uint32).view(np.float32)


def _numpy(name: str, x: np.ndarray) -> np.ndarray:
    if CASES[name].ulp_numpy is None:
        return np.empty(0, np.float32)
    with np.errstate(all="ignore"):
        out: np.ndarray = getattr(np, name)(x)
    return out


@dataclass(frozen=True)
class Sweep:
    worst: int  # max ULP vs the correctly rounded result
    where: float
    worst_numpy: int  # max ULP vs numpy float32
    where_numpy: float
    numpy_own: int  # numpy's max ULP vs the correctly rounded result
    wild: int  # finite inputs past the bound with a result not in [-1, 1]

    @staticmethod
    def merge(parts: list[Sweep]) -> Sweep:
        worst = max(parts, key=lambda p: p.worst)
        worst_numpy = max(parts, key=lambda p: p.worst_numpy)
        return Sweep(
            worst.worst,
            worst.where,
            worst_numpy.worst_numpy,
            worst_numpy.where_numpy,
            max(p.numpy_own for p in parts),
            sum(p.wild for p in parts),
        )


def _sweep(name: str, lo: int, count: int, step: int) -> Sweep:
    x = _bits(lo, count, step)
    ref = _numpy(name, x)
    worst, bits, worst_np, at, own, wild = _sweeper(name)(lo, count, step, CASES[name].bound, ref)
    where = float(np.uint32(bits).view(np.float32))
    return Sweep(int(worst), where, int(worst_np), float(x[at]), int(own), int(wild))


def _numpy_allowance(case: Case, numpy_own: int) -> int:
    """The documented ULP bound vs numpy, unless this numpy is less accurate than the one the
    table was measured with (its float32 code varies by version and CPU): then our bound plus
    its own error."""
    assert case.ulp_numpy is not None and case.numpy_own is not None
    if numpy_own <= case.numpy_own:
        return case.ulp_numpy
    return max(case.ulp_numpy, case.ulp + numpy_own)


def _check(name: str, sweep: Sweep) -> None:
    case = CASES[name]
    assert sweep.worst <= case.ulp, f"{name}_f32: {sweep.worst} ULP at x = {sweep.where!r}"
    if case.ulp_numpy is not None:
        assert sweep.worst_numpy <= _numpy_allowance(case, sweep.numpy_own), (
            f"{name}_f32 vs numpy: {sweep.worst_numpy} ULP at {sweep.where_numpy!r}"
        )
    assert sweep.wild == 0, f"{name}_f32: {sweep.wild} finite inputs past the bound left [-1, 1]"


# --- accuracy -----------------------------------------------------------------------------------
def test_docstring_table_states_the_tested_bounds() -> None:
    assert _approx.__doc__ is not None
    pattern = r"^(\w+)_f32 +(.+?) {2,}(\d+) +(\d+|--) +(\d+|--)\s*$"
    rows = re.findall(pattern, _approx.__doc__, re.M)

    def number(text: str) -> int | None:
        return None if text == "--" else int(text)

    table = {row[0]: tuple(number(v) for v in row[2:]) for row in rows}
    assert table == {c.name: (c.ulp, c.ulp_numpy, c.numpy_own) for c in CASES.values()}
    for name, domain, *_ in rows:
        bound = CASES[name].bound
        assert ("all" in domain) == (bound == math.inf)
        if bound != math.inf:
            assert f"2**{int(math.log2(bound))}" in domain


@pytest.mark.parametrize("name", NAMES)
def test_dense_sweep_of_all_float32_is_within_the_documented_ulp(name: str) -> None:
    _check(name, _sweep(name, 0, (1 << 32) // DENSE_STEP, DENSE_STEP))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_float32_is_within_the_documented_ulp(name: str) -> None:
    starts = range(0, 1 << 32, SLOW_CHUNK)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda lo: _sweep(name, lo, SLOW_CHUNK, 1), starts))
    _check(name, Sweep.merge(results))


# --- special values -----------------------------------------------------------------------------
INF, NAN = math.inf, math.nan
MIN_SUB = 2.0**-149  # smallest subnormal float32
MAX_SUB = float(np.float32(2.0**-126 - 2.0**-149))
TINY = 2.0**-126  # smallest normal float32
MAX_F32 = float(np.finfo(np.float32).max)
PI32 = float(np.float32(math.pi))
COMMON = [0.0, -0.0, INF, -INF, NAN, -NAN, MIN_SUB, -MIN_SUB, MAX_SUB, TINY, MAX_F32, -MAX_F32]

# exp(88.72284) is the first to overflow, exp(-87.33655) the first subnormal, exp(-103.972084)
# the first to round to 0.
EXP_EDGES = [88.72283, 88.72284, 89.0, 1e30, -87.33654, -87.33655, -100.0, -103.97208]
EXP_EDGES += [-103.972084, -104.0, -1e30]

# Inputs at each function's thresholds (the float32 neighbours on both sides), then the rule of
# _expect: exact where the rounded result is 0, inf, nan, +-1 or x itself, else the ULP bound.
SPECIAL: dict[str, list[float]] = {
    "exp": [*EXP_EDGES, 1.0, 2.0**-25, -(2.0**-25)],
    "log": [1.0, 1.0000001, 0.99999994, math.e, 2.0**-130, 2.0**-140, -1.0, -TINY],
    "sin": [PI32, -PI32, PI32 / 2, 2.0**-20, 1e6, 1e9, 8.5e9, -8.5e9, 2.0**33 - 1024.0],
    "cos": [PI32, -PI32, float(np.float32(math.pi / 2)), 2.0**-12, 1e6, 1e9, -8.5e9],
    "tanh": [0.625, 0.62499994, 9.010913, 9.010914, -9.010914, 20.0, 2.0**-13],
    "erf": [1.0, 0.99999994, 3.919206, 3.9192057, -3.919206, 4.0, 4.0000005, 1e-30, 2.0**-13],
}


def _rounded(name: str, x: np.ndarray) -> np.ndarray:
    """The correctly rounded results: float64 libm (numpy's, or math.erf) rounded to float32."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if name == "erf":
            return np.array([math.erf(v) for v in x64]).astype(np.float32)
        out: np.ndarray = getattr(np, name)(x64).astype(np.float32)
    return out


def _expect(name: str, x: float, y: float, want: float) -> None:
    case = CASES[name]
    if math.isnan(want):
        assert math.isnan(y), f"{name}_f32({x!r}) = {y!r}, want nan"
    elif want == 0 or math.isinf(want) or abs(want) == 1 or want == x:
        assert y == want and math.copysign(1, y) == math.copysign(1, want), (
            f"{name}_f32({x!r}) = {y!r}, want {want!r}"
        )
    elif abs(x) < case.bound:
        got = int(_ulp_array(np.array([y], np.float32), np.array([want], np.float32))[0])
        assert got <= case.ulp, f"{name}_f32({x!r}) = {y!r}, want {want!r} ({got} ULP)"


@pytest.mark.parametrize("name", NAMES)
def test_special_values(name: str) -> None:
    xs = np.array(COMMON + SPECIAL[name], np.float32)
    want = _rounded(name, xs)
    got = _values(name)(np.tile(xs, 17))  # long enough for the vector loop and its remainder
    for k, x in enumerate(xs):
        for y in got[k :: len(xs)]:
            _expect(name, float(x), float(y), float(want[k]))


def test_documented_values() -> None:
    """The module docstring's promises, spelled out."""
    values = {name: _values(name) for name in NAMES}

    def at(name: str, x: float) -> float:
        return float(values[name](np.full(32, x, np.float32))[0])

    assert at("exp", -INF) == 0 and at("exp", INF) == INF and math.isnan(at("exp", NAN))
    assert at("exp", 88.72284) == INF and at("exp", 88.72283) < INF
    assert at("exp", -103.97208) == MIN_SUB and at("exp", -103.972084) == 0
    assert at("log", 0.0) == -INF and at("log", -0.0) == -INF and at("log", INF) == INF
    assert math.isnan(at("log", -MIN_SUB)) and math.isnan(at("log", -INF))
    assert at("log", MIN_SUB) == np.float32(math.log(MIN_SUB))
    for name in ("sin", "cos"):
        assert math.isnan(at(name, INF)) and math.isnan(at(name, -INF))
    for name in ("sin", "tanh", "erf"):
        assert math.copysign(1, at(name, -0.0)) == -1 and math.copysign(1, at(name, 0.0)) == 1
    for name in ("tanh", "erf"):
        assert at(name, INF) == 1 and at(name, -INF) == -1


@pytest.mark.parametrize("name", ("sin", "cos"))
def test_sin_cos_beyond_the_bound_stay_finite_and_within_one(name: str) -> None:
    x = np.float32(2.0**33) * np.geomspace(1, 2.0**94, 4097).astype(np.float32)
    x = np.concatenate([x, -x, np.array([np.finfo(np.float32).max], np.float32)])
    y = _values(name)(x)
    assert np.all(np.isfinite(y)) and np.all(np.abs(y) <= 1)


# --- kernels ------------------------------------------------------------------------------------
KERNEL = """
def kernel(block_idx, block_dim, args):
    n = args[6]
    x = kernel_array(args[7], n, np.float32)
{outputs}
    for i in range(n):
{body}
"""


def _kernel_source() -> str:
    outputs = "\n".join(
        f"    o{k} = kernel_array(args[{k}], n, np.float32)" for k in range(len(NAMES))
    )
    body = "\n".join(f"        o{k}[i] = {name}_f32(x[i])" for k, name in enumerate(NAMES))
    return KERNEL.format(outputs=outputs, body=body)


def test_helpers_and_libm_map_name_the_same_functions() -> None:
    assert set(_approx.APPROX) == {f"math.{n}" for n in NAMES}
    for helper in _approx.APPROX.values():
        assert HELPERS[helper] is getattr(_approx, helper)


def test_standalone_kernel_runs_on_the_runtime_and_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GE_KERNEL_CACHE", "0")  # the disk cache is not keyed by helper code
    x = _bits(7, 100_003, (1 << 32) // 100_003)  # every binade, signs, subnormals, nan, inf
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 88.7, -104.0]
    fn = kernel_from_source(_kernel_source())
    blocks = [runtime.malloc(x.nbytes) for _ in range(len(NAMES) + 1)]
    try:
        runtime.memcpy_h2d(blocks[-1].addr, x)
        stream = runtime.Stream()
        runtime.launch_kernel(fn, 1, stream, [*blocks[:-1], x.size, blocks[-1]])
        stream.synchronize()
        for name, block in zip(NAMES, blocks, strict=False):
            out = np.empty_like(x)
            runtime.memcpy_d2h(out, block.addr)
            # the same code as the Numba loop, so the same bits (nan payloads aside)
            np.testing.assert_array_equal(out, _values(name)(x), err_msg=name)
            case = CASES[name]
            inside = np.abs(x) < case.bound
            rounded = _rounded(name, x[inside])
            assert _ulp_array(out[inside], rounded).max() <= case.ulp, name
            ref = _numpy(name, x[inside])
            if ref.size:
                own = int(_ulp_array(ref, rounded).max())
                assert _ulp_array(out[inside], ref).max() <= _numpy_allowance(case, own), name
    finally:
        for block in blocks:
            runtime.free(block)


def _ulp_array(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    def ordered(v: np.ndarray) -> np.ndarray:
        bits = v.view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    both_nan = np.isnan(a) & np.isnan(b)
    one_nan = np.isnan(a) != np.isnan(b)
    d = np.abs(ordered(a) - ordered(b))
    return np.where(both_nan, 0, np.where(one_nan, 1 << 40, d))


LIBM = re.compile(r"@\"?(llvm\.)?(exp|log|sin|cos|tanh|erf)(f|\.f32|\.f64)?\"?\(")


def test_kernel_using_them_is_vectorised_with_no_libm_call() -> None:
    binary = runtime.compile_kernel(_exec_kernel(), "approx_kernel")
    ir = binary.decode("utf-8", "replace")
    assert re.search(r"<(4|8|16) x float>", ir), "the kernel's loop was not vectorised"
    assert not LIBM.search(ir), LIBM.search(ir)


def _exec_kernel() -> Callable[..., None]:
    namespace = {"np": np, "math": math, "kernel_array": runtime.kernel_array, **HELPERS}
    exec(_kernel_source(), namespace)
    kernel: Callable[..., None] = namespace["kernel"]
    return kernel


@pytest.mark.parametrize("name", NAMES)
def test_each_loop_uses_wide_vector_registers_where_the_cpu_has_them(name: str) -> None:
    apply = _values(name)
    apply(np.zeros(4, np.float32))
    compiled = apply.compiled  # type: ignore[attr-defined]
    signature = compiled.signatures[0]
    ir = compiled.inspect_llvm(signature)
    asm = compiled.inspect_asm(signature)
    assert re.search(r"<(4|8|16) x float>", ir), f"{name}_f32 loop not vectorised"
    assert not LIBM.search(ir), f"{name}_f32 loop calls libm"
    features = numba.core.codegen.get_host_cpu_features()
    if "+avx2" in features.split(","):
        assert re.search(r"%[yz]mm", asm), f"{name}_f32 loop does not use ymm/zmm registers"
