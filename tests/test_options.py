"""``ge.options``: the record, reading it from the environment (and its errors), the record in
force on a thread, and that the settings that change code never share a compiled kernel
(in memory or on disk) and travel with a compiled graph and an offline model."""

from __future__ import annotations

import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ge import offline_compile as oc
from ge import runtime
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import _disk_cache
from ge.error import GeTypeError, GeValueError
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.jit import jit
from ge.options import Options, current_options, using_options
from ge.runtime import om
from ge.runtime.kernel import bounds_checks, boundscheck_enabled
from ge.runtime.plan import KernelTask

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test starts from the defaults, with a fresh kernel cache of its own."""
    for variable in Options.variables().values():
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GE_KERNEL_CACHE_DIR", str(tmp_path / "kernels"))


def _exp_graph(name: str = "g") -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=[64])
    y: Any = np.exp(x)  # a TensorHolder (numpy protocol)
    return b.build_and_reset([y * 2.0 + 1.0])


def _kernels(compiled: CompiledGraph) -> list[Any]:
    plan = compiled.plan_for([[64]])
    assert plan is not None
    return [t.function for t in plan.tasks if isinstance(t, KernelTask)]


# --- the record ---------------------------------------------------------------------------------
def test_defaults_and_variables() -> None:
    opts = Options()
    assert opts.as_dict() == {
        "fusion": True,
        "approx_math": True,
        "kernel_boundscheck": False,
        "num_threads": 0,
        "jit_background": True,
        "kernel_cache": True,
        "kernel_cache_dir": "",
        "kernel_source": False,
        "dump_graph": "",
        "jit_explain": "info",
        "jit_plan_cache": True,
    }
    assert Options.variables() == {
        "fusion": "GE_FUSION",
        "approx_math": "GE_APPROX_MATH",
        "kernel_boundscheck": "GE_KERNEL_BOUNDSCHECK",
        "num_threads": "GE_NUM_THREADS",
        "jit_background": "GE_JIT_BACKGROUND",
        "kernel_cache": "GE_KERNEL_CACHE",
        "kernel_cache_dir": "GE_KERNEL_CACHE_DIR",
        "kernel_source": "GE_KERNEL_SOURCE",
        "dump_graph": "GE_DUMP_GRAPH",
        "jit_explain": "GE_JIT_EXPLAIN",
        "jit_plan_cache": "GE_JIT_PLAN_CACHE",
    }
    with pytest.raises(AttributeError):
        opts.fusion = False  # type: ignore[misc]


def test_from_env_reads_every_variable() -> None:
    env = {
        "GE_FUSION": "0",
        "GE_APPROX_MATH": " 0 ",
        "GE_KERNEL_BOUNDSCHECK": "1",
        "GE_NUM_THREADS": "3",
        "GE_JIT_BACKGROUND": "0",
        "GE_KERNEL_CACHE": "0",
        "GE_KERNEL_CACHE_DIR": "/tmp/k",
        "GE_KERNEL_SOURCE": "1",
        "GE_DUMP_GRAPH": "/tmp/d",
        "GE_JIT_EXPLAIN": "warn",
        "UNRELATED": "x",
    }
    assert Options.from_env(env) == Options(
        fusion=False,
        approx_math=False,
        kernel_boundscheck=True,
        num_threads=3,
        jit_background=False,
        kernel_cache=False,
        kernel_cache_dir="/tmp/k",
        kernel_source=True,
        dump_graph="/tmp/d",
        jit_explain="warn",
    )
    assert Options.from_env({}) == Options()
    assert Options.from_env({"GE_FUSION": "", "GE_NUM_THREADS": "  "}) == Options()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("GE_FUSION", "yes", "0 or 1"),
        ("GE_APPROX_MATH", "2", "0 or 1"),
        ("GE_KERNEL_BOUNDSCHECK", "yes", "0 or 1"),
        ("GE_NUM_THREADS", "zero", "a positive integer"),
        ("GE_NUM_THREADS", "0", "a positive integer"),
        ("GE_JIT_BACKGROUND", "off", "0 or 1"),
        ("GE_KERNEL_CACHE", "false", "0 or 1"),
        ("GE_KERNEL_SOURCE", "true", "0 or 1"),
    ],
)
def test_a_bad_value_names_the_variable_what_it_takes_and_what_it_got(
    variable: str, value: str, expected: str
) -> None:
    with pytest.raises(GeValueError, match=f"^{variable} must be {expected}, got '{value}'$"):
        Options.from_env({variable: value})


def test_jit_explain_keeps_any_text_for_ge_jit_to_judge() -> None:
    # a logging knob never fails the read of the record: ge.jit logs what it got instead
    assert Options.from_env({"GE_JIT_EXPLAIN": "loud"}).jit_explain == "loud"
    assert Options.from_env({"GE_JIT_EXPLAIN": " "}).jit_explain == "info"
    with pytest.raises(GeTypeError, match=r"Options\.jit_explain must be str, got int"):
        Options(jit_explain=1)  # type: ignore[arg-type]


def test_fields_are_type_checked() -> None:
    with pytest.raises(GeTypeError, match=r"Options\.fusion must be bool, got str"):
        Options(fusion="1")  # type: ignore[arg-type]
    with pytest.raises(GeTypeError, match=r"Options\.num_threads must be int, got bool"):
        Options(num_threads=True)
    with pytest.raises(GeValueError, match="num_threads must be >= 0"):
        Options(num_threads=-1)
    with pytest.raises(GeTypeError, match=r"unknown fields \['fuse'\]"):
        Options().replace(fuse=False)
    with pytest.raises(GeValueError, match=r"unknown fields \['nope'\]"):
        Options.from_dict({"nope": 1})
    with pytest.raises(GeTypeError, match="must be a mapping"):
        Options.from_dict([("fusion", True)])  # type: ignore[arg-type]


def test_replace_keys_and_round_trip() -> None:
    base = Options()
    changed = base.replace(approx_math=False, num_threads=2)
    assert (base.approx_math, changed.approx_math, changed.num_threads) == (True, False, 2)
    assert Options.from_dict(changed.as_dict()) == changed
    assert changed.key() == Options(num_threads=2, approx_math=False).key() != base.key()
    # kernel_key: only what changes generated code
    assert base.kernel_key() == "approx_math=1,kernel_boundscheck=0"
    assert base.replace(num_threads=4, dump_graph="d", fusion=False).kernel_key() == (
        base.kernel_key()
    )
    keys = {
        Options(approx_math=a, kernel_boundscheck=b).kernel_key()
        for a in (True, False)
        for b in (True, False)
    }
    assert len(keys) == 4
    assert hash(base) == hash(Options())


# --- the record in force ------------------------------------------------------------------------
def test_current_options_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    first = current_options()
    assert current_options() is first  # nothing changed: the same record, not re-parsed
    monkeypatch.setenv("GE_FUSION", "0")
    assert current_options().fusion is False
    monkeypatch.setenv("GE_FUSION", "maybe")
    with pytest.raises(GeValueError, match="GE_FUSION must be 0 or 1, got 'maybe'"):
        current_options()
    monkeypatch.delenv("GE_FUSION")
    assert current_options().fusion is True


def test_using_options_nests_and_stays_on_its_thread() -> None:
    outer, inner = Options(fusion=False), Options(approx_math=False)
    seen: list[Options] = []
    with using_options(outer):
        with using_options(inner) as given:
            assert given is inner and current_options() is inner
            worker = threading.Thread(target=lambda: seen.append(current_options()))
            worker.start()
            worker.join()
        assert current_options() is outer
    assert current_options().fusion is True
    assert seen == [Options.from_env({"GE_KERNEL_CACHE_DIR": current_options().kernel_cache_dir})]
    with pytest.raises(GeTypeError, match="must be an Options"), using_options({}):  # type: ignore[arg-type]
        pass


def test_bounds_checks_is_an_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not boundscheck_enabled()
    with using_options(Options(approx_math=False)), bounds_checks():
        assert boundscheck_enabled()
        assert current_options().approx_math is False  # the rest of the record is kept
    assert not boundscheck_enabled()
    monkeypatch.setenv("GE_KERNEL_BOUNDSCHECK", "1")
    assert boundscheck_enabled()


def test_importing_the_record_imports_no_compiler() -> None:
    code = (
        "import sys, ge.options, ge.runtime; "
        "print(sorted(m for m in sys.modules if m.startswith(('ge.compiler', 'ge.ops', 'numba'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --- kernels: two settings never share one ------------------------------------------------------
def test_approximate_math_on_and_off_give_two_kernels() -> None:
    graph = _exp_graph()
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    on = CompiledGraph(graph, ge_options=Options(approx_math=True))
    off = CompiledGraph(graph, ge_options=Options(approx_math=False))
    (k_on,), (k_off,) = _kernels(on), _kernels(off)
    assert k_on is not k_off and k_on.address != k_off.address
    again = CompiledGraph(graph, ge_options=Options(approx_math=False, num_threads=2))
    assert _kernels(again)[0] is k_off  # settings that do not change code share it
    expected = np.exp(x) * 2 + 1
    for compiled in (on, off):
        np.testing.assert_allclose(compiled.run_arrays([x])[0], expected, rtol=1e-5)


def test_bounds_checks_on_and_off_give_two_kernels() -> None:
    graph = _exp_graph()
    plain = _kernels(CompiledGraph(graph, ge_options=Options()))[0]
    checked = _kernels(CompiledGraph(graph, ge_options=Options(kernel_boundscheck=True)))[0]
    assert plain is not checked


def test_disk_cache_keys_and_places_follow_the_record(tmp_path: Path) -> None:
    source = "def kernel(block_idx, block_dim, args):\n    pass\n"
    keys = {
        _disk_cache.cache_key(source, Options(approx_math=a, kernel_boundscheck=b))
        for a in (True, False)
        for b in (True, False)
    }
    assert len(keys) == 4
    assert _disk_cache.cache_key(source, Options(fusion=False, num_threads=3)) == (
        _disk_cache.cache_key(source, Options())
    )
    assert _disk_cache.cache_dir(Options(kernel_cache_dir=str(tmp_path))) == tmp_path
    assert _disk_cache.cache_dir(Options(kernel_cache=False, kernel_cache_dir="x")) is None


def test_fusion_and_dumps_come_from_the_record(tmp_path: Path) -> None:
    graph = _exp_graph()
    fused = CompiledGraph(graph, ge_options=Options())
    unfused = CompiledGraph(graph, ge_options=Options(fusion=False, dump_graph=str(tmp_path)))
    assert "FusedElementwise" in {n.type for n in fused.graph.get_direct_nodes()}
    assert "FusedElementwise" not in {n.type for n in unfused.graph.get_direct_nodes()}
    assert len(_kernels(unfused)) == 3
    assert any(p.name.endswith("_verify.txt") for p in tmp_path.iterdir())  # dumped
    assert unfused.ge_options.fusion is False


def test_a_compiled_jit_call_reads_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    @jit
    def f(x: Any) -> Any:
        return np.exp(x) * 2.0 + 1.0

    x = np.linspace(-1, 1, 64, dtype=np.float32)
    expected = f(x)
    # a bad value would raise from any read of the record; a cached call makes none
    monkeypatch.setenv("GE_FUSION", "bogus")
    np.testing.assert_array_equal(f(x), expected)


# --- offline models -----------------------------------------------------------------------------
@pytest.fixture
def build_session() -> Any:
    oc.build_initialize({})
    yield
    oc.build_finalize()


def test_a_model_carries_its_options(build_session: None) -> None:
    with using_options(Options(approx_math=False, num_threads=2)):
        data = oc.build_model(_exp_graph(), {"input_shape": "x:64"}).get_bytes()
    model = runtime.load_model(data)
    assert model.ge_options == Options(approx_math=False, num_threads=2, kernel_boundscheck=True)
    assert model.options == {"input_shape": "x:64"}  # the build options, as before
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    np.testing.assert_allclose(model.execute([x])[0], np.exp(x) * 2 + 1, rtol=1e-5)


def test_model_header_options_are_checked(build_session: None) -> None:
    data = om.unpack(oc.build_model(_exp_graph()).get_bytes())
    assert data.ge_options is not None and data.ge_options.kernel_boundscheck
    newer = types.SimpleNamespace(as_dict=lambda: {"fusion": False, "from_a_newer_ge": 1})
    data.ge_options = newer  # type: ignore[assignment]
    assert om.unpack(om.pack(data)).ge_options == Options(fusion=False)  # unknown: left out
    data.ge_options = types.SimpleNamespace(as_dict=lambda: {"fusion": "yes"})  # type: ignore[assignment]
    with pytest.raises(om.ModelFormatError, match=r"ge_options: Options\.fusion must be bool"):
        om.unpack(om.pack(data))
    data.ge_options = None
    assert runtime.load_model(om.pack(data)).ge_options is None  # a model that saved none
