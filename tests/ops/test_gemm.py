"""``GEMM``: ``y = alpha * op(a) @ op(b) + beta * c`` (ge/ops/nn.py) and its lowering
(ge/compiler/kernels/matmul.py), against numpy, through ``eval_graph``, ``CompiledGraph``,
``Session`` and ``ge.jit``; its shape rules and the errors for bad input.

The table case (tests/ops/_cases.py, record ``GEMM``) covers every claimed dtype against
numpy; here each compiled road is taken (BLAS + epilogue kernel, BLAS with the bias add for
alpha = beta = 1, one generated kernel for other types) with few distinct kernels: the c
shapes, transposes and 0-size dims of one dtype share one kernel.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ge
import ge.es
from ge.compiler.executable import CompiledGraph
from ge.error import InferError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.ops import add_op_node, eval_graph
from ge.session import Session

from ._cases import NP, data_node

RNG = np.random.default_rng(7)
TOL = {"float16": 4e-3, "float32": 1e-5, "float64": 1e-12}


def _operand(shape: tuple[int, ...], dtype: str, layout: str = "C") -> np.ndarray:
    """Small integers (exact in every type), optionally as a transposed (non-contiguous)
    view."""
    if layout == "T":
        return _operand(shape[::-1], dtype).T
    return RNG.integers(-4, 5, size=shape).astype(NP[dtype])


def _expected(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    alpha: Any,
    beta: Any,
    ta: bool,
    tb: bool,
    out: Any = None,
) -> np.ndarray:
    """numpy's answer in float64, rounded to ``out`` (default: numpy's type for a, b, c)."""
    wa = (a.T if ta else a).astype(np.float64)
    wb = (b.T if tb else b).astype(np.float64)
    y = float(np.asarray(alpha).reshape(())) * (wa @ wb)
    y = y + float(np.asarray(beta).reshape(())) * c.astype(np.float64)
    y = np.broadcast_to(y, (wa.shape[0], wb.shape[1]))
    return y.astype(out or np.result_type(a, b, c))


def _graph(
    shapes: list[tuple[int, ...]], dtypes: list[str], attrs: dict[str, Any] | None = None
) -> Graph:
    """A graph of one GEMM whose five inputs are Data nodes of ``shapes`` and ``dtypes``."""
    g = Graph("gemm")
    ports: list[Any] = [
        (data_node(g, i, list(s), d), 0)
        for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
    ]
    y = add_op_node(g, "GEMM", ports, attrs or {})
    g.set_outputs([(y, 0)])
    g.verify()
    return g


def _check(g: Graph, feeds: list[np.ndarray], expected: np.ndarray, dtype: str) -> None:
    """eval_graph (the reference) and the compiled plan both give ``expected``."""
    tol = TOL.get(dtype, 0.0)
    reference = eval_graph(g, feeds)[0]
    compiled = CompiledGraph(g).run_arrays(feeds)[0]
    for got in (reference, compiled):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# --- against numpy, compiled ---------------------------------------------------------------
C_SHAPES = {"[M,N]": (3, 4), "[N]": (4,), "[1,N]": (1, 4), "[M,1]": (3, 1), "[1]": (1,), "[]": ()}
TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32"])
@pytest.mark.parametrize("c_kind", list(C_SHAPES))
def test_every_c_shape_matches_numpy(dtype: str, c_kind: str) -> None:
    ta, tb = TRANSPOSES[list(C_SHAPES).index(c_kind) % 4]
    m, k, n = 3, 5, 4
    a = _operand((k, m) if ta else (m, k), dtype)
    b = _operand((n, k) if tb else (k, n), dtype)
    c = _operand(C_SHAPES[c_kind], dtype)
    alpha, beta = np.asarray(2, NP[dtype]), np.asarray([-3], NP[dtype])
    g = _graph(
        [a.shape, b.shape, c.shape, (), (1,)],
        [dtype] * 5,
        {"transpose_a": ta, "transpose_b": tb},
    )
    (node,) = [n for n in g.get_direct_nodes() if n.type == "GEMM"]
    assert list(node.get_output_desc(0).get_shape()) == [m, n]
    _check(g, [a, b, c, alpha, beta], _expected(a, b, c, alpha, beta, ta, tb), dtype)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_int8_operands_with_int32_c_give_int32(ta: bool, tb: bool) -> None:
    a = _operand((4, 3) if ta else (3, 4), "int8")
    b = _operand((2, 4) if tb else (4, 2), "int8")
    c = _operand((2,), "int32")
    scales = [np.asarray(3, np.int32), np.asarray(-1, np.int32)]
    g = _graph(
        [a.shape, b.shape, c.shape, (), ()],
        ["int8", "int8", "int32", "int32", "int32"],
        {"transpose_a": ta, "transpose_b": tb},
    )
    expected = _expected(a, b, c, *scales, ta, tb)
    assert expected.dtype == np.int32
    _check(g, [a, b, c, *scales], expected, "int32")


def test_int32_wraps_like_numpy() -> None:
    big = np.full((2, 2), 2**30, np.int32)
    scales = [np.asarray(3, np.int32), np.asarray(5, np.int32)]
    g = _graph([(2, 2)] * 3 + [(), ()], ["int32"] * 5)
    with np.errstate(all="ignore"):
        expected = (big @ big) * scales[0] + big * scales[1]
    _check(g, [big, big, big, *scales], expected.astype(np.int32), "int32")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(("m", "k", "n"), [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_zero_size_dims(dtype: str, m: int, k: int, n: int) -> None:
    a, b, c = _operand((m, k), dtype), _operand((k, n), dtype), _operand((m, n), dtype)
    scales = [np.asarray(2, NP[dtype]), np.asarray(-1, NP[dtype])]
    g = _graph([a.shape, b.shape, c.shape, (), ()], [dtype] * 5)
    _check(g, [a, b, c, *scales], _expected(a, b, c, *scales, False, False), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_non_contiguous_feeds(dtype: str) -> None:
    a = _operand((3, 5), dtype, "T")
    b = _operand((5, 8), dtype)[:, ::2]
    c = _operand((3, 4), dtype, "T")
    assert not (a.flags.c_contiguous or b.flags.c_contiguous or c.flags.c_contiguous)
    scales = [np.asarray(0.5, NP[dtype]), np.asarray(2, NP[dtype])]
    g = _graph([a.shape, b.shape, c.shape, (), ()], [dtype] * 5)
    _check(g, [a, b, c, *scales], _expected(a, b, c, *scales, False, False), dtype)


def test_mixed_types_promote() -> None:
    """f16 @ f32 + int32 c: y is float32; the scales may be any accepted type."""
    a, b, c = _operand((2, 3), "float16"), _operand((3, 4), "float32"), _operand((4,), "int32")
    scales = [np.asarray(2, np.int32), np.asarray(0.25, np.float64)]
    g = _graph(
        [a.shape, b.shape, c.shape, (), ()], ["float16", "float32", "int32", "int32", "float64"]
    )
    expected = _expected(a, b, c, *scales, False, False, np.float32)  # not numpy's float64
    _check(g, [a, b, c, *scales], expected, "float32")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # BLAS's, on purpose
def test_overflow_and_nan_agree_with_the_reference() -> None:
    """The epilogue computes in float32 as the reference does: inf - inf is NaN in both."""
    a = np.array([[1e30, 1.0]], np.float32)
    b = np.array([[1e10, 1.0], [0.0, np.nan]], np.float32)
    c = np.array([[-1e30, 1.0]], np.float32)
    scales = [np.asarray(1e30, np.float32), np.asarray(1e30, np.float32)]
    g = _graph([a.shape, b.shape, c.shape, (), ()], ["float32"] * 5)
    reference = eval_graph(g, [a, b, c, *scales])[0]
    compiled = CompiledGraph(g).run_arrays([a, b, c, *scales])[0]
    assert np.isnan(reference[0, 0]) and np.isnan(reference[0, 1])
    np.testing.assert_array_equal(compiled, reference)


# --- the compiled roads ----------------------------------------------------------------------
def _plan_text(builder_fn: Any, shapes: list[list[int]], dtype: DataType) -> str:
    b = GraphBuilder("roads")
    a, w, c = (b.create_input(i, shape=s, data_type=dtype) for i, s in enumerate(shapes))
    graph = b.build_and_reset([builder_fn(a, w, c)])
    plan = CompiledGraph(graph).plan_for(shapes)
    assert plan is not None
    return plan.as_text()


def _host_gemms(text: str) -> int:
    """Host GEMM tasks in a plan listing (``host <op> GEMM_k (...)``: a data host task)."""
    return sum(1 for line in text.splitlines() if line.split()[:1] == ["host"] and "GEMM" in line)


def test_float32_runs_blas_then_an_epilogue_kernel() -> None:
    text = _plan_text(
        lambda a, w, c: ge.es.GEMM(a, w, c, 2.0, 0.5), [[2, 3], [3, 4], [4]], DataType.DT_FLOAT
    )
    assert _host_gemms(text) == 1 and text.count("launch k_") == 1


def test_unit_scales_use_the_blas_bias_add_alone() -> None:
    text = _plan_text(
        lambda a, w, c: ge.es.GEMM(a, w, c, 1.0, 1.0), [[2, 3], [3, 4], [2, 1]], DataType.DT_FLOAT
    )
    assert _host_gemms(text) == 1 and "launch k_" not in text


def test_float16_runs_one_kernel() -> None:
    text = _plan_text(
        lambda a, w, c: ge.es.GEMM(a, w, c, 2.0, 0.5), [[2, 3], [3, 4], [4]], DataType.DT_FLOAT16
    )
    assert _host_gemms(text) == 0 and text.count("launch k_") == 1


# --- ES function, Session and ge.jit ---------------------------------------------------------
def test_es_function_is_generated() -> None:
    params = inspect.signature(ge.es.GEMM).parameters
    assert list(params) == ["a", "b", "c", "alpha", "beta", "transpose_a", "transpose_b"]
    assert params["transpose_a"].default is False and params["transpose_b"].default is False


@pytest.fixture
def session() -> Iterator[Session]:
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    GeApi.ge_initialize(config)
    yield Session(config)
    GeApi.ge_finalize()


def test_session_runs_scales_fed_as_graph_inputs(session: Session) -> None:
    """alpha and beta as graph inputs are read at run time: new values, same graph."""
    b = GraphBuilder("gemm")
    x, w, c = (
        b.create_input(0, shape=[2, 3]),
        b.create_input(1, shape=[3, 4]),
        b.create_input(2, shape=[2, 4]),
    )
    alpha, beta = b.create_input(3, shape=[]), b.create_input(4, shape=[1])
    graph = b.build_and_reset([ge.es.GEMM(x, w, c, alpha, beta, transpose_b=False)])
    session.add_graph(1, graph)
    xs = [_operand(s, "float32") for s in ((2, 3), (3, 4), (2, 4))]
    for scales in ((2.0, [0.5]), (-1.0, [3.0])):
        feeds = [*xs, np.asarray(scales[0], np.float32), np.asarray(scales[1], np.float32)]
        (out,) = session.run_graph(1, [Tensor.from_numpy(f) for f in feeds])
        expected = _expected(*xs, *scales, False, False)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(eval_graph(graph, feeds)[0], expected, rtol=1e-6)


def test_jit_traces_gemm() -> None:
    @ge.jit
    def affine(x: Any, w: Any, c: Any) -> Any:
        return ge.es.GEMM(x, w, c, 2.0, -1.0, transpose_a=True)

    x, w, c = _operand((3, 2), "float32"), _operand((3, 4), "float32"), _operand((1, 4), "float32")
    np.testing.assert_allclose(affine(x, w, c), _expected(x, w, c, 2.0, -1.0, True, False))


# --- shape inference ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "c", "attrs", "shape"),
    [
        ([-1, 3], [3, 4], [4], {}, [-1, 4]),
        ([-1, 3], [3, 4], [5, 1], {}, [5, 4]),  # c's known M fills the unknown one
        ([-2], [3, 4], [4], {}, [-1, 4]),
        ([3, -1], [3, 5], [-2], {"transpose_a": True}, [-1, 5]),
        ([2, 3], [4, 3], [1], {"transpose_b": True}, [2, 4]),
    ],
)
def test_infer_with_unknown_dims(
    a: list[int], b: list[int], c: list[int], attrs: dict[str, Any], shape: list[int]
) -> None:
    g = Graph("g")
    ports = [(data_node(g, i, s, "float32"), 0) for i, s in enumerate([a, b, c, [], []])]
    y = add_op_node(g, "GEMM", ports, attrs)
    assert list(y.get_output_desc(0).get_shape()) == shape


# --- bad input -----------------------------------------------------------------------------------
F = "float32"
BAD: list[tuple[str, list[list[int]], list[str], dict[str, Any], str]] = [
    ("a rank 3", [[1, 2, 3], [3, 4], [4], [], []], [F] * 5, {}, r"a must be 2-D, got \[1, 2, 3\]"),
    ("b rank 1", [[2, 3], [3], [4], [], []], [F] * 5, {}, r"b must be 2-D, got \[3\]"),
    (
        "K mismatch",
        [[2, 3], [4, 5], [5], [], []],
        [F] * 5,
        {},
        r"a gives K=3 \(transpose_a=False\), b gives K=4",
    ),
    (
        "K mismatch transposed",
        [[2, 3], [4, 5], [5], [], []],
        [F] * 5,
        {"transpose_b": True},
        r"a gives K=3 .*b gives K=5 \(transpose_b=True\)",
    ),
    ("alpha [2]", [[2, 3], [3, 4], [4], [2], []], [F] * 5, {}, r"alpha must be a scalar .* \[2\]"),
    ("beta [1,1]", [[2, 3], [3, 4], [4], [], [1, 1]], [F] * 5, {}, r"beta must be a scalar"),
    ("c [5]", [[2, 3], [3, 4], [5], [], []], [F] * 5, {}, r"c \[5\] does not broadcast"),
    ("c [3,4]", [[2, 3], [3, 4], [3, 4], [], []], [F] * 5, {}, r"c \[3, 4\] does not broadcast"),
    ("c rank 3", [[2, 3], [3, 4], [1, 2, 4], [], []], [F] * 5, {}, "c .* does not broadcast"),
    (
        "bool a",
        [[2, 3], [3, 4], [4], [], []],
        ["bool", F, F, F, F],
        {},
        "input 'a' has type DT_BOOL",
    ),
    (
        "int8 c",
        [[2, 3], [3, 4], [4], [], []],
        ["int8", "int8", "int8", "int32", "int32"],
        {},
        "input 'c' has type DT_INT8",
    ),
    (
        "bf16 beta",
        [[2, 3], [3, 4], [4], [], []],
        [F, F, F, F, "bfloat16"],
        {},
        "input 'beta' has type DT_BF16",
    ),
    (
        "float alpha, int y",
        [[2, 3], [3, 4], [4], [], []],
        ["int32", "int32", "int32", F, "int32"],
        {},
        "alpha must be DT_INT32 when y is DT_INT32",
    ),
]


@pytest.mark.parametrize(
    ("shapes", "dtypes", "attrs", "match"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_raises_infer_error_naming_it(
    shapes: list[list[int]], dtypes: list[str], attrs: dict[str, Any], match: str
) -> None:
    g = Graph("bad")
    ports = [
        (data_node(g, i, s, d), 0) for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
    ]
    before = [n.name for n in g.get_all_nodes()]
    with pytest.raises(InferError, match=match) as info:
        add_op_node(g, "GEMM", ports, attrs)
    assert str(info.value).startswith("GEMM(a: ")
    assert isinstance(info.value, ValueError)
    assert [n.name for n in g.get_all_nodes()] == before  # nothing half-built
    g.verify()


def test_bad_feed_at_run_time_is_an_infer_error() -> None:
    """Declared -1 dims are held to the rule once values arrive."""
    g = Graph("late")
    ports = [(data_node(g, i, s, F), 0) for i, s in enumerate([[2, -1], [3, 4], [4], [], []])]
    y = add_op_node(g, "GEMM", ports)
    g.set_outputs([(y, 0)])
    feeds = [np.ones(s, np.float32) for s in ((2, 5), (3, 4), (4,), (), ())]
    with pytest.raises(InferError, match="a gives K=5"):
        eval_graph(g, feeds)


def test_builder_error_names_the_users_line() -> None:
    b = GraphBuilder("bad")
    x, w = b.create_input(0, shape=[2, 3]), b.create_input(1, shape=[4, 4])
    with pytest.raises(InferError, match=r"test_gemm\.py:\d+: the contracted dims differ"):
        ge.es.GEMM(x, w, [0.0] * 4, 1.0, 1.0)
