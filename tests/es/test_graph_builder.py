"""GraphBuilder (GE_REFERENCE.md §3.2, §10 items 1, 6, 7): naming, inputs, constants, outputs,
building, attribute setters, control dependencies, and the "built" state.

Every graph that computes something is also run with ``ge.ops.eval_graph`` and compared with
numpy.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder, TensorHolder
from ge.es.graph_builder import InputType
from ge.graph import DataType, Format, Graph, Node, Tensor
from ge.ops import eval_graph

DT = DataType


def node_of(graph: Graph, holder: TensorHolder) -> Node:
    return graph.find_node_by_name(holder.name)


def names(graph: Graph) -> list[str]:
    return [n.name for n in graph.get_direct_nodes()]


# ============================================================================ construction ====


@pytest.mark.parametrize("name", [None, ""])
def test_default_name_is_graph(name: str | None) -> None:
    b = GraphBuilder(name)
    assert b.name == "graph"
    g = b.build_and_reset()
    assert g.name == "graph"
    assert "NetOutput_graph" in names(g)


def test_no_argument_default_name() -> None:
    assert GraphBuilder().name == "graph"


def test_explicit_name() -> None:
    b = GraphBuilder("my_graph")
    assert b.name == "my_graph"
    assert b.build_and_reset().name == "my_graph"


@pytest.mark.parametrize("bad", [1, 2.5, b"g", ["g"], True])
def test_non_str_name_is_type_error(bad: Any) -> None:
    with pytest.raises(TypeError):
        GraphBuilder(bad)


@pytest.mark.parametrize("fn", [copy.copy, copy.deepcopy])
def test_copy_and_deepcopy_raise(fn: Callable[[Any], Any]) -> None:
    b = GraphBuilder("g")
    with pytest.raises(RuntimeError, match="GraphBuilder does not support"):
        fn(b)


# ================================================================================== inputs ====


def test_create_input_signature_is_keyword_only_after_index() -> None:
    params = inspect.signature(GraphBuilder.create_input).parameters
    assert list(params) == ["self", "index", "name", "type_str", "data_type", "format", "shape"]
    assert params["index"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for p in ("name", "type_str", "data_type", "format", "shape"):
        assert params[p].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["name"].default is None
    assert params["type_str"].default is InputType.DATA
    assert params["data_type"].default is DT.DT_FLOAT
    assert params["format"].default is Format.FORMAT_ND
    assert params["shape"].default is None


def test_create_input_rejects_positional_options() -> None:
    b = GraphBuilder()
    with pytest.raises(TypeError):
        b.create_input(0, "x")  # type: ignore[misc]


def test_create_input_defaults() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    assert x.name == "input_0"
    assert x.get_owner_builder() is b
    g = b.build_and_reset([x])
    node = g.find_node_by_name("input_0")
    assert node.type == "Data"
    assert node.get_attr("index") == 0
    desc = node.get_output_desc(0)
    assert list(desc.get_shape()) == []  # shape None -> scalar
    assert desc.get_data_type() == DT.DT_FLOAT
    assert desc.get_format() == Format.FORMAT_ND
    # the input desc is a copy of the output desc
    in_desc = node.get_input_desc(0)
    assert list(in_desc.get_shape()) == []
    assert in_desc.get_data_type() == DT.DT_FLOAT


def test_create_input_explicit_desc_and_name() -> None:
    b = GraphBuilder("g")
    x = b.create_input(
        0,
        name="feat",
        data_type=DT.DT_INT32,
        format=Format.FORMAT_NCHW,
        shape=[1, 2, 3, 4],
    )
    assert x.name == "feat"
    assert x.shape == (1, 2, 3, 4)
    assert x.dtype == np.int32
    g = b.build_and_reset([x])
    node = g.find_node_by_name("feat")
    assert node.get_attr("index") == 0
    for desc in (node.get_output_desc(0), node.get_input_desc(0)):
        assert list(desc.get_shape()) == [1, 2, 3, 4]
        assert desc.get_data_type() == DT.DT_INT32
        assert desc.get_format() == Format.FORMAT_NCHW


@pytest.mark.parametrize("input_type", list(InputType))
def test_create_input_type_str_sets_node_type(input_type: InputType) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, type_str=input_type, shape=[2])
    g = b.build_and_reset([x])
    node = g.find_node_by_name("input_0")
    assert node.type == input_type.value
    assert node.get_attr("index") == 0


def test_input_type_values() -> None:
    assert InputType.DATA.value == "Data"
    assert InputType.REF_DATA.value == "RefData"


def test_create_inputs_names_and_indexes() -> None:
    b = GraphBuilder("g")
    xs = b.create_inputs(3, start_index=0)
    assert [x.name for x in xs] == ["input_0", "input_1", "input_2"]
    g = b.build_and_reset(list(xs))
    assert [g.find_node_by_name(f"input_{i}").get_attr("index") for i in range(3)] == [0, 1, 2]


def test_create_inputs_start_index() -> None:
    b = GraphBuilder("g")
    first = b.create_input(0)
    xs = b.create_inputs(2, 1)
    assert [x.name for x in xs] == ["input_1", "input_2"]
    g = b.build_and_reset([first, *xs])
    assert g.find_node_by_name("input_2").get_attr("index") == 2


@pytest.mark.parametrize("num", [0, -1])
def test_create_inputs_non_positive_num(num: int) -> None:
    b = GraphBuilder()
    with pytest.raises(TypeError, match="Number of inputs must be a positive integer"):
        b.create_inputs(num)


def test_create_inputs_negative_start_index() -> None:
    b = GraphBuilder()
    with pytest.raises(TypeError, match="Start index must be a non-negative integer"):
        b.create_inputs(1, start_index=-1)


def test_create_variable() -> None:
    b = GraphBuilder("g")
    v = b.create_variable(0, "weights")
    assert v.name == "weights"
    c = b.create_const_int64(1)
    # variables are named by the user: the auto-name counter is untouched
    assert c.name == "Const_0"
    g = b.build_and_reset([v, c])
    node = g.find_node_by_name("weights")
    assert node.type == "Variable"
    assert node.get_attr("index") == 0


# =============================================================================== constants ====


def const_tensor(b: GraphBuilder, holder: TensorHolder) -> Tensor:
    g = b.build_and_reset([holder])
    node = node_of(g, holder)
    assert node.type == "Const"
    value = node.get_attr("value")
    assert isinstance(value, Tensor)
    return value


CONST_CASES = [
    # method, value, shape, expected dims, expected dtype, expected data
    ("create_const_int64", 5, None, [], DT.DT_INT64, 5),
    ("create_const_int64", [1, 2, 3], None, [3], DT.DT_INT64, [1, 2, 3]),
    ("create_const_int64", [1, 2, 3, 4, 5, 6], [2, 3], [2, 3], DT.DT_INT64, [[1, 2, 3], [4, 5, 6]]),
    ("create_const_int64", -(2**63), None, [], DT.DT_INT64, -(2**63)),
    ("create_const_int32", 7, None, [], DT.DT_INT32, 7),
    ("create_const_int32", [1, -2], None, [2], DT.DT_INT32, [1, -2]),
    ("create_const_int32", [1, 2, 3, 4], [2, 2], [2, 2], DT.DT_INT32, [[1, 2], [3, 4]]),
    ("create_const_uint64", 2**64 - 1, None, [], DT.DT_UINT64, 2**64 - 1),
    ("create_const_uint64", [0, 1], None, [2], DT.DT_UINT64, [0, 1]),
    ("create_const_uint32", 2**32 - 1, None, [], DT.DT_UINT32, 2**32 - 1),
    ("create_const_uint32", [3, 4], [2, 1], [2, 1], DT.DT_UINT32, [[3], [4]]),
    ("create_const_float", 1.5, None, [], DT.DT_FLOAT, 1.5),
    ("create_const_float", 2, None, [], DT.DT_FLOAT, 2.0),
    ("create_const_float", [1, 2.5], None, [2], DT.DT_FLOAT, [1.0, 2.5]),
    ("create_const_float", [1.0, 2.0, 3.0], [3, 1], [3, 1], DT.DT_FLOAT, [[1.0], [2.0], [3.0]]),
]


@pytest.mark.parametrize(("method", "value", "shape", "dims", "dtype", "data"), CONST_CASES)
def test_create_const(
    method: str, value: Any, shape: list[int] | None, dims: list[int], dtype: DataType, data: Any
) -> None:
    b = GraphBuilder("g")
    c = getattr(b, method)(value, shape)
    assert c.name == "Const_0"
    assert c.shape == tuple(dims)
    assert c.data_type == dtype
    tensor = const_tensor(b, c)
    assert list(tensor.get_shape()) == dims
    assert tensor.get_data_type() == dtype
    assert tensor.get_format() == Format.FORMAT_ND
    assert tensor.get_data() == data


def test_const_evaluates() -> None:
    b = GraphBuilder("g")
    c = b.create_const_int32([1, 2, 3, 4, 5, 6], [3, 2])
    (got,) = eval_graph(b.build_and_reset([c]), [])
    np.testing.assert_array_equal(got, np.arange(1, 7, dtype=np.int32).reshape(3, 2))
    assert got.dtype == np.int32


SCALAR_CASES = [
    ("create_scalar_int64", 3, DT.DT_INT64, 3),
    ("create_scalar_int32", -3, DT.DT_INT32, -3),
    ("create_scalar_float", 2, DT.DT_FLOAT, 2.0),
    ("create_scalar_float", 0.25, DT.DT_FLOAT, 0.25),
    ("create_scalar_uint64", 0, DT.DT_UINT64, 0),
    ("create_scalar_uint64", 2**64 - 1, DT.DT_UINT64, 2**64 - 1),
    ("create_scalar_uint32", 2**32 - 1, DT.DT_UINT32, 2**32 - 1),
]


@pytest.mark.parametrize(("method", "value", "dtype", "data"), SCALAR_CASES)
def test_create_scalar(method: str, value: Any, dtype: DataType, data: Any) -> None:
    b = GraphBuilder("g")
    c = getattr(b, method)(value)
    assert c.shape == ()
    tensor = const_tensor(b, c)
    assert list(tensor.get_shape()) == []
    assert tensor.get_data_type() == dtype
    assert tensor.get_data() == data
    assert type(tensor.get_data()) is type(data)


def test_create_vector_int64() -> None:
    b = GraphBuilder("g")
    c = b.create_vector_int64([4, 5, 6])
    assert c.shape == (3,)
    tensor = const_tensor(b, c)
    assert list(tensor.get_shape()) == [3]
    assert tensor.get_data_type() == DT.DT_INT64
    assert tensor.get_data() == [4, 5, 6]


@pytest.mark.parametrize(
    "method",
    [
        "create_const_int64",
        "create_const_int32",
        "create_const_uint64",
        "create_const_uint32",
        "create_const_float",
    ],
)
def test_const_value_count_must_match_shape(method: str) -> None:
    b = GraphBuilder("g")
    with pytest.raises(ValueError, match=r"Value count \(3\) doesn't match shape"):
        getattr(b, method)([1, 2, 3], [2, 2])


@pytest.mark.parametrize("value", [-1, 2**32])
def test_uint32_range(value: Any) -> None:
    """Scalars are range-checked; lists wrap as GE-PY's ctypes arrays (test_ge_errors_audit)."""
    b = GraphBuilder("g")
    with pytest.raises(ValueError, match="Value must be in range"):
        b.create_const_uint32(value)
    with pytest.raises(ValueError, match="Value must be in range"):
        b.create_scalar_uint32(value)


