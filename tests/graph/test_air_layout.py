"""The bytes an AIR file holds, read with the ``ge_ir`` schema alone.

Nothing here imports ``ge.graph._air``: the file is decoded with message classes built from
``ge/graph/proto/ge_ir.desc`` in a private descriptor pool, and a few field numbers are read
straight off the wire with a tiny hand-written parser. Expected values come from
GE_REFERENCE.md §2 (transcribed in ``_helpers.py``), so a codec that agreed with itself but not
with GE would fail here.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ge.graph import (
    AttrValueType,
    DataType,
    Format,
    Graph,
    NamedAttrs,
    Tensor,
    TensorDesc,
)
from tests.graph._helpers import DATA_TYPES, GE_IR_MESSAGES, LIST_VALUE_TYPES, assert_same_graph

VT = AttrValueType
MODEL_INT_ATTRS = (
    "memory_size",
    "p2p_memory_size",
    "stream_num",
    "event_num",
    "label_num",
    "weight_size",
)


@cache
def pb() -> SimpleNamespace:
    """Message classes of ``ge.proto``, built here from the shipped descriptor set."""
    raw = resources.files("ge.graph").joinpath("proto/ge_ir.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(raw).file:
        pool.Add(file_proto)

    def cls(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ge.proto.{name}"))

    return SimpleNamespace(
        pool=pool,
        **{n.replace(".", "_"): cls(n) for n in (
            "ModelDef", "GraphDef", "OpDef", "AttrDef", "TensorDescriptor", "TensorDef",
            "NamedAttrs", "ShapeDef", "AttrDef.ListValue",
        )},
    )


def decode(path: Path) -> Any:
    model = pb().ModelDef()
    model.ParseFromString(path.read_bytes())
    return model


def save(graph: Graph, tmp_path: Path, name: str = "m.air") -> Path:
    path = tmp_path / name
    graph.save_to_air(str(path))
    return path


# ============================================================ a tiny protobuf wire reader ====


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def wire_fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of each top-level field of a serialized message."""
    out = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(buf, pos)
        elif wire_type == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire_type == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        elif wire_type == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        else:
            raise AssertionError(f"unexpected wire type {wire_type} for field {number}")
        out.append((number, wire_type, value))
    assert pos == len(buf)
    return out


def fields_numbered(buf: bytes, number: int) -> list[Any]:
    return [v for n, _, v in wire_fields(buf) if n == number]


# ====================================================================== a sample graph ====


def sample_graph() -> Graph:
    g = Graph("root")
    x = g.add_node("Data", "x", num_outputs=1, output_names=["y"])
    x.set_attr("index", 0)
    x.update_output_desc(0, TensorDesc([1, 3, -1, -2], Format.FORMAT_NCHW, DataType.DT_FLOAT))
    flag = g.add_node("Data", "flag", num_outputs=1)
    flag.set_attr("index", 1)
    flag.update_output_desc(0, TensorDesc(None, Format.FORMAT_ND, DataType.DT_BOOL))
    c = g.add_node("Const", "c", num_outputs=1)
    weight = Tensor.from_numpy(np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32))
    c.set_attr("value", weight)
    c.update_output_desc(0, weight.get_tensor_desc())
    op = g.add_node("Fused", "op", num_inputs=3, num_outputs=2,
                    input_names=["x", "bias", "w"], output_names=["y", ""])
    g.add_data_edge(x, 0, op, 0)  # input 1 stays unconnected
    g.add_data_edge(c, 0, op, 2)
    g.add_control_edge(flag, op)
    g.add_control_edge(c, op)
    op.update_input_desc(1, TensorDesc([3], Format.FORMAT_ND, DataType.DT_UNDEFINED))
    out_desc = TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_INT32)
    out_desc.set_origin_shape([6]).set_origin_format(Format.FORMAT_ND)
    op.update_output_desc(0, out_desc)
    if_node = g.add_node("If", "if", num_inputs=2, num_outputs=1)
    g.add_data_edge(flag, 0, if_node, 0)
    g.add_data_edge(op, 1, if_node, 1)
    then_g = Graph("then_g")
    then_g.add_node("Data", "t_in", num_outputs=1).set_attr("_parent_node_index", 1)
    else_g = Graph("else_g")
    e_in = else_g.add_node("Data", "e_in", num_outputs=1)
    loop = else_g.add_node("While", "loop", num_inputs=1, num_outputs=1)
    else_g.add_data_edge(e_in, 0, loop, 0)
    g.set_node_subgraph(if_node, 0, then_g)
    g.set_node_subgraph(if_node, 1, else_g)
    else_g.set_node_subgraph(loop, 0, Graph("body_g"))
    g.register_subgraph(Graph("spare_g"))
    g.set_outputs([(if_node, 0), (op, 0)])
    return g


