"""Shared helpers for the AIR tests: a structural graph comparison, and the ``ge_ir.proto``
facts of GE_REFERENCE.md §1.1 / §2.2 transcribed by hand (so the tests check the shipped
schema against the reference, not against itself).

The comparison walks the graphs node by node instead of comparing ``str(graph)``, so that a
loss the printer does not show (an attribute kind, a desc attribute, a port name, the parent of
a subgraph) is still caught.
"""

from __future__ import annotations

import math
from typing import Any

from ge.graph import AttrValue, AttrValueType, Graph, NamedAttrs, Node, Tensor, TensorDesc

VT = AttrValueType

# ============================================================ structural graph comparison ====


def _edge(edge: tuple[Node, int] | None) -> tuple[str, int] | None:
    return None if edge is None else (edge[0].name, edge[1])


def _float_same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def tensor_differences(a: Tensor, b: Tensor, where: str) -> list[str]:
    out = desc_differences(a._desc, b._desc, f"{where}.desc")
    if a.placement != b.placement:
        out.append(f"{where}: placement {a.placement!r} != {b.placement!r}")
    if (a._bytes is None and a._device_addr is None) != (
        b._bytes is None and b._device_addr is None
    ):
        out.append(f"{where}: one tensor holds data and the other holds none")
    if a._host_bytes() != b._host_bytes():
        out.append(f"{where}: data bytes differ ({a._host_bytes()!r} != {b._host_bytes()!r})")
    return out


def desc_differences(a: TensorDesc, b: TensorDesc, where: str) -> list[str]:
    out = []
    for field in ("_shape", "_origin_shape", "_format", "_origin_format", "_data_type"):
        x, y = getattr(a, field), getattr(b, field)
        if x != y or type(x) is not type(y):
            out.append(f"{where}: {field.lstrip('_')} {x!r} != {y!r}")
    out += attrs_differences(a._attrs, b._attrs, f"{where}.attrs")
    if not out and a != b:  # TensorDesc.__eq__ must agree with the field-wise comparison
        out.append(f"{where}: TensorDesc.__eq__ says the descs differ")
    return out


def _item_differences(kind: AttrValueType, x: Any, y: Any, where: str) -> list[str]:
    """Compare one element of kind ``kind`` (a scalar kind)."""
    if kind == VT.VT_GRAPH:
        return graph_differences(x, y, subgraphs=False, where=where)
    if kind == VT.VT_TENSOR:
        return tensor_differences(x, y, where)
    if kind == VT.VT_TENSOR_DESC:
        return desc_differences(x, y, where)
    if kind == VT.VT_NAMED_ATTRS:
        assert isinstance(x, NamedAttrs) and isinstance(y, NamedAttrs), where
        out = [] if x.name == y.name else [f"{where}: NamedAttrs name {x.name!r} != {y.name!r}"]
        return out + attrs_differences(dict(x.attrs), dict(y.attrs), f"{where}.attrs")
    if kind == VT.VT_FLOAT:
        same = type(x) is float and type(y) is float and _float_same(x, y)
    else:
        same = type(x) is type(y) and x == y
    return [] if same else [f"{where}: {x!r} ({type(x).__name__}) != {y!r} ({type(y).__name__})"]


def _rows_differences(kind: AttrValueType, a: Any, b: Any, where: str) -> list[str]:
    inner = VT.VT_INT if kind == VT.VT_LIST_LIST_INT else VT.VT_FLOAT
    if len(a) != len(b):
        return [f"{where}: {len(a)} rows != {len(b)} rows"]
    out: list[str] = []
    for r, (ra, rb) in enumerate(zip(a, b, strict=True)):
        if len(ra) != len(rb):
            out.append(f"{where}[{r}]: row lengths {len(ra)} != {len(rb)}")
            continue
        for c, (x, y) in enumerate(zip(ra, rb, strict=True)):
            out += _item_differences(inner, x, y, f"{where}[{r}][{c}]")
    return out


