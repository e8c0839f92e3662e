"""Graph.save_to_air / Graph.load_from_air: files, names, lossless round trips and errors.

Round trips are checked with the structural comparison of ``tests/graph/_helpers.py`` (node by
node: type, attributes, descs, edges, control edges, port names, subgraphs), never only with
``str(graph)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ge.graph import (
    AttrValue,
    AttrValueType,
    DataType,
    Format,
    Graph,
    NamedAttrs,
    Node,
    Tensor,
    TensorDesc,
)
from tests.graph._helpers import assert_same_graph, graph_differences

VT = AttrValueType
SAVE_ERROR = "Failed to save graph to AIR format"
LOAD_ERROR = "Failed to load graph from AIR format"


def round_trip(graph: Graph, tmp_path: Path, file_name: str = "model.air") -> Graph:
    path = tmp_path / file_name
    graph.save_to_air(str(path))
    loaded = Graph("tmp_graph_name")
    loaded.load_from_air(str(path))
    return loaded


# ====================================================================== graph builders ====


def small_graph(name: str = "small") -> Graph:
    g = Graph(name)
    x = g.add_node("Data", "x", num_outputs=1, output_names=["y"])
    x.set_attr("index", 0)
    x.update_output_desc(0, TensorDesc([2, 3], Format.FORMAT_ND, DataType.DT_FLOAT))
    relu = g.add_node("Relu", "relu", num_inputs=1, num_outputs=1,
                      input_names=["x"], output_names=["y"])
    g.add_data_edge(x, 0, relu, 0)
    g.set_outputs([(relu, 0)])
    return g


def every_kind_values() -> dict[str, tuple[Any, AttrValueType]]:
    """One value of every AttrValueType (and a few edge cases), by attribute name."""
    inner = small_graph("attr_graph")
    inner_nested = Graph("nested_attr_graph")
    holder = inner_nested.add_node("Holder", "holder")
    holder.set_attr("g", inner, AttrValueType.VT_GRAPH)
    desc = TensorDesc([4, -1], Format.FORMAT_NCHW, DataType.DT_INT32)
    desc.set_origin_shape([4, 8]).set_origin_format(Format.FORMAT_NHWC)
    tensor = Tensor.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))
    f16 = Tensor.from_numpy(np.array([1.5, -2.25, 65504.0], dtype=np.float16))
    scalar = Tensor([7], None, DataType.DT_INT32, Format.FORMAT_ND, None)
    named = NamedAttrs.of("func", {"alpha": 0.5, "ks": [1, 2], "name": "n"})
    nested_named = NamedAttrs(
        "outer",
        {"inner": AttrValue(VT.VT_NAMED_ATTRS, named), "t": AttrValue(VT.VT_TENSOR, tensor)},
    )
    return {
        "none": (None, VT.VT_NONE),
        "str": ("hello, 世界", VT.VT_STRING),
        "str_empty": ("", VT.VT_STRING),
        "str_nul": ("a\x00b", VT.VT_STRING),
        "float": (0.1, VT.VT_FLOAT),
        "float_inf": (-math.inf, VT.VT_FLOAT),
        "float_nan": (math.nan, VT.VT_FLOAT),
        "bool_t": (True, VT.VT_BOOL),
        "bool_f": (False, VT.VT_BOOL),
        "int": (-(2**63), VT.VT_INT),
        "int_max": (2**63 - 1, VT.VT_INT),
        "int_zero": (0, VT.VT_INT),
        "tensor_desc": (desc, VT.VT_TENSOR_DESC),
        "tensor": (tensor, VT.VT_TENSOR),
        "tensor_f16": (f16, VT.VT_TENSOR),
        "tensor_scalar": (scalar, VT.VT_TENSOR),
        "bytes": (b"\x00\xff\x80raw", VT.VT_BYTES),
        "bytes_empty": (b"", VT.VT_BYTES),
        "graph": (inner_nested, VT.VT_GRAPH),
        "named": (named, VT.VT_NAMED_ATTRS),
        "named_nested": (nested_named, VT.VT_NAMED_ATTRS),
        "list_list_int": ([[1, 2, 3], [], [-(2**63), 2**63 - 1]], VT.VT_LIST_LIST_INT),
        "list_list_int_empty": ([], VT.VT_LIST_LIST_INT),
        "data_type": (DataType.DT_INT32, VT.VT_DATA_TYPE),
        "data_type_undef": (DataType.DT_UNDEFINED, VT.VT_DATA_TYPE),
        "list_list_float": ([[0.5, -1.0], [], [math.inf]], VT.VT_LIST_LIST_FLOAT),
        "list_str": (["a", "", "ü"], VT.VT_LIST_STRING),
        "list_float": ([0.25, -0.0, 1e30], VT.VT_LIST_FLOAT),
        "list_bool": ([True, False, True], VT.VT_LIST_BOOL),
        "list_int": ([1, -1, 2**40], VT.VT_LIST_INT),
        "list_tensor_desc": ([desc, TensorDesc()], VT.VT_LIST_TENSOR_DESC),
        "list_tensor": ([tensor, f16], VT.VT_LIST_TENSOR),
        "list_bytes": ([b"", b"\x01"], VT.VT_LIST_BYTES),
        "list_graph": ([small_graph("lg0"), small_graph("lg1")], VT.VT_LIST_GRAPH),
        "list_named": ([named, NamedAttrs("empty", {})], VT.VT_LIST_NAMED_ATTRS),
        "list_data_type": ([DataType.DT_FLOAT, DataType.DT_BF16], VT.VT_LIST_DATA_TYPE),
        **{
            f"empty_{kind.name.lower()}": ([], kind)
            for kind in VT
            if kind > VT.VT_LIST_BASE
        },
    }


def set_every_kind(target: Graph | Node) -> None:
    for key, (value, kind) in every_kind_values().items():
        target.set_attr(key, value, kind)


def rich_graph() -> Graph:
    """A graph with every feature the AIR codec has to carry."""
    g = Graph("rich")
    x = g.add_node("Data", "x", num_outputs=1, output_names=["y"])
    x.set_attr("index", 0)
    x.update_output_desc(0, TensorDesc([2, 3], Format.FORMAT_NCHW, DataType.DT_FLOAT))
    cond = g.add_node("Data", "cond", num_outputs=1)
    cond.set_attr("index", 1)
    cond.update_output_desc(0, TensorDesc(None, Format.FORMAT_ND, DataType.DT_BOOL))

    w = g.add_node("Const", "w", num_outputs=1, output_names=["y"])
    weight = Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    w.set_attr("value", weight)
    w.update_output_desc(0, weight.get_tensor_desc())

    # Three inputs, the middle one left unconnected (an absent optional input).
    add = g.add_node("AddN3", "add", num_inputs=3, num_outputs=1,
                     input_names=["x1", "opt", "x2"], output_names=["y"])
    g.add_data_edge(x, 0, add, 0)
    g.add_data_edge(w, 0, add, 2)
    desc = TensorDesc([-1, 3], Format.FORMAT_NCHW, DataType.DT_FLOAT)
    desc.set_origin_shape([2, 3]).set_origin_format(Format.FORMAT_NHWC)
    add.update_output_desc(0, desc)
    add.update_input_desc(1, TensorDesc([-2], Format.FORMAT_ND, DataType.DT_UNDEFINED))
    add.set_output_attr("_out_attr", 0, "tagged")
    add.set_input_attr("_in_attr", 0, [1, 2])

    split = g.add_node("Split", "split", num_inputs=1, num_outputs=2)
    g.add_data_edge(add, 0, split, 0)

    if_node = g.add_node("If", "if", num_inputs=2, num_outputs=1,
                         input_names=["cond", "input0"], output_names=["output0"])
    g.add_data_edge(cond, 0, if_node, 0)
    g.add_data_edge(split, 1, if_node, 1)
    g.add_control_edge(x, if_node)
    g.add_control_edge(w, if_node)

    attrs = g.add_node("AttrHolder", "attrs", num_inputs=1, num_outputs=0)
    g.add_data_edge(split, 0, attrs, 0)
    set_every_kind(attrs)
    g.add_control_edge(if_node, attrs)

    sink = g.add_node("NoOp", "sink")  # only control inputs
    g.add_control_edge(attrs, sink)
    g.add_control_edge(add, sink)

    then_g = small_graph("then_branch")
    then_g.find_node_by_name("x").set_attr("_parent_node_index", 1)
    else_g = Graph("else_branch")
    e_x = else_g.add_node("Data", "x", num_outputs=1)
    e_x.set_attr("_parent_node_index", 1)
    loop = else_g.add_node("While", "loop", num_inputs=1, num_outputs=1)
    else_g.add_data_edge(e_x, 0, loop, 0)
    else_g.set_outputs([(loop, 0)])
    g.set_node_subgraph(if_node, 0, then_g)
    g.set_node_subgraph(if_node, 1, else_g)
    # A subgraph of a subgraph.
    body = small_graph("loop_body")
    body.set_attr("body_attr", [1.5, 2.5])
    else_g.set_node_subgraph(loop, 0, body)
    # Registered on the root, used by no node.
    g.register_subgraph(small_graph("spare"))

    g.set_attr("graph_int", 3)
    g.set_attr("graph_list", ["a", "b"])
    g.set_attr("graph_named", NamedAttrs.of("fn", {"k": True}))
    g.set_outputs([(if_node, 0), (split, 1), (add, 0), (split, 1)])
    g.verify(ops=False)
    return g


# ========================================================================== files, names ====


def test_save_writes_exactly_the_given_path_even_a_txt_name(tmp_path: Path) -> None:
    path = tmp_path / "graph_dump.txt"
    small_graph().save_to_air(str(path))
    assert sorted(os.listdir(tmp_path)) == ["graph_dump.txt"]
    assert path.stat().st_size > 0
    loaded = Graph()
    loaded.load_from_air(str(path))
    assert_same_graph(small_graph(), loaded)


def test_save_overwrites_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "m.air"
    path.write_bytes(b"old contents " * 1000)
    small_graph("first").save_to_air(str(path))
    small_graph("second").save_to_air(str(path))
    assert sorted(os.listdir(tmp_path)) == ["m.air"]
    loaded = Graph()
    loaded.load_from_air(str(path))
    assert loaded.name == "second"


def test_load_replaces_the_graph_name_with_the_stored_one(tmp_path: Path) -> None:
    path = tmp_path / "g.air"
    small_graph("stored_name").save_to_air(str(path))
    target = Graph("tmp_graph_name")
    target.load_from_air(str(path))
    assert target.name == "stored_name"


def test_load_replaces_previous_content(tmp_path: Path) -> None:
    path = tmp_path / "g.air"
    small_graph("stored").save_to_air(str(path))
    target = rich_graph()
    old_nodes = target.get_direct_nodes()
    target.load_from_air(str(path))
    assert_same_graph(small_graph("stored"), target)
    assert target.get_all_subgraphs() == []
    assert all(n not in target.get_direct_nodes() for n in old_nodes)
    target.verify(ops=False)


def test_loaded_graph_is_consistent_and_editable(tmp_path: Path) -> None:
    target = Graph("t")
    target.load_from_air(_saved(rich_graph(), tmp_path))
    target.verify(ops=False)
    for node in target.get_direct_nodes():
        assert node.graph is target
    for sub in target.get_all_subgraphs():
        if sub.parent_node is not None:
            assert sub.parent_node.name in {"if", "loop"}
    relu = target.add_node("Relu", num_inputs=1, num_outputs=1)
    target.add_data_edge(target.find_node_by_name("x"), 0, relu, 0)
    assert relu.name not in {n.name for n in rich_graph().get_direct_nodes()}
    target.verify(ops=False)
    # The subgraphs are reachable from the loaded root.
    assert target.find_node_by_name("loop").type == "While"
    body = target.get_subgraph("loop_body")
    assert body is not None and body.parent_node is target.find_node_by_name("loop")


def _saved(graph: Graph, tmp_path: Path, name: str = "saved.air") -> str:
    path = str(tmp_path / name)
    graph.save_to_air(path)
    return path


# ========================================================================= round trips ====


def test_rich_graph_round_trip_is_lossless(tmp_path: Path) -> None:
    original = rich_graph()
    loaded = round_trip(original, tmp_path)
    assert_same_graph(original, loaded)
    loaded.verify(ops=False)
    assert str(loaded) == str(original)


def test_round_trip_is_idempotent(tmp_path: Path) -> None:
    once = round_trip(rich_graph(), tmp_path, "a.air")
    twice = round_trip(once, tmp_path, "b.air")
    assert_same_graph(once, twice)
    assert_same_graph(rich_graph(), twice)


def test_equality_helper_detects_differences() -> None:
    """The comparison used everywhere here must be able to fail."""
    base = rich_graph()
    assert graph_differences(base, rich_graph()) == []

    edits: list[Callable[[Graph], None]] = [
        lambda g: g.find_node_by_name("attrs").set_attr("int", 1),
        lambda g: g.find_node_by_name("attrs").set_attr("float", [0.1], VT.VT_LIST_FLOAT),
        lambda g: g.find_node_by_name("attrs").set_attr("none", 0),
        lambda g: g.find_node_by_name("add").update_output_desc(0, TensorDesc([-1, 3])),
        lambda g: g.find_node_by_name("add").set_output_attr("_out_attr", 0, "other"),
        lambda g: g.add_control_edge(g.find_node_by_name("x"), g.find_node_by_name("sink")),
        lambda g: g.remove_edge(g.find_node_by_name("w"), 0, g.find_node_by_name("add"), 2),
        lambda g: g.set_outputs([]),
        lambda g: g.set_attr("graph_int", 4),
        lambda g: g.get_subgraph("loop_body").find_node_by_name("relu").set_attr("k", 1),
        lambda g: g.remove_subgraph("spare"),
        lambda g: g.get_subgraph("then_branch").set_attr("x", 1),
        lambda g: g.find_node_by_name("attrs").set_attr(
            "graph", small_graph("other"), VT.VT_GRAPH
        ),
    ]
    for i, edit in enumerate(edits):
        changed = rich_graph()
        edit(changed)
        assert graph_differences(base, changed), f"edit {i} went unnoticed"


@pytest.mark.parametrize("key", sorted(every_kind_values()))
def test_node_attr_of_every_kind_round_trips(key: str, tmp_path: Path) -> None:
    value, kind = every_kind_values()[key]
    g = Graph("g")
    node = g.add_node("Holder", "n")
    node.set_attr(key, value, kind)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    got = loaded.find_node_by_name("n")._attrs[key]
    assert got.type == kind
    if kind not in (VT.VT_GRAPH, VT.VT_LIST_GRAPH):
        assert got == node._attrs[key]


@pytest.mark.parametrize("key", sorted(every_kind_values()))
def test_graph_attr_of_every_kind_round_trips(key: str, tmp_path: Path) -> None:
    value, kind = every_kind_values()[key]
    g = Graph("g")
    g.set_attr(key, value, kind)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    assert loaded._attrs[key].type == kind


def test_readable_attr_values_read_back_identically(tmp_path: Path) -> None:
    g = Graph("g")
    node = g.add_node("Holder", "n")
    plain = {
        "s": "text",
        "f": 0.1,
        "b": True,
        "i": 7,
        "dt": DataType.DT_BF16,
        "lf": [0.5, 0.25],
        "lb": [False, True],
        "li": [3, -4],
        "ls": ["x", "y"],
    }
    for key, value in plain.items():
        node.set_attr(key, value)
        g.set_attr(key, value)
    loaded = round_trip(g, tmp_path)
    n2 = loaded.find_node_by_name("n")
    for key in plain:
        before, after = node.get_attr(key), n2.get_attr(key)
        assert after == before and type(after) is type(before), key
        assert loaded.get_attr(key) == g.get_attr(key)
    assert n2.get_attr("b") is True
    assert n2.get_attr("dt") is DataType.DT_BF16
    assert n2.get_attr("f") == pytest.approx(0.1)


def test_const_weight_round_trips_bit_exactly(tmp_path: Path) -> None:
    g = Graph("g")
    const = g.add_node("Const", "c", num_outputs=1)
    array = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    const.set_attr("value", Tensor.from_numpy(array))
    loaded = round_trip(g, tmp_path)
    t = loaded.find_node_by_name("c").get_attr("value")
    assert t.data_type == DataType.DT_FLOAT
    assert list(t.shape) == [3, 4]
    np.testing.assert_array_equal(t.numpy(), array)
    assert t.numpy().tobytes() == array.tobytes()


def test_tensor_without_data_round_trips_without_data(tmp_path: Path) -> None:
    """``Tensor()`` holds no data: it must read back as a tensor without data, not as a tensor
    whose (empty) data is too short for its shape."""
    g = Graph("g")
    g.set_attr("empty", Tensor())
    before = g.get_attr("empty").nbytes
    loaded = round_trip(g, tmp_path)
    assert loaded.get_attr("empty").nbytes == before == 0
    with pytest.raises(ValueError, match="Input must start with"):  # GE: an empty tensor
        loaded.get_attr("empty").get_data()
    assert_same_graph(g, loaded)


# ================================================================================ descs ====

ALL_DATA_TYPES = [dt for dt in DataType if dt != DataType.DT_MAX]


def _desc_round_trip(desc: TensorDesc, tmp_path: Path) -> TensorDesc:
    g = Graph("g")
    node = g.add_node("Op", "n", num_inputs=1, num_outputs=1)
    node.update_input_desc(0, desc)
    node.update_output_desc(0, desc)
    node.set_attr("desc_attr", desc, VT.VT_TENSOR_DESC)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    n2 = loaded.find_node_by_name("n")
    assert n2.get_input_desc(0) == desc
    assert n2.attr_value("desc_attr").value == desc
    out: TensorDesc = n2.get_output_desc(0)
    return out


@pytest.mark.parametrize("data_type", ALL_DATA_TYPES, ids=lambda d: d.name)
def test_desc_data_type_round_trips(data_type: DataType, tmp_path: Path) -> None:
    got = _desc_round_trip(TensorDesc([2], Format.FORMAT_ND, data_type), tmp_path)
    assert got.data_type is data_type


@pytest.mark.parametrize("fmt", list(Format), ids=lambda f: f.name)
def test_desc_format_round_trips(fmt: Format, tmp_path: Path) -> None:
    desc = TensorDesc([1, 2, 3, 4], fmt, DataType.DT_FLOAT16)
    desc.set_origin_format(Format.FORMAT_NCHW if fmt != Format.FORMAT_NCHW else Format.FORMAT_ND)
    got = _desc_round_trip(desc, tmp_path)
    assert got.format is fmt
    assert got.origin_format == desc.origin_format


@pytest.mark.parametrize(
    "shape",
    [None, [], [0], [1], [-1], [-2], [-1, 3, -1], [2**62, 1], [1, 2, 3, 4, 5, 6, 7, 8]],
    ids=str,
)
def test_desc_shapes_round_trip(shape: list[int] | None, tmp_path: Path) -> None:
    got = _desc_round_trip(TensorDesc(shape, Format.FORMAT_ND, DataType.DT_INT32), tmp_path)
    assert list(got.shape) == list(shape or [])


@pytest.mark.parametrize("origin", [None, [], [5, -1], [-2]], ids=str)
def test_desc_origin_shape_round_trips_set_or_unset(
    origin: list[int] | None, tmp_path: Path
) -> None:
    desc = TensorDesc([3], Format.FORMAT_NHWC, DataType.DT_INT64)
    if origin is not None:
        desc.set_origin_shape(origin)
    got = _desc_round_trip(desc, tmp_path)
    assert got._origin_shape == (None if origin is None else origin)
    assert list(got.origin_shape) == list(origin or [])


_NOT_INFERRED = {
    VT.VT_NONE,
    VT.VT_LIST_LIST_FLOAT,
    VT.VT_LIST_LIST_INT,
    VT.VT_TENSOR_DESC,
    VT.VT_BYTES,
    VT.VT_GRAPH,
}


def test_desc_attrs_round_trip(tmp_path: Path) -> None:
    g = Graph("g")
    node = g.add_node("Op", "n", num_inputs=2, num_outputs=2)
    for key, (value, kind) in every_kind_values().items():
        if kind in _NOT_INFERRED or kind > VT.VT_LIST_BASE:
            continue  # set_input_attr infers the kind from the value, by GE's rules
        if isinstance(value, list) and not value:
            continue
        node.set_input_attr(key, 1, value)
        node.set_output_attr(key, 0, value)
    node.set_output_attr("ints", 1, [1, 2])
    node.set_output_attr("strs", 1, ["a"])
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    n2 = loaded.find_node_by_name("n")
    assert n2.get_output_attr("ints", 1) == [1, 2]
    assert n2.get_input_attr("str", 1) == "hello, 世界"
    assert n2.get_input_desc(0) == TensorDesc()


# ================================================================== edges, ports, outputs ====


def test_edges_round_trip(tmp_path: Path) -> None:
    g = Graph("edges")
    a = g.add_node("Multi", "a", num_outputs=3)
    b = g.add_node("Op", "b", num_inputs=4, num_outputs=1)
    c = g.add_node("Op", "c", num_inputs=2, num_outputs=1)
    d = g.add_node("Op", "d", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 2, b, 1)  # port 0 and 3 unconnected
    g.add_data_edge(a, 0, b, 2)
    g.add_data_edge(a, 2, c, 1)  # port 0 unconnected
    g.add_data_edge(b, 0, d, 0)
    g.add_control_edge(c, d)
    g.add_control_edge(a, d)
    g.add_control_edge(a, c)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    b2, c2, d2 = (loaded.find_node_by_name(n) for n in "bcd")
    with pytest.raises(RuntimeError):
        b2.get_in_data_nodes_and_port_indexes(0)
    with pytest.raises(RuntimeError):
        b2.get_in_data_nodes_and_port_indexes(3)
    src, port = b2.get_in_data_nodes_and_port_indexes(1)
    assert (src.name, port) == ("a", 2)
    assert sorted(
        (n.name, p) for n, p in loaded.find_node_by_name("a").get_out_data_nodes_and_port_indexes(2)
    ) == [("b", 1), ("c", 1)]
    assert [n.name for n in d2.get_in_control_nodes()] == ["c", "a"]
    assert [n.name for n in c2.get_out_control_nodes()] == ["d"]
    assert c2.get_inputs_size() == 2


def test_node_names_with_colons_and_unicode_round_trip(tmp_path: Path) -> None:
    g = Graph("图:1")
    a = g.add_node("Data", "scope/a:0", num_outputs=2)
    b = g.add_node("Op", "b:-1", num_inputs=2, num_outputs=1)
    c = g.add_node("Op", "节点 c", num_inputs=1, num_outputs=1)
    g.add_data_edge(a, 1, b, 1)
    g.add_data_edge(b, 0, c, 0)
    g.add_control_edge(b, c)
    g.add_control_edge(a, c)
    g.set_outputs([(a, 1), (c, 0)])
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)


def test_port_names_round_trip(tmp_path: Path) -> None:
    g = Graph("ports")
    n = g.add_node("Op", "n", num_inputs=3, num_outputs=2,
                   input_names=["x", "", "bias"], output_names=["", "y1"])
    m = g.add_node("Op", "m", num_inputs=1, num_outputs=1)  # no names at all
    g.add_data_edge(n, 1, m, 0)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    assert loaded.find_node_by_name("n").get_input_names() == ["x", "", "bias"]
    assert loaded.find_node_by_name("n").get_output_names() == ["", "y1"]
    assert loaded.find_node_by_name("m").get_input_names() == [""]
    # The port names are not shown to the user as attributes.
    assert loaded.find_node_by_name("n").get_attr_names() == []


def test_graph_outputs_round_trip(tmp_path: Path) -> None:
    g = Graph("outs")
    a = g.add_node("Op", "a", num_outputs=3)
    b = g.add_node("Op", "b", num_outputs=1)
    g.set_outputs([(a, 2), (b, 0), (a, 2), (a, 0)])
    loaded = round_trip(g, tmp_path)
    assert [(n.name, i) for n, i in loaded.get_outputs()] == [
        ("a", 2), ("b", 0), ("a", 2), ("a", 0)
    ]
    assert_same_graph(g, loaded)


def test_empty_graph_round_trips(tmp_path: Path) -> None:
    g = Graph("")
    loaded = round_trip(g, tmp_path)
    assert loaded.name == ""
    assert loaded.get_direct_nodes() == []
    assert_same_graph(g, loaded)


# =========================================================================== subgraphs ====


def test_if_node_with_two_subgraphs_round_trips(tmp_path: Path) -> None:
    g = Graph("root")
    cond = g.add_node("Data", "cond", num_outputs=1)
    if_node = g.add_node("If", "if", num_inputs=1, num_outputs=1)
    g.add_data_edge(cond, 0, if_node, 0)
    g.set_node_subgraph(if_node, 0, small_graph("then"))
    g.set_node_subgraph(if_node, 1, small_graph("else"))
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    if2 = loaded.find_node_by_name("if")
    assert if2.get_subgraph_names() == ["then", "else"]
    for name in ("then", "else"):
        sub = loaded.get_subgraph(name)
        assert sub is not None and sub.parent_node is if2
        assert sub._parent_graph is loaded
    assert [n.name for n in loaded.get_all_nodes()] == [n.name for n in g.get_all_nodes()]
    loaded.verify(ops=False)


def test_nested_and_unattached_subgraphs_round_trip(tmp_path: Path) -> None:
    original = rich_graph()
    loaded = round_trip(original, tmp_path)
    assert [s.name for s in loaded.get_all_subgraphs()] == [
        "then_branch", "else_branch", "loop_body", "spare"
    ]
    body = loaded.get_subgraph("loop_body")
    else_g = loaded.get_subgraph("else_branch")
    assert body is not None and else_g is not None
    assert body.parent_node is else_g.find_node_by_name("loop")
    assert body._parent_graph is else_g
    spare = loaded.get_subgraph("spare")
    assert spare is not None and spare.parent_node is None and spare._parent_graph is loaded
    assert [n.name for n in loaded.get_all_nodes()] == [n.name for n in original.get_all_nodes()]
    assert body.get_attr("body_attr") == pytest.approx([1.5, 2.5])


def test_saving_a_subgraph_saves_it_with_its_own_subgraphs(tmp_path: Path) -> None:
    root = rich_graph()
    else_g = root.get_subgraph("else_branch")
    assert else_g is not None
    loaded = round_trip(else_g, tmp_path)
    assert loaded.name == "else_branch"
    assert [s.name for s in loaded.get_all_subgraphs()] == ["loop_body"]
    assert loaded.get_subgraph("loop_body").parent_node is loaded.find_node_by_name("loop")
    loaded.verify(ops=False)


def test_nested_graph_valued_attrs_round_trip(tmp_path: Path) -> None:
    level2 = small_graph("level2")
    level2.set_attr("deep", [[1], [2, 3]], VT.VT_LIST_LIST_INT)
    level1 = Graph("level1")
    n1 = level1.add_node("Holder", "n1")
    n1.set_attr("inner", level2, VT.VT_GRAPH)
    n1.set_attr("inner_list", [level2, small_graph("sibling")], VT.VT_LIST_GRAPH)
    g = Graph("root")
    g.add_node("Holder", "n0").set_attr("outer", level1, VT.VT_GRAPH)
    loaded = round_trip(g, tmp_path)
    assert_same_graph(g, loaded)
    got1 = loaded.find_node_by_name("n0")._attrs["outer"].value
    got2 = got1.find_node_by_name("n1")._attrs["inner"].value
    assert graph_differences(level2, got2, subgraphs=False) == []
    assert got2.attr_value("deep").to_python() == [[1], [2, 3]]


# ============================================================================== errors ====


@pytest.mark.parametrize("bad", [None, 1, 1.5, b"model.air", ["m.air"]], ids=repr)
def test_non_str_path_is_a_type_error(bad: Any) -> None:
    g = small_graph()
    with pytest.raises(TypeError):
        g.save_to_air(bad)
    with pytest.raises(TypeError):
        g.load_from_air(bad)
    assert_same_graph(small_graph(), g)


def _assert_no_leftovers(directory: Path, expected: list[str]) -> None:
    assert sorted(os.listdir(directory)) == sorted(expected)


def test_save_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "m.air"
    with pytest.raises(RuntimeError) as info:
        small_graph().save_to_air(str(path))
    assert str(info.value).startswith(SAVE_ERROR)
    assert not isinstance(info.value, TypeError)
    _assert_no_leftovers(tmp_path, [])


def test_save_below_a_regular_file_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(RuntimeError) as info:
        small_graph().save_to_air(str(tmp_path / "file" / "m.air"))
    assert str(info.value).startswith(SAVE_ERROR)
    _assert_no_leftovers(tmp_path, ["file"])
    assert (tmp_path / "file").read_bytes() == b"x"


def test_save_onto_a_directory_fails_and_leaves_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    with pytest.raises(RuntimeError) as info:
        small_graph().save_to_air(str(tmp_path / "target"))
    assert str(info.value).startswith(SAVE_ERROR)
    _assert_no_leftovers(tmp_path, ["target"])
    _assert_no_leftovers(tmp_path / "target", [])


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can write a read-only dir"
)
def test_save_into_a_read_only_directory_fails_cleanly(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(RuntimeError) as info:
            small_graph().save_to_air(str(ro / "m.air"))
        assert str(info.value).startswith(SAVE_ERROR)
        _assert_no_leftovers(ro, [])
    finally:
        ro.chmod(0o700)


def test_failed_write_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.air"
    small_graph("old").save_to_air(str(path))
    old = path.read_bytes()

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(RuntimeError) as info:
        small_graph("new").save_to_air(str(path))
    monkeypatch.undo()
    assert str(info.value).startswith(SAVE_ERROR)
    _assert_no_leftovers(tmp_path, ["m.air"])
    assert path.read_bytes() == old


def test_unencodable_graph_fails_without_touching_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.air"
    small_graph("old").save_to_air(str(path))
    old = path.read_bytes()
    g = small_graph("bad")
    # DT_MAX is no data type: it has no proto number, so it cannot be written.
    g.find_node_by_name("relu").update_output_desc(0, TensorDesc([1], data_type=DataType.DT_MAX))
    with pytest.raises(RuntimeError) as info:
        g.save_to_air(str(path))
    assert str(info.value).startswith(SAVE_ERROR)
    _assert_no_leftovers(tmp_path, ["m.air"])
    assert path.read_bytes() == old


def test_load_of_a_missing_file_fails(tmp_path: Path) -> None:
    g = rich_graph()
    with pytest.raises(RuntimeError) as info:
        g.load_from_air(str(tmp_path / "nope.air"))
    assert str(info.value).startswith(LOAD_ERROR)
    assert_same_graph(rich_graph(), g)


def test_load_of_a_directory_fails(tmp_path: Path) -> None:
    g = small_graph()
    with pytest.raises(RuntimeError) as info:
        g.load_from_air(str(tmp_path))
    assert str(info.value).startswith(LOAD_ERROR)
    assert_same_graph(small_graph(), g)


@pytest.mark.parametrize(
    "content",
    [b"\xff\xff\xff", b"not a model", b"", b"\x3a\x05\x0a\x01a"],
    ids=["junk", "text", "empty", "truncated"],
)
def test_failed_load_leaves_the_graph_unchanged(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.air"
    path.write_bytes(content)
    g = rich_graph()
    nodes, subgraphs = g.get_direct_nodes(), g.get_all_subgraphs()
    with pytest.raises(RuntimeError) as info:
        g.load_from_air(str(path))
    assert str(info.value).startswith(LOAD_ERROR)
    assert g.name == "rich"
    assert g.get_direct_nodes() == nodes
    assert g.get_all_subgraphs() == subgraphs
    assert all(n.graph is g for n in nodes)
    assert_same_graph(rich_graph(), g)
    g.verify(ops=False)


def test_load_into_a_subgraph_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = _saved(small_graph("other"), tmp_path)
    root = rich_graph()
    sub = root.get_subgraph("then_branch")
    assert sub is not None
    with pytest.raises(RuntimeError) as info:
        sub.load_from_air(path)
    assert str(info.value).startswith(LOAD_ERROR)
    assert_same_graph(rich_graph(), root)


# ==================================================================== graphs built by ge.es ====


def es_if_graph() -> Graph:
    import ge.es
    from ge.es import GraphBuilder

    def branch(name: str, scale: float) -> Graph:
        b = GraphBuilder(name)
        x = b.create_input(0, shape=[3])
        return b.build_and_reset([x * scale + 1.0])

    builder = GraphBuilder("es_if")
    cond = builder.create_input(0, data_type=DataType.DT_BOOL)
    x = builder.create_input(1, shape=[3])
    (y,) = ge.es.If(cond, [x], 1, branch("then_graph", 2.0), branch("else_graph", -1.0))
    graph: Graph = builder.build_and_reset([y * 3.0])
    return graph


def test_es_graph_passes_full_verification_after_a_round_trip(tmp_path: Path) -> None:
    """A graph of real GE ops keeps passing the op-level checks (port counts, attributes,
    inferred output descs) after save/load, and still computes the same thing."""
    from ge.ops import eval_graph

    original = es_if_graph()
    original.verify()
    loaded = round_trip(original, tmp_path)
    assert_same_graph(original, loaded)
    loaded.verify()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for flag in (True, False):
        (want,) = eval_graph(original, [np.array(flag), x])
        (got,) = eval_graph(loaded, [np.array(flag), x])
        np.testing.assert_array_equal(got, want)
