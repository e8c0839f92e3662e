"""``ASCEND_CUSTOM_OPP_PATH`` discovery: files, plain directories and packages in an
``os.pathsep`` list; all-or-nothing batches; loading at ``GeApi.ge_initialize`` and whenever
an unknown op type is looked up (newly added paths are found then)."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

import ge.es.custom
from ge.custom_op import bootstrap, get_registered_op_impls, proto, register_op
from ge.custom_op.bootstrap import load_custom_op_plugins, loaded_paths
from ge.custom_op.proto import get_registered_op_proto, get_registered_op_protos
from ge.custom_op.registry import get_registered_op_impl_for_type
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.ge_global.geapi import is_initialized
from ge.graph import Graph
from ge.ops import find_op, get_op, registry
from ge.runtime import TensorDesc
from ge.session import Session

ENV = bootstrap.ENV_NAME


def _plugin(op_type: str, log: Path, *, impl: bool = True, extra: str = "") -> str:
    """Source of a plugin registering ``op_type`` (proto, and impl unless told otherwise) and
    appending its module name to ``log`` each time it runs."""
    body = f"""
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        with open({str(log)!r}, "a") as _log:
            _log.write(__name__ + "\\n")

        @register_op(op_type={op_type!r})
        def infer(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape, x.data_type)
        """
    if impl:
        body += f"""
        @register_op_impl(op_type={op_type!r})
        class Impl:
            def execute(self, x: Tensor) -> None: ...
        """
    return textwrap.dedent(body) + textwrap.dedent(extra)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _runs(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _state() -> tuple[object, ...]:
    return (
        [d.descriptor_key for d in get_registered_op_protos()],
        [d.descriptor_key for d in get_registered_op_impls()],
        sorted(op.type for op in registry()),
        loaded_paths(),
    )


# --- what an entry may be ---------------------------------------------------------------------
def test_a_file_loads_once(tmp_path: Path, op_type: str) -> None:
    log = tmp_path / "log"
    file = _write(tmp_path / "my_ops.py", _plugin(op_type, log))
    names = load_custom_op_plugins(str(file))
    assert len(names) == 1 and names[0].startswith("_ge_py_custom_op_my_ops_")
    assert names[0] in sys.modules and _runs(log) == names
    assert get_registered_op_proto(op_type) is not None and find_op(op_type) is not None
    assert get_registered_op_impl_for_type(op_type) is not None
    assert loaded_paths()[-1] == str(file.resolve())
    assert load_custom_op_plugins(str(file)) == [] and _runs(log) == names  # not run again


def test_a_plain_directory_loads_files_and_packages_sorted(tmp_path: Path) -> None:
    log = tmp_path / "log"
    ops = tmp_path / "ops"
    _write(ops / "b_second.py", _plugin("DirOpB", log))
    _write(ops / "a_first.py", _plugin("DirOpA", log))
    _write(ops / "c_pkg_dir" / "__init__.py", _plugin("DirOpC", log))
    _write(ops / "_private.py", "raise RuntimeError('skipped: leading underscore')")
    _write(ops / "_hidden_pkg" / "__init__.py", "raise RuntimeError('skipped')")
    _write(ops / "notes.txt", "not python")
    _write(ops / "no_init" / "x.py", "raise RuntimeError('not a package: skipped')")
    names = load_custom_op_plugins(str(ops))
    prefix = bootstrap.MODULE_PREFIX
    assert len(names) == 3 and names[2] == "c_pkg_dir"
    assert names[0].startswith(prefix + "a_first_") and names[1].startswith(prefix + "b_second_")
    assert _runs(log) == names
    assert all(find_op(t) is not None for t in ("DirOpA", "DirOpB", "DirOpC"))
    sys.modules.pop("c_pkg_dir", None)


def test_a_package_entry_is_imported_as_a_package(tmp_path: Path) -> None:
    log = tmp_path / "log"
    package = tmp_path / "pkg_entry_ops"
    _write(package / "__init__.py", "from . import impl\n")
    _write(package / "impl.py", _plugin("PkgEntryOp", log))
    names = load_custom_op_plugins(str(package))
    assert names == ["pkg_entry_ops"]
    assert _runs(log) == ["pkg_entry_ops.impl"] and find_op("PkgEntryOp") is not None
    assert str(tmp_path) not in sys.path  # the parent was on sys.path only while importing
    for name in ("pkg_entry_ops", "pkg_entry_ops.impl"):
        sys.modules.pop(name, None)


def test_a_pathsep_list_with_empty_entries(tmp_path: Path) -> None:
    log = tmp_path / "log"
    one = _write(tmp_path / "one.py", _plugin("ListOpOne", log))
    two = _write(tmp_path / "d" / "two.py", _plugin("ListOpTwo", log))
    value = os.pathsep.join(["", str(one), "", str(two.parent), ""])
    assert len(load_custom_op_plugins(value)) == 2
    assert find_op("ListOpOne") is not None and find_op("ListOpTwo") is not None


def test_same_file_name_in_two_directories_gives_two_modules(tmp_path: Path) -> None:
    log = tmp_path / "log"
    a = _write(tmp_path / "a" / "ops.py", _plugin("SameNameA", log))
    b = _write(tmp_path / "b" / "ops.py", _plugin("SameNameB", log))
    names = load_custom_op_plugins(os.pathsep.join([str(a), str(b)]))
    assert len(set(names)) == 2


# --- errors and all-or-nothing batches --------------------------------------------------------
def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.py"
    before = _state()
    with pytest.raises(FileNotFoundError) as info:
        load_custom_op_plugins(str(missing))
    assert str(info.value) == f"python custom op path does not exist: {missing.resolve()}"
    assert _state() == before


def test_file_that_is_not_python(tmp_path: Path) -> None:
    text = _write(tmp_path / "ops.txt", "")
    with pytest.raises(ValueError, match=r"^python custom op file must end with \.py: "):
        load_custom_op_plugins(str(text))


def test_a_failing_batch_loads_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log"
    good = _write(tmp_path / "a_good.py", _plugin("BatchGood", log))
    bad = _write(
        tmp_path / "b_bad.py",
        _plugin("BatchBad", log, extra="raise KeyError('plugin broke')\n"),
    )
    value = os.pathsep.join([str(good), str(bad)])
    before = _state()
    with pytest.raises(KeyError, match="plugin broke"):  # the plugin's own exception
        load_custom_op_plugins(value)
    assert _state() == before
    assert find_op("BatchGood") is None and find_op("BatchBad") is None
    assert not [n for n in sys.modules if n.startswith(bootstrap.MODULE_PREFIX + "a_good")]
    assert len(_runs(log)) == 2  # both ran, both were undone
    # fixed, the same entries load as a new batch: the good file runs again
    _write(bad, _plugin("BatchBad", log))
    assert len(load_custom_op_plugins(value)) == 2
    assert find_op("BatchGood") is not None and find_op("BatchBad") is not None


def test_a_batch_failing_on_a_missing_entry_undoes_the_earlier_ones(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.py", _plugin("BatchGood2", tmp_path / "log"))
    before = _state()
    with pytest.raises(FileNotFoundError):
        load_custom_op_plugins(os.pathsep.join([str(good), str(tmp_path / "missing")]))
    assert _state() == before and find_op("BatchGood2") is None


def test_an_impl_left_without_ir_fails_the_batch(tmp_path: Path) -> None:
    plugin = _write(
        tmp_path / "orphan.py",
        """