def attr_differences(a: AttrValue, b: AttrValue, where: str) -> list[str]:
    if a.type != b.type:
        return [f"{where}: kind {a.type.name} != {b.type.name}"]
    kind = a.type
    out: list[str] = []
    if kind == VT.VT_NONE:
        if a.value is not None or b.value is not None:
            out.append(f"{where}: VT_NONE values {a.value!r} / {b.value!r}")
    elif kind in (VT.VT_LIST_LIST_INT, VT.VT_LIST_LIST_FLOAT):
        out += _rows_differences(kind, a.value, b.value, where)
    elif kind >= VT.VT_LIST_BASE:
        inner = VT(kind - VT.VT_LIST_BASE)
        if not isinstance(a.value, tuple) or not isinstance(b.value, tuple):
            return [f"{where}: list values are not tuples: {a.value!r} / {b.value!r}"]
        if len(a.value) != len(b.value):
            return [f"{where}: {len(a.value)} items != {len(b.value)} items"]
        for i, (x, y) in enumerate(zip(a.value, b.value, strict=True)):
            out += _item_differences(inner, x, y, f"{where}[{i}]")
    else:
        out += _item_differences(kind, a.value, b.value, where)
    if not out and kind not in (VT.VT_GRAPH, VT.VT_LIST_GRAPH) and a != b:
        # AttrValue.__eq__ (graphs aside, which it compares by text) must agree with us.
        out.append(f"{where}: AttrValue.__eq__ says the values differ")
    return out


def attrs_differences(a: dict[str, AttrValue], b: dict[str, AttrValue], where: str) -> list[str]:
    out = []
    if set(a) != set(b):
        out.append(f"{where}: keys {sorted(a)!r} != {sorted(b)!r}")
    for key in sorted(set(a) & set(b)):
        out += attr_differences(a[key], b[key], f"{where}[{key!r}]")
    return out


def node_differences(a: Node, b: Node, where: str) -> list[str]:
    out = []

    def check(what: str, x: object, y: object) -> None:
        if x != y:
            out.append(f"{where}: {what} {x!r} != {y!r}")

    check("type", a.type, b.type)
    check("input names", a.get_input_names(), b.get_input_names())
    check("output names", a.get_output_names(), b.get_output_names())
    check("inputs size", a.get_inputs_size(), b.get_inputs_size())
    check("outputs size", a.get_outputs_size(), b.get_outputs_size())
    check("in edges", [_edge(e) for e in a._in_edges], [_edge(e) for e in b._in_edges])
    # The file stores edges at their consumers only, so the order of a producer's consumers is
    # rebuilt from node order: compare the consumers of each output as a multiset.
    check(
        "out edges",
        [sorted(_edge(e) for e in port) for port in a._out_edges],
        [sorted(_edge(e) for e in port) for port in b._out_edges],
    )
    check("in control", [n.name for n in a._in_ctrl], [n.name for n in b._in_ctrl])
    check("out control", sorted(n.name for n in a._out_ctrl), sorted(n.name for n in b._out_ctrl))
    check("subgraph names", a.get_subgraph_names(), b.get_subgraph_names())
    out += attrs_differences(a._attrs, b._attrs, f"{where}.attrs")
    for kind, da, db in (("input", a._input_descs, b._input_descs),
                         ("output", a._output_descs, b._output_descs)):
        if len(da) == len(db):
            for i, (x, y) in enumerate(zip(da, db, strict=True)):
                out += desc_differences(x, y, f"{where}.{kind}_desc[{i}]")
    return out


