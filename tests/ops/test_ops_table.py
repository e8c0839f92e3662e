"""Every op of the table (``_cases.RECORDS``), for every dtype it claims, against numpy.

For each (record, variant, dtype): build Data/Const inputs feeding one node, check the inferred
output descs against the reference's shape and dtype, run ``eval_graph`` and compare values
within the dtype's tolerance. Plus: binary type promotion, the graph-boundary ops, and
meta-tests that keep the table complete.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from ge.error import GeValueError, InferError
from ge.graph import DataType, Graph, Tensor, TensorDesc
from ge.ops import add_op_node, eval_graph, get_op, list_ops

from ._cases import (
    BOUNDARY,
    BY_OP,
    CONTROL,
    FLOATS,
    GE_TYPE,
    NP,
    PRACTICAL,
    RECORDS,
    Record,
    Variant,
    build,
    cases,
    const_node,
    data_node,
    flat_outputs,
    name_of,
)

CASES = cases()


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(key.encode()))


def assert_close(
    actual: np.ndarray, expected: np.ndarray, dtype: str, rtol: float, atol: float
) -> None:
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if dtype in FLOATS or expected.dtype in (NP[d] for d in FLOATS):
        np.testing.assert_allclose(
            actual.astype(np.float64),
            expected.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(actual, expected)


def _shape_matches(inferred: list[int], actual: tuple[int, ...], unknown_ok: bool) -> bool:
    if not unknown_ok:
        return inferred == list(actual)
    if inferred == [-2]:
        return True
    return len(inferred) == len(actual) and all(
        i in (-1, a) for i, a in zip(inferred, actual, strict=True)
    )


@pytest.mark.parametrize(
    ("record", "variant", "dtype"), CASES, ids=[f"{r.op}-{v.label}-{d}" for r, v, d in CASES]
)
def test_op_matches_numpy(record: Record, variant: Variant, dtype: str) -> None:
    built = build(
        record.op,
        variant.inputs,
        variant.attrs,
        dtype,
        _rng(f"{record.op}-{variant.label}-{dtype}"),
        variant.output_counts,
    )
    reference = variant.ref or record.ref
    assert reference is not None
    expected = flat_outputs(reference(built.values, dict(variant.attrs)))

    node = built.node
    assert node.get_outputs_size() == len(expected)
    for i, exp in enumerate(expected):
        desc = node.get_output_desc(i)
        assert desc.get_data_type() == GE_TYPE[name_of(exp.dtype)], f"output {i} dtype"
        inferred = list(desc.get_shape())
        assert _shape_matches(inferred, exp.shape, variant.unknown_ok), (
            f"output {i}: inferred {inferred}, reference {list(exp.shape)}"
        )

    built.graph.verify()
    before = [f.copy() for f in built.feeds]
    actual = eval_graph(built.graph, built.feeds)
    assert len(actual) == len(expected)
    rtol, atol = record.tolerance(dtype)
    for a, e in zip(actual, expected, strict=True):
        assert_close(np.asarray(a), e, dtype, rtol, atol)
    for fed, kept in zip(built.feeds, before, strict=True):  # inputs are not written to
        np.testing.assert_array_equal(fed, kept)
        for a in actual:  # nor handed back: writing to a result must not change an input
            assert not np.shares_memory(np.asarray(a), fed)


# --- dtypes outside the claim are refused at build time ---------------------------------------
def _unclaimed() -> list[tuple[Record, str]]:
    out = []
    for record in RECORDS:
        spec = get_op(record.op).inputs[record.dtype_input].dtypes
        if spec is None:
            continue
        rest = [d for d in PRACTICAL if d not in record.claimed()]
        if rest:
            out.append((record, rest[0]))
    return out


@pytest.mark.parametrize(
    ("record", "dtype"), _unclaimed(), ids=[f"{r.op}-{d}" for r, d in _unclaimed()]
)
def test_unclaimed_dtype_is_refused(record: Record, dtype: str) -> None:
    variant = record.variants[0]
    with pytest.raises(InferError, match=GE_TYPE[dtype].name):
        build(
            record.op, variant.inputs, variant.attrs, dtype, _rng(record.op), variant.output_counts
        )


# --- type promotion (PyTorch / JAX rules, ge.ops.elementwise docstring) -------------------------
PROMOTION = [
    ("int32", "float32", "float32"),
    ("float16", "float32", "float32"),
    ("int8", "int16", "int16"),
    ("uint8", "int8", "int16"),
    ("uint8", "uint16", "uint16"),
    ("bool", "int8", "int8"),
    ("bool", "float16", "float16"),
    ("int64", "float16", "float16"),
    ("int32", "int64", "int64"),
    ("bfloat16", "float32", "float32"),
    ("int32", "bfloat16", "bfloat16"),
    ("float16", "bfloat16", "float32"),  # neither holds the other: JAX and PyTorch give float32
]


@pytest.mark.parametrize(("t1", "t2", "out"), PROMOTION, ids=[f"{a}+{b}" for a, b, _ in PROMOTION])
@pytest.mark.parametrize("op", ["Add", "Mul", "Maximum", "Less"])
def test_binary_promotion(op: str, t1: str, t2: str, out: str) -> None:
    if op == "Maximum" and "bool" in (t1, t2):
        pytest.skip("Maximum does not take bool")
    g = Graph("promo")
    a = np.array([[1, 0, 2]], NP[t1])
    b = np.array([[1], [2]], NP[t2])
    x1 = data_node(g, 0, [1, 3], t1)
    x2 = data_node(g, 1, [2, 1], t2)
    y = add_op_node(g, op, [(x1, 0), (x2, 0)])
    g.set_outputs([(y, 0)])
    result_type = "bool" if op == "Less" else out
    assert y.get_output_desc(0).get_data_type() == GE_TYPE[result_type]
    assert list(y.get_output_desc(0).get_shape()) == [2, 3]
    (got,) = eval_graph(g, [a, b])
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    expected: Any = {
        "Add": wa + wb,
        "Mul": wa * wb,
        "Maximum": np.maximum(wa, wb),
        "Less": wa < wb,
    }[op]
    if op == "Add" and out == "bool":
        expected = expected != 0
    assert got.dtype == NP[result_type]
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(expected, np.float64))


def test_addn_promotes_mixed_inputs() -> None:
    g = Graph("addn")
    xs = [data_node(g, i, [2], t) for i, t in enumerate(["int32", "float16", "int8"])]
    y = add_op_node(g, "AddN", [[(x, 0) for x in xs]], {"N": 3})
    g.set_outputs([(y, 0)])
    assert y.get_output_desc(0).get_data_type() == DataType.DT_FLOAT16
    (got,) = eval_graph(
        g,
        [np.array([1, 2], np.int32), np.array([0.5, 0.25], np.float16), np.array([-1, 3], np.int8)],
    )
    np.testing.assert_array_equal(got, np.array([0.5, 5.25], np.float16))


MIXED: list[tuple[str, list[tuple[Any, str]], dict[str, Any], str, Any]] = [
    (
        "BiasAdd",
        [([[1, 2, 3], [4, 5, 6]], "int32"), ([0.5, -0.25, 1.5], "float32")],
        {},
        "float32",
        lambda x, b: x + b,
    ),
    (
        "Div",
        [([7, -7, 1], "int32"), ([2.0, 2.0, 4.0], "float32")],
        {},
        "float32",
        lambda a, b: a / b,
    ),
    ("Pow", [([2, 3, 4], "int32"), ([0.5, -1.0, 2.0], "float32")], {}, "float32", np.power),
    ("Sub", [([1, 2, 3], "uint8"), ([0.25, 0.5, 4.0], "float16")], {}, "float16", np.subtract),
    (
        "Select",
        [([True, False, True], "bool"), ([1, 2, 3], "int32"), ([0.5, 0.5, 0.5], "float32")],
        {},
        "float32",
        np.where,
    ),
    (
        "SelectV2",
        [([True, False], "bool"), ([1, 2], "int8"), ([-1, 300], "int16")],
        {},
        "int16",
        np.where,
    ),
    (
        "MatMul",
        [([[1, 2]], "int32"), ([[0.5], [0.25]], "float32"), None],
        {},
        "float32",
        lambda a, b, _: a @ b,
    ),
]


@pytest.mark.parametrize(("op", "inputs", "attrs", "out", "fn"), MIXED, ids=[m[0] for m in MIXED])
def test_mixed_input_types_compute_in_the_promoted_type(
    op: str, inputs: list[Any], attrs: dict[str, Any], out: str, fn: Any
) -> None:
    g = Graph("mixed")
    ports: list[Any] = []
    feeds: list[np.ndarray] = []
    for item in inputs:
        if item is None:
            ports.append(None)
            continue
        value = np.asarray(item[0], NP[item[1]])
        ports.append((data_node(g, len(feeds), list(value.shape), item[1]), 0))
        feeds.append(value)
    y = add_op_node(g, op, ports, attrs)
    g.set_outputs([(y, 0)])
    assert y.get_output_desc(0).get_data_type() == GE_TYPE[out]
    (got,) = eval_graph(g, feeds)
    args = [None if i is None else np.asarray(i[0], np.float64) for i in inputs]
    expected = np.asarray(fn(*args)).astype(NP[out])
    assert got.dtype == NP[out]
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-3)


def test_eval_errors_for_bad_runtime_values() -> None:
    g = Graph("gather")
    x = data_node(g, 0, [3, 2], "float32")
    idx = data_node(g, 1, [2], "int32")
    y = add_op_node(g, "GatherV2", [(x, 0), (idx, 0), (const_node(g, np.array(0, np.int32)), 0)])
    g.set_outputs([(y, 0)])
    ones = np.ones((3, 2), np.float32)
    with pytest.raises(GeValueError, match="out of range"):
        eval_graph(g, [ones, np.array([0, 3], np.int32)])
    with pytest.raises(GeValueError, match="out of range"):  # negative_index_support is off
        eval_graph(g, [ones, np.array([-1, 0], np.int32)])


# --- graph-boundary ops ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Data", "RefData", "AippData", "AnyData", "Variable"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint16", "bool"])
def test_graph_input_ops_feed_by_index(op: str, dtype: str) -> None:
    g = Graph("io")
    inputs: list[Any] = [None]
    first = add_op_node(
        g, op, inputs, {"index": 1}, declared=[TensorDesc([2, 3], data_type=GE_TYPE[dtype])]
    )
    second = add_op_node(
        g, op, inputs, {"index": 0}, declared=[TensorDesc([], data_type=GE_TYPE[dtype])]
    )
    assert first.get_output_desc(0).get_data_type() == GE_TYPE[dtype]
    assert list(first.get_output_desc(0).get_shape()) == [2, 3]
    g.set_outputs([(first, 0), (second, 0)])
    a = (np.arange(6).reshape(3, 2).T % 2).astype(NP[dtype])  # a non-contiguous feed
    b = np.asarray(1).astype(NP[dtype])
    got = eval_graph(g, [b, a])
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], b)
    assert got[0].dtype == NP[dtype] and got[1].shape == ()


def test_data_with_unknown_dims_takes_any_size() -> None:
    g = Graph("io")
    x = add_op_node(g, "Data", [None], {"index": 0}, declared=[TensorDesc([-1, 3])])
    y = add_op_node(g, "Relu", [(x, 0)])
    g.set_outputs([(y, 0)])
    assert list(y.get_output_desc(0).get_shape()) == [-1, 3]
    for rows in (0, 1, 5):
        (got,) = eval_graph(g, [np.full((rows, 3), -1.0, np.float32)])
        assert got.shape == (rows, 3)


def test_data_rejects_a_feed_of_the_wrong_shape() -> None:
    g = Graph("io")
    x = data_node(g, 0, [2, 3], "float32")
    g.set_outputs([(x, 0)])
    with pytest.raises(GeValueError, match=r"\[3, 3\]"):
        eval_graph(g, [np.zeros((3, 3), np.float32)])


@pytest.mark.parametrize("dtype", PRACTICAL)
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)], ids=["scalar", "empty", "2x3"])
def test_const_gives_its_value(dtype: str, shape: tuple[int, ...]) -> None:
    g = Graph("c")
    value = np.asarray(np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(NP[dtype])
    c = const_node(g, value)
    g.set_outputs([(c, 0)])
    desc = c.get_output_desc(0)
    assert desc.get_data_type() == GE_TYPE[dtype]
    assert list(desc.get_shape()) == list(shape)
    (got,) = eval_graph(g, [])
    assert got.dtype == NP[dtype]
    np.testing.assert_array_equal(got, value)


def test_const_value_is_not_aliased_by_eval() -> None:
    g = Graph("c")
    c = const_node(g, np.array([1.0, 2.0], np.float32))
    g.set_outputs([(c, 0)])
    (first,) = eval_graph(g, [])
    first[0] = 100.0
    (second,) = eval_graph(g, [])
    np.testing.assert_array_equal(second, [1.0, 2.0])


def test_net_output_collects_results_in_order() -> None:
    g = Graph("n")
    x = data_node(g, 0, [2], "float32")
    neg = add_op_node(g, "Neg", [(x, 0)])
    sq = add_op_node(g, "Square", [(x, 0)])
    out = add_op_node(g, "NetOutput", [[(sq, 0), (neg, 0), (x, 0)]])
    assert out.get_outputs_size() == 0
    assert out.get_input_names() == ["x0", "x1", "x2"]
    got = eval_graph(g, [np.array([2.0, -3.0], np.float32)])
    np.testing.assert_array_equal(got[0], [4.0, 9.0])
    np.testing.assert_array_equal(got[1], [-2.0, 3.0])
    np.testing.assert_array_equal(got[2], [2.0, -3.0])


def test_eval_graph_accepts_lists_scalars_and_tensors() -> None:
    g = Graph("feeds")
    x = data_node(g, 0, [2], "float32")
    s = data_node(g, 1, [], "int32")
    t = data_node(g, 2, [2], "float32")
    y = add_op_node(g, "AddN", [[(x, 0), (s, 0), (t, 0)]], {"N": 3})
    g.set_outputs([(y, 0)])
    tensor = Tensor.from_numpy(np.array([10.0, 20.0], np.float32))
    (got,) = eval_graph(g, [[1.0, 2.0], 3, tensor])
    np.testing.assert_array_equal(got, np.array([14.0, 25.0], np.float32))


# --- meta: the table covers the registry ------------------------------------------------------
def test_every_registered_op_has_a_record() -> None:
    registered = {t for t in list_ops() if get_op(t).source == "ge"}
    missing = sorted(registered - set(BY_OP) - BOUNDARY - CONTROL)
    assert not missing, f"ops without a test record in tests/ops/_cases.py: {missing}"


def test_records_name_registered_ops_once() -> None:
    ops = [r.op for r in RECORDS]
    assert len(ops) == len(set(ops)), "one record per op"
    unknown = [op for op in ops if op not in list_ops()]
    assert not unknown
    assert not (set(ops) & (BOUNDARY | CONTROL))


@pytest.mark.parametrize("record", RECORDS, ids=[r.op for r in RECORDS])
def test_record_is_well_formed(record: Record) -> None:
    op = get_op(record.op)
    claimed = record.claimed()
    assert claimed, f"{record.op} claims no dtype"
    spec = op.inputs[record.dtype_input].dtypes
    assert spec is None or all(GE_TYPE[d] in spec for d in claimed)
    labels = [v.label for v in record.variants]
    assert len(labels) == len(set(labels))
    for variant in record.variants:
        assert len(variant.inputs) == len(op.inputs), f"{record.op}/{variant.label}: arity"
        for spec_i, item in zip(op.inputs, variant.inputs, strict=True):
            assert isinstance(item, list) == spec_i.dynamic, f"{record.op}/{variant.label}"
            assert item is not None or spec_i.optional
        assert variant.ref is not None or record.ref is not None
        if variant.dtypes is not None:
            assert variant.dtypes & set(claimed), f"{record.op}/{variant.label} never runs"


def test_table_covers_odd_shapes() -> None:
    """Scalars, 0-size and non-contiguous inputs appear across the table."""
    args = [
        a
        for _, v, _ in CASES
        for item in v.inputs
        for a in (item if isinstance(item, list) else [item])
        if a is not None and not a.const
    ]
    assert any(a.shape == () for a in args)
    assert any(0 in a.shape for a in args)
    assert sum(a.layout != "C" for a in args) >= 30