@pytest.fixture
def model(tmp_path: Path) -> Any:
    return decode(save(sample_graph(), tmp_path))


def op_of(graph_def: Any, name: str) -> Any:
    found = [op for op in graph_def.op if op.name == name]
    assert len(found) == 1, f"{name!r} in {[op.name for op in graph_def.op]}"
    return found[0]


# ================================================================================ model ====


def test_model_holds_root_then_all_subgraphs_flattened(model: Any) -> None:
    assert [g.name for g in model.graph] == ["root", "then_g", "else_g", "body_g", "spare_g"]
    assert model.name == ""
    assert model.version == 0


def test_model_attrs_are_those_of_a_default_ge_model(model: Any) -> None:
    for key in MODEL_INT_ATTRS:
        assert model.attr[key].WhichOneof("value") == "i", key
        assert model.attr[key].i == 0
    assert model.attr["target_type"].WhichOneof("value") == "s"
    assert model.attr["target_type"].s == b"MINI"


def test_graph_def_inputs_and_outputs(model: Any) -> None:
    root = model.graph[0]
    assert list(root.input) == ["x:0", "flag:0"]
    assert list(root.output) == ["if:0", "op:0"]
    assert [op.name for op in root.op] == ["x", "flag", "c", "op", "if"]
    assert [op.type for op in root.op] == ["Data", "Data", "Const", "Fused", "If"]


def test_op_inputs_are_name_index_then_empty_then_controls(model: Any) -> None:
    root = model.graph[0]
    assert list(op_of(root, "op").input) == ["x:0", "", "c:0", "flag:-1", "c:-1"]
    assert list(op_of(root, "if").input) == ["flag:0", "op:1"]
    assert list(op_of(root, "x").input) == []
    assert len(op_of(root, "op").input_desc) == 3
    assert len(op_of(root, "op").output_desc) == 2
    assert not any(i.startswith("^") for op in root.op for i in op.input)


def test_subgraph_names_on_ops(model: Any) -> None:
    assert list(op_of(model.graph[0], "if").subgraph_name) == ["then_g", "else_g"]
    assert list(op_of(model.graph[2], "loop").subgraph_name) == ["body_g"]
    assert list(op_of(model.graph[0], "op").subgraph_name) == []


def test_port_names_are_stored_as_ge_name_key_value_attrs(model: Any) -> None:
    op = op_of(model.graph[0], "op")
    keys, values = op.attr["_input_name_key"].list, op.attr["_input_name_value"].list
    assert list(keys.s) == [b"x", b"bias", b"w"]
    assert list(values.i) == [0, 1, 2]
    assert keys.val_type == LIST_VALUE_TYPES["VT_LIST_STRING"]
    assert values.val_type == LIST_VALUE_TYPES["VT_LIST_INT"]
    assert list(op.attr["_output_name_key"].list.s) == [b"y"]
    assert list(op.attr["_output_name_value"].list.i) == [0]
    assert "_input_name_key" not in op_of(model.graph[0], "if").attr


# ================================================================================ descs ====


