"""An op with no kernel runs its numpy reference as a *data* host task (``reference``: op type,
attributes, buffers, bound by ``Plan.bind()``), so a model can hold it: it round-trips through
a file, in a fresh process too, and the loader refuses hostile versions of it. The op here is
MatMul with a 2-D bias, which its kernel record leaves to the reference."""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.es
from ge import offline_compile as oc
from ge.compiler.executable import CompiledGraph
from ge.error import GeError
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import OpDef, TensorSpec, register_op_def, registry
from ge.runtime import ModelFormatError, load_model, om
from ge.runtime.plan import BufferKind, BufferSpec, HostTask, Plan, host_task

PREFIX = struct.Struct("<4sIQ32s")
SHAPES = ([2, 3], [4, 3], [1, 4])


def _graph() -> Graph:
    b = GraphBuilder("mm_bias2d")
    x, w, bias = (b.create_input(i, shape=s) for i, s in enumerate(SHAPES))
    return b.build_and_reset([ge.es.MatMul(x, w, bias, transpose_x2=True)])


def _feeds() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _expected(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return x @ w.T + bias


@pytest.fixture(scope="module")
def model_bytes() -> Iterator[bytes]:
    oc.build_initialize({})
    try:
        yield oc.build_model(_graph()).get_bytes()
    finally:
        oc.build_finalize()


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    _, _, length, _ = PREFIX.unpack_from(data, 0)
    return json.loads(data[PREFIX.size : PREFIX.size + length]), data[PREFIX.size + length :]


def _repack(header: dict[str, Any], payload: bytes) -> bytes:
    text = json.dumps(header).encode()
    text += b" " * (-(PREFIX.size + len(text)) % 64)
    digest = hashlib.sha256(text).digest()
    return PREFIX.pack(om.MAGIC, om.FORMAT_VERSION, len(text), digest) + text + payload


def _reference_task(header: dict[str, Any]) -> dict[str, Any]:
    (task,) = [t for t in header["graphs"][0]["tasks"] if t.get("host") == "reference"]
    return task  # type: ignore[no-any-return]


def test_the_plan_task_is_data_naming_the_op_its_attributes_and_buffers() -> None:
    plan = CompiledGraph(_graph()).plan_for([list(s) for s in SHAPES])
    assert plan is not None
    (task,) = plan.tasks
    assert isinstance(task, HostTask) and task.fn is None and task.op == "reference"
    assert task.params["op_type"] == "MatMul" and task.params["subgraphs"] is None
    assert task.params["attrs"] == {"transpose_x1": False, "transpose_x2": True}
    assert task.params["inputs"] == [[0], [1], [2]] and task.params["outputs"] == 1
    assert "host reference MatMul" in plan.as_text()


def test_the_file_holds_the_task_as_data(model_bytes: bytes) -> None:
    task = _reference_task(_split(model_bytes)[0])
    assert task["params"]["op_type"] == "MatMul"
    assert task["params"]["descs"] is None and task["params"]["subgraphs"] is None
    (got,) = load_model(model_bytes).execute(_feeds())
    np.testing.assert_allclose(got, _expected(*_feeds()), rtol=1e-5, atol=1e-6)


def test_a_fresh_process_runs_it_without_numba(model_bytes: bytes, tmp_path: Path) -> None:
    """The reference needs ge's op library, imported when the plan is bound (a model without
    reference tasks imports none of it); never Numba, never the compiler."""
    path = tmp_path / "mm.om"
    path.write_bytes(model_bytes)
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, *_feeds())
    script = textwrap.dedent(
        """
        import json, sys
        import numpy as np
        from ge import runtime
        feeds = np.load(sys.argv[2])
        xs = [feeds[f"arr_{i}"] for i in range(3)]
        (out,) = runtime.load_model(sys.argv[1]).execute(xs)
        want = xs[0] @ xs[1].T + xs[2]
        print(json.dumps({"close": bool(np.allclose(out, want, rtol=1e-5, atol=1e-6)),
                          "numba": "numba" in sys.modules,
                          "compiler": "ge.compiler" in sys.modules}))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(path), str(feeds)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {
        "close": True,
        "numba": False,
        "compiler": False,
    }


_TESTS_OP = "TestsReferenceForeign"


@pytest.fixture
def foreign_op() -> Iterator[str]:
    """An op that is not one of ge's (a custom op's reference is the user's Python)."""
    register_op_def(
        OpDef(
            _TESTS_OP,
            inputs=(TensorSpec("x1"), TensorSpec("x2"), TensorSpec("bias")),
            outputs=(TensorSpec("y"),),
            infer=lambda ctx: [ctx.inputs[0]._clone()],
            reference=lambda ctx: [ctx.inputs[0]],
            group="custom",
            source="tests",
        )
    )
    try:
        yield _TESTS_OP
    finally:
        registry().unregister(_TESTS_OP)


_HOSTILE: dict[str, tuple[str, Any, str]] = {
    "unknown op": ("op_type", "NoSuchOpAtAll", "no op 'NoSuchOpAtAll'"),
    "op type not a string": ("op_type", 7, "must be a string"),
    "descs given": ("descs", [1], "must be null"),
    "subgraphs given": ("subgraphs", "g", "must be null"),
    "attribute an object": ("attrs", {"transpose_x1": {"a": 1}}, "not an object"),
    "attrs a list": ("attrs", [1], "must be an object"),
    "an input read twice": ("inputs", [[0], [0], [2]], "read each"),
    "an input position past the buffers": ("inputs", [[0], [1], [99]], "integer in"),
    "no outputs": ("outputs", 0, "writes 0 of"),
    "all outputs": ("outputs", 4, "read each"),
    "too few IR inputs": ("inputs", [[0, 1, 2]], "takes 3 inputs"),
    "attrs nested deep": ("attrs", {"a": json.loads("[" * 20 + "1" + "]" * 20)}, "deeper"),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE))
