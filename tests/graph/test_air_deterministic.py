"""``Graph.save_to_air`` is byte-deterministic: one graph gives the same bytes in every process,
whatever ``PYTHONHASHSEED`` (protobuf maps — node, desc and graph attributes — are written in
key order, not hash-table order)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import hashlib, sys
import numpy as np
from ge.es import GraphBuilder

b = GraphBuilder("det")
x = b.create_input(0, shape=[4, 3])
y = b.create_input(1, shape=[3])
z = np.exp(x * 2.0 + y) - x.sum(axis=-1, keepdims=True)
g = b.build_and_reset([z, y * 0.5])
node = g.get_direct_nodes()[2]
for i, key in enumerate(["zeta", "alpha", "mid", "b", "a9", "qq", "_x", "Z"]):
    node.set_attr(key, i)
    node.set_output_attr(key, 0, str(i))
    g.set_attr("g" + key, float(i))
g.save_to_air(sys.argv[1])
print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())
"""


def _digest(tmp_path: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    path = tmp_path / f"model_{seed}.air"
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    digest = out.stdout.strip().splitlines()[-1]
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def test_same_bytes_under_any_hash_seed(tmp_path: Path) -> None:
    digests = {seed: _digest(tmp_path, seed) for seed in ("0", "1", "2", "12345")}
    assert len(set(digests.values())) == 1, digests
