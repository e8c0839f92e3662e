"""The ``.om`` loader (``ge.runtime.om.unpack``, ``ge.runtime.load_model``) is hardened:
truncated, empty, foreign, mutated and hostile files raise ``ModelFormatError`` (a
``GeError``) or load and run; nothing else escapes and nothing crashes. Weights of a model
loaded from a path are mapped, not copied.

The fuzzers run in a child process (as ``test_fuzz.py`` does), so a crash is a failed test, not
a dead test run; the child imports ``ge.runtime`` only.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.es
from ge import offline_compile as oc
from ge import runtime
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph.tensor import Tensor
from ge.runtime import ModelFormatError, om

PREFIX = struct.Struct("<4sIQ32s")  # magic, version, header length, SHA-256 of the header
W = (np.arange(15, dtype=np.float32).reshape(3, 5) - 7.0) / 7.0


def _feeds() -> list[np.ndarray]:
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    y = np.array([0.5, -1.0, 2.0], np.float32)
    return [x, y]


def _expected(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    h = x @ W
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return [np.tanh(x * y) + 1.0, h, x.sum(1), e / e.sum(-1, keepdims=True), x.reshape(3, 4)]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    """A small model with a fused elementwise kernel, a BLAS matmul host task over a Const,
    a reduction, a softmax and a reshape kernel."""
    oc.build_initialize({})
    try:
        b = GraphBuilder("om_small")
        x = b.create_input(0, name="x", shape=[4, 3])
        y = b.create_input(1, name="y", shape=[3])
        h = x @ ge.es.Const(b, value=Tensor.from_numpy(W))
        graph = b.build_and_reset(
            [
                np.tanh(x * y) + 1.0,
                h,
                ge.es.ReduceSum(x, [1]),
                ge.es.SoftmaxV2(h),
                ge.es.Reshape(x, [3, 4]),
            ]
        )
        return oc.build_model(graph).get_bytes()
    finally:
        oc.build_finalize()


@pytest.fixture(scope="module")
def model_file(model_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("om") / "small.om"
    path.write_bytes(model_bytes)
    return path


def split(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header (parsed) and the data sections of a model file."""
    magic, version, length, digest = PREFIX.unpack_from(data, 0)
    assert magic == om.MAGIC and version == om.FORMAT_VERSION
    text = data[PREFIX.size : PREFIX.size + length]
    assert hashlib.sha256(text).digest() == digest
    return json.loads(text), data[PREFIX.size + length :]


def repack(
    header: Any,
    payload: bytes,
    *,
    text: bytes | None = None,
    magic: bytes = om.MAGIC,
    version: int = om.FORMAT_VERSION,
) -> bytes:
    """A model file of ``header`` (or of the raw header ``text``) with a valid header digest."""
    if text is None:
        text = json.dumps(header).encode()
    text += b" " * (-(PREFIX.size + len(text)) % 64)
    return PREFIX.pack(magic, version, len(text), hashlib.sha256(text).digest()) + text + payload


