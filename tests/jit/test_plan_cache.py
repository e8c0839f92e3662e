"""``ge.jit``'s plan cache (``ge.jit._plan_cache``): a plan compiled by one process is loaded
by the next without ``ge.compiler``; anything that changes the plan (constants, shapes,
dtypes, options, ge's code) misses; bad entries are misses; the switches are honoured; and a
loaded plan keeps every behaviour of a call (donation, write-back, debug_print, ``.lower()``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge
from ge.graph import Tensor
from ge.jit import _plan_cache
from ge.options import Options, current_options, using_options


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One kernel cache for the module (kernels compile once), which holds the plans too."""
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture(autouse=True)
def plan_cache(monkeypatch: pytest.MonkeyPatch, kernels: Path) -> Iterator[Path]:
    """The plan cache on, in the module's kernel cache, emptied of plans for each test."""
    monkeypatch.setenv("GE_JIT_PLAN_CACHE", "1")
    monkeypatch.setenv("GE_JIT_BACKGROUND", "0")
    monkeypatch.setenv("GE_KERNEL_CACHE_DIR", str(kernels))
    for old in kernels.glob("*.geplan"):
        old.unlink()
    yield kernels


def _plans(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.geplan"))


def _entry(f: Any) -> Any:
    (entry,) = f._cache.values()
    return entry


def _twice(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """The entries of two fresh ``ge.jit`` wrappers of ``fn`` called on ``args`` (the second
    can only find the first's plan on disk), checked against numpy."""
    want = fn(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    entries = []
    for _ in range(2):
        f = ge.jit(fn)
        got = f(*args)
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        entries.append(_entry(f))
    return entries[0], entries[1]


def _chain(x: Any, y: Any) -> Any:
    return x * y + x * 0.5 - y * y


# --- hits ---------------------------------------------------------------------------------------
_FRESH = r"""
import json, sys
import numpy as np
import ge

@ge.jit
def chain(x, y):
    return np.exp(x) * y + x * 0.5 - y * y

x = np.linspace(-1, 1, 1000, dtype=np.float32)
y = np.float32(2) - x
out = chain(x, y)
entry = next(iter(chain._cache.values()))
print(json.dumps({
    "out": out.tolist(),
    "loaded": entry._loaded is not None,
    "compiler": sorted(m for m in sys.modules if m.startswith("ge.compiler")),
}))
"""


def _fresh(cache: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "GE_KERNEL_CACHE_DIR": str(cache),
        "GE_JIT_PLAN_CACHE": "1",
        "GE_JIT_BACKGROUND": "0",
    }
    out = subprocess.run(
        [sys.executable, "-c", _FRESH], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_a_fresh_process_loads_the_plan_and_imports_no_compiler(plan_cache: Path) -> None:
    first = _fresh(plan_cache)  # compiles (kernels and plan) and stores the plan
    assert not first["loaded"] and first["compiler"]
    assert len(_plans(plan_cache)) == 1
    second = _fresh(plan_cache)
    assert second["loaded"] and second["compiler"] == []
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    y = np.float32(2) - x
    want = np.exp(x) * y + x * np.float32(0.5) - y * y
    np.testing.assert_allclose(np.float32(second["out"]), want, rtol=2e-6, atol=1e-6)
    assert second["out"] == first["out"]  # the same plan: the same bits


def test_a_second_wrapper_loads_the_first_ones_plan(plan_cache: Path) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    first, second = _twice(_chain, x, x + 1)
    assert first._loaded is None and first.compiled is not None
    assert second._loaded is not None and second.runner is not None
    assert len(_plans(plan_cache)) == 1


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)),  # 0-size
        (np.array(1.5, np.float32), np.array(2.0, np.float32)),  # scalars
        (np.ones((4, 1), np.float32), np.arange(3, dtype=np.float32)),  # broadcast
        (np.arange(20, dtype=np.float32)[::2], np.arange(10, dtype=np.float32)),  # strided
        (np.arange(6, dtype=np.int32), np.arange(6, dtype=np.int32)),  # ints
    ],
)
def test_hits_give_numpy_equal_results_for_odd_shapes(x: np.ndarray, y: np.ndarray) -> None:
    first, second = _twice(_chain, x, y)
    assert first._loaded is None and second._loaded is not None


