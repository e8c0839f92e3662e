"""TensorHolder (GE_REFERENCE.md §3.4 and the module docstrings of ``ge.es.tensor_holder`` and
``ge.es.tensor_like``): GE-PY's surface, our extra operators and the numpy protocols.

Each expression is built twice: once on TensorHolders (then run with ``ge.ops.eval_graph``) and
once on the numpy arrays directly. numpy's result is the oracle for the values, the shape and
the dtype (the TensorHolder's inferred ``shape``/``dtype`` must match it before anything runs).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge.es
from ge.error import InferError
from ge.es import GraphBuilder, TensorHolder
from ge.graph import DataType, Format, Graph, Node
from ge.ops import eval_graph

DT = DataType
_DTYPES = {
    np.dtype(np.float32): DT.DT_FLOAT,
    np.dtype(np.float16): DT.DT_FLOAT16,
    np.dtype(np.int32): DT.DT_INT32,
    np.dtype(np.int64): DT.DT_INT64,
    np.dtype(np.bool_): DT.DT_BOOL,
}
RNG_SEED = 20240611


def rand(shape: tuple[int, ...], kind: str = "f", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(RNG_SEED + seed)
    if kind == "f":
        return rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape).astype(np.float32)
    if kind == "i32":
        return rng.integers(-5, 6, size=shape).astype(np.int32)
    if kind == "i64":
        return rng.integers(1, 9, size=shape).astype(np.int64)
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raise AssertionError(kind)


def build(fn: Callable[..., Any], arrays: list[np.ndarray]) -> tuple[TensorHolder, Graph]:
    b = GraphBuilder("expr")
    holders = [
        b.create_input(i, data_type=_DTYPES[a.dtype], shape=list(a.shape))
        for i, a in enumerate(arrays)
    ]
    out = fn(*holders)
    assert isinstance(out, TensorHolder)
    return out, b.build_and_reset([out])


def check(fn: Callable[..., Any], arrays: list[np.ndarray], rtol: float = 1e-5) -> TensorHolder:
    """Build ``fn`` on TensorHolders, run it, and compare with ``fn`` on the arrays."""
    expected = np.asarray(fn(*arrays))
    out, graph = build(fn, arrays)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype
    (got,) = eval_graph(graph, arrays)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)
    return out


def producer(graph: Graph, holder: TensorHolder) -> Node:
    return graph.find_node_by_name(holder.name)


# ============================================================================ GE-PY surface ====


def test_cannot_be_constructed_directly() -> None:
    with pytest.raises(RuntimeError):
        TensorHolder()


def test_name_and_owner() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, name="feat", shape=[2])
    y = x + 1.0
    assert x.name == "feat"
    assert y.name == "Add_1"
    assert x.get_owner_builder() is b
    assert y.get_owner_builder() is b


def test_setters_chain_and_land_on_the_desc() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    same = x.set_data_type(DT.DT_FLOAT16).set_format(Format.FORMAT_NCHW).set_shape([1, 2, 3, 4])
    assert same is x
    assert x.shape == (1, 2, 3, 4)
    assert x.data_type == DT.DT_FLOAT16
    assert x.dtype == np.float16
    g = b.build_and_reset([x])
    desc = g.find_node_by_name("input_0").get_output_desc(0)
    assert list(desc.get_shape()) == [1, 2, 3, 4]
    assert desc.get_data_type() == DT.DT_FLOAT16
    assert desc.get_format() == Format.FORMAT_NCHW


@pytest.mark.parametrize("bad", [1, "DT_FLOAT", None, Format.FORMAT_ND, np.float32])
def test_set_data_type_type_error(bad: Any) -> None:
    x = GraphBuilder().create_input(0)
    with pytest.raises(TypeError, match="Data type must be a DataType enum"):
        x.set_data_type(bad)
    assert x.data_type == DT.DT_FLOAT


@pytest.mark.parametrize("bad", [1, "ND", None, DT.DT_FLOAT])
def test_set_format_type_error(bad: Any) -> None:
    x = GraphBuilder().create_input(0)
    with pytest.raises(TypeError):
        x.set_format(bad)
    assert x.desc.get_format() == Format.FORMAT_ND


def test_set_shape_takes_bool_dims_as_ge_does() -> None:
    x = GraphBuilder().create_input(0, shape=[5])
    assert x.set_shape([True, 2]).shape == (1, 2)  # GE's isinstance(d, int) check


@pytest.mark.parametrize("bad", [(1, 2), [1.0, 2], ["1"], 3, None])
def test_set_shape_type_error(bad: Any) -> None:
    x = GraphBuilder().create_input(0, shape=[5])
    with pytest.raises(TypeError):
        x.set_shape(bad)
    assert x.shape == (5,)


@pytest.mark.parametrize("method", ["add", "sub", "mul", "div"])
def test_named_methods(method: str) -> None:
    a, c = rand((2, 3)), rand((2, 3), "pos", 1)
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    b = GraphBuilder("g")
    x, y = (b.create_input(i, shape=[2, 3]) for i in range(2))
    out = getattr(x, method)(y)
    g = b.build_and_reset([out])
    assert producer(g, out).type == {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}[method]
    (got,) = eval_graph(g, [a, c])
    np.testing.assert_allclose(got, ops[method](a, c), rtol=1e-6)


@pytest.mark.parametrize(
    ("fn", "op_type"),
    [
        (lambda x, y: x + y, "Add"),
        (lambda x, y: x - y, "Sub"),
        (lambda x, y: x * y, "Mul"),
        (lambda x, y: x / y, "Div"),
    ],
)
def test_operators_build_ge_ops_with_x1_x2(fn: Callable[..., Any], op_type: str) -> None:
    a, c = rand((3, 4)), rand((3, 4), "pos", 1)
    out = check(fn, [a, c])
    _, g = build(fn, [a, c])
    node = g.find_node_by_name(out.name)
    assert node.type == op_type
    assert node.get_input_names() == ["x1", "x2"]
    assert node.get_output_names() == ["y"]
    assert [node.get_in_data_nodes_and_port_indexes(i)[0].name for i in range(2)] == [
        "input_0",
        "input_1",
    ]


def test_reflected_sub_converts_the_left_operand_first() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    y = 2 - x
    g = b.build_and_reset([y])
    node = producer(g, y)
    assert node.type == "Sub"
    first, _ = node.get_in_data_nodes_and_port_indexes(0)
    second, _ = node.get_in_data_nodes_and_port_indexes(1)
    assert (first.type, first.name, second.name) == ("Const", "Const_0", "input_0")
    assert y.name == "Sub_1"
    a = rand((3,))
    np.testing.assert_allclose(eval_graph(g, [a])[0], 2 - a, rtol=1e-6)


def test_reflected_div_converts_the_left_operand_first() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    y = 1.5 / x
    g = b.build_and_reset([y])
    node = producer(g, y)
    assert node.type == "Div"
    assert node.get_in_data_nodes_and_port_indexes(0)[0].type == "Const"
    assert node.get_in_data_nodes_and_port_indexes(1)[0].name == "input_0"
    a = rand((3,), "pos")
    np.testing.assert_allclose(eval_graph(g, [a])[0], 1.5 / a, rtol=1e-6)


SCALAR_EXPRESSIONS = [
    ("x+1", lambda x: x + 1),
    ("1+x", lambda x: 1 + x),
    ("x-2.5", lambda x: x - 2.5),
    ("2-x", lambda x: 2 - x),
    ("3*x", lambda x: 3 * x),
    ("x*0.5", lambda x: x * 0.5),
    ("x/4", lambda x: x / 4),
    ("2.0/x", lambda x: 2.0 / x),
]


@pytest.mark.parametrize(
    "fn", [f for _, f in SCALAR_EXPRESSIONS], ids=[n for n, _ in SCALAR_EXPRESSIONS]
)
def test_python_scalars(fn: Callable[..., Any]) -> None:
    check(fn, [rand((2, 3), "pos")])


def test_python_int_scalar_with_int_tensor_keeps_its_dtype() -> None:
    out = check(lambda x: x + 1, [rand((4,), "i32")])
    assert out.data_type == DT.DT_INT32
    out = check(lambda x: 3 * x - 2, [rand((4,), "i64")])
    assert out.data_type == DT.DT_INT64


def test_python_float_scalar_with_f16_tensor_stays_f16() -> None:
    a = rand((4,)).astype(np.float16)
    out = check(lambda x: x * 0.5, [a], rtol=1e-3)
    assert out.data_type == DT.DT_FLOAT16


def test_scalar_constants_get_the_tensor_dtype() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = x + 1  # an int meets a float tensor
    g = b.build_and_reset([y])
    const = g.find_node_by_name("Const_0")
    assert const.get_attr("value").get_data_type() == DT.DT_FLOAT
    assert const.get_attr("value").get_data() == 1.0


LIST_EXPRESSIONS = [
    ("x+[f]", lambda x: x + [1.0, 2.0, 3.0]),  # noqa: RUF005  (x is a tensor, not a list)
    ("x-[i]", lambda x: x - [1, 2, 3]),
    ("x*[[f],[f]]", lambda x: x * [[2.0], [0.5]]),
    ("x/[[f,f,f]]", lambda x: x / [[1.0, 2.0, 4.0]]),
    ("[f]+x", lambda x: [1.0, 2.0, 3.0] + x),  # noqa: RUF005
    ("[[i],[i]]-x", lambda x: [[1], [2]] - x),
]


@pytest.mark.parametrize(
    "fn", [f for _, f in LIST_EXPRESSIONS], ids=[n for n, _ in LIST_EXPRESSIONS]
)
def test_nested_list_operands(fn: Callable[..., Any]) -> None:
    a = rand((2, 3), "pos")
    expected = _list_oracle(fn, a)
    out, g = build(fn, [a])
    assert out.shape == expected.shape
    assert out.dtype == np.float32
    (got,) = eval_graph(g, [a])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    consts = [n for n in g.get_direct_nodes() if n.type == "Const"]
    assert len(consts) == 1  # one constant for the whole list


def _list_oracle(fn: Callable[..., Any], a: np.ndarray) -> np.ndarray:
    """numpy's answer where the list operand is a float32 array (the weak-type decision)."""

    class _F32:
        def __init__(self, v: np.ndarray) -> None:
            self.v = v

        def _w(self, o: Any) -> np.ndarray:
            return np.asarray(o, dtype=np.float32)

        def __add__(self, o: Any) -> np.ndarray:
            return self.v + self._w(o)

        def __radd__(self, o: Any) -> np.ndarray:
            return self._w(o) + self.v

        def __sub__(self, o: Any) -> np.ndarray:
            return self.v - self._w(o)

        def __rsub__(self, o: Any) -> np.ndarray:
            return self._w(o) - self.v

        def __mul__(self, o: Any) -> np.ndarray:
            return self.v * self._w(o)

        def __truediv__(self, o: Any) -> np.ndarray:
            return self.v / self._w(o)

    result = np.asarray(fn(_F32(a)))
    assert result.dtype == np.float32
    return result


