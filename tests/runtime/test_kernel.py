"""``ge.runtime`` kernels: compile a Numba kernel to a binary, load it (also in a fresh process
that never imports Numba nor the kernel's source), launch it on a stream with parallel blocks,
and refuse launches whose address arguments fall outside live device memory.

Each kernel is compiled once per module (module-scope fixtures) to keep Numba's cost low.
Nothing here asserts on elapsed time; spin loops in kernels carry an iteration cap so a broken
runtime fails a test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ge import runtime
from ge.allocator import MemBlock
from ge.error import GeError, GeValueError
from ge.runtime import (
    DeviceRange,
    KernelBinary,
    KernelFunction,
    Stream,
    compile_kernel,
    kernel_array,
    launch_kernel,
    load_kernel_binary,
)
from ge.runtime import kernel as kernel_module

GUARD_S = 30.0  # deadlock guard only
SPIN_CAP = 2**31  # iteration cap of the spin-wait kernels


# --- kernels (module level so Numba resolves their globals) -------------------------------------
def _chunk(block_idx: int, block_dim: int, n: int) -> tuple[int, int]:
    size = (n + block_dim - 1) // block_dim
    start = block_idx * size
    return start, min(n, start + size)


def ew_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """y[i] = exp(x[i]) * 0.5 + sqrt(|x[i]|), each block on its own contiguous slice."""
    n = args[2]
    x = kernel_array(args[0], n, np.float64)
    y = kernel_array(args[1], n, np.float64)
    size = (n + block_dim - 1) // block_dim
    start = block_idx * size
    stop = min(n, start + size)
    for i in range(start, stop):
        y[i] = np.exp(x[i]) * 0.5 + np.sqrt(abs(x[i]))


def block_sum_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """out[block_idx] = sum of the block's slice of x (one value per block)."""
    n = args[2]
    x = kernel_array(args[0], n, np.float64)
    out = kernel_array(args[1], block_dim, np.float64)
    size = (n + block_dim - 1) // block_dim
    start = block_idx * size
    stop = min(n, start + size)
    acc = 0.0
    for i in range(start, stop):
        acc += x[i]
    out[block_idx] = acc


def int_bool_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """c = a * 3 - b (int64, wrapping); m_out = (a > b) xor m_in (bool)."""
    n = args[5]
    a = kernel_array(args[0], n, np.int64)
    b = kernel_array(args[1], n, np.int64)
    c = kernel_array(args[2], n, np.int64)
    m_in = kernel_array(args[3], n, np.bool_)
    m_out = kernel_array(args[4], n, np.bool_)
    for i in range(block_idx, n, block_dim):
        c[i] = a[i] * 3 - b[i]
        m_out[i] = (a[i] > b[i]) != m_in[i]


def scalars_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Copies scalar args to device memory; each block writes its index and block_dim."""
    u = kernel_array(args[0], 2, np.uint64)
    i = kernel_array(args[1], 3, np.int64)
    ids = kernel_array(args[2], block_dim, np.int64)
    if block_idx == 0:
        u[0] = args[3]
        u[1] = args[4]
        i[0] = args[5]
        i[1] = args[6]
        i[2] = args[7]
    ids[block_idx] = block_idx * 1000 + block_dim


def div_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Integer and float division by a runtime zero."""
    out = kernel_array(args[0], 3, np.int64)
    f = kernel_array(args[1], 2, np.float64)
    a = args[2]
    z = args[3]
    out[0] = a // z
    out[1] = a % z
    out[2] = 7
    f[0] = 1.0 / f[1]


def fail_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Raises (a Numba status error) in the blocks whose index is >= args[0]."""
    if block_idx >= args[0]:
        raise ValueError("block failed")


def spin_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Block b sets flags[b] and spins until flags[1 - b] is set (by the other block, or by
    the host when block_dim == 1); seen[b] records whether it saw it before the cap. The store
    to `scratch` (a different argument, so it may alias `flags`) forces a fresh load of the
    flag on every iteration."""
    flags = kernel_array(args[0], 2, np.int64)
    scratch = kernel_array(args[1], 2, np.int64)
    seen = kernel_array(args[2], 2, np.int64)
    cap = args[3]
    other = 1 - block_idx
    flags[block_idx] = 1
    seen[block_idx] = 0
    for it in range(cap):
        scratch[block_idx] = it
        if flags[other] != 0:
            seen[block_idx] = 1
            break


def alloc_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    tmp = np.empty(4)
    x = kernel_array(args[0], 4, np.float64)
    for i in range(4):
        tmp[i] = i
        x[i] = tmp[i]


def object_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    box = {"key": object()}
    x = kernel_array(args[0], 1, np.int64)
    x[0] = len(box)


