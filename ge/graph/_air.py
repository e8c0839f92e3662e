"""AIR files: a ``Graph`` as the binary protobuf ``ge.proto.ModelDef`` that GE reads and writes.

The layout follows GE's serializer (GE_REFERENCE.md §2.3): ``ModelDef.graph[0]`` is the root
graph, followed by every subgraph; an op's data inputs are ``"producer:index"`` (``""`` when
unconnected) followed by control inputs ``"producer:-1"``; Const weights are ``AttrDef.t``;
``dt``/``list.dt`` hold raw ``ge::DataType`` values while ``TensorDescriptor.dtype`` uses the
proto enum. The schema is loaded from ``proto/ge_ir.desc`` into a private descriptor pool.

Decisions: files are written atomically (a temporary file renamed over the target, so a failed
save never leaves a half-written file) with ordinary permissions, not GE's 0400; a graph-valued
attribute stores that graph's own nodes, not the subgraphs its nodes may refer to; the
``expression`` attribute kind (symbolic shapes) is refused on load.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import cache
from importlib import resources
from types import SimpleNamespace
from typing import Any

from ge.error import AirFormatError, GeError, GeTypeError
from ge.graph._attr import AttrValue, NamedAttrs
from ge.graph._dtypes import data_type_from_proto, dtype_info, proto_data_type
from ge.graph._formats import format_from_string, format_to_string
from ge.graph._verify import describe_cycle, topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import Shape, TensorDesc
from ge.graph.types import AttrValueType, DataType, Format

__all__ = ["load_air", "model_from_bytes", "model_to_bytes", "save_air", "schema"]

VT = AttrValueType
_DATA_OPS = ("Data", "RefData", "AippData", "AnyData")
_MODEL_INT_ATTRS = (
    "memory_size",
    "p2p_memory_size",
    "stream_num",
    "event_num",
    "label_num",
    "weight_size",
)
# TensorDescriptor attrs that encode desc fields (not user attrs).
_DESC_KEYS = frozenset(
    {
        "origin_format",
        "origin_format_for_int",
        "format_for_int",
        "origin_shape_initialized",
        "origin_shape",
        "origin_data_type",
    }
)
# OpDef attrs that encode port names.
_PORT_NAME_KEYS = (
    ("_input_name_key", "_input_name_value", "_input_names"),
    ("_output_name_key", "_output_name_value", "_output_names"),
)

# AttrValueType of a list <-> (ListValue field, ListValueType number)
_LIST_FIELDS: dict[AttrValueType, tuple[str, int]] = {
    VT.VT_LIST_STRING: ("s", 1),
    VT.VT_LIST_INT: ("i", 2),
    VT.VT_LIST_FLOAT: ("f", 3),
    VT.VT_LIST_BOOL: ("b", 4),
    VT.VT_LIST_BYTES: ("bt", 5),
    VT.VT_LIST_TENSOR_DESC: ("td", 6),
    VT.VT_LIST_TENSOR: ("t", 7),
    VT.VT_LIST_GRAPH: ("g", 8),
    VT.VT_LIST_NAMED_ATTRS: ("na", 9),
    VT.VT_LIST_DATA_TYPE: ("dt", 10),
}
_LIST_KINDS = {number: kind for kind, (_, number) in _LIST_FIELDS.items()}


@cache
def schema() -> SimpleNamespace:
    """The ``ge.proto`` message classes, from the descriptor shipped with the package.

    protobuf is imported here, not with the module: its decoder costs tens of milliseconds,
    and importing ``ge.compiler`` (which imports this module) must not pay them on a path
    that touches no AIR bytes (``ge.jit``'s first call with its kernels in the disk cache)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: PLC0415

    raw = resources.files("ge.graph").joinpath("proto/ge_ir.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(raw).file:
        pool.Add(file_proto)
    names = (
        "ModelDef",
        "GraphDef",
        "OpDef",
        "AttrDef",
        "TensorDescriptor",
        "TensorDef",
        "NamedAttrs",
        "ShapeDef",
    )
    return SimpleNamespace(
        **{
            n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ge.proto.{n}"))
            for n in names
        }
    )


# ================================================================================ encoding ====
def _encode_desc(desc: TensorDesc, out: Any) -> None:
    out.dtype = proto_data_type(desc._data_type)
    out.shape.dim.extend(desc._shape)
    out.layout = format_to_string(desc._format)
    out.device_type = "NPU"
    out.real_dim_cnt = len(desc._shape)
    attrs = out.attr
    attrs["origin_format"].s = format_to_string(desc._origin_format).encode()
    attrs["origin_format_for_int"].i = int(desc._origin_format)
    attrs["format_for_int"].i = int(desc._format)
    attrs["origin_shape_initialized"].b = desc._origin_shape is not None
    if desc._origin_shape is not None:
        attrs["origin_shape"].list.val_type = _LIST_FIELDS[VT.VT_LIST_INT][1]
        attrs["origin_shape"].list.i.extend(desc._origin_shape)
    if desc._data_type != DataType.DT_UNDEFINED:
        attrs["origin_data_type"].s = dtype_info(desc._data_type).serial.encode()
    for key, value in desc._attrs.items():
        _encode_attr(value, attrs[key])


def _encode_tensor(tensor: Tensor, out: Any) -> None:
    _encode_desc(tensor._desc, out.desc)
    out.data = tensor._host_bytes()


def _encode_named(named: NamedAttrs, out: Any) -> None:
    out.name = named.name
    for key, value in named.attrs.items():
        _encode_attr(value, out.attr[key])


_SCALAR_ENCODE: dict[AttrValueType, Callable[[Any, Any], None]] = {
    VT.VT_STRING: lambda v, a: setattr(a, "s", v.encode("utf-8", "surrogateescape")),
    VT.VT_INT: lambda v, a: setattr(a, "i", v),
    VT.VT_FLOAT: lambda v, a: setattr(a, "f", v),
    VT.VT_BOOL: lambda v, a: setattr(a, "b", v),
    VT.VT_BYTES: lambda v, a: setattr(a, "bt", v),
    VT.VT_DATA_TYPE: lambda v, a: setattr(a, "dt", int(v)),
    VT.VT_TENSOR: lambda v, a: _encode_tensor(v, a.t),
    VT.VT_TENSOR_DESC: lambda v, a: _encode_desc(v, a.td),
    VT.VT_GRAPH: lambda v, a: _encode_graph(v, a.g),
    VT.VT_NAMED_ATTRS: lambda v, a: _encode_named(v, a.func),
}
# How one list element is added to its repeated field.
_ITEM_ENCODE: dict[str, Callable[[Any, Any], None]] = {
    "s": lambda v, f: f.append(v.encode("utf-8", "surrogateescape")),
    "dt": lambda v, f: f.append(int(v)),
    "td": lambda v, f: _encode_desc(v, f.add()),
    "t": lambda v, f: _encode_tensor(v, f.add()),
    "g": lambda v, f: _encode_graph(v, f.add()),
    "na": lambda v, f: _encode_named(v, f.add()),
}


def _append(item: Any, field: Any) -> None:
    field.append(item)


def _encode_attr(value: AttrValue, out: Any) -> None:
    kind = value.type
    if kind in _SCALAR_ENCODE:
        _SCALAR_ENCODE[kind](value.value, out)
    elif kind in _LIST_FIELDS:
        field_name, number = _LIST_FIELDS[kind]
        out.list.val_type = number
        field = getattr(out.list, field_name)
        add = _ITEM_ENCODE.get(field_name, _append)
        for item in value.value:
            add(item, field)
    elif kind == VT.VT_LIST_LIST_INT:
        out.list_list_int.SetInParent()
        for row in value.value:
            out.list_list_int.list_list_i.add().list_i.extend(row)
    elif kind == VT.VT_LIST_LIST_FLOAT:
        out.list_list_float.SetInParent()
        for row in value.value:
            out.list_list_float.list_list_f.add().list_f.extend(row)
    # VT_NONE: an AttrDef with no value set


def _graph_inputs(graph: Graph) -> list[Node]:
    data = [n for n in graph._nodes.values() if n._type in _DATA_OPS]

    def index(node: Node) -> int:
        attr = node._attrs.get("index")
        return attr.value if attr is not None and attr.type == VT.VT_INT else len(data)

    return sorted(data, key=index)


def _encode_port_names(node: Node, out: Any) -> None:
    for names, (key_attr, value_attr, _) in zip(
        (node._input_names, node._output_names), _PORT_NAME_KEYS, strict=True
    ):
        named = [(name, i) for i, name in enumerate(names) if name]
        if named:
            keys, values = out.attr[key_attr].list, out.attr[value_attr].list
            keys.val_type, values.val_type = 1, 2
            keys.s.extend(name.encode() for name, _ in named)
            values.i.extend(i for _, i in named)


def _encode_node(node: Node, node_id: int, out: Any) -> None:
    out.name = node._name
    out.type = node._type
    out.id = node_id
    out.input.extend("" if e is None else f"{e[0]._name}:{e[1]}" for e in node._in_edges)
    out.input.extend(f"{src._name}:-1" for src in node._in_ctrl)
    for desc, name in zip(node._input_descs, node._input_names, strict=True):
        _encode_desc(desc, out.input_desc.add())
        out.input_desc[-1].name = name
    for desc, name in zip(node._output_descs, node._output_names, strict=True):
        _encode_desc(desc, out.output_desc.add())
        out.output_desc[-1].name = name
    out.subgraph_name.extend(node._subgraph_names)
    for key, value in node._attrs.items():
        _encode_attr(value, out.attr[key])
    _encode_port_names(node, out)


def _encode_graph(graph: Graph, out: Any) -> None:
    out.name = graph._name
    out.input.extend(f"{n._name}:0" for n in _graph_inputs(graph))
    out.output.extend(f"{n._name}:{i}" for n, i in graph._outputs)
    for node_id, node in enumerate(graph._nodes.values()):
        _encode_node(node, node_id, out.op.add())
    for key, value in graph._attrs.items():
        _encode_attr(value, out.attr[key])


def _subgraphs_to_save(graph: Graph) -> list[Graph]:
    root = graph._root()
    if graph is root:
        return list(root._subgraphs.values())
    found: dict[str, Graph] = {}
    stack = [graph]
    while stack:
        for node in stack.pop()._nodes.values():
            for name in node._subgraph_names:
                sub = root._subgraphs.get(name)
                if sub is not None and name not in found:
                    found[name] = sub
                    stack.append(sub)
    return [g for g in root._subgraphs.values() if g._name in found]


def model_to_bytes(graph: Graph) -> bytes:
    """The AIR bytes of ``graph`` and its subgraphs."""
    model = schema().ModelDef()
    for key in _MODEL_INT_ATTRS:
        model.attr[key].i = 0
    model.attr["target_type"].s = b"MINI"
    for g in (graph, *_subgraphs_to_save(graph)):
        _encode_graph(g, model.graph.add())
    # deterministic: maps (attributes) in key order, so the bytes do not depend on the hash seed
    return bytes(model.SerializeToString(deterministic=True))


def _check_path(file_path: object) -> str:
    if not isinstance(file_path, (str, os.PathLike)):
        raise GeTypeError(f"file_path must be a string, got {type(file_path).__name__}")
    return os.fspath(file_path)


def save_air(graph: Graph, file_path: str | os.PathLike[str]) -> None:
    path = _check_path(file_path)
    from google.protobuf import message  # noqa: PLC0415  (see schema())

    try:
        data = model_to_bytes(graph)
    except (GeError, ValueError, TypeError, message.EncodeError) as e:
        raise AirFormatError(f"Failed to save graph to AIR format: {e}") from e
    directory = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ge_air_", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise AirFormatError(
            f"Failed to save graph to AIR format: cannot write {path!r}: {e.strerror}"
        ) from None


# ================================================================================ decoding ====
class _CorruptError(Exception):
    """A structural problem in the file; turned into AirFormatError at the boundary."""


def _decode_desc(proto: Any) -> TensorDesc:
    attrs = proto.attr
    fmt = Format.FORMAT_ND
    if "format_for_int" in attrs:
        fmt = _format_from_int(attrs["format_for_int"].i)
    elif proto.layout:
        parsed = format_from_string(proto.layout)
        fmt = Format.FORMAT_ND if parsed is None else parsed
    desc = TensorDesc(Shape(list(proto.shape.dim)), fmt, data_type_from_proto(proto.dtype))
    if "origin_format_for_int" in attrs:
        desc._origin_format = _format_from_int(attrs["origin_format_for_int"].i)
    elif "origin_format" in attrs:
        parsed = format_from_string(attrs["origin_format"].s.decode())
        desc._origin_format = fmt if parsed is None else parsed
    initialized = (
        attrs["origin_shape_initialized"].b
        if "origin_shape_initialized" in attrs
        else "origin_shape" in attrs
    )
    if initialized:
        desc._origin_shape = Shape(
            list(attrs["origin_shape"].list.i) if "origin_shape" in attrs else []
        )
    desc._attrs = {k: _decode_attr(v, k) for k, v in attrs.items() if k not in _DESC_KEYS}
    return desc


def _format_from_int(value: int) -> Format:
    try:
        return Format(value & 0xFF)  # sub-format and C0 bits are not modelled
    except ValueError:
        raise _CorruptError(f"unknown format {value}") from None


def _decode_tensor(proto: Any) -> Tensor:
    desc = _decode_desc(proto.desc)
    tensor = Tensor._from_parts(desc, bytes(proto.data))
    if not proto.data and math.prod(desc._shape) != 0:
        tensor._bytes = None  # a Tensor() without data, not a zero-size tensor
    return tensor


def _decode_named(proto: Any) -> NamedAttrs:
    return NamedAttrs(proto.name, {k: _decode_attr(v, k) for k, v in proto.attr.items()})


def _decode_data_type(value: int) -> DataType:
    try:
        return DataType(value)
    except ValueError:
        raise _CorruptError(f"unknown data type {value}") from None


_SCALAR_DECODE: dict[str, tuple[AttrValueType, Callable[[Any], Any]]] = {
    "s": (VT.VT_STRING, lambda v: v.decode("utf-8", "surrogateescape")),
    "i": (VT.VT_INT, int),
    "f": (VT.VT_FLOAT, float),
    "b": (VT.VT_BOOL, bool),
    "bt": (VT.VT_BYTES, bytes),
    "dt": (VT.VT_DATA_TYPE, _decode_data_type),
    "t": (VT.VT_TENSOR, _decode_tensor),
    "td": (VT.VT_TENSOR_DESC, _decode_desc),
    "g": (VT.VT_GRAPH, lambda v: _decode_standalone_graph(v)),  # noqa: PLW0108  (defined below)
    "func": (VT.VT_NAMED_ATTRS, _decode_named),
}
_ITEM_DECODE: dict[str, Callable[[Any], Any]] = {
    "s": _SCALAR_DECODE["s"][1],
    "i": int,
    "f": float,
    "b": bool,
    "bt": bytes,
    "td": _decode_desc,
    "t": _decode_tensor,
    "g": _SCALAR_DECODE["g"][1],
    "na": _decode_named,
    "dt": _decode_data_type,
}


def _decode_list(proto: Any) -> AttrValue:
    kind = _LIST_KINDS.get(proto.val_type)
    if kind is None:  # VT_LIST_NONE or unknown: use the one field that holds items
        filled = [k for k, (f, _) in _LIST_FIELDS.items() if len(getattr(proto, f))]
        kind = filled[0] if len(filled) == 1 else VT.VT_LIST_INT
    field_name = _LIST_FIELDS[kind][0]
    decode = _ITEM_DECODE[field_name]
    return AttrValue(kind, tuple(decode(x) for x in getattr(proto, field_name)))


def _decode_attr(proto: Any, key: str) -> AttrValue:
    which = proto.WhichOneof("value")
    if which is None:
        return AttrValue(VT.VT_NONE, None)
    if which in _SCALAR_DECODE:
        kind, decode = _SCALAR_DECODE[which]
        return AttrValue(kind, decode(getattr(proto, which)))
    if which == "list":
        return _decode_list(proto.list)
    if which == "list_list_int":
        return AttrValue(
            VT.VT_LIST_LIST_INT, tuple(tuple(r.list_i) for r in proto.list_list_int.list_list_i)
        )
    if which == "list_list_float":
        return AttrValue(
            VT.VT_LIST_LIST_FLOAT, tuple(tuple(r.list_f) for r in proto.list_list_float.list_list_f)
        )
    raise _CorruptError(f"attribute {key!r} uses the {which!r} kind, which ge does not support")


def _split_ref(ref: str, where: str) -> tuple[str, int]:
    name, sep, index = ref.rpartition(":")
    try:
        if not sep or not name:
            raise ValueError
        return name, int(index)
    except ValueError:
        raise _CorruptError(f"{where}: input {ref!r} is not of the form 'node:index'") from None


def _take_port_names(
    attrs: dict[str, AttrValue], count: int, keys: tuple[str, str, str]
) -> list[str]:
    names = [""] * count
    key_attr, value_attr = attrs.get(keys[0]), attrs.get(keys[1])
    if key_attr is None or value_attr is None:
        return names
    pairs = list(zip(key_attr.value or (), value_attr.value or (), strict=False))
    well_formed = (
        key_attr.type == VT.VT_LIST_STRING
        and value_attr.type == VT.VT_LIST_INT
        and len(key_attr.value) == len(value_attr.value)
        and all(0 <= i < count for _, i in pairs)
    )
    if well_formed:
        for name, i in pairs:
            names[i] = name
        del attrs[keys[0]], attrs[keys[1]]
    return names


def _add_op(graph: Graph, op: Any) -> tuple[Node, list[str]]:
    where = f"graph '{graph._name}' op {op.name!r}"
    if not op.name or not op.type:
        raise _CorruptError(f"graph '{graph._name}' has an op without a name or type")
    data_refs = [r for r in op.input if not r or _split_ref(r, where)[1] >= 0]
    num_inputs = max(len(op.input_desc), len(data_refs))
    node = graph.add_node(op.type, op.name, num_inputs=num_inputs, num_outputs=len(op.output_desc))
    attrs = {k: _decode_attr(v, k) for k, v in op.attr.items()}
    node._input_names = _take_port_names(attrs, num_inputs, _PORT_NAME_KEYS[0])
    node._output_names = _take_port_names(attrs, len(op.output_desc), _PORT_NAME_KEYS[1])
    node._attrs = attrs
    node._subgraph_names = list(op.subgraph_name)
    inputs = node._input_descs
    if inputs:  # (no inputs: the shared empty tuple)
        for i, desc in enumerate(op.input_desc):
            inputs[i] = _decode_desc(desc)
    for i, desc in enumerate(op.output_desc):
        node._output_descs[i] = _decode_desc(desc)
    return node, list(op.input)


def _connect(graph: Graph, node: Node, refs: list[str]) -> None:
    where = f"graph '{graph._name}' op {node._name!r}"
    port = 0
    for ref in refs:
        if not ref:
            port += 1
            continue
        name, index = _split_ref(ref, where)
        src = graph._nodes.get(name)
        if src is None:
            raise _CorruptError(f"{where}: input {ref!r} names no op of the graph")
        if index < 0:
            graph.add_control_edge(src, node)
            continue
        if index >= len(src._out_edges):
            raise _CorruptError(
                f"{where}: input {ref!r} reads output {index} of op "
                f"{name!r}, which has {len(src._out_edges)} outputs"
            )
        graph.add_data_edge(src, index, node, port)
        port += 1


def _decode_body(graph_def: Any) -> tuple[Graph, list[tuple[Node, list[str]]]]:
    graph = Graph(graph_def.name)
    ops = [_add_op(graph, op) for op in graph_def.op]
    for node, refs in ops:
        _connect(graph, node, refs)
    outputs = []
    for ref in graph_def.output:
        name, index = _split_ref(ref, f"graph '{graph._name}' output")
        if name not in graph._nodes:
            raise _CorruptError(f"graph '{graph._name}' output {ref!r} names no op of the graph")
        outputs.append((graph._nodes[name], index))
    graph.set_outputs(outputs)
    graph._attrs = {k: _decode_attr(v, k) for k, v in graph_def.attr.items()}
    return graph, ops


def _decode_standalone_graph(graph_def: Any) -> Graph:
    return _decode_body(graph_def)[0]


def _attach_subgraphs(graph: Graph, node: Node, by_name: dict[str, Graph]) -> None:
    names, node._subgraph_names = node._subgraph_names, []
    for i, name in enumerate(names):
        if not name:
            node._subgraph_names.append("")
        elif name not in by_name:
            raise _CorruptError(
                f"op {node._name!r} refers to subgraph {name!r}, which the file lacks"
            )
        else:
            graph.set_node_subgraph(node, i, by_name[name])


def _decode_model(model: Any) -> Graph:
    if not model.graph:
        raise _CorruptError("the file holds no graph")
    graphs = [_decode_body(g) for g in model.graph]
    counts = Counter(g._name for g, _ in graphs)
    duplicate = next((g._name for g, _ in graphs if counts[g._name] > 1), None)
    if duplicate is not None:
        raise _CorruptError(f"two graphs are named {duplicate!r}")
    root = graphs[0][0]
    by_name = {g._name: g for g, _ in graphs[1:]}
    for sub in by_name.values():
        root.register_subgraph(sub)
    for graph, ops in graphs:
        _, cyclic = topological_order(graph)
        if cyclic:
            raise _CorruptError(describe_cycle(graph, cyclic))
        for node, _ in ops:
            _attach_subgraphs(graph, node, by_name)
    return root


def model_from_bytes(data: bytes) -> Graph:
    """Decode AIR bytes into a new root graph; ``AirFormatError`` on anything malformed."""
    model = schema().ModelDef()
    from google.protobuf import message  # noqa: PLC0415  (imported by schema())

    try:
        model.ParseFromString(data)
        return _decode_model(model)
    except (
        message.DecodeError,
        _CorruptError,
        GeError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        RecursionError,
    ) as e:
        raise AirFormatError(f"Failed to load graph from AIR format: {e}") from None


def load_air(file_path: str | os.PathLike[str]) -> Graph:
    path = _check_path(file_path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AirFormatError(
            f"Failed to load graph from AIR format: cannot read {path!r}: {e.strerror}"
        ) from None
    try:
        return model_from_bytes(data)
    except AirFormatError as e:
        raise AirFormatError(f"{e} (file {path!r})") from None