def test_numpy_array_operand_keeps_its_dtype() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    y = x * np.array([1.0, 2.0, 3.0], np.float32)
    g = b.build_and_reset([y])
    assert g.find_node_by_name("Const_0").get_attr("value").get_data_type() == DT.DT_FLOAT
    a = rand((3,))
    np.testing.assert_allclose(eval_graph(g, [a])[0], a * np.array([1, 2, 3], np.float32))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: x + y,
        lambda x, y: x - y,
        lambda x, y: x * y,
        lambda x, y: x / y,
        lambda x, y: y + x,
        np.maximum,
        lambda x, y: x @ y,
        lambda x, y: np.where(x > 0, x, y),
        lambda x, y: np.concatenate([x, y]),
    ],
)
def test_tensors_from_different_builders(fn: Callable[..., Any]) -> None:
    x = GraphBuilder("a").create_input(0, shape=[2, 2])
    y = GraphBuilder("b").create_input(0, shape=[2, 2])
    with pytest.raises(ValueError):
        fn(x, y)


# =================================================================== ours: extra operators ====

EXPRESSIONS: list[tuple[str, Callable[..., Any], list[tuple[tuple[int, ...], str]]]] = [
    ("neg", lambda x: -x, [((3, 4), "f")]),
    ("pos", lambda x: +x, [((3, 4), "f")]),
    ("abs", abs, [((3, 4), "f")]),
    ("broadcast add", lambda x, v: x + v, [((3, 4), "f"), ((4,), "f")]),
    ("broadcast mul col", lambda x, c: x * c, [((3, 4), "f"), ((3, 1), "f")]),
    ("matmul 2d", lambda x, m: x @ m, [((3, 4), "f"), ((4, 5), "f")]),
    ("matmul 1d left", lambda v, m: v @ m, [((4,), "f"), ((4, 5), "f")]),
    ("matmul 1d right", lambda x, v: x @ v, [((3, 4), "f"), ((4,), "f")]),
    ("matmul 1d both", lambda v, w: v @ w, [((4,), "f"), ((4,), "f")]),
    ("matmul batched", lambda a, c: a @ c, [((2, 3, 4), "f"), ((2, 4, 5), "f")]),
    ("matmul batched bcast", lambda a, c: a @ c, [((2, 3, 4), "f"), ((4, 5), "f")]),
    ("pow int", lambda x: x**2, [((3, 4), "f")]),
    ("pow float", lambda x: x**0.5, [((3, 4), "pos")]),
    ("pow tensors", lambda x, y: x**y, [((3, 4), "pos"), ((3, 4), "f")]),
    ("rpow", lambda x: 2.0**x, [((3, 4), "f")]),
    ("lt", lambda x, y: x < y, [((3, 4), "f"), ((3, 4), "f")]),
    ("le", lambda x, y: x <= y, [((3, 4), "f"), ((3, 4), "f")]),
    ("gt", lambda x: x > 0.0, [((3, 4), "f")]),
    ("ge", lambda x: x >= 0, [((3, 4), "f")]),
    ("eq", lambda x, y: x == y, [((6,), "i32"), ((6,), "i32")]),
    ("ne", lambda x, y: x != y, [((6,), "i32"), ((6,), "i32")]),
    ("and", lambda p, q: p & q, [((5,), "b"), ((5,), "b")]),
    ("or", lambda p, q: p | q, [((5,), "b"), ((5,), "b")]),
    ("invert", lambda p: ~p, [((5,), "b")]),
    ("index int", lambda x: x[1], [((3, 4), "f")]),
    ("index negative", lambda x: x[-1], [((3, 4), "f")]),
    ("index 2 ints", lambda x: x[2, -3], [((3, 4), "f")]),
    ("slice", lambda x: x[:, 1:3], [((3, 4), "f")]),
    ("slice open", lambda x: x[1:], [((3, 4), "f")]),
    ("slice neg bounds", lambda x: x[-2:, :-1], [((3, 4), "f")]),
    ("slice step", lambda x: x[::2, 1::2], [((5, 4), "f")]),
    ("slice reversed", lambda x: x[::-1], [((3, 4), "f")]),
    ("slice neg step", lambda x: x[:, ::-2], [((3, 5), "f")]),
    ("slice neg step bounds", lambda x: x[3:0:-1], [((5, 2), "f")]),
    ("newaxis", lambda x: x[None], [((3, 4), "f")]),
    ("newaxis mid", lambda x: x[:, None, 1:], [((3, 4), "f")]),
    ("ellipsis", lambda x: x[..., 0], [((2, 3, 4), "f")]),
    ("ellipsis mid", lambda x: x[1, ..., ::-1], [((2, 3, 4), "f")]),
    ("mixed", lambda x: x[1, None, ::2], [((3, 4), "f")]),
    ("gather list axis0", lambda x: x[[2, 0, 2]], [((3, 4), "f")]),
    ("gather list axis1", lambda x: x[:, [3, 0, 1]], [((3, 4), "f")]),
    ("gather ndarray", lambda x: x[np.array([1, 1])], [((3, 4), "f")]),
    ("T", lambda x: x.T, [((3, 4), "f")]),
    ("T 3d", lambda x: x.T, [((2, 3, 4), "f")]),
    ("transpose perm", lambda x: x.transpose(1, 0, 2), [((2, 3, 4), "f")]),
    ("reshape args", lambda x: x.reshape(4, 3), [((3, 4), "f")]),
    ("reshape list -1", lambda x: x.reshape([-1]), [((3, 4), "f")]),
    ("reshape tuple", lambda x: x.reshape((2, -1, 2)), [((3, 4), "f")]),
    ("astype int32", lambda x: x.astype(np.int32), [((3, 4), "f")]),
    ("astype f16", lambda x: x.astype(np.float16), [((3, 4), "f")]),
    ("astype f32 from int", lambda x: x.astype(np.float32), [((3, 4), "i32")]),
    ("sum all", lambda x: x.sum(), [((3, 4), "f")]),
    ("sum axis", lambda x: x.sum(axis=1), [((3, 4), "f")]),
    ("sum axis keepdims", lambda x: x.sum(axis=0, keepdims=True), [((3, 4), "f")]),
    ("sum neg axis", lambda x: x.sum(axis=-1), [((2, 3, 4), "f")]),
    ("sum axis tuple", lambda x: x.sum(axis=(0, 2)), [((2, 3, 4), "f")]),
    ("mean", lambda x: x.mean(), [((3, 4), "f")]),
    ("mean axis keepdims", lambda x: x.mean(axis=1, keepdims=True), [((3, 4), "f")]),
    ("max", lambda x: x.max(), [((3, 4), "f")]),
    ("max axis", lambda x: x.max(axis=0), [((3, 4), "f")]),
    ("min axis keepdims", lambda x: x.min(axis=1, keepdims=True), [((3, 4), "f")]),
    ("prod axis", lambda x: x.prod(axis=1), [((3, 4), "f")]),
    ("sum int", lambda x: x.sum(axis=0), [((3, 4), "i64")]),
    ("argmax", lambda x: x.argmax(), [((3, 4), "f")]),
    ("argmax axis", lambda x: x.argmax(axis=1), [((3, 4), "f")]),
    ("argmax axis0", lambda x: x.argmax(axis=0), [((2, 3, 4), "f")]),
    ("chain", lambda x, y: ((x - y) * 2.0 + 1).sum(axis=1) / 3.0, [((3, 4), "f"), ((3, 4), "f")]),
]


