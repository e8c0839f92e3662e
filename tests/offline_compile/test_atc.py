"""``ge-atc``: AIR in, OM out, every flag and failure (GE's ATC command, on ge)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ge.es import GraphBuilder
from ge.offline_compile.atc import main
from ge.runtime import load_model


def _air(tmp_path: Path, shape: list[int]) -> Path:
    b = GraphBuilder("atc_graph")
    x = b.create_input(0, name="x", shape=shape)
    graph = b.build_and_reset([np.exp(x) * 2.0])
    path = tmp_path / "g.air"
    graph.save_to_air(str(path))
    return path


def test_compiles_an_air_file_into_a_model_that_runs(tmp_path: Path, capsys) -> None:
    air = _air(tmp_path, [2, 3])
    assert main(["--model", str(air), "--output", str(tmp_path / "m")]) == 0
    err = capsys.readouterr().err
    assert "[4/4] write" in err and "error" not in err
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (out,) = load_model(tmp_path / "m.om").execute([x])
    np.testing.assert_allclose(out, np.exp(x) * 2.0, rtol=1e-6)


def test_input_shape_fixes_unknown_dims_and_soc_version_is_recorded(tmp_path: Path) -> None:
    air = _air(tmp_path, [-1, 3])
    argv = ["--model", str(air), "--output", str(tmp_path / "m"), "--soc_version", "Ascend910B"]
    assert main(argv) == 1  # -1 dims need --input_shape
    assert main([*argv, "--input_shape", "x:4,3", "--log", "info"]) == 0
    model = load_model(tmp_path / "m.om")
    assert model.input_descs[0].shape.origin_shape.dims == [4, 3]
    assert model.options["ge.socVersion"] == "Ascend910B"
    assert model.options["input_shape"] == "x:4,3"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--framework", "5"], "--framework=5 is not read"),
        (["--input_shape", "y:4,3"], "not inputs of the graph"),
        (["--input_shape", "x:4,a"], "dims must be integers"),
        (["--input_shape", "x:4,3,2"], "it was declared [-1, 3]"),
    ],
)
def test_bad_flags_exit_1_with_one_readable_line(
    tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    air = _air(tmp_path, [-1, 3])
    assert main(["--model", str(air), "--output", str(tmp_path / "m"), *extra]) == 1
    err = capsys.readouterr().err
    assert "ge-atc: error: " in err and message in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "m.om").exists()


def test_unreadable_inputs_and_outputs_fail_cleanly(tmp_path: Path, capsys) -> None:
    assert main(["--model", str(tmp_path / "missing.air"), "--output", str(tmp_path / "m")]) == 1
    assert "No such file" in capsys.readouterr().err
    junk = tmp_path / "junk.air"
    junk.write_bytes(b"\x00not an air file")
    assert main(["--model", str(junk), "--output", str(tmp_path / "m"), "--log", "debug"]) == 1
    err = capsys.readouterr().err
    assert "ge-atc: error: " in err and "Traceback" in err  # --log debug adds the traceback
    air = _air(tmp_path, [2])
    assert main(["--model", str(air), "--output", str(tmp_path / "no" / "dir" / "m")]) == 1
    assert "SaveModel failed" in capsys.readouterr().err


def test_help_documents_every_flag_and_missing_flags_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--model", "--output", "--framework", "--soc_version", "--input_shape", "--log"):
        assert flag in text
    assert "ASCEND_CUSTOM_OPP_PATH" in text
    with pytest.raises(SystemExit) as done:
        main(["--output", "x"])
    assert done.value.code == 2


def test_runs_as_a_command(tmp_path: Path) -> None:
    air = _air(tmp_path, [3])
    done = subprocess.run(
        [sys.executable, "-m", "ge.offline_compile.atc", "--model", str(air), "--output",
         str(tmp_path / "m")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "ge-atc: [4/4]" in done.stderr  # not a terminal: plain lines
    assert (tmp_path / "m.om").is_file()
