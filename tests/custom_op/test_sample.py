"""Seed 004's online sample (examples/custom_op/annotated_args_refresh_add_custom/online) runs
to completion in a fresh interpreter: the NoRefresh graph checks every element over two rounds
of device inputs and prints its [Perf] lines (the Annotated half waits for
declare_launch_args and says so)."""

from __future__ import annotations

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
        "NoRefreshAddCustom precision check PASS",
        "[Perf] NoRefreshAddCustom: ",
        "[Perf] AnnotatedAddCustom: skipped",
        "[Perf] Annotated speedup: n/a",
        "CPU_EXECUTION=PASS",
    ):
        assert marker in out, out