def graph_differences(
    a: Graph, b: Graph, *, subgraphs: bool = True, where: str = "graph"
) -> list[str]:
    """Every difference between two graphs, as readable lines; empty when they are equal.

    ``subgraphs=True`` also compares the subgraphs registered on the root (recursively, with
    their parent node and parent graph); ``False`` is for graph-valued attributes, whose
    subgraph references are not followed.
    """
    if not isinstance(a, Graph) or not isinstance(b, Graph):
        return [f"{where}: not graphs: {a!r} / {b!r}"]
    where = f"{where} {a.name!r}"
    out = []
    if a.name != b.name:
        out.append(f"{where}: name {a.name!r} != {b.name!r}")
    names_a = [n.name for n in a.get_direct_nodes()]
    names_b = [n.name for n in b.get_direct_nodes()]
    if names_a != names_b:
        out.append(f"{where}: nodes {names_a!r} != {names_b!r}")
    else:
        for na, nb in zip(a.get_direct_nodes(), b.get_direct_nodes(), strict=True):
            out += node_differences(na, nb, f"{where} node {na.name!r}")
    outputs_a = [_edge(e) for e in a.get_outputs()]
    outputs_b = [_edge(e) for e in b.get_outputs()]
    if outputs_a != outputs_b:
        out.append(f"{where}: outputs {outputs_a!r} != {outputs_b!r}")
    out += attrs_differences(a._attrs, b._attrs, f"{where}.attrs")
    if subgraphs:
        subs_a = [s.name for s in a.get_all_subgraphs()]
        subs_b = [s.name for s in b.get_all_subgraphs()]
        if subs_a != subs_b:
            out.append(f"{where}: subgraphs {subs_a!r} != {subs_b!r}")
        else:
            for sa, sb in zip(a.get_all_subgraphs(), b.get_all_subgraphs(), strict=True):
                sub_where = f"{where} subgraph"
                pa, pb = sa.parent_node, sb.parent_node
                if (pa and pa.name) != (pb and pb.name):
                    out.append(f"{sub_where} {sa.name!r}: parent node {pa!r} != {pb!r}")
                ga, gb = sa._parent_graph, sb._parent_graph
                if (ga and ga.name) != (gb and gb.name):
                    out.append(f"{sub_where} {sa.name!r}: parent graph {ga!r} != {gb!r}")
                out += graph_differences(sa, sb, subgraphs=False, where=sub_where)
    return out


def assert_same_graph(a: Graph, b: Graph) -> None:
    problems = graph_differences(a, b)
    assert not problems, "graphs differ:\n  " + "\n  ".join(problems[:40])


# ============================================== GE_REFERENCE.md facts, transcribed by hand ====

# (name, ge::DataType value == ge.graph.DataType, ge.proto.DataType number) — §1.1.
DATA_TYPES: tuple[tuple[str, int, int], ...] = (
    ("DT_FLOAT", 0, 1),
    ("DT_FLOAT16", 1, 2),
    ("DT_INT8", 2, 3),
    ("DT_INT32", 3, 7),
    ("DT_UINT8", 4, 4),
    ("DT_INT16", 6, 5),
    ("DT_UINT16", 7, 6),
    ("DT_UINT32", 8, 9),
    ("DT_INT64", 9, 8),
    ("DT_UINT64", 10, 10),
    ("DT_DOUBLE", 11, 12),
    ("DT_BOOL", 12, 11),
    ("DT_STRING", 13, 13),
    ("DT_DUAL_SUB_INT8", 14, 14),
    ("DT_DUAL_SUB_UINT8", 15, 15),
    ("DT_COMPLEX64", 16, 16),
    ("DT_COMPLEX128", 17, 17),
    ("DT_QINT8", 18, 18),
    ("DT_QINT16", 19, 19),
    ("DT_QINT32", 20, 20),
    ("DT_QUINT8", 21, 21),
    ("DT_QUINT16", 22, 22),
    ("DT_RESOURCE", 23, 23),
    ("DT_STRING_REF", 24, 24),
    ("DT_DUAL", 25, 25),
    ("DT_VARIANT", 26, 26),
    ("DT_BF16", 27, 27),
    ("DT_UNDEFINED", 28, 0),
    ("DT_INT4", 29, 28),
    ("DT_UINT1", 30, 29),
    ("DT_INT2", 31, 30),
    ("DT_UINT2", 32, 31),
    ("DT_COMPLEX32", 33, 32),
    ("DT_HIFLOAT8", 34, 33),
    ("DT_FLOAT8_E5M2", 35, 34),
    ("DT_FLOAT8_E4M3FN", 36, 35),
    ("DT_FLOAT8_E8M0", 37, 36),
    ("DT_FLOAT6_E3M2", 38, 37),
    ("DT_FLOAT6_E2M3", 39, 38),
    ("DT_FLOAT4_E2M1", 40, 39),
    ("DT_FLOAT4_E1M2", 41, 40),
    ("DT_HIFLOAT4", 42, 41),
)

