"""Seed 004's offline sample, step 2: run the OM with no Python custom op anywhere.

A fresh process, without ``ASCEND_CUSTOM_OPP_PATH``: load the model, then two rounds with
newly allocated device x, y and z (every address differs between the rounds), check all 8192
elements of z against numpy, and show that neither the custom op module nor ``ge.custom_op``
was imported. The recorded launch only gets its addresses refreshed each round.

    python run_model.py [output_dir]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
os.environ.pop("ASCEND_CUSTOM_OPP_PATH", None)

from ge import runtime  # noqa: E402

NUM_ELEMENTS = 8 * 1024
NBYTES = NUM_ELEMENTS * 4


def device(array: np.ndarray) -> runtime.MemBlock:
    block = runtime.malloc(array.nbytes)
    runtime.memcpy_h2d(block.addr, array)
    return block


def run_round(model: runtime.Model, start: float) -> tuple[float, tuple[int, int, int]]:
    x = np.arange(NUM_ELEMENTS, dtype=np.float32) + start
    y = np.full(NUM_ELEMENTS, 2 * start, np.float32)
    bx, by, bz = device(x), device(y), runtime.malloc(NBYTES)
    model.execute([bx, by], [bz])
    z = np.empty(NUM_ELEMENTS, np.float32)
    runtime.memcpy_d2h(z, bz.addr)
    if not np.allclose(z, x + y):
        raise SystemExit(f"round with start {start}: z differs from x + y")
    addrs = (bx.addr, by.addr, bz.addr)
    ROUNDS.append((bx, by, bz))  # kept alive, so the next round gets new addresses
    return float(z[0]), addrs


ROUNDS: list[tuple[runtime.MemBlock, ...]] = []


def main(out_dir: Path) -> int:
    model = runtime.load_model(out_dir / "add_custom.om")
    first_1, addrs_1 = run_round(model, 1.0)
    first_2, addrs_2 = run_round(model, 3.0)
    print(f"ROUND_1_FIRST={first_1:g}")
    print(f"ROUND_2_FIRST={first_2:g}")
    if set(addrs_1) & set(addrs_2):
        raise SystemExit(f"addresses repeat between rounds: {addrs_1} {addrs_2}")
    custom = [m for m in sys.modules if "annotated_add_custom" in m or m == "ge.custom_op"]
    print(f"CUSTOM_OP_MODULES_IMPORTED={custom or 'none'}")
    if custom or (first_1, first_2) != (3.0, 9.0):
        print("NPU_TWO_ROUND_VALIDATION=FAIL")
        return 1
    print("NPU_TWO_ROUND_VALIDATION=PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "out"))