@pytest.mark.parametrize(
    ("fn", "spec"), [(f, s) for _, f, s in EXPRESSIONS], ids=[n for n, _, _ in EXPRESSIONS]
)
def test_expression_matches_numpy(
    fn: Callable[..., Any], spec: list[tuple[tuple[int, ...], str]]
) -> None:
    arrays = [rand(shape, kind, i) for i, (shape, kind) in enumerate(spec)]
    check(fn, arrays)


def test_integer_array_index_builds_gatherv2() -> None:
    out, g = build(lambda x: x[:, [3, 0]], [rand((3, 4))])
    assert producer(g, out).type == "GatherV2"


def test_slice_builds_strided_slice() -> None:
    out, g = build(lambda x: x[::-1, 1], [rand((3, 4))])
    assert producer(g, out).type == "StridedSlice"


@pytest.mark.parametrize(
    "key",
    [
        ([0, 1], [1, 2]),  # two array indexes
        (1, [0, 1]),  # array with an int elsewhere
        (Ellipsis, [0, -1]),
        ([2, 0], None, slice(1, 3)),
        (np.array([True, False, True]),),
    ],
    ids=["two arrays", "int,array", "...,array", "array,None,slice", "mask"],
)
def test_mixed_advanced_indexes_match_numpy(key: Any) -> None:
    check(lambda x: x[key], [rand((3, 4))])