def test_a_loaded_plan_serves_later_calls_and_the_fast_path() -> None:
    x = np.arange(5, dtype=np.float32)
    _twice(_chain, x, x)
    f = ge.jit(_chain)
    for k in range(3):
        np.testing.assert_array_equal(f(x + k, x), _chain(x + k, x))
    assert _entry(f)._loaded is not None and f.cache_info().misses == 1


# --- misses -------------------------------------------------------------------------------------
def test_a_changed_constant_shape_or_dtype_misses(plan_cache: Path) -> None:
    x = np.arange(6, dtype=np.float32)
    _twice(_chain, x, x)
    assert len(_plans(plan_cache)) == 1

    def other_constant(x: Any, y: Any) -> Any:
        return x * y + x * 0.25 - y * y

    for fn, args in (
        (other_constant, (x, x)),
        (_chain, (np.arange(7, dtype=np.float32),) * 2),
        (_chain, (np.arange(6, dtype=np.float64),) * 2),
    ):
        f = ge.jit(fn)
        np.testing.assert_array_equal(f(*args), fn(*args))
        assert _entry(f)._loaded is None  # compiled, not loaded
    assert len(_plans(plan_cache)) == 4


def test_a_constant_array_is_keyed_by_its_bytes() -> None:
    x = np.arange(4, dtype=np.float32)
    for table in (np.float32([1, 2, 3, 4]), np.float32([1, 2, 3, 5])):

        def add(x: Any, table: np.ndarray = table) -> Any:
            return x + table

        f = ge.jit(add)
        np.testing.assert_array_equal(f(x), x + table)
        assert _entry(f)._loaded is None


@pytest.mark.parametrize("change", [{"fusion": False}, {"approx_math": False}])
def test_changed_options_miss(change: dict[str, Any]) -> None:
    x = np.linspace(0, 1, 9, dtype=np.float32)
    _twice(_chain, x, x)
    with using_options(current_options().replace(**change)):
        f = ge.jit(_chain)
        np.testing.assert_array_equal(f(x, x), _chain(x, x))
        assert _entry(f)._loaded is None
        g = ge.jit(_chain)
        g(x, x)
        assert _entry(g)._loaded is not None  # and that setting has a plan of its own


def test_the_options_that_change_no_plan_share_it() -> None:
    x = np.arange(3, dtype=np.float32)
    _twice(_chain, x, x)
    with using_options(current_options().replace(jit_explain="warn", jit_background=False)):
        f = ge.jit(_chain)
        f(x, x)
        assert _entry(f)._loaded is not None


def test_a_changed_source_fingerprint_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(4, dtype=np.float32)
    _twice(_chain, x, x)
    monkeypatch.setattr(_plan_cache, "_environment", lambda: "ge edited since")
    f = ge.jit(_chain)
    np.testing.assert_array_equal(f(x, x), _chain(x, x))
    assert _entry(f)._loaded is None


def test_the_source_fingerprint_follows_every_file(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    (package / "notes.txt").write_text("not code\n")
    base = _plan_cache._source(package)
    assert _plan_cache._source(package) == base  # stable
    (package / "notes.txt").write_text("still not code\n")
    assert _plan_cache._source(package) == base  # only .py files count
    b = package / "sub" / "b.py"
    b.write_text("y = 3\n")  # same size: the modification time tells
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 1_000_000))
    edited = _plan_cache._source(package)
    assert edited != base
    (package / "sub" / "c.py").write_text("")
    assert _plan_cache._source(package) != edited


# --- bad entries --------------------------------------------------------------------------------
def _damage_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def _framed_garbage(path: Path) -> None:
    """A sound frame (magic and checksum) around bytes that are no model."""
    from ge._device._code_cache import write_entry

    assert write_entry(path.parent, path.name, _plan_cache._MAGIC, b"GEOM" + os.urandom(300))