def _ref_ew(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(x) * 0.5 + np.sqrt(np.abs(x))
    return out


def _load(kernel: Callable[..., None], name: str) -> KernelFunction:
    return load_kernel_binary(compile_kernel(kernel, name)).get_function(name)


# --- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ew_binary() -> bytes:
    return compile_kernel(ew_kernel, "ew")


@pytest.fixture(scope="module")
def ew(ew_binary: bytes) -> KernelFunction:
    return load_kernel_binary(ew_binary).get_function("ew")


@pytest.fixture(scope="module")
def block_sum() -> KernelFunction:
    return _load(block_sum_kernel, "block_sum")


@pytest.fixture(scope="module")
def int_bool() -> KernelFunction:
    return _load(int_bool_kernel, "int_bool")


@pytest.fixture(scope="module")
def scalars() -> KernelFunction:
    return _load(scalars_kernel, "scalars")


@pytest.fixture(scope="module")
def spin() -> KernelFunction:
    return _load(spin_kernel, "spin")


@pytest.fixture
def stream() -> Iterator[Stream]:
    s = Stream()
    yield s
    try:
        s.close()
    except GeError:
        s.close()


class Dev:
    """Device buffers for one test, freed at the end."""

    def __init__(self) -> None:
        self.blocks: list[MemBlock] = []

    def put(self, array: np.ndarray) -> MemBlock:
        block = runtime.malloc(array.nbytes)
        self.blocks.append(block)
        runtime.memcpy_h2d(block.addr, array)
        return block

    def empty(self, count: int, dtype: Any, fill: Any = 0) -> MemBlock:
        return self.put(np.full(count, fill, dtype))

    @staticmethod
    def get(block: MemBlock | int, count: int, dtype: Any) -> np.ndarray:
        out = np.empty(count, dtype)
        runtime.memcpy_d2h(out, block.addr if isinstance(block, MemBlock) else block)
        return out


@pytest.fixture
def dev() -> Iterator[Dev]:
    d = Dev()
    yield d
    for block in d.blocks:
        with contextlib.suppress(ValueError):  # the test freed it
            runtime.free(block)


def _raw(addr: int, nbytes: int) -> bytes:
    return ctypes.string_at(addr, nbytes)


# --- compile / load -----------------------------------------------------------------------------
def test_compile_returns_a_binary_with_one_named_function(ew_binary: bytes) -> None:
    assert isinstance(ew_binary, bytes)
    assert ew_binary[:4] == b"GEKB"
    binary = load_kernel_binary(ew_binary)
    assert isinstance(binary, KernelBinary)
    assert binary.function_names() == ["ew"]
    fn = binary.get_function("ew")
    assert isinstance(fn, KernelFunction)
    assert fn.name == "ew"
    assert isinstance(fn.address, int)
    assert fn.address != 0
    assert "ew" in repr(fn)


def test_a_binary_loads_from_bytearray_and_memoryview(ew_binary: bytes) -> None:
    assert load_kernel_binary(bytearray(ew_binary)).function_names() == ["ew"]
    assert load_kernel_binary(memoryview(ew_binary)).function_names() == ["ew"]


def test_a_binary_can_be_loaded_twice(ew_binary: bytes, dev: Dev, stream: Stream) -> None:
    f1 = load_kernel_binary(ew_binary).get_function("ew")
    f2 = load_kernel_binary(ew_binary).get_function("ew")
    x = np.linspace(-1, 1, 9)
    xb, y1, y2 = dev.put(x), dev.empty(9, np.float64), dev.empty(9, np.float64)
    launch_kernel(f1, 1, stream, [xb, y1, 9])
    launch_kernel(f2, 3, stream, [xb, y2, 9])
    stream.synchronize()
    assert Dev.get(y1, 9, np.float64).tobytes() == Dev.get(y2, 9, np.float64).tobytes()


def test_get_function_of_an_unknown_name_is_a_value_error(ew_binary: bytes) -> None:
    binary = load_kernel_binary(ew_binary)
    with pytest.raises(ValueError, match="nope") as info:
        binary.get_function("nope")
    assert "ew" in str(info.value)  # says what it does have


def test_compile_refuses_an_array_allocating_kernel() -> None:
    with pytest.raises(GeError) as info:
        compile_kernel(alloc_kernel, "alloc")
    message = str(info.value)
    assert "alloc" in message
    assert "allocat" in message  # tells the user what to avoid
    assert "NRT_" in message  # and which runtime support it would need


def test_compile_refuses_a_kernel_using_python_objects() -> None:
    with pytest.raises(GeError) as info:
        compile_kernel(object_kernel, "obj")
    message = str(info.value)
    assert "'obj'" in message
    assert "Numba" in message
    assert "object" in message  # Numba's explanation names the offending global


@pytest.mark.parametrize("name", ["", "1abc", "a-b", "a b", "ns.kernel", "k()", "k\n"])
def test_compile_refuses_a_non_identifier_name(name: str) -> None:
    with pytest.raises(ValueError, match="identifier"):
        compile_kernel(ew_kernel, name)


@pytest.mark.parametrize("name", [None, 5, b"ew"])
def test_compile_refuses_a_non_string_name(name: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        compile_kernel(ew_kernel, name)  # type: ignore[arg-type]


@pytest.mark.parametrize("kernel", [None, 5, "ew_kernel"])
def test_compile_refuses_a_non_callable(kernel: object) -> None:
    with pytest.raises(TypeError):
        compile_kernel(kernel, "k")  # type: ignore[arg-type]


def test_a_name_accepted_by_compile_kernel_works_end_to_end(dev: Dev, stream: Stream) -> None:
    """Python identifiers may be non-ASCII; such a name is either refused up front with a
    ValueError or it compiles, loads and runs (never a late, misleading failure)."""
    name = "ядро_ew"
    try:
        binary = compile_kernel(ew_kernel, name)
    except ValueError:
        return
    fn = load_kernel_binary(binary).get_function(name)
    x = np.linspace(-1, 1, 5)
    xb, yb = dev.put(x), dev.empty(5, np.float64)
    launch_kernel(fn, 1, stream, [xb, yb, 5])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 5, np.float64), _ref_ew(x), rtol=1e-13)


# --- corrupt binaries ---------------------------------------------------------------------------
def test_binaries_carry_machine_code_and_load_without_codegen(ew: KernelFunction) -> None:
    binary = compile_kernel(ew_kernel, "ew")
    header = json.loads(binary[8 : 8 + int.from_bytes(binary[4:8], "little")])
    assert header["object_bytes"] > 0
    x = np.linspace(-2, 2, 6)
    for data in (binary, _join(*_split(binary))):  # with and without the machine code
        fn = load_kernel_binary(data).get_function("ew")
        dev, out = Dev(), np.zeros(6)
        xb, yb = dev.put(x), dev.empty(6, np.float64)
        stream = Stream()
        launch_kernel(fn, 1, stream, [xb, yb, 6])
        stream.synchronize()
        np.testing.assert_allclose(Dev.get(yb, 6, np.float64), _ref_ew(x), rtol=1e-13)
        del out


def _with_code(header: dict[str, Any], ir: str, code: bytes) -> bytes:
    """A binary of ``header``, ``ir`` and machine code ``code`` (built for this CPU)."""
    cpu, features = kernel_module.host_cpu()[0], kernel_module.target_features()
    head = json.dumps({**header, "object_bytes": len(code), "cpu": cpu, "features": features})
    body = b"GEKB" + len(head.encode()).to_bytes(4, "little") + head.encode()
    body += ir.encode() + code
    return body + hashlib.sha256(body).digest()


