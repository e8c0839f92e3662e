"""Fuzzing the device: mutated kernel binaries and random launch arguments (random ints,
addresses near and inside live blocks, freed and stale blocks, absurd counts) never crash the
process; every refusal is a ``GeError``, and every launch that ran stayed inside live memory.

Both fuzzers run in a child process, so a crash is a failed test, not a dead test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_BINARY_FUZZ = """
import hashlib, json, random
import numpy as np
from ge import runtime
from ge.error import GeError

def fill(block_idx, block_dim, args):
    x = runtime.kernel_array(args[0], args[1], np.float32)
    for i in range(block_idx, args[1], block_dim):
        x[i] = 7.0

good = runtime.compile_kernel(fill, "fill")
head = 8 + int.from_bytes(good[4:8], "little")
rng = random.Random(2026)

def signed(body):
    return body + hashlib.sha256(body).digest()

def header_mutant():
    header = json.loads(good[8:head])
    key = rng.choice(sorted(header))
    header[key] = rng.choice([None, -1, 2**70, "x", [], {}, [1, "fill"], "fill;", True])
    text = json.dumps(header).encode()
    body = good[:4] + len(text).to_bytes(4, "little") + text + good[head:-32]
    return signed(body)

def mutant():
    data = bytearray(good)
    kind = rng.randrange(5)
    if kind == 0:  # flipped bytes anywhere
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncated
        del data[rng.randrange(len(data)):]
    elif kind == 2:  # junk spliced in
        at = rng.randrange(len(data))
        data[at:at] = rng.randbytes(rng.randint(1, 64))
    elif kind == 3:  # a lying length field, re-signed
        body = bytearray(good[:-32])
        body[4:8] = rng.choice([0, 1, 2**31 - 1, 2**32 - 1, len(body)]).to_bytes(4, "little")
        return signed(bytes(body))
    else:
        return header_mutant()
    return bytes(data)

counts = {"refused": 0, "loaded": 0}
for _ in range(@@N@@):
    data = mutant()
    try:
        binary = runtime.load_kernel_binary(data)
        binary.get_function("fill")
        counts["loaded"] += 1
    except GeError:
        counts["refused"] += 1
print(json.dumps(counts))
"""

_LAUNCH_FUZZ = """
import json, random
import numpy as np
from ge import runtime
from ge.allocator import MemBlock
from ge.error import GeError

def fill(block_idx, block_dim, args):
    x = runtime.kernel_array(args[0] + args[2], args[1], np.float32)
    for i in range(block_idx, args[1], block_dim):
        x[i] = 7.0

fn = runtime.load_kernel_binary(runtime.compile_kernel(fill, "fill")).get_function("fill")
rng = random.Random(12)
stream = runtime.Stream()
live = [runtime.malloc(rng.choice([0, 4, 64, 1000, 4096])) for _ in range(8)]
freed = []
host = np.zeros(256, np.float32)
counts = {"ran": 0, "refused": 0, "wrong": 0}

def address():
    pick = rng.randrange(7)
    if pick == 0:
        return rng.randrange(-(2**63), 2**63)
    if pick == 1:
        return rng.randrange(0, 2**16)
    if pick == 2:
        return host.ctypes.data + 4 * rng.randrange(-8, 300)
    if pick == 3 and freed:
        return rng.choice(freed)
    block = rng.choice(live)
    return block if pick == 4 else block.addr + rng.randrange(-64, block.size + 64)

for step in range(@@N@@):
    if rng.random() < 0.1:  # churn: free one block (kept as a stale handle), make another
        old = live.pop(rng.randrange(len(live)))
        runtime.free(old)
        freed.append(old)
        live.append(runtime.malloc(rng.choice([4, 64, 1000])))
    base = address()
    count = rng.choice([0, 1, 4, 16, 250, -1, 2**61, rng.randrange(-(2**63), 2**63)])
    offset = rng.choice([0, 0, 4, -4, 64, rng.randrange(-(2**20), 2**20)])
    start = (base.addr if isinstance(base, MemBlock) else base) + offset
    nbytes = 4 * count
    inside = count >= 0 and (
        nbytes == 0 or runtime.memory.contains(start % 2**64, nbytes)
    )
    try:
        runtime.launch_kernel(fn, rng.choice([1, 2, 5]), stream, [base, count, offset])
        stream.synchronize()
        counts["ran"] += 1
        counts["wrong"] += not inside  # it ran although its view was not live memory
    except GeError:
        counts["refused"] += 1
print(json.dumps(counts))
"""


def _run(script: str, n: int) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script).replace("@@N@@", str(n))],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"child died ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, int] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_mutated_kernel_binaries_are_refused_and_never_crash() -> None:
    counts = _run(_BINARY_FUZZ, 400)
    assert counts["refused"] + counts["loaded"] == 400
    assert counts["refused"] >= 350  # nearly every mutation is caught by the digest or header


def test_random_launch_arguments_never_crash_nor_run_outside_live_memory() -> None:
    counts = _run(_LAUNCH_FUZZ, 3000)
    assert counts["wrong"] == 0
    assert counts["ran"] > 100 and counts["refused"] > 1000  # both sides were exercised
