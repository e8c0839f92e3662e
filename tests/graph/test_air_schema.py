"""The shipped ``ge_ir.desc`` is the compiled ``ge_ir.proto``, and both match GE_REFERENCE.md §2.2.

Regenerating the descriptor needs grpcio-tools (a development tool); without it that one test
is skipped. The comparison with the reference tables always runs.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from tests.graph._helpers import GE_IR_ENUMS, GE_IR_MESSAGES, GE_IR_ONEOFS, describe_field

PROTO_DIR = Path(str(resources.files("ge.graph").joinpath("proto")))


def shipped_set() -> descriptor_pb2.FileDescriptorSet:
    return descriptor_pb2.FileDescriptorSet.FromString((PROTO_DIR / "ge_ir.desc").read_bytes())


def shipped_pool() -> Any:
    pool = descriptor_pool.DescriptorPool()
    for file_proto in shipped_set().file:
        pool.Add(file_proto)
    return pool


def test_descriptor_set_matches_a_fresh_protoc_build(tmp_path: Path) -> None:
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.skip("grpcio-tools is not installed; cannot regenerate ge_ir.desc")
    out = tmp_path / "ge_ir.desc"
    result = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}",
         f"--descriptor_set_out={out}", "ge_ir.proto"],
        cwd=PROTO_DIR, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, f"protoc failed:\n{result.stdout}\n{result.stderr}"
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    shipped = shipped_set()
    # Compare the parsed messages (not the bytes) and say which part differs.
    assert [f.name for f in shipped.file] == [f.name for f in fresh.file]
    for a, b in zip(shipped.file, fresh.file, strict=True):
        for kind in ("message_type", "enum_type"):
            for x, y in zip(getattr(a, kind), getattr(b, kind), strict=False):
                assert x == y, f"{a.name}: {kind} {x.name} differs from the .proto"
    assert shipped == fresh, "ge_ir.desc is stale: regenerate it (see ge_ir.proto's header)"


def test_shipped_file_is_proto3_package_ge_proto() -> None:
    files = list(shipped_set().file)
    assert [f.name for f in files] == ["ge_ir.proto"]
    assert files[0].package == "ge.proto"
    assert files[0].syntax == "proto3"
    assert list(files[0].dependency) == []


@pytest.mark.parametrize("message", sorted(GE_IR_MESSAGES))
def test_message_fields_match_the_reference(message: str) -> None:
    descriptor = shipped_pool().FindMessageTypeByName(message)
    got = {f.name: (f.number, describe_field(f)) for f in descriptor.fields}
    assert got == GE_IR_MESSAGES[message]


@pytest.mark.parametrize("message", sorted(GE_IR_ONEOFS))
def test_oneofs_match_the_reference(message: str) -> None:
    descriptor = shipped_pool().FindMessageTypeByName(message)
    name, members = GE_IR_ONEOFS[message]
    oneofs = {o.name: {f.name for f in o.fields} for o in descriptor.oneofs}
    assert oneofs == {name: set(members)}


@pytest.mark.parametrize("enum", sorted(GE_IR_ENUMS))
def test_enums_match_the_reference(enum: str) -> None:
    descriptor = shipped_pool().FindEnumTypeByName(enum)
    assert {v.name: v.number for v in descriptor.values} == GE_IR_ENUMS[enum]


def test_proto_source_declares_the_same_numbers() -> None:
    """A light textual check of ge_ir.proto itself, so a .proto edited without regenerating
    the descriptor is caught even where grpcio-tools is missing."""
    text = (PROTO_DIR / "ge_ir.proto").read_text()
    for message, fields in GE_IR_MESSAGES.items():
        for name, (number, _) in fields.items():
            assert f" {name} = {number};" in text, f"{message}.{name} = {number}"
    for enum, values in GE_IR_ENUMS.items():
        for name, number in values.items():
            assert f"{name} = {number};" in text, f"{enum}.{name}"