def test_machine_code_for_this_cpu_loads_without_compiling_the_ir(
    ew_binary: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The IR is the fallback: a binary whose object code was built for this CPU loads that
    code as it is (neither parsed nor compiled again), and runs."""

    def no_ir(*_: object) -> None:
        raise AssertionError("the IR was compiled")

    monkeypatch.setattr(kernel_module, "_jit", no_ir)
    fn = load_kernel_binary(ew_binary).get_function("ew")
    x = np.linspace(-2, 2, 7)
    dev = Dev()
    xb, yb = dev.put(x), dev.empty(7, np.float64)
    stream = Stream()
    launch_kernel(fn, 2, stream, [xb, yb, 7])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 7, np.float64), _ref_ew(x), rtol=1e-13)


def test_machine_code_needing_a_missing_symbol_is_refused_by_name(ew_binary: bytes) -> None:
    """Object code that links against a symbol this process lacks is refused before the JIT
    sees it (MCJIT would abort the process on the unresolved reference)."""
    header, ir = _split(ew_binary)
    llvm = kernel_module._llvm()
    caller = "declare i64 @ge_test_no_such_symbol()\ndefine i64 @f() {\n"
    caller += "  %v = call i64 @ge_test_no_such_symbol()\n  ret i64 %v\n}\n"
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=kernel_module.host_cpu()[0], features=kernel_module.target_features()
    )
    code = machine.emit_object(llvm.parse_assembly(caller))
    with pytest.raises(GeValueError, match="ge_test_no_such_symbol"):
        load_kernel_binary(_with_code(header, ir, code))


@pytest.mark.parametrize("code", [b"not an object", b"\x7fELF\x02\x01" + b"\xff" * 200])
def test_machine_code_that_is_no_sound_object_falls_back_to_the_ir(
    ew_binary: bytes, code: bytes
) -> None:
    header, ir = _split(ew_binary)
    fn = load_kernel_binary(_with_code(header, ir, code)).get_function("ew")
    x = np.linspace(-1, 1, 4)
    dev = Dev()
    xb, yb = dev.put(x), dev.empty(4, np.float64)
    stream = Stream()
    launch_kernel(fn, 1, stream, [xb, yb, 4])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 4, np.float64), _ref_ew(x), rtol=1e-13)


@pytest.mark.parametrize("where", ["header", "ir", "machine code", "digest"])
def test_a_mutated_binary_is_refused_at_load(where: str) -> None:
    binary = bytearray(compile_kernel(ew_kernel, "ew"))
    head = 8 + int.from_bytes(binary[4:8], "little")
    at = {"header": 12, "ir": head + 10, "machine code": -40, "digest": -1}[where]
    binary[at] ^= 0x01
    with pytest.raises(GeValueError, match="SHA-256 does not match"):
        load_kernel_binary(bytes(binary))


def test_a_truncated_binary_is_refused_at_load() -> None:
    binary = compile_kernel(ew_kernel, "ew")
    for size in (0, 7, 40, len(binary) // 2, len(binary) - 1):
        with pytest.raises(GeValueError):
            load_kernel_binary(binary[:size])


def _split(binary: bytes) -> tuple[dict[str, Any], str]:
    """Header and IR (the machine code the binary carries is dropped)."""
    size = int.from_bytes(binary[4:8], "little")
    header = json.loads(binary[8 : 8 + size])
    code = header.pop("object_bytes", 0)
    return header, binary[8 + size : len(binary) - 32 - code].decode()


def _join(header: Any, ir: str) -> bytes:
    head = json.dumps(header).encode()
    body = b"GEKB" + len(head).to_bytes(4, "little") + head + ir.encode()
    return body + hashlib.sha256(body).digest()


def _corruptions(binary: bytes) -> dict[str, bytes]:
    header, ir = _split(binary)
    size = int.from_bytes(binary[4:8], "little")
    return {
        "empty": b"",
        "garbage": b"this is not a kernel binary at all",
        "random": np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
        "magic-only": b"GEKB",
        "wrong-magic": b"XEKB" + binary[4:],
        "elf": b"\x7fELF" + binary[4:],
        "truncated-half": binary[: len(binary) // 2],
        "truncated-header": binary[: 8 + size // 2],
        "truncated-tail": binary[:-20],
        "huge-header-size": b"GEKB" + (2**31).to_bytes(4, "little") + binary[8:],
        "header-not-json": b"GEKB" + size.to_bytes(4, "little") + b"{" * size + binary[8 + size :],
        "header-a-list": _join([1, 2], ir),
        "wrong-version": _join({**header, "version": 99}, ir),
        "no-version": _join({k: v for k, v in header.items() if k != "version"}, ir),
        "functions-not-a-list": _join({**header, "functions": 5}, ir),
        "function-name-not-a-str": _join({**header, "functions": [7]}, ir),
        "features-not-a-str": _join({**header, "features": 5}, ir),
        "missing-function": _join({**header, "functions": ["nope"]}, ir),
        "ir-syntax": _join(header, ir.replace("define", "defnie", 1)),
        "ir-not-utf8": binary + b"\xff\xfe",
        "ir-empty": _join(header, ""),
        "ir-garbage": _join(header, "\x00\x01garbage\x02" * 50),
        "ir-undefined-value": _join(header, ir.replace("ret i32 %status", "ret i32 %nope", 1)),
    }


_CORRUPTION_NAMES = list(_corruptions(_join({"version": 1}, "")).keys())


@pytest.mark.parametrize("case", _CORRUPTION_NAMES)
def test_load_of_a_corrupt_binary_is_a_value_error(case: str, ew_binary: bytes) -> None:
    data = _corruptions(ew_binary)[case]
    assert data != ew_binary
    with pytest.raises(ValueError):
        load_kernel_binary(data)


@pytest.mark.parametrize("data", [None, "GEKB", 5, [71, 69, 75, 66], np.zeros(8, np.uint8)])
def test_load_of_a_non_bytes_object_is_a_type_error(data: object) -> None:
    with pytest.raises(TypeError):
        load_kernel_binary(data)  # type: ignore[arg-type]


_CHILD_ENV_DROP = ("PYTHONPATH", "PYTHONSTARTUP", "NUMBA_DISABLE_JIT")


def _run_child(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _CHILD_ENV_DROP}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_binary_calling_an_unknown_symbol_is_refused_not_run(
    ew_binary: bytes, tmp_path: Path
) -> None:
    """When the ew kernel calls libm's ``sqrt`` (LLVM may inline it instead), rename that
    symbol; else declare one. The IR still parses and verifies, but nothing can resolve the
    symbol. Loading must refuse it (ValueError), never jump to a null address. Runs in a child
    process so a crash cannot take the test session down."""
    header, ir = _split(ew_binary)
    if "@sqrt" in ir:
        ir = ir.replace("@sqrt", "@ge_no_such_symbol_sqrt")
    else:
        ir += "\ndeclare double @ge_no_such_symbol_sqrt(double)\n"
    bad = _join(header, ir)
    path = tmp_path / "bad.gekb"
    path.write_bytes(bad)
    result = _run_child(
        f"""
        import numpy as np
        from ge import runtime
        data = open({str(path)!r}, "rb").read()
        try:
            fn = runtime.load_kernel_binary(data).get_function("ew")
        except ValueError as e:
            print("REFUSED", e)
        else:
            x = runtime.malloc(8); y = runtime.malloc(8)
            runtime.memcpy_h2d(x.addr, np.ones(1))
            s = runtime.Stream()
            runtime.launch_kernel(fn, 1, s, [x, y, 1])
            try:
                s.synchronize()
                print("RAN")
            except Exception as e:
                print("LAUNCH-FAILED", type(e).__name__, e)
        """,
        tmp_path,
    )
    assert result.returncode == 0, (
        f"child died with {result.returncode}; "
        f"stdout={result.stdout!r} stderr={result.stderr[-2000:]!r}"
    )
    assert "REFUSED" in result.stdout, result.stdout


# --- launching: results -------------------------------------------------------------------------
@pytest.mark.parametrize("block_dim", [1, 2, 3, 8])
def test_elementwise_matches_numpy(
    block_dim: int, ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    n = 1001
    x = np.random.default_rng(block_dim).uniform(-3, 3, n)
    xb, yb = dev.put(x), dev.empty(n, np.float64, np.nan)
    launch_kernel(ew, block_dim, stream, [xb, yb, n])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, n, np.float64), _ref_ew(x), rtol=1e-13)
    np.testing.assert_array_equal(Dev.get(xb, n, np.float64), x)  # input untouched


def test_results_are_identical_for_every_block_dim(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    n = 257
    x = np.random.default_rng(7).uniform(-2, 2, n)
    xb = dev.put(x)
    results = {}
    for block_dim in (1, 2, 3, 4, 7, 16, 256, 257, 300):
        yb = dev.empty(n, np.float64, np.nan)
        launch_kernel(ew, block_dim, stream, [xb, yb, n])
        stream.synchronize()
        results[block_dim] = Dev.get(yb, n, np.float64).tobytes()
    assert len(set(results.values())) == 1, "results depend on block_dim"
    assert not np.isnan(np.frombuffer(results[1])).any()


def test_each_block_writes_only_its_slice(ew: KernelFunction, dev: Dev, stream: Stream) -> None:
    """Launch through DeviceRanges covering the middle of the buffers: only that part changes."""
    n, lo, m = 64, 10, 20
    x = np.linspace(-1, 1, n)
    xb, yb = dev.put(x), dev.empty(n, np.float64, -5.0)
    launch_kernel(
        ew,
        4,
        stream,
        [DeviceRange(xb.addr + 8 * lo, 8 * m), DeviceRange(yb.addr + 8 * lo, 8 * m), m],
    )
    stream.synchronize()
    y = Dev.get(yb, n, np.float64)
    assert (y[:lo] == -5.0).all()
    assert (y[lo + m :] == -5.0).all()
    np.testing.assert_allclose(y[lo : lo + m], _ref_ew(x[lo : lo + m]), rtol=1e-13)


@pytest.mark.parametrize("block_dim", [1, 2, 5, 16])
def test_reduction_writes_one_value_per_block(
    block_dim: int, block_sum: KernelFunction, dev: Dev, stream: Stream
) -> None:
    n = 1000
    x = np.random.default_rng(3).standard_normal(n)
    xb, ob = dev.put(x), dev.empty(block_dim, np.float64, np.nan)
    launch_kernel(block_sum, block_dim, stream, [xb, ob, n])
    stream.synchronize()
    got = Dev.get(ob, block_dim, np.float64)
    size = -(-n // block_dim)
    expected = np.array([x[b * size : (b + 1) * size].sum() for b in range(block_dim)])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.sum(), x.sum(), rtol=1e-12)


@pytest.mark.parametrize("block_dim", [1, 4])
def test_int64_and_bool_arrays(
    block_dim: int, int_bool: KernelFunction, dev: Dev, stream: Stream
) -> None:
    rng = np.random.default_rng(5)
    n = 77
    a = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    a[0] = np.iinfo(np.int64).max  # wraps like numpy
    b = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    m_in = rng.integers(0, 2, n).astype(np.bool_)
    ab, bb, m_inb = dev.put(a), dev.put(b), dev.put(m_in)
    cb, m_outb = dev.empty(n, np.int64), dev.empty(n, np.bool_)
    launch_kernel(int_bool, block_dim, stream, [ab, bb, cb, m_inb, m_outb, n])
    stream.synchronize()
    with np.errstate(over="ignore"):
        expected_c = a * 3 - b
    np.testing.assert_array_equal(Dev.get(cb, n, np.int64), expected_c)
    np.testing.assert_array_equal(Dev.get(m_outb, n, np.bool_), (a > b) != m_in)
    # a bool the kernel wrote is a proper 0/1 byte
    assert set(runtime.device_view(m_outb.addr, n).tolist()) <= {0, 1}


def test_scalar_args_including_uint64_above_2_63(
    scalars: KernelFunction, dev: Dev, stream: Stream
) -> None:
    ub, ib, ids = dev.empty(2, np.uint64), dev.empty(3, np.int64), dev.empty(3, np.int64, -1)
    big = 2**63 + 12345
    args = [ub, ib, ids, big, np.uint64(2**64 - 1), -3, 2**63 - 1, -(2**63)]
    launch_kernel(scalars, 3, stream, args)
    stream.synchronize()
    assert Dev.get(ub, 2, np.uint64).tolist() == [big, 2**64 - 1]
    assert Dev.get(ib, 3, np.int64).tolist() == [-3, 2**63 - 1, -(2**63)]
    assert Dev.get(ids, 3, np.int64).tolist() == [3, 1003, 2003]


def test_plain_int_addresses_are_passed_as_scalars(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    """Documented decision: a plain int is a scalar, not checked; a live address still works."""
    x = np.linspace(0, 1, 6)
    xb, yb = dev.put(x), dev.empty(6, np.float64)
    launch_kernel(ew, 2, stream, [xb.addr, np.int64(yb.addr), 6])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 6, np.float64), _ref_ew(x), rtol=1e-13)


def test_device_tensor_args(ew: KernelFunction, stream: Stream) -> None:
    from ge.graph import Tensor

    x = np.linspace(-1, 1, 12)
    tx = Tensor.from_numpy(x).to_device()
    ty = Tensor.from_numpy(np.zeros(12)).to_device()
    launch_kernel(ew, 3, stream, [tx, ty, 12])
    stream.synchronize()
    np.testing.assert_allclose(ty.numpy(), _ref_ew(x), rtol=1e-13)


def test_launches_run_in_stream_order_after_the_call_returns(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    n = 50
    x = np.linspace(-1, 1, n)
    xb, yb, zb = dev.put(x), dev.empty(n, np.float64, -1.0), dev.empty(n, np.float64, -1.0)
    gate = threading.Event()
    stream.submit(lambda: gate.wait(GUARD_S), name="gate")
    args = [xb, yb, n]
    launch_kernel(ew, 4, stream, args)
    launch_kernel(ew, 3, stream, [yb, zb, n])  # reads what the first launch writes
    seen: list[np.ndarray] = []
    stream.submit(lambda: seen.append(Dev.get(zb, n, np.float64)), name="read")
    args[2] = 1  # the launch packed its arguments at the call
    assert (Dev.get(yb, n, np.float64) == -1.0).all()  # nothing ran yet: the gate holds it
    assert stream.query() is False
    gate.set()
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, n, np.float64), _ref_ew(x), rtol=1e-13)
    np.testing.assert_allclose(seen[0], _ref_ew(_ref_ew(x)), rtol=1e-12)


def test_launch_accepts_a_stream_handle(ew: KernelFunction, dev: Dev, stream: Stream) -> None:
    x = np.arange(4.0)
    xb, yb = dev.put(x), dev.empty(4, np.float64)
    launch_kernel(ew, 2, stream.handle, [xb, yb, 4])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 4, np.float64), _ref_ew(x), rtol=1e-13)


def test_kernel_function_runs_one_block_in_the_caller_thread(ew: KernelFunction, dev: Dev) -> None:
    x = np.linspace(-1, 1, 8)
    xb, yb = dev.put(x), dev.empty(8, np.float64, -1.0)
    packed = np.array([xb.addr, yb.addr, 8], np.int64)
    assert ew(1, 2, packed) == 0  # block 1 of 2: the second half
    y = Dev.get(yb, 8, np.float64)
    assert (y[:4] == -1.0).all()
    np.testing.assert_allclose(y[4:], _ref_ew(x[4:]), rtol=1e-13)


def test_division_by_zero_in_a_kernel_completes(dev: Dev, stream: Stream) -> None:
    """Kernels compile with Numba's error_model='numpy': no ZeroDivisionError. Observed:
    integer // 0 and % 0 give 0, float / 0.0 gives inf."""
    fn = _load(div_kernel, "div")
    ob, fb = dev.empty(3, np.int64, -1), dev.put(np.array([5.0, 0.0]))
    launch_kernel(fn, 1, stream, [ob, fb, 9, 0])
    stream.synchronize()
    assert Dev.get(ob, 3, np.int64).tolist() == [0, 0, 7]
    assert Dev.get(fb, 2, np.float64).tolist() == [np.inf, 0.0]


def test_a_kernel_that_raises_fails_at_synchronize(
    stream: Stream, dev: Dev, ew: KernelFunction
) -> None:
    fn = _load(fail_kernel, "failing")
    launch_kernel(fn, 4, stream, [2])  # blocks 2 and 3 fail
    with pytest.raises(GeError) as info:
        stream.synchronize()
    message = str(info.value)
    assert "kernel failing failed (status" in message
    launch_kernel(fn, 4, stream, [4])  # no block fails
    stream.synchronize()
    x = np.ones(3)
    xb, yb = dev.put(x), dev.empty(3, np.float64)
    launch_kernel(ew, 1, stream, [xb, yb, 3])  # the stream works normally afterwards
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 3, np.float64), _ref_ew(x), rtol=1e-13)