def _framed_mutation(path: Path) -> None:
    """A sound frame around a model with one header byte changed (the OM reader refuses)."""
    from ge._device._code_cache import read_entry, write_entry

    payload = read_entry(path, _plan_cache._MAGIC)
    assert payload is not None
    mutated = bytearray(payload)
    mutated[60] ^= 0x01
    assert write_entry(path.parent, path.name, _plan_cache._MAGIC, bytes(mutated))


@pytest.mark.parametrize(
    "damage", [_damage_flip, _damage_truncate, _damage_empty, _framed_garbage, _framed_mutation]
)
def test_a_damaged_entry_is_a_miss_and_is_recomputed(
    plan_cache: Path, damage: Callable[[Path], None]
) -> None:
    x = np.arange(10, dtype=np.float32)
    _twice(_chain, x, x)
    (path,) = _plans(plan_cache)
    damage(path)
    f = ge.jit(_chain)
    np.testing.assert_array_equal(f(x, x), _chain(x, x))
    assert _entry(f)._loaded is None
    g = ge.jit(_chain)  # the recomputed plan was stored again
    np.testing.assert_array_equal(g(x, x), _chain(x, x))
    assert _entry(g)._loaded is not None


def test_another_plans_entry_under_this_key_is_a_miss(plan_cache: Path) -> None:
    """A sound entry copied to another key's name (same inputs and outputs) is refused: an
    entry names its own key."""
    x = np.arange(5, dtype=np.float32)
    _twice(_chain, x, x)
    (chain_plan,) = _plans(plan_cache)

    def other(x: Any, y: Any) -> Any:
        return x - y

    _twice(other, x, x)
    (other_plan,) = set(_plans(plan_cache)) - {chain_plan}
    other_plan.write_bytes(chain_plan.read_bytes())
    f = ge.jit(other)
    np.testing.assert_array_equal(f(x, x + 1), x - (x + 1))  # not chain's result
    assert _entry(f)._loaded is None


# --- switches and what is not cached ------------------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GE_JIT_PLAN_CACHE", "0"),
        ("GE_KERNEL_CACHE", "0"),
        ("GE_DUMP_GRAPH", "dumps"),
        ("GE_KERNEL_SOURCE", "1"),
    ],
)
def test_switches_read_and_write_no_plan(
    monkeypatch: pytest.MonkeyPatch, plan_cache: Path, tmp_path: Path, variable: str, value: str
) -> None:
    x = np.arange(4, dtype=np.float32)
    _twice(_chain, x, x)
    assert len(_plans(plan_cache)) == 1
    monkeypatch.setenv(variable, str(tmp_path / value) if variable == "GE_DUMP_GRAPH" else value)

    def fresh(x: Any, y: Any) -> Any:
        return x + y * 3.0

    for fn in (_chain, fresh):  # no hit on the stored plan, no store of a new one
        f = ge.jit(fn)
        np.testing.assert_array_equal(f(x, x), fn(x, x))
        assert _entry(f)._loaded is None
    assert len(_plans(plan_cache)) == 1


def test_registered_passes_turn_the_cache_off(plan_cache: Path) -> None:
    from ge.passes.base import FusionBasePass
    from ge.passes.registry import register_fusion_pass, unregister_pass
    from ge.passes.stage import PassStage

    x = np.arange(4, dtype=np.float32)
    graph = ge.jit(_chain).trace(x, x)
    assert _plan_cache.plan_key(graph, current_options()) is not None

    @register_fusion_pass(name="PlanCacheTestNoop", stage=PassStage.BEFORE_INFER_SHAPE)
    class Noop(FusionBasePass):
        def run(self, graph: Any, context: Any) -> None:
            return None

    try:
        assert _plan_cache.plan_key(graph, current_options()) is None
        f = ge.jit(_chain)
        np.testing.assert_array_equal(f(x, x), _chain(x, x))
        assert _entry(f)._loaded is None
        assert _plans(plan_cache) == []
    finally:
        unregister_pass("PlanCacheTestNoop")


def test_compiler_stage_hooks_turn_the_cache_off() -> None:
    from ge.compiler import register_stage_hook
    from ge.passes.stage import PassStage

    x = np.arange(4, dtype=np.float32)
    graph = ge.jit(_chain).trace(x, x)
    seen: list[str] = []
    handle = register_stage_hook(PassStage.AFTER_INFER_SHAPE, lambda g: seen.append(g.name))
    try:
        assert _plan_cache.plan_key(graph, current_options()) is None
        _twice(_chain, x, x)  # both compile: the hook sees each
        assert len(seen) == 2
    finally:
        handle.remove()
    assert _plan_cache.plan_key(graph, current_options()) is not None