def test_desc_fields_and_always_written_attrs(model: Any) -> None:
    x_out = op_of(model.graph[0], "x").output_desc[0]
    assert x_out.dtype == 1  # DT_FLOAT in the proto enum
    assert x_out.layout == "NCHW"
    assert list(x_out.shape.dim) == [1, 3, -1, -2]
    assert x_out.attr["origin_format"].s == b"NCHW"
    assert x_out.attr["origin_format_for_int"].i == int(Format.FORMAT_NCHW) == 0
    assert x_out.attr["format_for_int"].i == 0
    assert x_out.attr["origin_shape_initialized"].WhichOneof("value") == "b"
    assert x_out.attr["origin_shape_initialized"].b is False
    assert "origin_shape" not in x_out.attr
    assert x_out.attr["origin_data_type"].s == b"DT_FLOAT"

    op = op_of(model.graph[0], "op")
    y = op.output_desc[0]
    assert y.dtype == 7  # DT_INT32
    assert y.layout == "NCHW"
    assert y.attr["origin_format"].s == b"ND"
    assert y.attr["origin_format_for_int"].i == 2
    assert y.attr["origin_shape_initialized"].b is True
    assert list(y.attr["origin_shape"].list.i) == [6]
    assert y.attr["origin_shape"].list.val_type == LIST_VALUE_TYPES["VT_LIST_INT"]

    undefined = op.input_desc[1]
    assert undefined.dtype == 0  # DT_UNDEFINED
    assert "origin_data_type" not in undefined.attr
    assert undefined.layout == "ND"

    flag = op_of(model.graph[0], "flag").output_desc[0]
    assert flag.dtype == 11  # DT_BOOL
    assert list(flag.shape.dim) == []  # a scalar


@pytest.mark.parametrize(("name", "ge_value", "proto_value"),
                         DATA_TYPES, ids=[d[0] for d in DATA_TYPES])
def test_desc_dtype_uses_the_proto_enum_while_dt_stores_the_raw_ge_value(
    name: str, ge_value: int, proto_value: int, tmp_path: Path
) -> None:
    data_type = DataType[name]
    assert int(data_type) == ge_value
    g = Graph("g")
    n = g.add_node("Op", "n", num_outputs=1)
    n.update_output_desc(0, TensorDesc([1], Format.FORMAT_ND, data_type))
    n.set_attr("dt", data_type)
    n.set_attr("dts", [data_type, DataType.DT_INT32], VT.VT_LIST_DATA_TYPE)
    op = decode(save(g, tmp_path)).graph[0].op[0]
    assert op.output_desc[0].dtype == proto_value
    assert op.attr["dt"].WhichOneof("value") == "dt"
    assert op.attr["dt"].dt == ge_value
    assert list(op.attr["dts"].list.dt) == [ge_value, 3]
    assert op.attr["dts"].list.val_type == LIST_VALUE_TYPES["VT_LIST_DATA_TYPE"]
    # The enum value name in the schema matches the name of the DataType member.
    enum = pb().pool.FindEnumTypeByName("ge.proto.DataType")
    assert enum.values_by_number[proto_value].name == name