from ge.custom_op import register_op_impl
from ge.runtime import Tensor

@register_op_impl(op_type="OrphanOp")
class Orphan:
    def declare_launch_args(self, x: Tensor, y: Tensor) -> None: ...
""",
    )
    before = _state()
    with pytest.raises(RuntimeError) as info:
        load_custom_op_plugins(str(plugin))
    assert (
        str(info.value) == "canonical IR not found for schema-bound declare_launch_args: OrphanOp"
    )
    assert _state() == before and get_registered_op_impl_for_type("OrphanOp") is None


def test_an_impl_file_sorted_before_its_proto_file(tmp_path: Path) -> None:
    ops = tmp_path / "ops"
    _write(
        ops / "a_impl.py",
        """
from ge.custom_op import register_op_impl
from ge.runtime import Tensor

@register_op_impl(op_type="LateProtoOp")
class Impl:
    def execute(self, x: Tensor, *, k: int) -> None: ...
""",
    )
    _write(
        ops / "b_proto.py",
        """
from ge.custom_op import register_op
from ge.runtime import TensorDesc

@register_op(op_type="LateProtoOp")
def infer(x: TensorDesc, *, k: int = 1) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)
""",
    )
    assert len(load_custom_op_plugins(str(ops))) == 2
    assert find_op("LateProtoOp") is not None


def test_a_plugin_asking_for_an_unknown_op_does_not_recurse(tmp_path: Path) -> None:
    plugin = _write(
        tmp_path / "asks.py",
        """