def test_a_plan_of_python_host_tasks_is_not_stored(plan_cache: Path) -> None:
    """A plan the offline-model writer refuses (a While over live subgraphs) runs as usual
    and leaves no entry."""

    def count(x: Any) -> Any:
        return ge.jit.fori_loop(0, 3, lambda i, v: v * 2.0, x)

    x = np.arange(3, dtype=np.float32)
    for _ in range(2):
        f = ge.jit(count)
        np.testing.assert_array_equal(f(x), x * 8)
        assert _entry(f)._loaded is None
    assert _plans(plan_cache) == []


def test_a_graph_with_a_custom_op_has_no_key() -> None:
    from ge.ops.registry import find_op

    graph = ge.jit(_chain).trace(np.ones(2, np.float32), np.ones(2, np.float32))
    mul = next(n for n in graph.get_direct_nodes() if n.type == "Mul")
    op = find_op("Mul")
    assert op is not None and op.source == "ge"
    assert _plan_cache.plan_key(graph, current_options()) is not None
    mul._type = "PlanCacheTestNoSuchOp"  # as an op that is not ge's own
    mul._op = None
    assert _plan_cache.plan_key(graph, current_options()) is None


def test_a_store_that_cannot_be_written_only_costs_the_next_compile(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be")
    x = np.arange(4, dtype=np.float32)
    with using_options(Options(kernel_cache_dir=str(blocked / "kernels"), jit_background=False)):
        for _ in range(2):  # each compiles and runs; nothing could be stored
            f = ge.jit(_chain)
            np.testing.assert_array_equal(f(x, x), _chain(x, x))
            assert _entry(f)._loaded is None and _entry(f)._plan_key is not None
    assert blocked.read_text() == "a file where the cache directory would be"


# --- a loaded plan keeps every behaviour of a call -----------------------------------------------
def test_donation_on_a_hit() -> None:
    def step(x: Any, y: Any) -> Any:
        return x * 0.5 + y

    x = np.arange(1000, dtype=np.float32)
    y = np.ones_like(x)
    for k in range(2):
        f = ge.jit(step, donate_argnums=0)
        tensor = Tensor.from_numpy(x).to_device()
        addr = tensor.addr
        out = f(tensor, y)
        np.testing.assert_array_equal(out, x * np.float32(0.5) + y)
        assert out.ctypes.data == addr  # written over the donated block
        with pytest.raises(ge.error.GeError, match="donated"):
            tensor.numpy()
        assert (_entry(f)._loaded is not None) == (k == 1)


def test_write_back_on_a_hit() -> None:
    def bump(x: Any) -> Any:
        x[1:3] = 7
        x += 1
        return x * 2

    for k in range(2):
        mine, ref = np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int32)
        f = ge.jit(bump)
        np.testing.assert_array_equal(f(mine), bump(ref))
        np.testing.assert_array_equal(mine, ref)  # the caller's array was updated
        assert (_entry(f)._loaded is not None) == (k == 1)


def test_debug_print_on_a_hit(capsys: pytest.CaptureFixture[str]) -> None:
    def show(x: Any) -> Any:
        z = x * 2.0
        ge.jit.debug_print("z={} total={:.1f}", z, z.sum())
        return z + 1

    x = np.float32([0, 1, 2])
    for k in range(2):
        f = ge.jit(show)
        np.testing.assert_array_equal(f(x), x * 2 + 1)
        assert capsys.readouterr().out.splitlines() == ["z=[0. 2. 4.] total=6.0"]
        assert (_entry(f)._loaded is not None) == (k == 1)