def test_uint64_negative() -> None:
    b = GraphBuilder("g")
    with pytest.raises(ValueError, match="Value must be non-negative"):
        b.create_const_uint64(-1)
    with pytest.raises(ValueError, match="Value must be non-negative"):
        b.create_scalar_uint64(-1)


def test_unsigned_lists_wrap_and_negative_dims_are_refused() -> None:
    b = GraphBuilder("g")
    with pytest.raises(RuntimeError, match=r"Failed to create int64 constant"):
        b.create_const_int64([1, 2], [-1, -2])
    with pytest.raises(TypeError, match="shape must be a sequence of integers"):
        b.create_const_int64([1, 2], 2)  # type: ignore[arg-type]
    wrapped = const_tensor(b, b.create_const_uint64([-1, 2]))
    assert wrapped.numpy().tolist() == [2**64 - 1, 2]


@pytest.mark.parametrize(
    ("method", "value"),
    [
        ("create_const_int64", "1"),
        ("create_const_int64", 1.5),
        ("create_const_int32", [1, "2"]),
        ("create_const_float", "x"),
        ("create_scalar_float", None),
    ],
)
def test_const_wrong_value_type(method: str, value: Any) -> None:
    b = GraphBuilder("g")
    with pytest.raises(TypeError):
        getattr(b, method)(value)