@pytest.mark.parametrize("key", ["a", 1.5, True])
def test_unsupported_indexes_raise_type_error(key: Any) -> None:
    x = GraphBuilder().create_input(0, shape=[3, 4])
    with pytest.raises(TypeError):
        x[key]


def test_comparisons_give_bool() -> None:
    b = GraphBuilder()
    x = b.create_input(0, shape=[2])
    for out in (x < 1.0, x <= 1.0, x > 1.0, x >= 1.0, x == 1.0, x != 1.0):
        assert out.data_type == DT.DT_BOOL
        assert out.dtype == np.bool_
        assert out.shape == (2,)


def test_len_of_known_first_dim() -> None:
    x = GraphBuilder().create_input(0, shape=[3, 4])
    assert len(x) == 3


# ========================================================================= numpy protocols ====

NUMPY_EXPRESSIONS: list[tuple[str, Callable[..., Any], list[tuple[tuple[int, ...], str]]]] = [
    ("exp", np.exp, [((3, 4), "f")]),
    ("log", np.log, [((3, 4), "pos")]),
    ("sqrt", np.sqrt, [((3, 4), "pos")]),
    ("tanh", np.tanh, [((3, 4), "f")]),
    ("sin cos", lambda x: np.sin(x) + np.cos(x), [((3, 4), "f")]),
    ("negative abs", lambda x: np.negative(np.abs(x)), [((3, 4), "f")]),
    ("square", np.square, [((3, 4), "f")]),
    ("floor ceil", lambda x: np.floor(x) - np.ceil(x), [((3, 4), "f")]),
    ("add ufunc", np.add, [((3, 4), "f"), ((3, 4), "f")]),
    ("multiply scalar", lambda x: np.multiply(x, 3.0), [((3, 4), "f")]),
    ("sum axis keepdims", lambda x: np.sum(x, axis=1, keepdims=True), [((3, 4), "f")]),
    ("sum all", np.sum, [((3, 4), "f")]),
    ("mean axis", lambda x: np.mean(x, axis=0), [((3, 4), "f")]),
    ("max", lambda x: np.max(x, axis=1), [((3, 4), "f")]),
    ("amin", lambda x: np.amin(x, axis=0, keepdims=True), [((3, 4), "f")]),
    ("prod", lambda x: np.prod(x, axis=1), [((3, 4), "f")]),
    ("argmax", lambda x: np.argmax(x, axis=1), [((3, 4), "f")]),
    ("where", np.where, [((3, 4), "b"), ((3, 4), "f"), ((3, 4), "f")]),
    ("where expr", lambda x, y: np.where(x > y, x, y), [((3, 4), "f"), ((3, 4), "f")]),
    ("where scalar", lambda x: np.where(x > 0, x, 0.0), [((3, 4), "f")]),
    ("where bcast", lambda c, a: np.where(c, a, -a), [((4,), "b"), ((3, 4), "f")]),
    ("where bcast square", lambda c, a: np.where(c, a, 0.0), [((3,), "b"), ((3, 3), "f")]),
    ("concat -1", lambda x, y: np.concatenate([x, y], axis=-1), [((3, 4), "f"), ((3, 2), "f")]),
    ("concat 0", lambda x, y: np.concatenate([x, y, x]), [((3, 4), "f"), ((1, 4), "f")]),
    ("stack", lambda x, y: np.stack([x, y]), [((3, 4), "f"), ((3, 4), "f")]),
    ("stack axis1", lambda x, y: np.stack([x, y], axis=1), [((3, 4), "f"), ((3, 4), "f")]),
    ("stack axis-1", lambda x, y: np.stack([x, y, x], axis=-1), [((3, 4), "f"), ((3, 4), "f")]),
    ("maximum", np.maximum, [((3, 4), "f"), ((3, 4), "f")]),
    ("maximum scalar", lambda x: np.maximum(x, 0.0), [((3, 4), "f")]),
    ("maximum scalar left", lambda x: np.maximum(0.5, x), [((3, 4), "f")]),
    ("minimum", np.minimum, [((3, 4), "f"), ((4,), "f")]),
    ("matmul", np.matmul, [((3, 4), "f"), ((4, 2), "f")]),
    ("matmul batched", np.matmul, [((2, 3, 4), "f"), ((2, 4, 2), "f")]),
    ("clip", lambda x: np.clip(x, -0.5, 0.5), [((3, 4), "f")]),
    ("clip min only", lambda x: np.clip(x, 0.0, None), [((3, 4), "f")]),
    ("transpose", np.transpose, [((3, 4), "f")]),
    ("transpose axes", lambda x: np.transpose(x, (2, 0, 1)), [((2, 3, 4), "f")]),
    ("reshape", lambda x: np.reshape(x, (2, 6)), [((3, 4), "f")]),
    ("reshape -1", lambda x: np.reshape(x, (-1, 3)), [((3, 4), "f")]),
    ("expand_dims", lambda x: np.expand_dims(x, 1), [((3, 4), "f")]),
    ("squeeze", lambda x: np.squeeze(x, axis=1), [((3, 1, 4), "f")]),
    ("divide floats", np.divide, [((3, 4), "f"), ((3, 4), "pos")]),
    ("operator mix", lambda x: np.exp(-x) * 2 + np.tanh(x), [((3, 4), "f")]),
]


