"""The runtime's plain records (``ge.runtime._record``) behave as the dataclasses they
replaced: equality and repr by field, frozen records immutable and hashable, ``replace``,
pickling and copies."""

from __future__ import annotations

import copy
import pickle
import weakref

import numpy as np
import pytest

from ge.runtime._launch import DeviceRange
from ge.runtime._om_data import (
    BufferData,
    GraphEntry,
    HostTaskData,
    KernelTaskData,
    ModelData,
    PlanData,
)
from ge.runtime.plan import BufferKind, BufferSpec, HostTask, KernelRef, Plan, host_task

F32 = np.dtype(np.float32)


def test_mutable_records_compare_by_fields_and_are_unhashable() -> None:
    a = BufferSpec(BufferKind.INPUT, 0, (2, 3), F32)
    assert a == BufferSpec(BufferKind.INPUT, 0, (2, 3), F32)
    assert a != BufferSpec(BufferKind.INPUT, 1, (2, 3), F32)
    assert a != BufferData(BufferKind.INPUT, 0, (2, 3), "float32")  # another class: never equal
    assert a.nbytes == 24
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    a.index = 4  # mutable, as the dataclass was
    assert a.index == 4
    assert repr(a) == f"BufferSpec(kind={BufferKind.INPUT!r}, index=4, shape=(2, 3), dtype={F32!r})"


def test_frozen_records_refuse_assignment_and_hash_by_value() -> None:
    ref = KernelRef("ab" * 32, "f")
    with pytest.raises(AttributeError, match="'binary' of a frozen KernelRef"):
        ref.binary = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del ref.function
    assert {ref: 1}[KernelRef("ab" * 32, "f")] == 1
    assert DeviceRange(16, 8) == DeviceRange(16, 8, 0) != DeviceRange(16, 8, 1)
    assert hash(BufferData(BufferKind.CONST, 1, (), "int8")) == hash(
        BufferData(BufferKind.CONST, 1, (), "int8")
    )


def test_defaults_are_fresh_per_instance() -> None:
    p, q = Plan(), Plan()
    p.buffers.append(BufferSpec(BufferKind.INPUT, 0, (1,), F32))
    assert q.buffers == [] and q.owned is not p.owned
    assert host_task("c", "copy", [0, 1]).params == {}
    m = ModelData([], [], [], {})
    assert m.weight_names == {} and m.ambiguous_names == set() and m.ge_options is None
    assert ModelData([], [], [], {}).weight_names is not m.weight_names


def test_replace_copies_with_changes_and_names_an_unknown_field() -> None:
    task = HostTask("t", None, [0, 1], "copy", {"a": 1})
    moved = task.replace(name="u", buffers=[2])
    assert (moved.name, moved.buffers, moved.op, moved.params) == ("u", [2], "copy", {"a": 1})
    assert task.name == "t"
    with pytest.raises(TypeError, match=r"HostTask.replace: no field nope \(fields: name, fn"):
        task.replace(nope=1)
    frozen = KernelRef("k", "f").replace(function="g")
    assert frozen == KernelRef("k", "g")


def test_records_pickle_and_copy() -> None:
    for record in (
        KernelRef("k", "f"),
        DeviceRange(64, 32, 7),
        BufferData(BufferKind.OUTPUT, 0, (4,), "float16"),
        BufferSpec(BufferKind.OUTPUT, 0, (4,), F32),
        HostTask("t", None, [0], "copy", {}),
    ):
        assert pickle.loads(pickle.dumps(record)) == record
        assert copy.copy(record) == record
    plan = Plan(arena_size=64)
    plan.note = "callers may hang objects on a plan"  # type: ignore[attr-defined]
    assert copy.copy(plan).arena_size == 64


def test_a_plans_copy_does_not_release_its_memory_twice() -> None:
    plan = Plan()
    plan.device_constant(np.arange(4, dtype=np.float32))
    twin = copy.copy(plan)  # shares ``owned``, as the dataclass copy did, without __init__
    assert twin.owned is plan.owned
    assert len(weakref_finalizers(plan)) == 1


def weakref_finalizers(obj: object) -> list[object]:
    """The live ``weakref.finalize`` callbacks registered on ``obj``."""
    registry = weakref.finalize._registry  # type: ignore[attr-defined]
    return [f for f in list(registry) if f.alive and f.peek()[0] is obj]


def test_model_file_records_are_frozen_values_with_their_defaults() -> None:
    kernel = KernelTaskData("k", 0, "f", 1, (0, 0), ((0, 1, 0),))
    host = HostTaskData("h", "copy", (0, 1))
    plan = PlanData(
        (BufferData(BufferKind.INPUT, 0, (1,), "int8"),), (kernel, host), (0,), (), {}, {}, 0
    )
    assert kernel.same_index_inputs == () and dict(host.params) == {} and plan.subplans == ()
    with pytest.raises(TypeError):
        host.params["x"] = 1  # type: ignore[index]  (the shared default is read-only)
    entry = GraphEntry("g", ("x",), (), plan)
    assert entry == GraphEntry("g", ("x",), (), plan) and hash(entry.plan.tasks[0]) == hash(kernel)
    with pytest.raises(AttributeError, match="frozen GraphEntry"):
        entry.plan = plan  # type: ignore[misc]