# --- launching: validation at the call ----------------------------------------------------------
def test_launch_rejects_a_non_kernel_function(ew_binary: bytes, stream: Stream) -> None:
    for bad in (None, ew_kernel, load_kernel_binary(ew_binary), "ew", 0):
        with pytest.raises(TypeError, match="KernelFunction"):
            launch_kernel(bad, 1, stream, [])  # type: ignore[arg-type]
    assert stream.query() is True


@pytest.mark.parametrize("block_dim", [0, -1, 2**32])
def test_launch_rejects_an_out_of_range_block_dim(
    block_dim: int, ew: KernelFunction, stream: Stream
) -> None:
    with pytest.raises(ValueError, match="block_dim"):
        launch_kernel(ew, block_dim, stream, [])
    assert stream.query() is True


@pytest.mark.parametrize("block_dim", [True, False, 2.0, "2", None, np.float64(2)])
def test_launch_rejects_a_block_dim_of_the_wrong_type(
    block_dim: object, ew: KernelFunction, stream: Stream
) -> None:
    with pytest.raises(TypeError, match="block_dim"):
        launch_kernel(ew, block_dim, stream, [])  # type: ignore[arg-type]
    assert stream.query() is True


@pytest.mark.parametrize("arg", [1.5, "1", None, True, b"x", [1], np.float64(1.0), object()])
def test_launch_rejects_an_arg_of_a_bad_type(
    arg: object, ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    xb, yb = dev.put(np.ones(2)), dev.empty(2, np.float64, -1.0)
    with pytest.raises(TypeError, match=r"args\[2\]"):
        launch_kernel(ew, 1, stream, [xb, yb, arg])
    stream.synchronize()
    assert (Dev.get(yb, 2, np.float64) == -1.0).all()


@pytest.mark.parametrize("arg", [2**64, -(2**63) - 1, 10**30])
def test_launch_rejects_an_int_wider_than_64_bits(
    arg: int, ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    xb, yb = dev.put(np.ones(2)), dev.empty(2, np.float64, -1.0)
    with pytest.raises(ValueError, match="64 bits"):
        launch_kernel(ew, 1, stream, [xb, yb, arg])
    stream.synchronize()
    assert (Dev.get(yb, 2, np.float64) == -1.0).all()


@pytest.mark.parametrize("arg", [2**64, -(2**63) - 1, 10**30])
def test_launch_of_plain_ints_rejects_one_wider_than_64_bits(
    arg: int, ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    """A list of plain ints takes the fast path, whose packing wraps silently (ctypes): a
    value outside int64 must still get the checked path's error, naming the argument."""
    xb, yb = dev.put(np.ones(2)), dev.empty(2, np.float64, -1.0)
    with pytest.raises(GeValueError, match=rf"args\[2\] = {arg} does not fit in 64 bits"):
        launch_kernel(ew, 1, stream, [xb.addr, yb.addr, arg])
    stream.synchronize()
    assert (Dev.get(yb, 2, np.float64) == -1.0).all()


def test_launch_of_plain_ints_above_2_63_passes_their_bits(
    scalars: KernelFunction, dev: Dev, stream: Stream
) -> None:
    ub, ib, ids = dev.empty(2, np.uint64), dev.empty(3, np.int64), dev.empty(3, np.int64, -1)
    big = 2**63 + 12345
    args = [ub.addr, ib.addr, ids.addr, big, 2**64 - 1, -3, 2**63 - 1, -(2**63)]
    launch_kernel(scalars, 3, stream, args)
    stream.synchronize()
    assert Dev.get(ub, 2, np.uint64).tolist() == [big, 2**64 - 1]
    assert Dev.get(ib, 3, np.int64).tolist() == [-3, 2**63 - 1, -(2**63)]
    assert Dev.get(ids, 3, np.int64).tolist() == [3, 1003, 2003]


@pytest.fixture
def no_native_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process where the native launcher cannot run: launches use the Python pool."""
    from ge.runtime import _launcher

    def refuse(*_: int) -> int:
        raise GeError("no native launcher here; use the Python block pool")

    monkeypatch.setattr(_launcher, "launch", refuse)
    monkeypatch.setattr(_launcher, "available", lambda: False)


@pytest.mark.parametrize("block_dim", [1, 3])
@pytest.mark.usefixtures("no_native_pool")
def test_launch_without_the_native_pool_runs_blocks_on_python_threads(
    block_dim: int, ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = np.linspace(-2, 2, 7)
    xb, yb = dev.put(x), dev.empty(7, np.float64)
    launch_kernel(ew, block_dim, stream, [xb.addr, yb.addr, 7])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(yb, 7, np.float64), _ref_ew(x), rtol=1e-13)
    launch_kernel(ew, block_dim, stream, [xb.addr, 16, 7])  # 16: no live memory
    with pytest.raises(GeError, match=r"kernel ew: .* \(from args\[1\]\) is not inside live"):
        stream.synchronize()


@pytest.mark.parametrize("layout", ["writable", "read-only"])
def test_run_blocks_reads_its_arguments_array(layout: str, ew: KernelFunction, dev: Dev) -> None:
    """``run_blocks`` (what a plan's kernel task calls) takes the address of a writable
    arguments array itself and of a read-only one through numpy; both run the same."""
    x = np.linspace(-1, 1, 5)
    xb, yb = dev.put(x), dev.empty(5, np.float64)
    args = np.array([xb.addr, yb.addr, 5], np.int64)
    args.setflags(write=layout == "writable")
    assert kernel_module.run_blocks(ew, 2, args) == 0
    np.testing.assert_allclose(Dev.get(yb, 5, np.float64), _ref_ew(x), rtol=1e-13)
    bad = np.array([xb.addr, 16, 5], np.int64)
    bad.setflags(write=layout == "writable")
    assert kernel_module.run_blocks(ew, 2, bad) != 0
    assert "(from args[1])" in kernel_module.describe_failure("ew", 1, bad)


def test_launch_names_a_refused_plain_int_argument(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = dev.put(np.ones(8))
    launch_kernel(ew, 2, stream, [x.addr, 16, 8])
    with pytest.raises(GeError, match=r"at 0x10 \(from args\[1\]\) is not inside live"):
        stream.synchronize()


def test_launch_rejects_a_bad_stream(ew: KernelFunction) -> None:
    with pytest.raises(TypeError):
        launch_kernel(ew, 1, "stream", [])  # type: ignore[arg-type]
    with pytest.raises(GeError):
        launch_kernel(ew, 1, 10**12, [])


def test_launch_with_a_host_tensor_is_refused_at_the_call(
    ew: KernelFunction, stream: Stream
) -> None:
    from ge.graph import Tensor

    host = Tensor.from_numpy(np.ones(4))
    with pytest.raises(ValueError):
        launch_kernel(ew, 1, stream, [host, host, 4])
    assert stream.query() is True


# --- launching: addresses outside live memory ---------------------------------------------------
def test_launch_with_a_too_long_device_range_writes_nothing(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = dev.put(np.ones(8))
    y = dev.put(np.full(7, -2.0))  # 56 bytes, capacity 64: the kernel could write 8 more
    before = _raw(y.addr, 64)
    launch_kernel(ew, 2, stream, [x, DeviceRange(y.addr, 64), 8])
    with pytest.raises(GeError, match="not inside live device memory") as info:
        stream.synchronize()
    assert "ew" in str(info.value)
    assert _raw(y.addr, 64) == before


def test_launch_with_a_forged_memblock_writes_nothing(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = dev.put(np.ones(8))
    y = dev.put(np.full(7, -2.0))
    before = _raw(y.addr, 64)
    launch_kernel(ew, 1, stream, [x, MemBlock(y.addr, 64), 8])
    with pytest.raises(GeError, match="not inside live device memory"):
        stream.synchronize()
    assert _raw(y.addr, 64) == before
    for bad_range in (DeviceRange(y.addr - 8, 16), DeviceRange(y.addr, -1), DeviceRange(8, 8)):
        launch_kernel(ew, 1, stream, [x, bad_range, 0])
        with pytest.raises(GeError, match="not inside live device memory"):
            stream.synchronize()
    assert _raw(y.addr, 64) == before


def test_one_bad_argument_refuses_the_whole_launch(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = dev.put(np.ones(4))
    y = dev.empty(4, np.float64, -2.0)
    launch_kernel(ew, 2, stream, [DeviceRange(x.addr, 64), y, 4])  # x is 32 bytes
    with pytest.raises(GeError, match="not inside live device memory"):
        stream.synchronize()
    assert (Dev.get(y, 4, np.float64) == -2.0).all()


def test_free_of_a_block_a_queued_launch_uses_waits_for_the_launch(
    ew: KernelFunction, dev: Dev, stream: Stream
) -> None:
    x = dev.put(np.ones(8))
    y = runtime.malloc(64)
    gate = threading.Event()
    stream.submit(lambda: gate.wait(GUARD_S), name="gate")
    launch_kernel(ew, 2, stream, [x, y, 8])  # y is live at the call...
    runtime.free(y)  # ...and freed before the launch runs: stream-ordered, as cudaFreeAsync
    assert not runtime.memory.contains(y.addr, 64)  # unusable at once
    with pytest.raises(GeValueError, match="not the start of a live allocation"):
        runtime.free(y)
    held = runtime.malloc(64)
    assert held.addr != y.addr  # its memory is not handed out while the launch is queued
    gate.set()
    stream.synchronize()  # the launch ran on y's memory, not on freed memory
    launch_kernel(ew, 2, stream, [x, y, 8])  # freed at the call
    with pytest.raises(GeError, match="not inside live device memory"):
        stream.synchronize()
    again = runtime.malloc(64)  # y's memory is free now, and reused
    try:
        assert again.addr == y.addr
        launch_kernel(ew, 2, stream, [x, y, 8])  # the stale handle names the new block
        with pytest.raises(GeError, match="belongs to a block that was freed"):
            stream.synchronize()
        with pytest.raises(GeValueError, match="already freed"):
            runtime.free(y)
    finally:
        runtime.free(again)
        runtime.free(held)
    # the stream works normally after the refused launches
    z = dev.empty(8, np.float64)
    launch_kernel(ew, 2, stream, [x, z, 8])
    stream.synchronize()
    np.testing.assert_allclose(Dev.get(z, 8, np.float64), _ref_ew(np.ones(8)), rtol=1e-13)


def test_zero_size_ranges_of_live_blocks_are_accepted(ew: KernelFunction, stream: Stream) -> None:
    a, b = runtime.malloc(0), runtime.malloc(0)
    try:
        launch_kernel(ew, 2, stream, [a, b, 0])
        stream.synchronize()
    finally:
        runtime.free(a)
        runtime.free(b)


# --- kernel_array from plain Python -------------------------------------------------------------
def test_kernel_array_in_python_is_a_view_of_device_memory(dev: Dev) -> None:
    block = dev.put(np.arange(6, dtype=np.float32))
    view = kernel_array(block.addr, 6, np.float32)
    assert isinstance(view, np.ndarray)
    assert view.dtype == np.float32
    assert view.shape == (6,)
    assert view.ctypes.data == block.addr
    np.testing.assert_array_equal(view, np.arange(6, dtype=np.float32))
    view[2] = 42.0
    assert Dev.get(block, 6, np.float32)[2] == 42.0
    tail = kernel_array(block.addr + 8, 4, np.float32)
    assert tail[0] == 42.0
    assert kernel_array(block.addr, 0, np.int64).shape == (0,)


def test_kernel_array_in_python_refuses_memory_that_is_not_live(dev: Dev) -> None:
    block = dev.put(np.zeros(4, np.float32))
    for addr, count in [(block.addr, 5), (block.addr + 4, 4), (block.addr - 4, 1), (0, 1)]:
        with pytest.raises(ValueError, match="not inside live device memory"):
            kernel_array(addr, count, np.float32)
    freed = runtime.malloc(16)
    runtime.free(freed)
    with pytest.raises(ValueError):
        kernel_array(freed.addr, 1, np.float32)


def test_a_kernel_runs_uncompiled_in_python(ew: KernelFunction, dev: Dev, stream: Stream) -> None:
    """kernel_array lets the same Python function run without Numba (to debug it)."""
    x = np.linspace(-2, 2, 10)
    xb, y_py, y_jit = dev.put(x), dev.empty(10, np.float64), dev.empty(10, np.float64)
    args = np.array([xb.addr, y_py.addr, 10], np.int64)
    for b in range(3):
        ew_kernel(b, 3, args)
    launch_kernel(ew, 3, stream, [xb, y_jit, 10])
    stream.synchronize()
    np.testing.assert_allclose(
        Dev.get(y_py, 10, np.float64), Dev.get(y_jit, 10, np.float64), rtol=1e-13
    )


# --- parallelism and the GIL --------------------------------------------------------------------
def test_a_running_kernel_does_not_hold_the_gil(
    spin: KernelFunction, dev: Dev, stream: Stream
) -> None:
    """Block 0 spins until the host writes flags[1]. The host can only do that (and even see
    that the kernel started) if the kernel released the GIL."""
    flags, scratch, seen = (
        dev.empty(2, np.int64),
        dev.empty(2, np.int64),
        dev.empty(2, np.int64, -1),
    )
    launch_kernel(spin, 1, stream, [flags, scratch, seen, SPIN_CAP])
    started = runtime.device_view(flags.addr, 16).view(np.int64)
    deadline = time.monotonic() + GUARD_S
    while started[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    runtime.memcpy_h2d(flags.addr + 8, np.ones(1, np.int64))
    stream.synchronize()
    assert Dev.get(seen, 1, np.int64)[0] == 1, "the kernel held the GIL while it ran"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs at least 2 CPUs")
def test_blocks_run_concurrently(spin: KernelFunction, dev: Dev, stream: Stream) -> None:
    """Each of two blocks sets its flag and waits for the other's: run one after the other,
    the first would give up at the cap without seeing the second's flag."""
    for _ in range(3):
        flags, scratch = dev.empty(2, np.int64), dev.empty(2, np.int64)
        seen = dev.empty(2, np.int64, -1)
        launch_kernel(spin, 2, stream, [flags, scratch, seen, SPIN_CAP])
        stream.synchronize()
        assert Dev.get(seen, 2, np.int64).tolist() == [1, 1]


# --- a binary in a process that never saw its source --------------------------------------------
_SOURCE_KERNEL = """
import numpy as np
from ge.runtime import kernel_array


def standalone_kernel(block_idx, block_dim, args):
    n = args[2]
    x = kernel_array(args[0], n, np.float64)
    y = kernel_array(args[1], n, np.float64)
    for i in range(block_idx, n, block_dim):
        y[i] = np.sqrt(x[i]) + np.exp(-x[i]) + args[3]
"""


def test_binary_runs_in_a_fresh_process_without_numba_or_the_source(tmp_path: Path) -> None:
    import importlib

    modname = f"ge_tmp_kernel_src_{uuid.uuid4().hex}"
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    (src_dir / f"{modname}.py").write_text(_SOURCE_KERNEL)
    sys.path.insert(0, str(src_dir))
    try:
        module = importlib.import_module(modname)
        binary = compile_kernel(module.standalone_kernel, "standalone")
    finally:
        sys.path.remove(str(src_dir))
        sys.modules.pop(modname, None)
        shutil.rmtree(src_dir)
    assert not src_dir.exists()
    path = tmp_path / "standalone.gekb"
    path.write_bytes(binary)

    result = _run_child(
        f"""
        import importlib, json, sys
        import numpy as np
        import ge.runtime as rt
        fn = rt.load_kernel_binary(open({str(path)!r}, "rb").read()).get_function("standalone")
        n = 37
        x = np.linspace(0.0, 4.0, n)
        xb = rt.malloc(x.nbytes); yb = rt.malloc(x.nbytes)
        rt.memcpy_h2d(xb.addr, x)
        s = rt.Stream()
        rt.launch_kernel(fn, 4, s, [xb, yb, n, 3])
        s.synchronize()
        y = np.empty(n); rt.memcpy_d2h(y, yb.addr)
        try:
            importlib.import_module({modname!r})
            importable = True
        except ModuleNotFoundError:
            importable = False
        print(json.dumps({{
            "y": y.tolist(),
            "numba": "numba" in sys.modules,
            "numba_kernels": "ge.runtime._numba_kernels" in sys.modules,
            "source_importable": importable,
        }}))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["numba"] is False
    assert report["numba_kernels"] is False
    assert report["source_importable"] is False
    x = np.linspace(0.0, 4.0, 37)
    np.testing.assert_allclose(report["y"], np.sqrt(x) + np.exp(-x) + 3, rtol=1e-13)


# --- vector width tuning ------------------------------------------------------------------------
class _FakeLLVM:
    def __init__(self, cpu: str, avx512: bool) -> None:
        self.cpu, self.avx512 = cpu, avx512

    def get_host_cpu_name(self) -> str:
        return self.cpu

    def get_host_cpu_features(self) -> dict[str, bool]:
        return {"avx2": True, "avx512f": self.avx512}


@pytest.mark.parametrize(
    ("cpu", "avx512", "tuning"),
    [
        ("sapphirerapids", True, "-prefer-256-bit"),
        ("znver4", True, "-prefer-256-bit"),
        ("skylake-avx512", True, ""),  # first-generation AVX-512 keeps LLVM's choice
        ("cascadelake", True, ""),
        ("haswell", False, ""),
        ("neoverse-n1", False, ""),
    ],
)
def test_tuning_prefers_wide_vectors_past_first_generation_avx512(
    monkeypatch: pytest.MonkeyPatch, cpu: str, avx512: bool, tuning: str
) -> None:
    from ge.runtime import kernel as kernel_module

    monkeypatch.setattr(kernel_module, "_llvm", lambda: _FakeLLVM(cpu, avx512))
    assert kernel_module.tuning_features.__wrapped__() == tuning


def f32_loop_kernel(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    n = args[2]
    x = kernel_array(args[0], n, np.float32)
    y = kernel_array(args[1], n, np.float32)
    for i in range(n):
        y[i] = x[i] * np.float32(3.0) + np.float32(1.0)


def test_kernels_get_the_tuning_and_other_numba_code_does_not(dev: Dev, stream: Stream) -> None:
    import numba
    from numba.core.registry import cpu_target

    from ge.runtime.kernel import tuning_features

    if not tuning_features():
        pytest.skip("no vector width tuning on this CPU")
    machine = cpu_target.target_context.codegen()._tm
    binary = compile_kernel(f32_loop_kernel, "f32_loop")
    assert b"<16 x float>" in binary  # 16 float32 lanes: one AVX-512 register
    assert cpu_target.target_context.codegen()._tm is machine  # Numba's own machine is back

    @numba.njit("void(float32[::1], float32[::1])")
    def users_loop(x: np.ndarray, y: np.ndarray) -> None:
        for i in range(x.size):
            y[i] = x[i] * np.float32(3.0) + np.float32(1.0)

    assert "<16 x float>" not in users_loop.inspect_llvm(users_loop.signatures[0])
    fn = load_kernel_binary(binary).get_function("f32_loop")
    x = np.arange(100, dtype=np.float32)
    xb, yb = dev.put(x), dev.empty(x.size, np.float32)  # kernels refuse host memory
    launch_kernel(fn, 1, stream, [xb, yb, x.size])
    stream.synchronize()
    np.testing.assert_array_equal(Dev.get(yb, x.size, np.float32), x * np.float32(3) + 1)