@pytest.mark.parametrize(
    ("fn", "spec"),
    [(f, s) for _, f, s in NUMPY_EXPRESSIONS],
    ids=[n for n, _, _ in NUMPY_EXPRESSIONS],
)
def test_numpy_function_matches_numpy(
    fn: Callable[..., Any], spec: list[tuple[tuple[int, ...], str]]
) -> None:
    arrays = [rand(shape, kind, i) for i, (shape, kind) in enumerate(spec)]
    check(fn, arrays)


def test_np_divide_on_ints_casts_to_float32() -> None:
    a, c = rand((2, 3), "i64", 0), rand((2, 3), "i64", 1)
    b = GraphBuilder()
    x = b.create_input(0, data_type=DT.DT_INT64, shape=[2, 3])
    y = b.create_input(1, data_type=DT.DT_INT64, shape=[2, 3])
    out = np.divide(x, y)
    assert out.data_type == DT.DT_FLOAT
    assert out.shape == (2, 3)
    (got,) = eval_graph(b.build_and_reset([out]), [a, c])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, (a / c).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        np.searchsorted,
        np.fft.fft,
        np.linalg.svd,
        lambda x: np.convolve(x, x),
        np.lexsort,
    ],
)
def test_unsupported_numpy_function_raises_type_error(fn: Callable[..., Any]) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    with pytest.raises(TypeError):
        fn(x)
    assert (x * 2.0).name == "Mul_1"  # nothing was added