def test_lower_on_a_hit_shows_the_optimised_graph_and_plan() -> None:
    x = np.arange(8, dtype=np.float32)
    first, _ = _twice(_chain, x, x)
    f = ge.jit(_chain)
    lowered = f.lower(x, x)
    entry = _entry(f)
    assert entry._loaded is not None  # calls still run the loaded plan
    assert lowered.graph is entry.compiled.graph and lowered.graph is not entry.graph
    assert lowered.plan is entry.runner.plan
    assert lowered.as_text().splitlines()[-1].startswith("  launch ")
    assert first.compiled.graph.as_text() == lowered.graph.as_text()
    np.testing.assert_array_equal(f(x, x), _chain(x, x))


def test_a_forged_entry_for_other_shapes_is_a_miss(plan_cache: Path) -> None:
    """An entry that names this key but takes other shapes (as a hostile file could) is
    refused: a loaded plan must take and give exactly the traced graph's dtypes and shapes."""
    from ge._device._code_cache import read_entry, write_entry
    from ge.runtime import om

    five, six = np.arange(5, dtype=np.float32), np.arange(6, dtype=np.float32)
    _twice(_chain, five, five)
    (path,) = _plans(plan_cache)
    key = _plan_cache.plan_key(ge.jit(_chain).trace(six, six), current_options())
    assert key is not None and path.stem != key
    payload = read_entry(path, _plan_cache._MAGIC)
    assert payload is not None
    model = om.unpack(payload)
    model.options = {_plan_cache._KEY_OPTION: key}  # now it claims to be the (6,) plan
    forged = plan_cache / f"{key}{_plan_cache._SUFFIX}"
    assert write_entry(plan_cache, forged.name, _plan_cache._MAGIC, om.pack(model))
    f = ge.jit(_chain)
    np.testing.assert_array_equal(f(six, six), _chain(six, six))
    assert _entry(f)._loaded is None
    g = ge.jit(_chain)  # the forged entry was replaced by the real plan
    np.testing.assert_array_equal(g(six, six), _chain(six, six))
    assert _entry(g)._loaded is not None


def test_a_failing_call_on_a_hit_is_explained_as_after_a_compile() -> None:
    """A loaded plan's kernels do not explain their failures; the call runs again on the plan
    compiled here, which does, and the entry keeps that plan."""

    def pick(x: Any, i: Any) -> Any:
        return x[i, 1:]

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    good, bad = np.array([0, 2]), np.array([0, 3])
    _twice(pick, x, good)
    f = ge.jit(pick)
    np.testing.assert_array_equal(f(x, good), x[good, 1:])
    entry = _entry(f)
    assert entry._loaded is not None and entry._compiled_graph is None
    with pytest.raises(ge.error.GeError, match="holds 3 at"):
        f(x, bad)
    np.testing.assert_array_equal(f(x, good), x[good, 1:])
    g = ge.jit(pick)
    g(x, good)
    assert _entry(g)._loaded is not None
    with pytest.raises(ge.error.GeError, match="holds 3 at"):  # the device-address path
        g(x, Tensor.from_numpy(bad).to_device())


@pytest.mark.slow
def test_a_plan_compiled_in_the_background_is_stored_at_the_switch(
    worker: Any, monkeypatch: pytest.MonkeyPatch, plan_cache: Path
) -> None:
    from ge.compiler.kernels import _codegen

    monkeypatch.setenv("GE_JIT_BACKGROUND", "1")
    monkeypatch.setattr(_codegen, "_CACHE", {})  # as a new process: nothing loaded yet

    def f(x: Any) -> Any:
        return np.tanh(x) * 1.625 + x  # kernels no other test of the module compiles

    x = np.linspace(-2, 2, 33, dtype=np.float32)
    want = np.tanh(x) * np.float32(1.625) + x
    jitted = ge.jit(f)
    np.testing.assert_array_equal(jitted(x), want)  # the reference, while the worker compiles
    assert _entry(jitted).job is not None and _plans(plan_cache) == []
    assert ge.jit.wait_for_compiles(180.0)
    np.testing.assert_allclose(jitted(x), want, rtol=2e-6, atol=2e-6)  # switched: stored
    assert _entry(jitted).job is None and len(_plans(plan_cache)) == 1
    again = ge.jit(f)
    np.testing.assert_allclose(again(x), want, rtol=2e-6, atol=2e-6)
    assert _entry(again)._loaded is not None and _entry(again).job is None
