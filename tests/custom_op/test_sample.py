"""Seed 004's samples (examples/custom_op/annotated_args_refresh_add_custom/{online,offline}) run
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


OFFLINE = RUN.parents[1] / "offline"


def test_offline_sample_builds_then_runs_without_the_custom_op(tmp_path: Path) -> None:
    """Seed 004's offline sample, as its run.sh: build_graph.py loads the Python custom op and
    runs its callbacks at build time; run_model.py, a fresh process without
    ASCEND_CUSTOM_OPP_PATH, runs the OM over two rounds of new addresses without importing
    it."""
    result = subprocess.run(
        [sys.executable, str(OFFLINE / "run.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr}"
    build, _, run = out.partition("OM_WRITTEN=")
    for marker in (
        "PY_ANNOTATED_ARGS_MODULE_LOADED=1",
        "PY_COMPILE_CALLBACK_ENTER=1",
        "PY_ANNOTATED_ARGS_CALLBACK_ENTER=1",
    ):
        assert marker in build, out
        assert marker not in run, out  # the run process never loads the module
    for marker in (
        "ROUND_1_FIRST=3",
        "ROUND_2_FIRST=9",
        "CUSTOM_OP_MODULES_IMPORTED=none",
        "NPU_TWO_ROUND_VALIDATION=PASS",
    ):
        assert marker in run, out
    assert (tmp_path / "add_custom.air").is_file()
    assert (tmp_path / "add_custom.om").is_file()