def test_hostile_reference_tasks_are_format_errors(model_bytes: bytes, case: str) -> None:
    header, payload = _split(model_bytes)
    key, value, message = _HOSTILE[case]
    _reference_task(header)["params"][key] = value
    with pytest.raises(ModelFormatError, match=message):
        load_model(_repack(header, payload))


def test_a_file_naming_a_foreign_op_is_refused(model_bytes: bytes, foreign_op: str) -> None:
    """Even when the process has the op registered: a model runs ge's ops only."""
    header, payload = _split(model_bytes)
    _reference_task(header)["params"]["op_type"] = foreign_op
    with pytest.raises(ModelFormatError, match="not one of ge's ops"):
        load_model(_repack(header, payload))


def _plan_with(task: HostTask) -> Plan:
    plan = Plan()
    for kind, index in ((BufferKind.INPUT, 0), (BufferKind.OUTPUT, 0)):
        plan.add_buffer(BufferSpec(kind, index, (2,), np.dtype(np.float32)))
    plan.inputs, plan.outputs, plan.tasks = [0], [1], [task]
    return plan


def _abs_task(**changes: Any) -> HostTask:
    params: dict[str, Any] = {
        "op_type": "Abs",
        "node": "n",
        "attrs": {},
        "inputs": [[0]],
        "outputs": 1,
        "descs": None,
        "subgraphs": None,
    }
    return host_task("n", "reference", [0, 1], **{**params, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"attrs": {"k": np.zeros(2)}}, "attribute 'k' is a ndarray"),
        ({"attrs": {"k": [1, {2}]}}, "attribute 'k' is a set"),
        ({"subgraphs": (["graph"], None)}, "objects of this process"),
    ],
)
def test_what_a_file_cannot_hold_is_refused_at_build_naming_the_node(
    changes: dict[str, Any], message: str
) -> None:
    model = om.ModelData([], [], [], {})
    with pytest.raises(GeError, match=rf"node n.*{message}"):
        om.plan_data(_plan_with(_abs_task(**changes)), model, "g")


def test_attributes_are_written_as_json_values() -> None:
    model = om.ModelData([], [], [], {})
    attrs = {"f": np.float32(0.5), "i": np.int64(3), "t": (1, 2), "b": True, "s": "x", "n": None}
    data = om.plan_data(_plan_with(_abs_task(attrs=attrs)), model, "g")
    (task,) = data.tasks
    assert isinstance(task, om.HostTaskData)
    assert task.params["attrs"] == {"f": 0.5, "i": 3, "t": [1, 2], "b": True, "s": "x", "n": None}
    assert json.loads(json.dumps(task.params["attrs"])) == task.params["attrs"]