@pytest.mark.parametrize(
    ("fmt", "layout"),
    [
        (Format.FORMAT_ND, "ND"),
        (Format.FORMAT_NCHW, "NCHW"),
        (Format.FORMAT_NHWC, "NHWC"),
        (Format.FORMAT_NC1HWC0, "NC1HWC0"),
        (Format.FORMAT_FRACTAL_Z, "FRACTAL_Z"),
        (Format.FORMAT_FRACTAL_NZ, "FRACTAL_NZ"),
        (Format.FORMAT_NCDHW, "NCDHW"),
        (Format.FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS, "DECONV_SP_STRIDE8_TRANS"),
        (Format.FORMAT_HASHTABLE_LOOKUP_HITS, "LOOKUP_HITS"),
        (Format.FORMAT_FRACTAL_ZZ, "RESERVED"),
        (Format.FORMAT_RESERVED, "FORMAT_RESERVED"),
        (Format.FORMAT_ALL, "ALL"),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_layout_strings(fmt: Format, layout: str, tmp_path: Path) -> None:
    g = Graph("g")
    g.add_node("Op", "n", num_outputs=1).update_output_desc(0, TensorDesc([1], fmt))
    desc = decode(save(g, tmp_path)).graph[0].op[0].output_desc[0]
    assert desc.layout == layout
    assert desc.attr["format_for_int"].i == int(fmt)
    assert desc.attr["origin_format"].s == layout.encode()


def test_desc_user_attrs_live_beside_the_desc_attrs(tmp_path: Path) -> None:
    g = Graph("g")
    n = g.add_node("Op", "n", num_inputs=1, num_outputs=1)
    n.set_output_attr("_mark", 0, "m")
    n.set_input_attr("_ids", 0, [4, 5])
    op = decode(save(g, tmp_path)).graph[0].op[0]
    assert op.output_desc[0].attr["_mark"].s == b"m"
    assert list(op.input_desc[0].attr["_ids"].list.i) == [4, 5]
    assert op.input_desc[0].attr["_ids"].list.val_type == LIST_VALUE_TYPES["VT_LIST_INT"]


# ========================================================================== attributes ====


def test_const_value_is_a_tensor_def_with_raw_little_endian_bytes(model: Any) -> None:
    value = op_of(model.graph[0], "c").attr["value"]
    assert value.WhichOneof("value") == "t"
    expected = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32)
    assert value.t.data == expected.tobytes()
    assert value.t.data == expected.astype("<i4").tobytes()
    assert value.t.desc.dtype == 7
    assert list(value.t.desc.shape.dim) == [2, 3]
    assert value.t.desc.layout == "ND"


def test_float_const_bytes(tmp_path: Path) -> None:
    array = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    g = Graph("g")
    g.add_node("Const", "c", num_outputs=1).set_attr("value", Tensor.from_numpy(array))
    t = decode(save(g, tmp_path)).graph[0].op[0].attr["value"].t
    assert t.data == array.astype("<f4").tobytes()
    assert np.array_equal(np.frombuffer(t.data, "<f4").reshape(3, 4), array)
    assert t.desc.dtype == 1


SCALAR_FIELDS = [
    ("s", "text", VT.VT_STRING, lambda a: a.s == b"text"),
    ("i", -5, VT.VT_INT, lambda a: a.i == -5),
    ("f", 0.5, VT.VT_FLOAT, lambda a: a.f == 0.5),
    ("b", True, VT.VT_BOOL, lambda a: a.b is True),
    ("bt", b"\x00\x01", VT.VT_BYTES, lambda a: a.bt == b"\x00\x01"),
    ("dt", DataType.DT_INT64, VT.VT_DATA_TYPE, lambda a: a.dt == 9),
    ("td", TensorDesc([2]), VT.VT_TENSOR_DESC, lambda a: list(a.td.shape.dim) == [2]),
    ("t", Tensor.from_numpy(np.array([1.0], np.float32)), VT.VT_TENSOR,
     lambda a: a.t.data == np.array([1.0], np.float32).tobytes()),
    ("g", Graph("inner"), VT.VT_GRAPH, lambda a: a.g.name == "inner"),
    ("func", NamedAttrs.of("fn", {"k": 1}), VT.VT_NAMED_ATTRS,
     lambda a: a.func.name == "fn" and a.func.attr["k"].i == 1),
    ("list_list_int", [[1], [2, 3]], VT.VT_LIST_LIST_INT,
     lambda a: [list(r.list_i) for r in a.list_list_int.list_list_i] == [[1], [2, 3]]),
    ("list_list_float", [[0.5], []], VT.VT_LIST_LIST_FLOAT,
     lambda a: [list(r.list_f) for r in a.list_list_float.list_list_f] == [[0.5], []]),
]


@pytest.mark.parametrize(("field", "value", "kind", "check"), SCALAR_FIELDS,
                         ids=[f[0] for f in SCALAR_FIELDS])
def test_attr_kinds_use_the_matching_oneof_member(
    field: str, value: Any, kind: AttrValueType, check: Any, tmp_path: Path
) -> None:
    g = Graph("g")
    g.add_node("Op", "n").set_attr("a", value, kind)
    g.set_attr("a", value, kind)
    graph_def = decode(save(g, tmp_path)).graph[0]
    for attr in (graph_def.op[0].attr["a"], graph_def.attr["a"]):
        assert attr.WhichOneof("value") == field
        assert check(attr)


def test_none_attr_is_an_attr_def_without_value(tmp_path: Path) -> None:
    g = Graph("g")
    g.add_node("Op", "n").set_attr("none", None, VT.VT_NONE)
    op = decode(save(g, tmp_path)).graph[0].op[0]
    assert "none" in op.attr
    assert op.attr["none"].WhichOneof("value") is None


LIST_KINDS = [
    (VT.VT_LIST_STRING, "s", ["a", "b"], [b"a", b"b"], "VT_LIST_STRING"),
    (VT.VT_LIST_INT, "i", [1, -2], [1, -2], "VT_LIST_INT"),
    (VT.VT_LIST_FLOAT, "f", [0.5, 2.0], [0.5, 2.0], "VT_LIST_FLOAT"),
    (VT.VT_LIST_BOOL, "b", [True, False], [True, False], "VT_LIST_BOOL"),
    (VT.VT_LIST_BYTES, "bt", [b"\x01", b""], [b"\x01", b""], "VT_LIST_BYTES"),
    (VT.VT_LIST_TENSOR_DESC, "td", [TensorDesc([3])], None, "VT_LIST_TENSOR_DESC"),
    (VT.VT_LIST_TENSOR, "t", [Tensor.from_numpy(np.zeros(2, np.int8))], None, "VT_LIST_TENSOR"),
    (VT.VT_LIST_GRAPH, "g", [Graph("lg")], None, "VT_LIST_GRAPH"),
    (VT.VT_LIST_NAMED_ATTRS, "na", [NamedAttrs("na", {})], None, "VT_LIST_NAMED_ATTRS"),
    (VT.VT_LIST_DATA_TYPE, "dt", [DataType.DT_BOOL], [12], "VT_LIST_DATA_TYPE"),
]


@pytest.mark.parametrize(("kind", "field", "value", "stored", "val_type"), LIST_KINDS,
                         ids=[k[0].name for k in LIST_KINDS])
def test_list_attrs_carry_their_val_type(
    kind: AttrValueType, field: str, value: list[Any], stored: list[Any] | None,
    val_type: str, tmp_path: Path,
) -> None:
    g = Graph("g")
    n = g.add_node("Op", "n")
    n.set_attr("full", value, kind)
    n.set_attr("empty", [], kind)
    op = decode(save(g, tmp_path)).graph[0].op[0]
    full, empty = op.attr["full"], op.attr["empty"]
    for attr in (full, empty):
        assert attr.WhichOneof("value") == "list"
        assert attr.list.val_type == LIST_VALUE_TYPES[val_type]
    assert len(getattr(full.list, field)) == len(value)
    if stored is not None:
        assert list(getattr(full.list, field)) == stored
    for other in ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt"):
        assert len(getattr(empty.list, other)) == 0
        if other != field:
            assert len(getattr(full.list, other)) == 0


def test_list_value_type_numbers_match_the_reference() -> None:
    enum = pb().pool.FindEnumTypeByName("ge.proto.AttrDef.ListValue.ListValueType")
    assert {v.name: v.number for v in enum.values} == LIST_VALUE_TYPES


# ======================================================================= wire numbers ====


def test_field_numbers_on_the_wire(tmp_path: Path) -> None:
    raw = save(sample_graph(), tmp_path).read_bytes()
    top = {n for n, _, _ in wire_fields(raw)}
    assert top == {7, 11}  # graph, attr (name/version/custom_version are empty defaults)
    graphs = fields_numbered(raw, 7)
    assert len(graphs) == 5
    root = graphs[0]
    assert fields_numbered(root, 1) == [b"root"]
    assert fields_numbered(root, 4) == [b"x:0", b"flag:0"]
    assert fields_numbered(root, 5) == [b"if:0", b"op:0"]
    ops = fields_numbered(root, 6)
    assert [fields_numbered(op, 1) for op in ops] == [[b"x"], [b"flag"], [b"c"], [b"op"], [b"if"]]
    assert [fields_numbered(op, 2) for op in ops][3] == [b"Fused"]
    op = ops[3]
    assert fields_numbered(op, 5) == [b"x:0", b"", b"c:0", b"flag:-1", b"c:-1"]
    assert len(fields_numbered(op, 33)) == 3  # input_desc
    assert len(fields_numbered(op, 34)) == 2  # output_desc
    assert fields_numbered(op, 21) == [3]  # id
    assert fields_numbered(ops[4], 35) == [b"then_g", b"else_g"]  # subgraph_name
    out_desc = fields_numbered(op, 34)[0]
    assert fields_numbered(out_desc, 2) == [7]  # dtype DT_INT32, proto enum
    assert fields_numbered(out_desc, 4) == [b"NCHW"]  # layout
    shape = fields_numbered(out_desc, 3)[0]
    packed = fields_numbered(shape, 1)[0]  # repeated int64 dim = 1, packed in proto3
    assert packed == bytes([2, 3])


def test_attr_values_on_the_wire(tmp_path: Path) -> None:
    g = Graph("g")
    n = g.add_node("Const", "c", num_outputs=1)
    n.set_attr("dt", DataType.DT_INT32)
    n.set_attr("value", Tensor.from_numpy(np.array([1, 2], np.int16)))
    raw = save(g, tmp_path).read_bytes()
    op = fields_numbered(fields_numbered(raw, 7)[0], 6)[0]
    entries = {}
    for entry in fields_numbered(op, 10):  # map<string, AttrDef> attr = 10
        (key,) = fields_numbered(entry, 1)
        (value,) = fields_numbered(entry, 2)
        entries[key] = value
    assert set(entries) == {b"dt", b"value"}
    assert wire_fields(entries[b"dt"]) == [(15, 0, 3)]  # AttrDef.dt = 15, raw ge value
    (tensor_def,) = fields_numbered(entries[b"value"], 12)  # AttrDef.t = 12
    assert fields_numbered(tensor_def, 2) == [np.array([1, 2], "<i2").tobytes()]
    (desc,) = fields_numbered(tensor_def, 1)
    assert fields_numbered(desc, 2) == [5]  # DT_INT16 in the proto enum


FIELD_NUMBER_SAMPLES = [
    ("ge.proto.ModelDef", "graph"),
    ("ge.proto.ModelDef", "attr"),
    ("ge.proto.GraphDef", "op"),
    ("ge.proto.OpDef", "input"),
    ("ge.proto.OpDef", "input_desc"),
    ("ge.proto.OpDef", "output_desc"),
    ("ge.proto.OpDef", "subgraph_name"),
    ("ge.proto.OpDef", "attr"),
    ("ge.proto.TensorDescriptor", "dtype"),
    ("ge.proto.TensorDescriptor", "layout"),
    ("ge.proto.AttrDef", "dt"),
    ("ge.proto.AttrDef", "t"),
    ("ge.proto.AttrDef", "list_list_int"),
    ("ge.proto.AttrDef.ListValue", "val_type"),
    ("ge.proto.AttrDef.ListValue", "dt"),
    ("ge.proto.TensorDef", "data"),
]


@pytest.mark.parametrize(("message", "field"), FIELD_NUMBER_SAMPLES,
                         ids=[f"{m.rsplit('.', 1)[1]}.{f}" for m, f in FIELD_NUMBER_SAMPLES])
def test_field_numbers_match_the_reference(message: str, field: str) -> None:
    descriptor = pb().pool.FindMessageTypeByName(message)
    assert descriptor.fields_by_name[field].number == GE_IR_MESSAGES[message][field][0]


def test_a_few_field_numbers_spelled_out() -> None:
    find = pb().pool.FindMessageTypeByName
    assert find("ge.proto.ModelDef").fields_by_name["graph"].number == 7
    assert find("ge.proto.OpDef").fields_by_name["input_desc"].number == 33
    assert find("ge.proto.AttrDef").fields_by_name["dt"].number == 15
    assert find("ge.proto.AttrDef").fields_by_name["list"].number == 1
    assert find("ge.proto.TensorDescriptor").fields_by_name["dtype"].number == 2


# ================================================================= a file GE would write ====


def _desc(msg: Any, dtype: int, dims: list[int], layout: str = "ND", *, full: bool = True) -> None:
    msg.dtype = dtype
    msg.shape.dim.extend(dims)
    msg.layout = layout
    msg.device_type = "NPU"
    msg.size = 4
    msg.real_dim_cnt = len(dims)
    if full:
        fmt = int(Format[f"FORMAT_{layout}"])
        msg.attr["origin_format"].s = layout.encode()
        msg.attr["format_for_int"].i = fmt
        msg.attr["origin_format_for_int"].i = fmt
        msg.attr["origin_shape_initialized"].b = False


def hand_built_model() -> bytes:
    p = pb()
    model = p.ModelDef()
    model.name = "from_ge"
    model.version = 1
    for key in MODEL_INT_ATTRS:
        model.attr[key].i = 0
    model.attr["target_type"].s = b"MINI"

    root = model.graph.add()
    root.name = "hand"
    root.input.append("x:0")
    root.output.append("conv:0")
    root.attr["_graph_flag"].b = True

    x = root.op.add()
    x.name, x.type, x.id = "x", "Data", 0
    x.attr["index"].i = 0
    _desc(x.input_desc.add(), 1, [1, 3, 8, 8], "NCHW")
    _desc(x.output_desc.add(), 1, [1, 3, 8, 8], "NCHW")

    w = x_const = root.op.add()
    w.name, w.type, w.id = "w", "Const", 1
    weights = np.arange(12, dtype=np.float32)
    x_const.attr["value"].t.data = weights.tobytes()
    _desc(x_const.attr["value"].t.desc, 1, [4, 3])
    _desc(w.output_desc.add(), 1, [4, 3])

    conv = root.op.add()
    conv.name, conv.type, conv.id = "conv", "Conv2D", 2
    conv.input.extend(["x:0", "", "w:0", "x:-1"])  # bias (input 1) is absent
    _desc(conv.input_desc.add(), 1, [1, 3, 8, 8], "NCHW")
    _desc(conv.input_desc.add(), 0, [])  # the absent optional input: DT_UNDEFINED
    _desc(conv.input_desc.add(), 1, [4, 3])
    _desc(conv.output_desc.add(), 1, [1, 4, -1, -1], "NHWC", full=False)
    pads = conv.attr["pads"].list
    pads.val_type = LIST_VALUE_TYPES["VT_LIST_INT"]
    pads.i.extend([0, 0, 1, 1])
    conv.attr["legacy"].list.i.extend([7, 8])  # val_type VT_LIST_NONE (0), as old files have
    conv.attr["legacy_s"].list.s.extend([b"p", b"q"])  # VT_LIST_NONE with strings
    conv.attr["dtype"].dt = 3  # raw ge::DataType: DT_INT32
    conv.attr["data_format"].s = b"NCHW"
    conv.attr["_input_name_key"].list.s.extend([b"x", b"bias", b"filter"])
    conv.attr["_input_name_key"].list.val_type = LIST_VALUE_TYPES["VT_LIST_STRING"]
    conv.attr["_input_name_value"].list.i.extend([0, 1, 2])
    conv.attr["_input_name_value"].list.val_type = LIST_VALUE_TYPES["VT_LIST_INT"]
    conv.stream_id = 0
    conv.workspace.extend([0])  # a field ge does not model

    if_op = root.op.add()
    if_op.name, if_op.type, if_op.id = "if", "If", 3
    if_op.input.extend(["x:0"])
    _desc(if_op.input_desc.add(), 1, [1, 3, 8, 8], "NCHW")
    if_op.subgraph_name.append("branch")

    sub = model.graph.add()
    sub.name = "branch"
    d = sub.op.add()
    d.name, d.type = "arg", "Data"
    d.attr["_parent_node_index"].i = 0
    _desc(d.output_desc.add(), 1, [1, 3, 8, 8], "NCHW")
    sub.output.append("arg:0")
    return bytes(model.SerializeToString())


def test_a_hand_built_model_loads(tmp_path: Path) -> None:
    path = tmp_path / "ge_written.air"
    path.write_bytes(hand_built_model())
    g = Graph("tmp_graph_name")
    g.load_from_air(str(path))
    g.verify(ops=False)
    assert g.name == "hand"
    assert [n.name for n in g.get_direct_nodes()] == ["x", "w", "conv", "if"]
    assert [n.type for n in g.get_direct_nodes()] == ["Data", "Const", "Conv2D", "If"]
    assert g.get_attr("_graph_flag") is True

    conv = g.find_node_by_name("conv")
    assert conv.get_inputs_size() == 3
    assert conv.get_outputs_size() == 1
    src, port = conv.get_in_data_nodes_and_port_indexes(0)
    assert (src.name, port) == ("x", 0)
    with pytest.raises(RuntimeError):
        conv.get_in_data_nodes_and_port_indexes(1)
    src, port = conv.get_in_data_nodes_and_port_indexes(2)
    assert (src.name, port) == ("w", 0)
    assert [n.name for n in conv.get_in_control_nodes()] == ["x"]
    assert conv.get_input_names() == ["x", "bias", "filter"]
    assert "_input_name_key" not in conv.get_attr_names()

    assert conv.get_attr("pads") == [0, 0, 1, 1]
    assert conv._attrs["legacy"].type == VT.VT_LIST_INT
    assert conv.get_attr("legacy") == [7, 8]
    assert conv._attrs["legacy_s"].type == VT.VT_LIST_STRING
    assert conv.get_attr("legacy_s") == ["p", "q"]
    assert conv.get_attr("dtype") is DataType.DT_INT32
    assert conv.get_attr("data_format") == "NCHW"

    in0 = conv.get_input_desc(0)
    assert (in0.data_type, in0.format, list(in0.shape)) == (
        DataType.DT_FLOAT, Format.FORMAT_NCHW, [1, 3, 8, 8])
    assert conv.get_input_desc(1).data_type == DataType.DT_UNDEFINED
    out0 = conv.get_output_desc(0)  # no desc attrs: the layout string gives the format
    assert out0.format == Format.FORMAT_NHWC
    assert out0.origin_format == Format.FORMAT_NHWC
    assert list(out0.shape) == [1, 4, -1, -1]

    weight = g.find_node_by_name("w").get_attr("value")
    assert weight.data_type == DataType.DT_FLOAT
    assert list(weight.shape) == [4, 3]
    np.testing.assert_array_equal(weight.numpy(), np.arange(12, dtype=np.float32).reshape(4, 3))

    branch = g.get_subgraph("branch")
    assert branch is not None
    assert branch.parent_node is g.find_node_by_name("if")
    assert g.find_node_by_name("if").get_subgraph_names() == ["branch"]
    assert branch.find_node_by_name("arg").get_attr("_parent_node_index") == 0
    assert [(n.name, i) for n, i in g.get_outputs()] == [("conv", 0)]
    assert [(n.name, i) for n, i in branch.get_outputs()] == [("arg", 0)]


def test_hand_built_model_survives_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ge_written.air"
    path.write_bytes(hand_built_model())
    first = Graph()
    first.load_from_air(str(path))
    first.save_to_air(str(tmp_path / "again.air"))
    second = Graph()
    second.load_from_air(str(tmp_path / "again.air"))
    assert_same_graph(first, second)


def test_empty_list_none_loads_as_an_empty_list(tmp_path: Path) -> None:
    model = pb().ModelDef()
    op = model.graph.add(name="g").op.add(name="n", type="Op")
    op.attr["empty"].list.SetInParent()  # VT_LIST_NONE, no items
    path = tmp_path / "m.air"
    path.write_bytes(model.SerializeToString())
    g = Graph()
    g.load_from_air(str(path))
    attr = g.find_node_by_name("n")._attrs["empty"]
    assert attr.type > VT.VT_LIST_BASE
    assert attr.value == ()


@pytest.mark.parametrize(
    ("layout", "origin", "fmt", "origin_fmt"),
    [
        ("NCHW", None, Format.FORMAT_NCHW, Format.FORMAT_NCHW),
        ("NHWC", None, Format.FORMAT_NHWC, Format.FORMAT_NHWC),
        ("ND", None, Format.FORMAT_ND, Format.FORMAT_ND),
        ("NC1HWC0", "NCHW", Format.FORMAT_NC1HWC0, Format.FORMAT_NCHW),
        ("FRACTAL_NZ", "ND", Format.FORMAT_FRACTAL_NZ, Format.FORMAT_ND),
        ("NCHW", "NHWC", Format.FORMAT_NCHW, Format.FORMAT_NHWC),
    ],
)
def test_desc_with_layout_strings_only_loads_its_formats(
    layout: str, origin: str | None, fmt: Format, origin_fmt: Format, tmp_path: Path
) -> None:
    """A descriptor that carries only the layout string (and maybe an ``origin_format``
    string), without the ``*_for_int`` attributes, still gives the right formats —
    FORMAT_NCHW (value 0) included."""
    model = pb().ModelDef()
    op = model.graph.add(name="g").op.add(name="n", type="Op")
    desc = op.output_desc.add(dtype=1, layout=layout)
    desc.shape.dim.extend([1, 2, 3, 4])
    if origin is not None:
        desc.attr["origin_format"].s = origin.encode()
    path = tmp_path / "m.air"
    path.write_bytes(model.SerializeToString())
    g = Graph()
    g.load_from_air(str(path))
    got = g.find_node_by_name("n").get_output_desc(0)
    assert got.format is fmt
    assert got.origin_format is origin_fmt