MAP = "map<string, AttrDef>"
# message full name -> {field name: (number, type)}; "repeated X" for repeated fields. §2.2.
GE_IR_MESSAGES: dict[str, dict[str, tuple[int, str]]] = {
    "ge.proto.ModelDef": {
        "name": (1, "string"),
        "version": (2, "uint32"),
        "custom_version": (3, "string"),
        "graph": (7, "repeated GraphDef"),
        "attr": (11, MAP),
        "attr_groups": (12, "AttrGroups"),
    },
    "ge.proto.GraphDef": {
        "name": (1, "string"),
        "input": (4, "repeated string"),
        "output": (5, "repeated string"),
        "op": (6, "repeated OpDef"),
        "attr": (11, MAP),
        "attr_groups": (12, "AttrGroups"),
    },
    "ge.proto.OpDef": {
        "name": (1, "string"),
        "type": (2, "string"),
        "input": (5, "repeated string"),
        "attr": (10, MAP),
        "attr_groups": (11, "AttrGroups"),
        "has_out_attr": (20, "bool"),
        "id": (21, "int64"),
        "stream_id": (22, "int64"),
        "input_name": (23, "repeated string"),
        "src_name": (24, "repeated string"),
        "src_index": (25, "repeated int64"),
        "dst_name": (26, "repeated string"),
        "dst_index": (27, "repeated int64"),
        "input_i": (28, "repeated int64"),
        "output_i": (29, "repeated int64"),
        "workspace": (30, "repeated int64"),
        "workspace_bytes": (31, "repeated int64"),
        "is_input_const": (32, "repeated bool"),
        "input_desc": (33, "repeated TensorDescriptor"),
        "output_desc": (34, "repeated TensorDescriptor"),
        "subgraph_name": (35, "repeated string"),
    },
    "ge.proto.TensorDescriptor": {
        "name": (1, "string"),
        "dtype": (2, "DataType"),
        "shape": (3, "ShapeDef"),
        "layout": (4, "string"),
        "attr": (5, MAP),
        "attr_groups": (6, "AttrGroups"),
        "has_out_attr": (9, "bool"),
        "size": (10, "int64"),
        "weight_size": (11, "int64"),
        "reuse_input": (12, "bool"),
        "output_tensor": (13, "bool"),
        "device_type": (14, "string"),
        "input_tensor": (15, "bool"),
        "real_dim_cnt": (16, "int64"),
        "reuse_input_index": (17, "int64"),
        "data_offset": (18, "int64"),
        "cmps_size": (19, "int64"),
        "cmps_tab": (20, "string"),
        "cmps_tab_offset": (21, "int64"),
    },
    "ge.proto.ShapeDef": {"dim": (1, "repeated int64")},
    "ge.proto.TensorDef": {"desc": (1, "TensorDescriptor"), "data": (2, "bytes")},
    "ge.proto.NamedAttrs": {"name": (1, "string"), "attr": (2, MAP)},
    "ge.proto.AttrDef": {
        "list": (1, "ListValue"),
        "s": (2, "bytes"),
        "i": (3, "int64"),
        "f": (4, "float"),
        "b": (5, "bool"),
        "bt": (7, "bytes"),
        "func": (10, "NamedAttrs"),
        "td": (11, "TensorDescriptor"),
        "t": (12, "TensorDef"),
        "g": (13, "GraphDef"),
        "list_list_int": (14, "ListListInt"),
        "dt": (15, "int64"),
        "list_list_float": (16, "ListListFloat"),
        "expression": (17, "bytes"),
    },
    "ge.proto.AttrDef.ListValue": {
        "s": (2, "repeated bytes"),
        "i": (3, "repeated int64"),
        "f": (4, "repeated float"),
        "b": (5, "repeated bool"),
        "bt": (7, "repeated bytes"),
        "td": (8, "repeated TensorDescriptor"),
        "t": (9, "repeated TensorDef"),
        "g": (10, "repeated GraphDef"),
        "na": (11, "repeated NamedAttrs"),
        "dt": (12, "repeated int64"),
        "val_type": (20, "ListValueType"),
    },
    "ge.proto.AttrDef.ListListInt": {"list_list_i": (1, "repeated ListInt")},
    "ge.proto.AttrDef.ListListInt.ListInt": {"list_i": (1, "repeated int64")},
    "ge.proto.AttrDef.ListListFloat": {"list_list_f": (1, "repeated ListFloat")},
    "ge.proto.AttrDef.ListListFloat.ListFloat": {"list_f": (1, "repeated float")},
    "ge.proto.AttrGroups": {
        "other_group_def": (1, "OtherGroupDef"),
        "attr_group_def": (2, "repeated AttrGroupDef"),
    },
    "ge.proto.AttrGroupDef": {
        "tensor_attr_group": (3, "TensorDescAttrGroupsDef"),
        "shape_env_attr_group": (4, "ShapeEnvAttrGroupsDef"),
    },
    "ge.proto.OtherGroupDef": {"attr": (1, "map<string, AttributeDef>")},
    "ge.proto.AttributeDef": {
        "s": (1, "bytes"),
        "i": (2, "int64"),
        "f": (3, "float"),
        "b": (4, "bool"),
        "bt": (5, "bytes"),
    },
    "ge.proto.TensorDescAttrGroupsDef": {
        "origin_symbol_shape": (1, "repeated string"),
        "symbolic_value": (2, "repeated string"),
    },
}
# message full name -> (oneof name, members)
GE_IR_ONEOFS: dict[str, tuple[str, frozenset[str]]] = {
    "ge.proto.AttrDef": ("value", frozenset(GE_IR_MESSAGES["ge.proto.AttrDef"])),
    "ge.proto.AttributeDef": ("value", frozenset(GE_IR_MESSAGES["ge.proto.AttributeDef"])),
    "ge.proto.AttrGroupDef": (
        "attr_group",
        frozenset(GE_IR_MESSAGES["ge.proto.AttrGroupDef"]),
    ),
}
LIST_VALUE_TYPES: dict[str, int] = {
    "VT_LIST_NONE": 0,
    "VT_LIST_STRING": 1,
    "VT_LIST_INT": 2,
    "VT_LIST_FLOAT": 3,
    "VT_LIST_BOOL": 4,
    "VT_LIST_BYTES": 5,
    "VT_LIST_TENSOR_DESC": 6,
    "VT_LIST_TENSOR": 7,
    "VT_LIST_GRAPH": 8,
    "VT_LIST_NAMED_ATTRS": 9,
    "VT_LIST_DATA_TYPE": 10,
}
GE_IR_ENUMS: dict[str, dict[str, int]] = {
    "ge.proto.DataType": {name: proto for name, _, proto in DATA_TYPES},
    "ge.proto.AttrDef.ListValue.ListValueType": LIST_VALUE_TYPES,
}

_SCALAR_TYPE_NAMES = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    17: "sint32",
    18: "sint64",
}


def describe_field(field: Any) -> str:
    """A ``google.protobuf`` FieldDescriptor written like the §2.2 tables ("repeated int64",
    "map<string, AttrDef>", "TensorDescriptor", ...)."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key = field.message_type.fields_by_name["key"]
        value = field.message_type.fields_by_name["value"]
        return f"map<{describe_field(key)}, {describe_field(value)}>"
    if field.message_type is not None:
        base = field.message_type.name
    elif field.enum_type is not None:
        base = field.enum_type.name
    else:
        base = _SCALAR_TYPE_NAMES.get(field.type, f"type{field.type}")
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:  # protobuf < 5.28 has no is_repeated
        repeated = field.label == field.LABEL_REPEATED
    return f"repeated {base}" if repeated else base