import ge.es.custom
try:
    ge.es.custom.NotRegisteredAnywhere
except AttributeError:
    ASKED = True
""",
    )
    os.environ[ENV] = str(plugin)
    with pytest.raises(AttributeError):
        ge.es.custom.StillNotRegistered  # noqa: B018  (discovery runs the plugin once)
    assert sys.modules[load_module_name(plugin)].ASKED is True


def load_module_name(path: Path) -> str:
    from ge._internal.plugin_loader import module_name_for

    return module_name_for(path.resolve(), bootstrap.MODULE_PREFIX)


# --- when discovery runs -----------------------------------------------------------------------
def test_ge_initialize_loads_the_path(tmp_path: Path) -> None:
    log = tmp_path / "log"
    os.environ[ENV] = str(_write(tmp_path / "init_ops.py", _plugin("InitOp", log)))
    try:
        assert GeApi.ge_initialize({"ge.exec.deviceId": "0"}) == 0
        assert find_op("InitOp") is not None and len(_runs(log)) == 1
        GeApi.ge_finalize()
        GeApi.ge_initialize({"ge.exec.deviceId": "0"})
        assert len(_runs(log)) == 1  # an entry loads once per process
    finally:
        GeApi.ge_finalize()


def test_ge_initialize_fails_with_the_plugin_and_stays_uninitialised(tmp_path: Path) -> None:
    GeApi.ge_finalize()
    os.environ[ENV] = str(tmp_path / "missing_dir")
    before = _state()
    with pytest.raises(FileNotFoundError, match="python custom op path does not exist"):
        GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    assert not is_initialized() and _state() == before


def test_es_custom_access_discovers_the_path(tmp_path: Path) -> None:
    log = tmp_path / "log"
    first = _write(tmp_path / "first.py", _plugin("FoundByImport", log))
    os.environ[ENV] = str(first)
    from ge.es.custom import FoundByImport

    b = GraphBuilder("g")
    assert FoundByImport(b.create_input(0, shape=[2])).shape == (2,)
    # a path added later is discovered on the next unknown op
    second = _write(tmp_path / "second.py", _plugin("FoundLater", log))
    os.environ[ENV] = os.pathsep.join([str(first), str(second)])
    assert ge.es.custom.FoundLater(b.create_input(1, shape=[3])).shape == (3,)
    assert len(_runs(log)) == 2


def _reloaded_infer(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


def test_adding_a_graph_with_an_unknown_op_discovers_the_path(tmp_path: Path) -> None:
    # a graph saved while the op was known, reloaded after it was forgotten
    register_op(op_type="ReloadedOp")(_reloaded_infer)
    b = GraphBuilder("saved")
    b.set_graph_output(ge.es.custom.ReloadedOp(b.create_input(0, shape=[4])), 0)
    air = tmp_path / "g.air"
    b.build_and_reset().save_to_air(str(air))
    proto._unregister("ReloadedOp")
    assert find_op("ReloadedOp") is None

    GeApi.ge_finalize()
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})  # nothing on the path yet
    try:
        log = tmp_path / "log"
        os.environ[ENV] = str(_write(tmp_path / "reloaded.py", _plugin("ReloadedOp", log)))
        graph = Graph("x")
        graph.load_from_air(str(air))
        assert Session({}).add_graph(0, graph) == 0
        assert find_op("ReloadedOp") is not None and len(_runs(log)) == 1
    finally:
        GeApi.ge_finalize()


def test_unknown_op_with_nothing_on_the_path_stays_unknown() -> None:
    os.environ.pop(ENV, None)
    with pytest.raises(ValueError, match="unknown op type 'NoSuchCustomOp'"):
        get_op("NoSuchCustomOp")
    with pytest.raises(AttributeError):
        ge.es.custom.NoSuchCustomOp  # noqa: B018


def test_a_broken_path_is_reported_at_the_look_up(tmp_path: Path) -> None:
    os.environ[ENV] = str(tmp_path / "gone.py")
    with pytest.raises(FileNotFoundError, match="python custom op path does not exist"):
        get_op("NeedsDiscovery")
    assert find_op("Add") is not None  # hits never look at the path
    assert str((tmp_path / "gone.py").resolve()) not in loaded_paths()