# ================================================================================== naming ====


def test_first_const_after_named_data_is_const_0() -> None:
    b = GraphBuilder("test_graph")
    x = b.create_input(0, name="test_input", shape=[3])
    c = b.create_const_float([1.0, 2.0, 3.0])
    assert c.name == "Const_0"
    y = x + c
    assert y.name == "Add_1"
    z = ge.es.Relu(y)
    assert z.name == "Relu_2"
    w = b.create_scalar_int32(2)
    assert w.name == "Const_3"
    g = b.build_and_reset([z])
    assert names(g) == [
        "test_input",
        "Const_0",
        "Add_1",
        "Relu_2",
        "Const_3",
        "NetOutput_test_graph",
    ]


def test_inputs_do_not_consume_the_counter() -> None:
    b = GraphBuilder("g")
    c0 = b.create_scalar_float(1.0)
    x = b.create_input(0, shape=[2])
    x1 = b.create_input(1, shape=[2])
    c1 = b.create_scalar_float(2.0)
    assert (c0.name, x.name, x1.name, c1.name) == ("Const_0", "input_0", "input_1", "Const_1")


def test_each_builder_has_its_own_counter() -> None:
    a = GraphBuilder("a")
    a.create_scalar_int64(1)
    a.create_scalar_int64(1)
    b = GraphBuilder("b")
    assert b.create_scalar_int64(1).name == "Const_0"