@pytest.mark.parametrize(
    "fn",
    [bool, iter, np.asarray, np.array, list, lambda t: 1 if t else 0],
    ids=["bool", "iter", "asarray", "array", "list", "if"],
)
def test_no_truth_value_no_iteration_no_conversion(fn: Callable[..., Any]) -> None:
    x = GraphBuilder().create_input(0, shape=[3])
    with pytest.raises(TypeError):
        fn(x)


def test_holders_are_hashable() -> None:
    b = GraphBuilder()
    x = b.create_input(0)
    y = b.create_input(1)
    assert len({x, y, x}) == 2


# ======================================================================== eager inference ====


def test_incompatible_op_raises_infer_error_naming_op_descs_and_line() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[4])
    with pytest.raises(InferError) as info:
        line = sys._getframe().f_lineno + 1
        _ = x + y
    err = info.value
    assert isinstance(err, ValueError)
    text = str(err)
    assert "Add(x1: f32[2,3], x2: f32[4])" in text
    assert f"test_tensor_holder.py:{line}" in text
    # the builder is unchanged: the next auto-named node still gets number 0
    z = x + x
    assert z.name == "Add_0"
    g = b.build_and_reset([z])
    assert [n.name for n in g.get_direct_nodes()] == ["input_0", "input_1", "Add_0", "NetOutput_g"]


