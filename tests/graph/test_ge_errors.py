"""GE_ERRORS.md §2 (``ge.graph``: Graph, Node, Tensor, TensorDesc, Shape, attribute values),
§12.3 (reprs) and §13 where they concern ``ge.graph``, row by row: the condition → GE-PY's
exception type and its text, which must START the message (ours may add the actual type or
the reason after it). Rows named ``order:`` set two conditions at once and expect the check
GE runs first. ``str(graph)`` is golden-tested in test_readable.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ge.graph import (
    AttrValueType,
    DataType,
    DumpFormat,
    Format,
    Graph,
    Node,
    Placement,
    Shape,
    Tensor,
    TensorDesc,
)

DT = DataType
ND = Format.FORMAT_ND
VT = AttrValueType


@dataclass
class Ctx:
    """``a -> b`` in graph ``g`` (``b`` has one more, unconnected input), ``f`` of another
    graph ``h``, a removed node ``gone``, and a scratch directory."""

    g: Graph
    a: Node
    b: Node
    f: Node
    gone: Node
    tmp: Path


@pytest.fixture
def ctx(tmp_path: Path) -> Ctx:
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    b = g.add_node("Foo", "b", num_inputs=2, num_outputs=1)
    g.add_data_edge(a, 0, b, 0)
    gone = g.add_node("Foo", "gone", num_inputs=1, num_outputs=1)
    g.remove_node(gone)
    h = Graph("h")
    f = h.add_node("Foo", "f", num_inputs=1, num_outputs=1)
    return Ctx(g, a, b, f, gone, tmp_path)


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[Ctx], Any]
    error: type[BaseException]
    text: str  # GE's text: the message must start with it


def _attr(kind: AttrValueType, value: Any) -> Callable[[Ctx], Any]:
    def call(c: Ctx) -> Any:
        c.g.set_attr("k", value, kind)
        return c.g.get_attr("k")

    return call


def _moved(c: Ctx) -> Any:
    c.g._move_out()
    return c.g.name


FORMATS = "Format must be in [DumpFormat.kOnnx, DumpFormat.kTxt, DumpFormat.kReadable]"

GRAPH_ROWS = [
    Row("Graph(1)", lambda c: Graph(1), TypeError, "Graph name must be a string"),  # type: ignore[arg-type]
    Row("copy.copy", lambda c: copy.copy(c.g), RuntimeError, "Graph does not support copy"),
    Row(
        "copy.deepcopy",
        lambda c: copy.deepcopy(c.g),
        RuntimeError,
        "Graph does not support deepcopy",
    ),
    Row("name of a moved graph", _moved, RuntimeError, "Failed to get Graph name"),
    Row("get_attr(1)", lambda c: c.g.get_attr(1), TypeError, "Attribute key must be a string"),
    Row(
        "get_attr absent",
        lambda c: c.g.get_attr("nope"),
        RuntimeError,
        "Failed to get attribute 'nope' from Graph g",
    ),
    Row(
        "get_attr of a kind GE-PY cannot read",
        _attr(VT.VT_LIST_LIST_INT, [[1]]),
        RuntimeError,
        "Unsupported attribute type: 10",
    ),
    Row(
        "get_attr of an empty list",
        _attr(VT.VT_LIST_INT, []),
        RuntimeError,
        "Failed to get list value",
    ),
    Row(
        "get_attr of an empty string list",
        _attr(VT.VT_LIST_STRING, []),
        RuntimeError,
        "Failed to get list_string value",
    ),
    Row(
        "set_attr(1, v)", lambda c: c.g.set_attr(1, 1), TypeError, "Attribute key must be a string"
    ),
    Row(
        "set_attr of a dict",
        lambda c: c.g.set_attr("k", {"k": "v"}),
        ValueError,
        "Unsupported attribute type: <class 'dict'> for value: {'k': 'v'}",
    ),
    Row(
        "dump_to_file suffix",
        lambda c: c.g.dump_to_file(suffix=1),
        TypeError,
        "Suffix must be a string",
    ),
    Row("dump_to_file format", lambda c: c.g.dump_to_file(2), TypeError, FORMATS),
    Row(
        "order: dump_to_file suffix before format",
        lambda c: c.g.dump_to_file(2, 1),
        TypeError,
        "Suffix must be a string",
    ),
    Row("dump_to_stream format", lambda c: c.g.dump_to_stream("kReadable"), TypeError, FORMATS),
    Row("save_to_air(1)", lambda c: c.g.save_to_air(1), TypeError, "file_path must be a string"),
    Row(
        "save_to_air unwritable",
        lambda c: c.g.save_to_air(str(c.tmp / "no" / "g.air")),
        RuntimeError,
        "Failed to save graph to AIR format",
    ),
    Row(
        "load_from_air(1)", lambda c: c.g.load_from_air(1), TypeError, "file_path must be a string"
    ),
    Row(
        "load_from_air missing",
        lambda c: c.g.load_from_air(str(c.tmp / "none.air")),
        RuntimeError,
        "Failed to load graph from AIR format",
    ),
    Row("remove_node('a')", lambda c: c.g.remove_node("a"), TypeError, "node must be a Node"),
    Row(
        "remove_node of another graph's node",
        lambda c: c.g.remove_node(c.f),
        RuntimeError,
        "Failed to remove Node f from Graph g",
    ),
    *(
        Row(f"{op}: {what}", call, TypeError, text)
        for op in ("remove_edge", "add_data_edge")
        for what, call, text in (
            (
                "src_node",
                lambda c, o=op: getattr(c.g, o)("a", 0, c.b, 0),
                "src_node must be a Node",
            ),
            (
                "src_port_index",
                lambda c, o=op: getattr(c.g, o)(c.a, "0", c.b, 0),
                "src_port_index must be an integer",
            ),
            (
                "dst_node",
                lambda c, o=op: getattr(c.g, o)(c.a, 0, "b", 0),
                "dst_node must be a Node",
            ),
            (
                "dst_port_index",
                lambda c, o=op: getattr(c.g, o)(c.a, 0, c.b, 0.0),
                "dst_port_index must be an integer",
            ),
            (
                "order: src_node first",
                lambda c, o=op: getattr(c.g, o)("a", "0", "b", "0"),
                "src_node must be a Node",
            ),
            (
                "order: src_port_index second",
                lambda c, o=op: getattr(c.g, o)(c.a, "0", "b", "0"),
                "src_port_index must be an integer",
            ),
            (
                "order: dst_node third",
                lambda c, o=op: getattr(c.g, o)(c.a, 0, "b", "0"),
                "dst_node must be a Node",
            ),
        )
    ),
    Row(
        "remove_edge: no such edge",
        lambda c: c.g.remove_edge(c.a, 0, c.b, 1),
        RuntimeError,
        "Failed to remove Edge from Node a, Port Index 0 to Node b, Port Index 1",
    ),
    Row(
        "remove_edge: src -1, dst not -1",
        lambda c: c.g.remove_edge(c.a, -1, c.b, 0),
        RuntimeError,
        "Failed to remove Edge from Node a, Port Index -1 to Node b, Port Index 0",
    ),
    Row(
        "add_data_edge: no such anchor",
        lambda c: c.g.add_data_edge(c.a, 5, c.b, 1),
        RuntimeError,
        "Failed to add DataEdge from Node a, Port Index 5 to Node b, Port Index 1",
    ),
    Row(
        "add_data_edge: a node without an owner graph",
        lambda c: c.g.add_data_edge(c.a, 0, c.gone, 0),
        RuntimeError,
        "Failed to add DataEdge from Node a, Port Index 0 to Node gone, Port Index 0",
    ),
    Row(
        "add_control_edge src",
        lambda c: c.g.add_control_edge(1, c.b),
        TypeError,
        "src_node must be a Node",
    ),
    Row(
        "add_control_edge dst",
        lambda c: c.g.add_control_edge(c.a, 1),
        TypeError,
        "dst_node must be a Node",
    ),
    Row(
        "add_control_edge: a node without an owner graph",
        lambda c: c.g.add_control_edge(c.a, c.gone),
        RuntimeError,
        "Failed to add Control from Node a to Node gone",
    ),
    Row(
        "find_node_by_name(1)",
        lambda c: c.g.find_node_by_name(1),
        TypeError,
        "name must be a string",
    ),
    Row(
        "find_node_by_name absent",
        lambda c: c.g.find_node_by_name("zz"),
        RuntimeError,
        "Failed to find Node name zz",
    ),
    Row("get_subgraph(1)", lambda c: c.g.get_subgraph(1), TypeError, "name must be a string"),
    Row(
        "add_subgraph('s')", lambda c: c.g.add_subgraph("s"), TypeError, "subgraph must be a Graph"
    ),
    Row(
        "add_subgraph of a standalone graph",
        lambda c: c.g.add_subgraph(Graph("s")),
        RuntimeError,
        "Failed to add subgraph 's' to graph 'g'",
    ),
    Row("remove_subgraph(1)", lambda c: c.g.remove_subgraph(1), TypeError, "name must be a string"),
]

NODE_ROWS = [
    Row("Node()", lambda c: Node(), RuntimeError, "Node objects should not be created directly."),
    Row("copy.copy", lambda c: copy.copy(c.a), RuntimeError, "Node does not support copy"),
    Row(
        "copy.deepcopy",
        lambda c: copy.deepcopy(c.a),
        RuntimeError,
        "Node does not support deepcopy",
    ),
    Row(
        "get_in_data_nodes_and_port_indexes('0')",
        lambda c: c.b.get_in_data_nodes_and_port_indexes("0"),
        TypeError,
        "Input index must be an integer",
    ),
    Row(
        "get_in_data_nodes_and_port_indexes unconnected",
        lambda c: c.b.get_in_data_nodes_and_port_indexes(1),
        RuntimeError,
        "Failed to get input data node for index 1",
    ),
    Row(
        "get_in_data_nodes_and_port_indexes no such input",
        lambda c: c.b.get_in_data_nodes_and_port_indexes(7),
        RuntimeError,
        "Failed to get input data node for index 7",
    ),
    Row(
        "get_out_data_nodes_and_port_indexes('0')",
        lambda c: c.b.get_out_data_nodes_and_port_indexes("0"),
        TypeError,
        "Output index must be an integer",
    ),
    Row("get_attr(1)", lambda c: c.b.get_attr(1), TypeError, "Attribute key must be a string"),
    Row(
        "get_attr absent",
        lambda c: c.b.get_attr("nope"),
        RuntimeError,
        "Failed to get attribute 'nope' from Node",
    ),
    Row(
        "set_attr(1, v)", lambda c: c.b.set_attr(1, 1), TypeError, "Attribute key must be a string"
    ),
    Row(
        "set_attr of a list of lists",
        lambda c: c.b.set_attr("k", [[1, 2]]),
        ValueError,
        "Unsupported attribute type: <class 'list'> for value: [[1, 2]]",
    ),
    Row("has_attr(1)", lambda c: c.b.has_attr(1), TypeError, "attr_name must be a string"),
    *(
        row
        for side, idx in (("input", "Input"), ("output", "Output"))
        for row in (
            Row(
                f"get_{side}_attr(1, 0)",
                lambda c, s=side: getattr(c.b, f"get_{s}_attr")(1, 0),
                TypeError,
                "Attribute name must be a string",
            ),
            Row(
                f"get_{side}_attr('a', '0')",
                lambda c, s=side: getattr(c.b, f"get_{s}_attr")("a", "0"),
                TypeError,
                f"{idx} index must be an integer",
            ),
            Row(
                f"order: get_{side}_attr name before index",
                lambda c, s=side: getattr(c.b, f"get_{s}_attr")(1, "0"),
                TypeError,
                "Attribute name must be a string",
            ),
            Row(
                f"get_{side}_attr absent",
                lambda c, s=side: getattr(c.b, f"get_{s}_attr")("a", 0),
                RuntimeError,
                f"Failed to get Node b {side} attribute 'a' for index 0",
            ),
            Row(
                f"get_{side}_attr -1",
                lambda c, s=side: getattr(c.b, f"get_{s}_attr")("a", -1),
                RuntimeError,
                f"Failed to get Node b {side} attribute 'a' for index -1",
            ),
            Row(
                f"set_{side}_attr(1, 0, v)",
                lambda c, s=side: getattr(c.b, f"set_{s}_attr")(1, 0, 1),
                TypeError,
                "Attribute name must be a string",
            ),
            Row(
                f"set_{side}_attr('a', '0', v)",
                lambda c, s=side: getattr(c.b, f"set_{s}_attr")("a", "0", 1),
                TypeError,
                f"{idx} index must be an integer",
            ),
            Row(
                f"set_{side}_attr out of range",
                lambda c, s=side: getattr(c.b, f"set_{s}_attr")("a", 9, 1),
                RuntimeError,
                f"Failed to set Node b {side} attribute 'a' for index 9",
            ),
            Row(
                f"get_{side}_desc('0')",
                lambda c, s=side: getattr(c.b, f"get_{s}_desc")("0"),
                TypeError,
                f"{idx} index must be an integer",
            ),
            Row(
                f"get_{side}_desc(9)",
                lambda c, s=side: getattr(c.b, f"get_{s}_desc")(9),
                RuntimeError,
                f"Failed to get {side} desc for index 9",
            ),
            Row(
                f"update_{side}_desc('0', desc)",
                lambda c, s=side: getattr(c.b, f"update_{s}_desc")("0", TensorDesc()),
                TypeError,
                f"{idx} index must be an integer",
            ),
            Row(
                f"update_{side}_desc(0, 'd')",
                lambda c, s=side: getattr(c.b, f"update_{s}_desc")(0, "d"),
                TypeError,
                "tensor_desc must be a TensorDesc",
            ),
            Row(
                f"order: update_{side}_desc index before desc",
                lambda c, s=side: getattr(c.b, f"update_{s}_desc")("0", "d"),
                TypeError,
                f"{idx} index must be an integer",
            ),
            Row(
                f"update_{side}_desc(9, desc)",
                lambda c, s=side: getattr(c.b, f"update_{s}_desc")(9, TensorDesc()),
                RuntimeError,
                f"Failed to update {side} desc for index 9",
            ),
        )
    ),
]


def _reinterpreted(shape: list[int]) -> Tensor:
    return Tensor(
        [1.0] * max(1, len(shape) and shape[0]), None, DT.DT_FLOAT, ND, shape
    ).set_data_type(DT.DT_INT8)


def _transferred_twice() -> None:
    t = Tensor([1.0])
    t._transfer_ownership_when_pass_as_attr(Graph("g"))  # anything with a name, or a name
    t._transfer_ownership_when_pass_as_attr("h")


TENSOR_ROWS = [
    Row(
        "1: shape a tuple",
        lambda c: Tensor([1.0], shape=(1,)),
        TypeError,
        "Shape must be a list of integers",
    ),
    Row(
        "1: shape of floats",
        lambda c: Tensor([1.0], shape=[1.0]),
        TypeError,
        "Shape must be a list of integers",
    ),
    Row(
        "2: placement",
        lambda c: Tensor([1.0], placement=1),
        TypeError,
        "Placement must be a Placement",
    ),
    Row(
        "3: data and file",
        lambda c: Tensor([1.0], "f.bin"),
        RuntimeError,
        "Tensor should be created either by data or by file",
    ),
    Row("4: data not a list", lambda c: Tensor("1"), TypeError, "data should be List"),
    Row("4: data a tuple", lambda c: Tensor((1.0,)), TypeError, "data should be List"),  # type: ignore[arg-type]
    Row(
        "5: DT_DOUBLE",
        lambda c: Tensor([1.0], data_type=DT.DT_DOUBLE),
        RuntimeError,
        "DT_DOUBLE is not supported in python Tensor constructor",
    ),
    Row(
        "6: DT_BF16",
        lambda c: Tensor([1.0], data_type=DT.DT_BF16),
        RuntimeError,
        "Failed to create Tensor with data type: 27",
    ),
    Row(
        "6: DT_BOOL with ints",
        lambda c: Tensor([1, 0], data_type=DT.DT_BOOL, shape=[2]),
        RuntimeError,
        "Failed to create Tensor with data type: 12",
    ),
    Row(
        "6: None",
        lambda c: Tensor([1.0], data_type=None),
        RuntimeError,
        "Failed to create Tensor with data type: None",
    ),
    Row(
        "7: element conversion",
        lambda c: Tensor(["a"]),
        ValueError,
        "could not convert string to float: 'a'",
    ),
    Row(
        "7: a nested list (GE packs flat lists)",
        lambda c: Tensor([[1.0], [2.0]], shape=[2]),
        TypeError,
        "float() argument must be a string or a real number, not 'list'",
    ),
    Row(
        "7: int conversion",
        lambda c: Tensor([None], data_type=DT.DT_INT32),
        TypeError,
        "int() argument must be",
    ),
    Row(
        "8: missing file",
        lambda c: Tensor(None, str(c.tmp / "x.bin")),
        RuntimeError,
        "Failed to create Tensor",
    ),
    Row(
        "order: shape before placement",
        lambda c: Tensor([1.0], shape=(1,), placement=1),
        TypeError,
        "Shape must be a list of integers",
    ),
    Row(
        "order: placement before data and file",
        lambda c: Tensor([1.0], "f", placement=1),
        TypeError,
        "Placement must be a Placement",
    ),
    Row(
        "order: data and file before the data type",
        lambda c: Tensor("x", "f"),
        RuntimeError,
        "Tensor should be created either by data or by file",
    ),
    Row(
        "order: data before the data type",
        lambda c: Tensor("x", data_type=DT.DT_DOUBLE),
        TypeError,
        "data should be List",
    ),
    Row("copy.copy", lambda c: copy.copy(Tensor()), RuntimeError, "Tensor does not support copy"),
    Row(
        "_transfer_ownership_when_pass_as_attr twice",
        lambda c: _transferred_twice(),
        RuntimeError,
        "Tensor already has an new owner builder :g, cannot transfer ownership again",
    ),
    Row(
        "copy.deepcopy",
        lambda c: copy.deepcopy(Tensor()),
        RuntimeError,
        "Tensor does not support deepcopy",
    ),
    Row("set_format(1)", lambda c: Tensor().set_format(1), TypeError, "Format must be a Format"),
    Row(
        "set_data_type(1)",
        lambda c: Tensor().set_data_type(1),
        TypeError,
        "Data_type must be a DataType",
    ),
    Row(
        "get_data of an empty tensor",
        lambda c: Tensor().get_data(),
        ValueError,
        "Input must start with '[' and end with ']'",
    ),
    Row(
        "str of an empty tensor",
        lambda c: str(Tensor()),
        ValueError,
        "Input must start with '[' and end with ']'",
    ),
    Row(
        "get_data of DT_BOOL",
        lambda c: Tensor([True], data_type=DT.DT_BOOL).data,
        ValueError,
        "Invalid item: 'true'",
    ),
    Row(
        "get_data of an unsupported dtype",
        lambda c: Tensor(b"\0\0", data_type=DT.DT_BF16).get_data(),
        ValueError,
        "Input must start with '[' and end with ']'",
    ),
    Row(
        "get_data: scalar of 4 elements",
        lambda c: _reinterpreted([]).get_data(),
        ValueError,
        "Scalar tensor should contain exactly one element, got 4",
    ),
    Row(
        "get_data: count not the shape's",
        lambda c: _reinterpreted([2]).get_data(),
        ValueError,
        "Length of list 8 does not match shape 2",
    ),
    Row(
        "to_host of a host tensor",
        lambda c: Tensor([1.0]).to_host(),
        ValueError,
        "to_host() only supports device tensors",
    ),
    Row(
        "to_device of a device tensor",
        lambda c: Tensor([1.0], placement=Placement.PLACEMENT_DEVICE).to_device(),
        ValueError,
        "to_device() only supports host tensors",
    ),
]

DESC_ROWS = [
    Row("Shape('x')", lambda c: Shape("x"), TypeError, "dims must be a list of integers"),
    Row("Shape([1.0])", lambda c: Shape([1.0]), TypeError, "dims must be a list of integers"),
    Row("TensorDesc format", lambda c: TensorDesc([1], 2), TypeError, "Format must be a Format"),
    Row(
        "TensorDesc data_type",
        lambda c: TensorDesc([1], ND, 0),
        TypeError,
        "Data type must be a DataType",
    ),
    Row(
        "TensorDesc shape",
        lambda c: TensorDesc([1.5]),
        TypeError,
        "shape must be a list of integers",
    ),
    Row(
        "order: TensorDesc format first",
        lambda c: TensorDesc("x", 2, 0),
        TypeError,
        "Format must be a Format",
    ),
    Row(
        "order: TensorDesc data_type before shape",
        lambda c: TensorDesc("x", ND, 0),
        TypeError,
        "Data type must be a DataType",
    ),
    Row(
        "copy.copy",
        lambda c: copy.copy(TensorDesc()),
        RuntimeError,
        "TensorDesc does not support copy",
    ),
    Row(
        "copy.deepcopy",
        lambda c: copy.deepcopy(TensorDesc()),
        RuntimeError,
        "TensorDesc does not support deepcopy",
    ),
    Row(
        "set_shape('x')",
        lambda c: TensorDesc().set_shape("x"),
        TypeError,
        "shape must be a list of integers",
    ),
    Row(
        "set_shape(None)",
        lambda c: TensorDesc().set_shape(None),  # type: ignore[arg-type]
        TypeError,
        "shape must be a list of integers",
    ),
    Row(
        "set_origin_shape(None)",
        lambda c: TensorDesc().set_origin_shape(None),  # type: ignore[arg-type]
        TypeError,
        "origin shape must be a list of integers",
    ),
    Row(
        "set_origin_shape('x')",
        lambda c: TensorDesc().set_origin_shape(["x"]),
        TypeError,
        "origin shape must be a list of integers",
    ),
    Row(
        "set_format(1)", lambda c: TensorDesc().set_format(1), TypeError, "Format must be a Format"
    ),
    Row(
        "set_origin_format(1)",
        lambda c: TensorDesc().set_origin_format(1),
        TypeError,
        "Format must be a Format",
    ),
    Row(
        "set_data_type(1)",
        lambda c: TensorDesc().set_data_type(1),
        TypeError,
        "Data type must be a DataType",
    ),
]

ATTR_ROWS = (
    [
        Row(
            f"set_value({value!r})",
            lambda c, v=value: c.b.set_attr("k", v),
            ValueError,
            f"Unsupported attribute type: {type(value)} for value: {value}",
        )
        for value in (None, {"k": "v"}, (1, 2), [1, 2.0], [[1.0]], b"x", TensorDesc())
    ]
    + [
        Row(
            "set_value([])",
            lambda c: c.b.set_attr("k", []),
            ValueError,
            "Empty list is not supported",
        )
    ]
    + [
        # GE's typed setters are internal; ours are set_attr(key, value, kind), with GE's text first
        Row(
            f"typed setter {kind.name} of {value!r}",
            lambda c, k=kind, v=value: c.b.set_attr("k", v, k),
            TypeError,
            text,
        )
        for kind, value, text in (
            (VT.VT_STRING, 1, "Value must be a string"),
            (VT.VT_FLOAT, "1", "Value must be a number"),
            (VT.VT_FLOAT, True, "Value must be a number"),
            (VT.VT_BOOL, 1, "Value must be a boolean"),
            (VT.VT_INT, 1.0, "Value must be an integer"),
            (VT.VT_DATA_TYPE, 0, "Value must be a DataType"),
            (VT.VT_TENSOR, [1.0], "Value must be a Tensor"),
            (VT.VT_LIST_INT, 1, "Values must be a list"),
            (VT.VT_LIST_FLOAT, ["a"], "All values must be numbers"),
            (VT.VT_LIST_INT, [1, "a"], "All values must be integers"),
            (VT.VT_LIST_BOOL, [1], "All values must be booleans"),
            (VT.VT_LIST_DATA_TYPE, [1], "All values must be DataTypes"),
            (VT.VT_LIST_STRING, ["a", 1], "All values must be strings"),
        )
    ]
)

ALL_ROWS = GRAPH_ROWS + NODE_ROWS + TENSOR_ROWS + DESC_ROWS + ATTR_ROWS


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: r.name)
def test_row(row: Row, ctx: Ctx) -> None:
    with pytest.raises(row.error) as info:
        row.call(ctx)
    assert str(info.value).startswith(row.text), (str(info.value), row.text)


# --- what GE accepts (§13.2) ------------------------------------------------------------------


def test_accepts_bool_indexes_and_missing_outputs(ctx: Ctx) -> None:
    assert ctx.b.get_in_data_nodes_and_port_indexes(False) == (ctx.a, 0)
    assert ctx.b.get_out_data_nodes_and_port_indexes(4) == []
    ctx.g.add_data_edge(ctx.a, False, ctx.b, True)
    assert ctx.b.get_in_data_nodes_and_port_indexes(1) == (ctx.a, 0)


def test_accepts_what_ge_converts(ctx: Ctx) -> None:
    ctx.b.set_attr("big", 2**63)  # wraps as GE's int64
    assert ctx.b.get_attr("big") == -(2**63)
    ctx.b.set_attr("dts", [DT.DT_INT8, DT.DT_FLOAT])  # a DataType list is an int list
    assert ctx.b.get_attr("dts") == [2, 0]
    ctx.g.remove_subgraph("unknown")
    assert Tensor([1.0], None, 0, ND, [1]).data_type is DT.DT_FLOAT  # an int dtype
    assert Tensor(["2"], None, DT.DT_INT32, ND, [1]).get_data() == [2]
    assert Tensor([True, False], None, DT.DT_DOUBLE, ND, [2]).numpy().tolist() == [1.0, 0.0]
    assert Shape([True, 2]) == [1, 2]


# --- printed forms (§12.2, §12.3) -------------------------------------------------------------


def test_tensor_str_is_ge_text() -> None:
    t = Tensor([1.0, 2.0, 3.0, 4.0], None, DT.DT_FLOAT, ND, [2, 2])
    assert str(t) == (
        "\n        Tensor format is 2,\n        data_type is 0,\n        shape is [2, 2],\n"
        "        data is [[1.0, 2.0], [3.0, 4.0]]\n        "
    )
    assert Tensor([0.1], None, DT.DT_FLOAT, ND, []).get_data() == 0.1  # six decimals


def test_reprs() -> None:
    d = TensorDesc([1, 3])
    assert repr(d) == str(d) == "TensorDesc(shape=[1, 3], format=2, data_type=0)"
    assert repr(TensorDesc([], Format.FORMAT_NCHW, DT.DT_INT32)) == (
        "TensorDesc(shape=[], format=0, data_type=3)"
    )
    assert repr(Shape([1, 3])) == "[1, 3]" and repr(Shape()) == "[]"
    assert repr(DT.DT_FLOAT) == "<DataType.DT_FLOAT: 0>"
    assert repr(Format.FORMAT_ND) == "<Format.FORMAT_ND: 2>"
    assert repr(Placement.PLACEMENT_HOST) == "<Placement.PLACEMENT_HOST: 0>"
    assert repr(VT.VT_INT) == "<AttrValueType.VT_INT: 4>"
    assert f"{DT.DT_FLOAT}|{Format.FORMAT_ND}" == "0|2"
    assert str(DumpFormat.kReadable) == "DumpFormat.kReadable"
    assert repr(Graph("g")).startswith("<Graph")  # ours; GE's is the default