def run_checked(data: bytes | str) -> list[np.ndarray]:
    outs = runtime.load_model(data).execute(_feeds())
    for got, want in zip(outs, _expected(*_feeds()), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return outs


# --- the sound model, and files that are not models ----------------------------------------------
def test_the_model_loads_and_runs(model_bytes: bytes, model_file: Path) -> None:
    run_checked(model_bytes)
    run_checked(str(model_file))
    header, _ = split(model_bytes)
    assert (PREFIX.size + PREFIX.unpack_from(model_bytes)[2]) % 64 == 0
    repacked = repack(header, split(model_bytes)[1])
    run_checked(repacked)  # the test's repack is a faithful writer
    kinds = {type(t).__name__ for t in om.unpack(model_bytes).graphs[0].plan.tasks}
    assert kinds == {"KernelTaskData", "HostTaskData"}


def test_model_format_error_is_a_ge_error() -> None:
    assert issubclass(ModelFormatError, GeError) and issubclass(ModelFormatError, RuntimeError)
    assert runtime.ModelFormatError is om.ModelFormatError


def _cuts(data: bytes) -> list[int]:
    header, _ = split(data)
    start = PREFIX.size + PREFIX.unpack_from(data)[2]
    cuts = set(range(0, 2 * PREFIX.size)) | {start - 1, start, start + 1, len(data) - 1}
    for s in header["sections"]:
        for at in (s["offset"], s["offset"] + 1, s["offset"] + s["length"] - 1):
            cuts.add(start + at)
    cuts |= set(range(0, len(data), max(1, len(data) // 151)))
    return sorted(c for c in cuts if 0 <= c < len(data))


def test_truncated_files_are_refused(model_bytes: bytes, tmp_path: Path) -> None:
    cuts = _cuts(model_bytes)
    assert len(cuts) > 150
    for n in cuts:
        with pytest.raises(ModelFormatError):
            runtime.load_model(model_bytes[:n])
    for n in cuts[:: max(1, len(cuts) // 12)][1:]:  # and as files, which are mapped
        path = tmp_path / f"cut{n}.om"
        path.write_bytes(model_bytes[:n])
        with pytest.raises(ModelFormatError):
            runtime.load_model(str(path))


def test_empty_bytes_and_empty_file(tmp_path: Path) -> None:
    for empty in (b"", bytearray(), memoryview(b"")):
        with pytest.raises(ModelFormatError, match=r"too short"):
            runtime.load_model(empty)
    (tmp_path / "empty.om").write_bytes(b"")
    with pytest.raises(ModelFormatError, match=r"empty"):
        runtime.load_model(str(tmp_path / "empty.om"))
    with pytest.raises(ModelFormatError, match=r"empty"):
        runtime.load_model(tmp_path / "empty.om")


def test_not_a_model_file(tmp_path: Path) -> None:
    with pytest.raises(GeError, match=r"cannot read"):
        runtime.load_model(str(tmp_path / "missing.om"))
    with pytest.raises(GeError, match=r"cannot read"):
        runtime.load_model(str(tmp_path))  # a directory
    with pytest.raises(TypeError, match=r"path or bytes"):
        runtime.load_model(12)  # type: ignore[arg-type]


@pytest.mark.parametrize("magic", [b"GEOX", b"\0\0\0\0", b"PK\x03\x04", b"geom", b"MOEG"])
def test_wrong_magic(model_bytes: bytes, magic: bytes) -> None:
    with pytest.raises(ModelFormatError, match=r"not a ge model file"):
        runtime.load_model(magic + model_bytes[4:])


@pytest.mark.parametrize("version", [0, 2, 3, 255, 2**31, 2**32 - 1])
def test_wrong_version(model_bytes: bytes, version: int) -> None:
    header, payload = split(model_bytes)
    with pytest.raises(ModelFormatError, match=r"version"):
        runtime.load_model(repack(header, payload, version=version))
    data = bytearray(model_bytes)
    data[4:8] = version.to_bytes(4, "little")
    with pytest.raises(ModelFormatError, match=r"version"):
        runtime.load_model(bytes(data))


@pytest.mark.parametrize("length", [0, 1, 2**20, 2**31, 2**40, 2**64 - 1])
def test_header_length_that_lies(model_bytes: bytes, length: int) -> None:
    data = bytearray(model_bytes)
    data[8:16] = length.to_bytes(8, "little")
    with pytest.raises(ModelFormatError):
        runtime.load_model(bytes(data))


def test_header_digest_and_bad_header_text(model_bytes: bytes) -> None:
    data = bytearray(model_bytes)
    data[20] ^= 0xFF  # the digest itself
    with pytest.raises(ModelFormatError, match=r"SHA-256"):
        runtime.load_model(bytes(data))
    data = bytearray(model_bytes)
    data[PREFIX.size + 10] ^= 0x01  # a header byte
    with pytest.raises(ModelFormatError, match=r"SHA-256"):
        runtime.load_model(bytes(data))
    _, payload = split(model_bytes)
    for text in (
        b"",
        b"{",
        b"not json",
        b"\xff\xfe{}",
        b"{} trailing",
        b"[" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b"1" + b"0" * 5000,
    ):
        with pytest.raises(ModelFormatError):
            runtime.load_model(repack(None, payload, text=text))
    for header in ([], "model", 5, None, {}, {"graphs": []}, {"graphs": {}}):
        with pytest.raises(ModelFormatError):
            runtime.load_model(repack(header, payload))


# --- fuzzing in a child process -------------------------------------------------------------------
_CHILD_PRELUDE = """
import hashlib, json, random, resource, struct, sys, traceback
import numpy as np
from ge import runtime
from ge.error import GeError
from ge.runtime import ModelFormatError
from ge.runtime.executor import RESULT_BLOCKS

soft, hard = resource.getrlimit(resource.RLIMIT_AS)
limit = 16 << 30  # a hostile size must fail to allocate, not exhaust the machine
if hard == resource.RLIM_INFINITY or hard > limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

good = open(sys.argv[1], "rb").read()
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
y = np.array([0.5, -1.0, 2.0], np.float32)
feeds = [x, y]
expected = runtime.load_model(good).execute(feeds)
import gc
gc.collect()
baseline = (runtime.live_bytes(), runtime.live_allocations())

def leaked():
    # a refused file leaves nothing allocated; a loaded model frees all once collected
    # (large results come back in pooled blocks, which outlive the model: not a leak)
    gc.collect()
    RESULT_BLOCKS.clear()
    return [runtime.live_bytes() - baseline[0], runtime.live_allocations() - baseline[1]]
P = struct.Struct("<4sIQ32s")
counts = {"format_error": 0, "other_ge_error": 0, "loaded": 0, "ran": 0, "run_ge_error": 0}
failures = []

def attempt(case, data, same_results):
    try:
        model = runtime.load_model(data)
    except ModelFormatError:
        counts["format_error"] += 1
        return
    except GeError:
        counts["other_ge_error"] += 1
        return
    except BaseException as e:
        failures.append([case, "load", type(e).__name__, str(e)[:300]])
        return
    counts["loaded"] += 1
    try:
        outs = model.execute(feeds)
    except GeError:
        counts["run_ge_error"] += 1
        return
    except BaseException as e:
        failures.append([case, "execute", type(e).__name__, str(e)[:300]])
        return
    counts["ran"] += 1
    descs = model.output_descs
    if len(outs) != len(descs) or any(
        list(o.shape) != list(d.shape.origin_shape.dims) for o, d in zip(outs, descs)
    ):
        failures.append([case, "shapes", str([o.shape for o in outs]), ""])
    elif same_results and not all(
        o.dtype == e.dtype and o.shape == e.shape and np.array_equal(o, e, equal_nan=True)
        for o, e in zip(outs, expected)
    ):
        failures.append([case, "results differ", "", ""])
"""

_BYTE_FUZZ = (
    _CHILD_PRELUDE
    + """
rng = random.Random(0)
head = P.size + P.unpack_from(good)[2]

def mutant():
    data = bytearray(good)
    kind = rng.randrange(6)
    where = lambda: rng.randrange(head) if rng.random() < 0.5 else rng.randrange(len(data))
    if kind <= 1:  # flipped bits or bytes
        for _ in range(rng.randint(1, 8)):
            at = where()
            data[at] ^= (1 << rng.randrange(8)) if kind == 0 else rng.randrange(1, 256)
    elif kind == 2:  # inserted bytes
        at = where()
        data[at:at] = rng.randbytes(rng.randint(1, 64))
    elif kind == 3:  # deleted bytes
        at = where()
        del data[at : at + rng.randint(1, 64)]
    elif kind == 4:  # a lying prefix field
        field = rng.choice([(4, 8), (8, 16), (0, 4), (16, 48)])
        a, b = field
        data[a:b] = rng.randbytes(b - a) if rng.random() < 0.5 else bytes(b - a)
    else:  # junk after the end, or a cut
        if rng.random() < 0.5:
            data += rng.randbytes(rng.randint(1, 200))
        else:
            del data[rng.randrange(len(data)):]
    return bytes(data)

import os, tempfile
spool = tempfile.mkdtemp()
for case in range(int(sys.argv[2])):
    data = mutant()
    # any mutant that loads must be the same model (only padding or trailing bytes changed)
    attempt(case, data, True)
    if case % 20 == 0:  # and from a file, whose weights are mapped
        path = os.path.join(spool, f"{case}.om")
        with open(path, "wb") as f:
            f.write(data)
        attempt(f"file {case}", path, True)
        os.unlink(path)
print(json.dumps({"counts": counts, "failures": failures[:20], "n_failures": len(failures),
                  "leaked": leaked()}))
"""
)

_STRUCTURED_FUZZ = (
    _CHILD_PRELUDE
    + r"""
magic, version, length, digest = P.unpack_from(good)
HEADER = json.loads(good[P.size : P.size + length])
PAYLOAD = good[P.size + length :]
rng = random.Random(0)
DEEP = "__deep__"
BIG = "__big_int__"

def pack(header, text=None):
    if text is None:
        text = json.dumps(header, allow_nan=True)
        text = text.replace(json.dumps(DEEP), "[" * 100000 + "]" * 100000)
        text = text.replace(json.dumps(BIG), "1" + "0" * 5000)
        text = text.encode()
    text += b" " * (-(P.size + len(text)) % 64)
    return P.pack(magic, version, len(text), hashlib.sha256(text).digest()) + text + PAYLOAD

def fresh(value):
    return json.loads(json.dumps(value, allow_nan=True))

def copy():
    return fresh(HEADER)

def paths(node, path=()):
    # every place in the header, but not kernel argument values (see the xfail test below)
    yield path
    if path and path[-1] == "template":
        return
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, path + (i,))

PATHS = [p for p in paths(HEADER) if p]

def get(h, path):
    for k in path:
        h = h[k]
    return h

def put(h, path, value):
    get(h, path[:-1])[path[-1]] = value

def nest(depth, leaf):
    for _ in range(depth):
        leaf = [leaf]
    return leaf

HOSTILE = [
    -1, -64, -(2**63), 2**63, 2**64, 2**100, 1 << 40, (1 << 40) + 1, 0, 1, 2, 3, 16, 63, 65,
    1000, 1 << 23, 1.5, -0.0, float("nan"), float("inf"), "", "x", "0", "float32",
    "input", "intermediate", "const", "output", "copy", "matmul", "system", None, True, False,
    [], {}, [0], [-1], [[0, 0, 0]], {"a": 1}, nest(200, 0), nest(400, []), DEEP, BIG,
]

def int_variants(v):
    return [v + 1, v - 1, -v, 2 * v, v // 2, 0, v + 64, v - 64]

def random_case(h):
    path = rng.choice(PATHS)
    value = get(h, path)
    kind = rng.randrange(6)
    parent = get(h, path[:-1])
    if kind == 0 or kind == 1:
        put(h, path, fresh(rng.choice(HOSTILE)))
    elif kind == 2 and type(value) is int:
        put(h, path, rng.choice(int_variants(value)))
    elif kind == 3:  # remove it
        del parent[path[-1]]
    elif kind == 4 and isinstance(parent, list):  # repeat it, or add a hostile neighbour
        parent.insert(path[-1], fresh(value if rng.random() < 0.5 else rng.choice(HOSTILE)))
    else:  # swap with another place of the same type
        other = rng.choice(PATHS)
        try:
            a, b = get(h, other), value
        except (KeyError, IndexError, TypeError):
            return
        if type(a) is type(b) and other[: len(path)] != path and path[: len(other)] != other:
            put(h, path, a)
            put(h, other, b)

g0 = ("graphs", 0)
buffers = HEADER["graphs"][0]["buffers"]
tasks = HEADER["graphs"][0]["tasks"]
kernel_ts = [i for i, t in enumerate(tasks) if "kernel" in t]
host_ts = [i for i, t in enumerate(tasks) if "host" in t]
mm = next(i for i in host_ts if tasks[i]["host"] == "matmul")
inter = [i for i, b in enumerate(buffers) if b[0] == "intermediate"]

def nbytes(b):
    n = 1
    for d in b[2]:
        n *= d
    return n * np.dtype(b[3]).itemsize

arena_end = max([buffers[i][1] + nbytes(buffers[i]) for i in inter] or [0])

def setter(path, value):
    def f(h):
        put(h, path, value)
    return f

TARGETED = []
for s in range(len(HEADER["sections"])):
    for field, values in {"length": [2**64, 2**63, -1, len(PAYLOAD) + 1, 0],
                          "offset": [-64, -1, 2**62, len(PAYLOAD), 1, 64 * 10**9],
                          "sha256": ["0" * 64, 5, None, ""]}.items():
        for v in values:
            TARGETED.append(setter(("sections", s, field), v))
for v in [99, -1, "0", None, 1.0]:
    TARGETED.append(setter(("weights", 0, "section"), v))
    TARGETED.append(setter(("kernels", 0), v))
for v in ["object", "float33", 5, None, "int64"]:
    TARGETED.append(setter(("weights", 0, "dtype"), v))
for v in [[3, 6], [15], [], [2**40, 2**40], [-3, -5], "3,5"]:
    TARGETED.append(setter(("weights", 0, "shape"), v))
n_buf = len(buffers)
for t in kernel_ts:
    for p in range(len(tasks[t]["patches"])):
        b = tasks[t]["patches"][p][1]
        for v in [n_buf, n_buf + 1000, -1, 2**63]:
            TARGETED.append(setter(g0 + ("tasks", t, "patches", p, 1), v))
        for v in [nbytes(buffers[b]) + 1, nbytes(buffers[b]), 2**40, -1, -(2**63)]:
            TARGETED.append(setter(g0 + ("tasks", t, "patches", p, 2), v))
        for v in [len(tasks[t]["template"]), -1, 2**20]:
            TARGETED.append(setter(g0 + ("tasks", t, "patches", p, 0), v))
    pos = tasks[t]["patches"][0][0]
    TARGETED.append(setter(g0 + ("tasks", t, "patches"), tasks[t]["patches"] + [[pos, 0, 0]]))
    for v in [0, -1, 2**16 + 1, 2**63, 1.0]:
        TARGETED.append(setter(g0 + ("tasks", t, "block_dim"), v))
    for v in [[], "abc", [1.5], [2**64], [None], nest(400, 1)]:
        TARGETED.append(setter(g0 + ("tasks", t, "template"), v))
    for v in [len(HEADER["kernels"]), -1, (tasks[t]["kernel"] + 1) % len(HEADER["kernels"])]:
        TARGETED.append(setter(g0 + ("tasks", t, "kernel"), v))
    for v in ["", "no_such_function", 5]:
        TARGETED.append(setter(g0 + ("tasks", t, "function"), v))
    TARGETED.append(setter(g0 + ("tasks", t, "same_index_inputs"), [n_buf]))
for t in host_ts:
    for v in ["system", "eval", "__import__", "python", "", 5, None, "Copy"]:
        TARGETED.append(setter(g0 + ("tasks", t, "host"), v))
    for v in [{}, {"evil": True}, {"transpose_a": 1, "transpose_b": 0, "bias": 0},
              {"transpose_a": False, "transpose_b": False, "bias": False, "x": True}, []]:
        TARGETED.append(setter(g0 + ("tasks", t, "params"), v))
    bufs = tasks[t]["buffers"]
    for v in [bufs[::-1], bufs[:1], bufs + bufs, [n_buf] * len(bufs), [], "0,1"]:
        TARGETED.append(setter(g0 + ("tasks", t, "buffers"), v))
TARGETED.append(setter(g0 + ("tasks", mm, "params", "bias"), True))
TARGETED.append(setter(g0 + ("tasks", mm, "params", "transpose_a"), True))
for v in [0, arena_end - 1, -1, 2**40 + 1, 1.0]:
    TARGETED.append(setter(g0 + ("arena_size",), v))
for b in range(n_buf):
    for v in ["weird", 5, None]:
        TARGETED.append(setter(g0 + ("buffers", b, 0), v))
    for v in [2**40 + 1, -1, arena_end, 10**6]:
        TARGETED.append(setter(g0 + ("buffers", b, 1), v))
    for v in [[2**40, 2**40], [-1], [1] * 33, [0], [], [1000, 1000]]:
        TARGETED.append(setter(g0 + ("buffers", b, 2), v))
    for v in ["object", "float64", "bool", "complex128"]:
        TARGETED.append(setter(g0 + ("buffers", b, 3), v))
    TARGETED.append(setter(g0 + ("buffers", b), buffers[b][:3]))
for key in ["inputs", "outputs", "consts", "views"]:
    value = HEADER["graphs"][0][key]
    for v in [[], [n_buf], value + value[:1], [[0, 0]], [[n_buf, 0]], [[0, 99]], "0", None]:
        TARGETED.append(setter(g0 + (key,), v))
for key in ["graphs", "sections", "weights", "kernels", "options", "weight_names"]:
    for v in [None, 5, "x", [], {}, DEEP, nest(400, {})]:
        TARGETED.append(setter((key,), v))
TARGETED.append(setter(("graphs",), HEADER["graphs"] * 2))  # two graphs of one name
TARGETED.append(setter(("weight_names",), {"Const_0": 99}))
TARGETED.append(setter(("weight_names",), {"Const_0": -1}))
TARGETED.append(setter(("options",), {"a": 1}))
TARGETED.append(setter(g0 + ("name",), 5))
TARGETED.append(setter(g0 + ("input_names",), ["x"]))
TARGETED.append(setter(g0 + ("output_names",), "y"))
BENIGN = [setter(("ge_version",), "9.9.9"), setter(("options",), {"a": "b"}),
          setter(("weight_names",), {}), setter(g0 + ("name",), "renamed"),
          setter(g0 + ("input_names",), ["p", "q"])]

for case, change in enumerate(TARGETED):
    h = copy()
    change(h)
    attempt(f"targeted {case}", pack(h), False)
for case, change in enumerate(BENIGN):
    h = copy()
    change(h)
    attempt(f"benign {case}", pack(h), True)
for case in range(int(sys.argv[2])):
    h = copy()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        try:
            random_case(h)
        except (KeyError, IndexError, TypeError):
            pass  # the path went away with an earlier change of this case
    attempt(f"random {case}", pack(h), False)
print(json.dumps({"counts": counts, "failures": failures[:20], "n_failures": len(failures),
                  "targeted": len(TARGETED), "leaked": leaked()}))
"""
)


def _child(script: str, model_file: Path, *args: str, timeout: int = 240) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, str(model_file), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_byte_mutations_load_or_raise_ge_error(model_file: Path) -> None:
    n = 2000
    result = _child(_BYTE_FUZZ, model_file, str(n))
    counts = result["counts"]
    assert result["n_failures"] == 0, result["failures"]
    assert result["leaked"] == [0, 0]
    assert counts["format_error"] + counts["other_ge_error"] + counts["loaded"] == n + n // 20
    assert counts["format_error"] > n // 2  # nearly every mutant is refused as a format error
    assert counts["loaded"] == counts["ran"]  # what loads is the same model and runs


def test_hostile_headers_raise_ge_error_or_load_and_run(model_file: Path) -> None:
    n = 600
    result = _child(_STRUCTURED_FUZZ, model_file, str(n))
    counts = result["counts"]
    assert result["n_failures"] == 0, result["failures"]
    assert result["leaked"] == [0, 0]
    total = n + result["targeted"] + 5
    assert result["targeted"] >= 300
    attempted = total
    assert counts["format_error"] + counts["other_ge_error"] + counts["loaded"] == attempted
    assert counts["format_error"] > total // 2


@pytest.mark.parametrize("place", ["weight dtype", "buffer dtype", "host op"])
@pytest.mark.parametrize("value", [[], {}], ids=["list", "object"])
def test_unhashable_header_values_are_format_errors(
    model_bytes: bytes, place: str, value: Any
) -> None:
    header, payload = split(model_bytes)
    graph = header["graphs"][0]
    if place == "weight dtype":
        header["weights"][0]["dtype"] = value
    elif place == "buffer dtype":
        graph["buffers"][0][3] = value
    else:
        next(t for t in graph["tasks"] if "host" in t)["host"] = value
    with pytest.raises(ModelFormatError):
        runtime.load_model(repack(header, payload))


# --- kernel argument slots ----------------------------------------------------------------------
def _kernel_tasks(model_bytes: bytes) -> list[tuple[int, str]]:
    header, _ = split(model_bytes)
    return [(i, t["name"]) for i, t in enumerate(header["graphs"][0]["tasks"]) if "kernel" in t]


@pytest.mark.parametrize("wild", [0x10, 0, 8, 1 << 47, -4096, 2**63 - 1])
def test_a_wild_address_in_a_kernel_argument_slot_raises(model_bytes: bytes, wild: int) -> None:
    header, payload = split(model_bytes)
    kernels = _kernel_tasks(model_bytes)
    assert len(kernels) >= 3
    for t, name in kernels:
        for p in range(len(header["graphs"][0]["tasks"][t]["patches"])):
            hostile = json.loads(json.dumps(header))
            task = hostile["graphs"][0]["tasks"][t]
            position = task["patches"].pop(p)[0]  # the slot keeps its template value...
            task["template"][position] = wild  # ...which is a wild address
            model = runtime.load_model(repack(hostile, payload))
            with pytest.raises(GeError, match=rf"{name}"):
                model.execute(_feeds())
    run_checked(model_bytes)  # the process is fine


_HOSTILE_SCALAR = """
import json, sys
import numpy as np
from ge import runtime
from ge.error import GeError
model = runtime.load_model(sys.argv[1])
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
y = np.array([0.5, -1.0, 2.0], np.float32)
try:
    model.execute([x, y])
except GeError as e:
    print("GeError:", e)
else:
    print("ran")
"""


@pytest.mark.parametrize("slot", ["base_offset", "count"])
def test_a_hostile_scalar_kernel_argument_raises(
    model_bytes: bytes, tmp_path: Path, slot: str
) -> None:
    header, payload = split(model_bytes)
    tasks = header["graphs"][0]["tasks"]
    (task,) = [t for t in tasks if t["name"].startswith("Reshape")]
    template = task["template"]
    if slot == "base_offset":
        template[-2] = 1 << 26  # the output's base element: 256 MiB past the output
    else:
        template[4] = 1 << 26  # elements to move (n), with the innermost dim to match
        template[10] = 1 << 26
    path = tmp_path / "hostile.om"
    path.write_bytes(repack(header, payload))
    done = subprocess.run(
        [sys.executable, "-c", _HOSTILE_SCALAR, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"child died with {done.returncode}"
    assert "GeError" in done.stdout, done.stdout


# --- weights of a model from a path are mapped -------------------------------------------------
@pytest.fixture(scope="module")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path, np.ndarray]:
    weight = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)  # 1 MiB
    oc.build_initialize({})
    try:
        b = GraphBuilder("big")
        x = b.create_input(0, name="x", shape=[2, 512])
        data = oc.build_model(b.build_and_reset([x @ weight])).get_bytes()
    finally:
        oc.build_finalize()
    path = tmp_path_factory.mktemp("big") / "big.om"
    path.write_bytes(data)
    return data, path, weight


def test_weights_from_a_path_are_mapped_not_copied(
    big_model: tuple[bytes, Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, path, weight = big_model
    x = np.random.default_rng(1).standard_normal((2, 512)).astype(np.float32)
    from ge.runtime import memory

    sizes: list[int] = []
    real = memory.malloc

    def counting(size: int) -> Any:
        sizes.append(int(size))
        return real(size)

    monkeypatch.setattr(memory, "malloc", counting)
    before = runtime.live_bytes()
    copied = runtime.load_model(data)
    assert runtime.live_bytes() - before >= weight.nbytes  # bytes: a device copy
    assert max(sizes) >= weight.nbytes
    sizes.clear()
    mapped = runtime.load_model(str(path))
    assert all(s < weight.nbytes for s in sizes), sizes  # path: no allocation for the weight
    for model in (copied, mapped):
        (out,) = model.execute([x])
        np.testing.assert_allclose(out, x @ weight, rtol=1e-4, atol=1e-4)
    assert "Const_0" in mapped.weight_names
    mapped.set_weights({"Const_0": np.zeros_like(weight)})
    (out,) = mapped.execute([x])
    assert not out.any()
    assert path.read_bytes() == data  # copy-on-write: the file is never written
    (out,) = copied.execute([x])
    np.testing.assert_allclose(out, x @ weight, rtol=1e-4, atol=1e-4)