def test_generated_op_infer_error_names_the_users_line() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[5, 4])
    with pytest.raises(InferError) as info:
        line = sys._getframe().f_lineno + 1
        ge.es.MatMulV2(x, y)
    text = str(info.value)
    assert "MatMulV2(" in text
    assert "f32[2,3]" in text
    assert "f32[5,4]" in text
    assert f"test_tensor_holder.py:{line}" in text
    y = x + 1.0  # nothing of the failed call remains: its constant is still Const_0
    assert y.name == "Add_1"


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, v: x + np.ones(4, np.float32),
        lambda x, v: ge.es.Add(x, [1.0, 2.0, 3.0, 4.0]),
        lambda x, v: x @ v,
        lambda x, v: np.stack([x, v]),
        lambda x, v: x.reshape(4, 4),
    ],
    ids=["ndarray operand", "generated op list operand", "matmul 1-D", "stack", "reshape"],
)
def test_failed_composite_op_leaves_builder_unchanged(fn: Callable[..., Any]) -> None:
    """A failing expression that creates helper nodes (a constant, ExpandDims) first must remove
    them again: "a failed call leaves the builder exactly as it was"."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    v = b.create_input(1, shape=[4])
    with pytest.raises(ValueError):
        fn(x, v)
    y = x * 2.0
    assert y.name == "Mul_1"
    g = b.build_and_reset([y])
    assert [n.name for n in g.get_direct_nodes()] == [
        "input_0",
        "input_1",
        "Const_0",
        "Mul_1",
        "NetOutput_g",
    ]