# ======================================================================= outputs / building ====


def test_build_and_reset_wires_netoutput_and_outputs() -> None:
    b = GraphBuilder("net")
    x, y = b.create_inputs(2)
    x.set_shape([2, 3])
    y.set_shape([2, 3])
    s = x + y
    d = x - y
    g = b.build_and_reset([s, d])
    assert isinstance(g, Graph)
    net = g.find_node_by_name("NetOutput_net")
    assert net.type == "NetOutput"
    assert net.get_inputs_size() == 2
    producers = [net.get_in_data_nodes_and_port_indexes(i) for i in range(2)]
    assert [(n.name, p) for n, p in producers] == [(s.name, 0), (d.name, 0)]
    assert [(n.name, p) for n, p in g.get_outputs()] == [(s.name, 0), (d.name, 0)]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = np.full((2, 3), 0.5, np.float32)
    got = eval_graph(g, [a, c])
    np.testing.assert_allclose(got[0], a + c)
    np.testing.assert_allclose(got[1], a - c)


def test_set_graph_output_order_is_by_index_not_call_order() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    ln = ge.es.LayerNorm(x, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    two = x * 2.0
    b.set_graph_output(two, 2)
    b.set_graph_output(ln.variance, 0)
    b.set_graph_output(ln.y, 1)
    g = b.build_and_reset()
    net = g.find_node_by_name("NetOutput_g")
    wired = [net.get_in_data_nodes_and_port_indexes(i) for i in range(3)]
    ln_name = ln.y.name
    assert [(n.name, p) for n, p in wired] == [(ln_name, 2), (ln_name, 0), (two.name, 0)]
    assert [(n.name, p) for n, p in g.get_outputs()] == [(ln_name, 2), (ln_name, 0), (two.name, 0)]
    a = np.array([1.0, 2.0, 4.0], np.float32)
    got = eval_graph(g, [a])
    np.testing.assert_allclose(got[0], np.var(a, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got[2], a * 2)


def test_build_with_outputs_after_set_graph_output_appends_nothing_twice() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    b.set_graph_output(x, 0)
    with pytest.raises(RuntimeError):
        b.build_and_reset([x])  # outputs=[x] sets index 0 again
    # the failed build left the builder usable and its outputs as they were
    g = b.build_and_reset()
    assert [(n.name, p) for n, p in g.get_outputs()] == [("input_0", 0)]


def test_set_graph_output_duplicate_index() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    b.set_graph_output(x, 0)
    with pytest.raises(RuntimeError):
        b.set_graph_output(x, 0)


def test_set_graph_output_negative_index() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(RuntimeError):
        b.set_graph_output(x, -1)


def test_set_graph_output_type_checks() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError):
        b.set_graph_output("x", 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.set_graph_output(x, "0")  # type: ignore[arg-type]


def test_set_graph_output_from_other_builder_registers_on_that_builder() -> None:
    """GE_ERRORS.md §13.2: the output goes to the tensor's own builder, not to ``self``."""
    a = GraphBuilder("a")
    b = GraphBuilder("b")
    x = a.create_input(0, shape=[2])
    b.set_graph_output(x, 0)
    with pytest.raises(RuntimeError, match="Failed to set graph output for graph a output index 0"):
        b.set_graph_output(x, 0)  # already set on a
    ga = a.build_and_reset()
    assert [n.type for n in ga.get_direct_nodes()] == ["Data", "NetOutput"]
    (got,) = eval_graph(ga, [np.array([1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(got, [1.0, 2.0])
    gb = b.build_and_reset()  # b has no outputs of its own
    assert [n.type for n in gb.get_direct_nodes()] == ["NetOutput"]
    with pytest.raises(RuntimeError, match="Failed to set graph output for graph a output index 1"):
        GraphBuilder("c").set_graph_output(x, 1)  # a is built


def test_outputs_must_be_a_list() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError, match="Outputs must be a list"):
        b.build_and_reset((x,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Outputs must be a list"):
        b.build_and_reset(x)  # type: ignore[arg-type]


def test_all_outputs_must_be_tensor_holders() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError, match="All outputs must be TensorHolder objects"):
        b.build_and_reset([x, 1])  # type: ignore[list-item]


def test_non_contiguous_input_indexes_fail_at_build() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    b.create_input(2, shape=[2])
    with pytest.raises(RuntimeError):
        b.build_and_reset([x])
    # not built: fill the gap and build
    b.create_input(1, shape=[2])
    g = b.build_and_reset([x])
    assert sorted(n.get_attr("index") for n in g.get_direct_nodes() if n.type == "Data") == [
        0,
        1,
        2,
    ]


def test_input_indexes_not_starting_at_zero_fail() -> None:
    b = GraphBuilder("g")
    x = b.create_input(1, shape=[2])
    with pytest.raises(RuntimeError):
        b.build_and_reset([x])


def test_non_contiguous_output_indexes_fail_at_build() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    b.set_graph_output(x, 1)
    with pytest.raises(RuntimeError):
        b.build_and_reset()
    b.set_graph_output(x * 2.0, 0)
    g = b.build_and_reset()
    (a, c) = eval_graph(g, [np.array([1.0, 2.0], np.float32)])
    np.testing.assert_allclose(a, [2.0, 4.0])
    np.testing.assert_allclose(c, [1.0, 2.0])


def test_duplicate_input_index_fails_at_create() -> None:
    """GE-PY's C call refuses a used index: "Failed to create input", nothing added."""
    b = GraphBuilder("g")
    x = b.create_input(0, name="a")
    with pytest.raises(RuntimeError, match="Failed to create input"):
        b.create_input(0, name="b")
    with pytest.raises(RuntimeError, match="Failed to create input"):
        b.create_input(-1)
    g = b.build_and_reset([x])
    assert [n.name for n in g.get_direct_nodes()] == ["a", "NetOutput_g"]


def test_variable_index_is_not_an_input_index() -> None:
    """GE_ERRORS.md §13.2: Data {0} + Variable 0 builds; Data {1} + Variable 0 does not."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    b.create_variable(0, "v0")
    b.create_variable(0, "v1")  # a repeated Variable index is not checked either
    b.build_and_reset([x])
    c = GraphBuilder("c")
    y = c.create_input(1, shape=[2])
    c.create_variable(0, "v")
    with pytest.raises(RuntimeError, match="Failed to build graph"):
        c.build_and_reset([y])


# ============================================================================ built state ====


def _after_build_calls() -> list[tuple[str, Callable[[GraphBuilder, TensorHolder], Any]]]:
    return [
        ("create_input", lambda b, x: b.create_input(1)),
        ("create_inputs", lambda b, x: b.create_inputs(1, 1)),
        ("create_variable", lambda b, x: b.create_variable(1, "v")),
        ("create_const_int64", lambda b, x: b.create_const_int64([1])),
        ("create_const_int32", lambda b, x: b.create_const_int32([1])),
        ("create_const_uint64", lambda b, x: b.create_const_uint64([1])),
        ("create_const_uint32", lambda b, x: b.create_const_uint32([1])),
        ("create_const_float", lambda b, x: b.create_const_float([1.0])),
        ("create_vector_int64", lambda b, x: b.create_vector_int64([1])),
        ("create_scalar_int64", lambda b, x: b.create_scalar_int64(1)),
        ("create_scalar_int32", lambda b, x: b.create_scalar_int32(1)),
        ("create_scalar_uint64", lambda b, x: b.create_scalar_uint64(1)),
        ("create_scalar_uint32", lambda b, x: b.create_scalar_uint32(1)),
        ("create_scalar_float", lambda b, x: b.create_scalar_float(1.0)),
        ("set_graph_output", lambda b, x: b.set_graph_output(x, 1)),
        ("build_and_reset", lambda b, x: b.build_and_reset()),
        ("build_and_reset_outputs", lambda b, x: b.build_and_reset([x])),
        ("set_graph_attr_int64", lambda b, x: b.set_graph_attr_int64("k", 1)),
        ("set_graph_attr_string", lambda b, x: b.set_graph_attr_string("k", "v")),
        ("set_graph_attr_bool", lambda b, x: b.set_graph_attr_bool("k", True)),
        ("set_tensor_attr_int64", lambda b, x: b.set_tensor_attr_int64(x, "k", 1)),
        ("set_tensor_attr_string", lambda b, x: b.set_tensor_attr_string(x, "k", "v")),
        ("set_tensor_attr_bool", lambda b, x: b.set_tensor_attr_bool(x, "k", True)),
        ("set_node_attr_int64", lambda b, x: b.set_node_attr_int64(x, "k", 1)),
        ("set_node_attr_string", lambda b, x: b.set_node_attr_string(x, "k", "v")),
        ("set_node_attr_bool", lambda b, x: b.set_node_attr_bool(x, "k", True)),
        ("add_control_dependency", lambda b, x: b.add_control_dependency(x, [x])),
        ("holder.set_data_type", lambda b, x: x.set_data_type(DT.DT_INT32)),
        ("holder.set_format", lambda b, x: x.set_format(Format.FORMAT_NCHW)),
        ("holder.set_shape", lambda b, x: x.set_shape([4])),
        ("operator", lambda b, x: x + 1.0),
        ("generated op", lambda b, x: ge.es.Relu(x)),
    ]


@pytest.mark.parametrize(
    "call", [c for _, c in _after_build_calls()], ids=[n for n, _ in _after_build_calls()]
)
def test_every_method_after_build_raises(call: Callable[[GraphBuilder, TensorHolder], Any]) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    g = b.build_and_reset([x])
    before = g.as_text()
    with pytest.raises(RuntimeError) as info:
        call(b, x)
    assert not isinstance(info.value, (TypeError, ValueError))
    text = str(info.value)
    assert text.startswith("Cannot "), text
    assert "has already been built" in text
    assert g.as_text() == before


# ============================================================================= attributes ====


def test_graph_attrs() -> None:
    b = GraphBuilder("g")
    b.set_graph_attr_int64("i", 7)
    b.set_graph_attr_string("s", "text")
    b.set_graph_attr_bool("t", True)
    b.set_graph_attr_bool("f", False)
    g = b.build_and_reset()
    assert g.get_attr("i") == 7
    assert type(g.get_attr("i")) is int
    assert g.get_attr("s") == "text"
    assert g.get_attr("t") is True
    assert g.get_attr("f") is False


SETTER_BAD_VALUES = [  # a bool passes GE-PY's int check (test_ge_errors_audit)
    ("int64", 1.0),
    ("int64", "1"),
    ("int64", None),
    ("string", 1),
    ("string", b"x"),
    ("string", None),
    ("bool", 1),
    ("bool", 0),
    ("bool", "true"),
    ("bool", None),
]


@pytest.mark.parametrize(("kind", "value"), SETTER_BAD_VALUES)
def test_graph_attr_setters_are_strict(kind: str, value: Any) -> None:
    b = GraphBuilder("g")
    with pytest.raises(TypeError):
        getattr(b, f"set_graph_attr_{kind}")("k", value)
    g = b.build_and_reset()
    assert not g.has_attr("k")


@pytest.mark.parametrize("where", ["tensor", "node"])
@pytest.mark.parametrize(("kind", "value"), SETTER_BAD_VALUES)
def test_tensor_and_node_attr_setters_are_strict(where: str, kind: str, value: Any) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        getattr(b, f"set_{where}_attr_{kind}")(x, "k", value)
    g = b.build_and_reset([x])
    node = g.find_node_by_name("input_0")
    assert not node.has_attr("k")
    with pytest.raises(RuntimeError):
        node.get_output_attr("k", 0)


@pytest.mark.parametrize("where", ["graph", "tensor", "node"])
def test_attr_setters_reject_non_str_keys(where: str) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError):
        if where == "graph":
            b.set_graph_attr_int64(1, 1)  # type: ignore[arg-type]
        else:
            getattr(b, f"set_{where}_attr_int64")(x, 1, 1)


@pytest.mark.parametrize("where", ["tensor", "node"])
def test_tensor_node_attr_setters_need_a_tensor_holder(where: str) -> None:
    b = GraphBuilder("g")
    with pytest.raises(TypeError):
        getattr(b, f"set_{where}_attr_int64")("x", "k", 1)


def test_tensor_attrs_land_on_the_producer_output_desc() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    ln = ge.es.LayerNorm(x, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], begin_norm_axis=1)
    b.set_tensor_attr_int64(ln.mean, "i", 11)
    b.set_tensor_attr_string(ln.mean, "s", "m")
    b.set_tensor_attr_bool(ln.variance, "b", False)
    b.set_tensor_attr_int64(x, "on_data", 3)
    g = b.build_and_reset([ln.y, ln.mean, ln.variance])
    node = node_of(g, ln.y)
    assert node.get_output_attr("i", 1) == 11
    assert node.get_output_attr("s", 1) == "m"
    assert node.get_output_attr("b", 2) is False
    assert g.find_node_by_name("input_0").get_output_attr("on_data", 0) == 3
    # neither on the node nor on the other outputs
    assert not node.has_attr("i")
    with pytest.raises(RuntimeError):
        node.get_output_attr("i", 0)
    with pytest.raises(RuntimeError):
        node.get_output_attr("i", 2)


def test_node_attrs_land_on_the_producer_node() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = ge.es.Relu(x)
    b.set_node_attr_int64(y, "i", -4)
    b.set_node_attr_string(y, "s", "relu")
    b.set_node_attr_bool(y, "b", True)
    g = b.build_and_reset([y])
    node = node_of(g, y)
    assert node.get_attr("i") == -4
    assert node.get_attr("s") == "relu"
    assert node.get_attr("b") is True
    with pytest.raises(RuntimeError):
        node.get_output_attr("i", 0)


def test_attr_setter_with_tensor_of_other_builder_acts_on_its_producer() -> None:
    """GE_ERRORS.md §13.2: the attribute goes on the tensor's producer, whichever builder."""
    a = GraphBuilder("a")
    b = GraphBuilder("b")
    x = a.create_input(0)
    b.set_node_attr_int64(x, "k", 1)
    b.set_tensor_attr_int64(x, "t", 2)
    g = a.build_and_reset([x])
    n = g.find_node_by_name(x.name)
    assert n.get_attr("k") == 1
    assert n.get_output_attr("t", 0) == 2


# =================================================================== control dependencies ====


def test_add_control_dependency() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a = ge.es.Relu(x)
    c = ge.es.Exp(x)
    d = ge.es.Abs(x)
    b.add_control_dependency(d, [a, c])
    g = b.build_and_reset([d])
    dst = node_of(g, d)
    assert {n.name for n in dst.get_in_control_nodes()} == {a.name, c.name}
    assert [n.name for n in node_of(g, a).get_out_control_nodes()] == [d.name]
    got = eval_graph(g, [np.array([-1.0, 2.0], np.float32)])
    np.testing.assert_allclose(got[0], [1.0, 2.0])


def test_add_control_dependency_type_checks() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    with pytest.raises(TypeError):
        b.add_control_dependency(x, x)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.add_control_dependency(x, [1])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        b.add_control_dependency("x", [x])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="src_tensors must be a list of TensorHolder"):
        b.add_control_dependency(x, [x, 1])  # type: ignore[list-item]


def test_add_control_dependency_across_builders() -> None:
    """GE_ERRORS.md §13.2: sources of another builder give a cross-graph control edge, in
    dst_tensor's graph."""
    b = GraphBuilder("g")
    x = b.create_input(0)
    o = GraphBuilder("o")
    other = o.create_input(0)
    o.add_control_dependency(x, [other])  # self is o; the edge goes into b's graph
    assert [n.name for n in x._node.get_in_control_nodes()] == [other.name]
    o.build_and_reset()
    with pytest.raises(RuntimeError, match="Failed to add control dependency for nodes in graph"):
        b.add_control_dependency(other, [x])  # other's graph is built


# ========================================================= failed calls change nothing ====


def _reference_graph() -> str:
    b = GraphBuilder("same")
    x = b.create_input(0, shape=[2, 3])
    b.create_input(1, shape=[4])
    y = x * 2.0
    return b.build_and_reset([y]).as_text()


def test_failed_builder_calls_leave_the_builder_unchanged() -> None:
    b = GraphBuilder("same")
    x = b.create_input(0, shape=[2, 3])
    y4 = b.create_input(1, shape=[4])
    failing: list[tuple[type[BaseException], Callable[[], Any]]] = [
        (ValueError, lambda: b.create_const_int64([1, 2, 3], [2, 2])),
        (ValueError, lambda: b.create_const_uint32(-1)),
        (ValueError, lambda: b.create_scalar_uint64(-1)),
        (TypeError, lambda: b.create_const_float("x")),
        (TypeError, lambda: b.create_inputs(0)),
        (RuntimeError, lambda: b.create_input(0, name="input_1")),
        (TypeError, lambda: b.set_graph_attr_int64("k", 1.5)),
        (TypeError, lambda: b.set_node_attr_bool(x, "k", 1)),
        (RuntimeError, lambda: b.set_graph_output(x, -1)),
        (ValueError, lambda: x + y4),
        (ValueError, lambda: ge.es.Add(x, y4)),
        (TypeError, ge.es.Relu),
        (ValueError, lambda: ge.es.Add(1, 2)),
        (TypeError, lambda: ge.es.Relu([x])),
        (TypeError, lambda: ge.es.ConcatV2(x, 1, N=1)),
    ]
    for exc, call in failing:
        with pytest.raises(exc):
            call()
    y = x * 2.0
    assert y.name == "Mul_1"  # the counter was not advanced by any failure
    assert b.build_and_reset([y]).as_text() == _reference_graph()


def test_repr_mentions_state() -> None:
    b = GraphBuilder("g")
    assert "g" in repr(b)
    b.build_and_reset()
    assert "built" in repr(b)


def _line_after() -> int:
    """The line number just below the caller's line."""
    return inspect.stack()[1].lineno + 1


def test_each_node_records_the_user_line_of_the_call_that_made_it() -> None:
    b = GraphBuilder("src")
    x = b.create_input(0, shape=[2])
    line = _line_after()
    y = x * 2.0  # a Const and a Mul, one operator call
    z = ge.es.Add(y, 1.0)  # a generated op function making a Const too
    w = y + x
    g = b.build_and_reset([z, w])
    here = "test_graph_builder.py"
    sources = {n.name: n.source for n in g.get_direct_nodes()}
    assert sources["Const_0"] == sources["Mul_1"] == f"{here}:{line}"
    assert sources["Const_2"] == sources["Add_3"] == f"{here}:{line + 1}"
    assert sources["Add_4"] == f"{here}:{line + 2}"
    assert b._txn_depth == 0 and not b._txn_source_known
