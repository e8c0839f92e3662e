"""Seed 004's online sample (examples/custom_op/annotated_args_refresh_add_custom/online) runs
to completion in a fresh interpreter: both graphs check every element over two rounds of
device inputs and the seed's [Perf] lines are printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

RUN = (
    Path(__file__).resolve().parents[2]
    / "examples/custom_op/annotated_args_refresh_add_custom/online/run.py"
)


def test_online_sample_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(RUN)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    for marker in (
        "AnnotatedAddCustom precision check PASS",
        "NoRefreshAddCustom precision check PASS",
        "[Perf] input shape: [8192], dtype: float32",
        "[Perf] iters: 100",
        "[Perf] AnnotatedAddCustom: ",
        "[Perf] NoRefreshAddCustom: ",
        "[Perf] Annotated speedup: ",
        "CPU_EXECUTION=PASS",
    ):
        assert marker in out, out
    assert re.search(r"\[Perf\] AnnotatedAddCustom: [\d.]+ us \(avg [\d.]+ us/iter\)", out), out
    assert re.search(r"\[Perf\] Annotated speedup: \d+\.\d{3}x", out), out
