"""References read shapes from their input arrays, never from recorded descs (issue #12).

Every (record, variant) of the op table is built twice: with its Data inputs declared at their
real shapes, and declared with every dim unknown (``-1``) or with an unknown rank (``-2``). The
recorded output descs then hold ``-1``/``-2``, which a reference must not read as a numpy
shape; ``eval_graph`` of both graphs must agree with the numpy reference exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.ops import eval_graph

from ._cases import RECORDS, Record, Variant, build, flat_outputs
from .test_ops_table import assert_close

UNKNOWN: dict[str, Callable[[list[int]], list[int]]] = {
    "dims": lambda shape: [-1] * len(shape),
    "rank": lambda shape: [-2],
}


def _cases() -> list[tuple[Record, Variant, str, str]]:
    """One dtype per (record, variant): float32 where claimed, else the first claimed."""
    out = []
    for record in RECORDS:
        for variant in record.variants:
            dtypes = [d for d in record.claimed() if variant.dtypes is None or d in variant.dtypes]
            if dtypes:
                dtype = "float32" if "float32" in dtypes else dtypes[0]
                out += [(record, variant, dtype, mode) for mode in UNKNOWN]
    return out


CASES = _cases()


@pytest.mark.parametrize(
    ("record", "variant", "dtype", "mode"),
    CASES,
    ids=[f"{r.op}-{v.label}-{d}-{m}" for r, v, d, m in CASES],
)
def test_reference_ignores_recorded_unknown_shapes(
    record: Record, variant: Variant, dtype: str, mode: str
) -> None:
    seed = zlib.crc32(f"{record.op}-{variant.label}-{dtype}".encode())
    args = (record.op, variant.inputs, variant.attrs, dtype)
    known = build(*args, np.random.default_rng(seed), variant.output_counts)
    hidden = build(*args, np.random.default_rng(seed), variant.output_counts, declare=UNKNOWN[mode])
    reference = variant.ref or record.ref
    assert reference is not None
    expected = flat_outputs(reference(known.values, dict(variant.attrs)))
    rtol, atol = record.tolerance(dtype)
    for graph, feeds in ((known.graph, known.feeds), (hidden.graph, hidden.feeds)):
        actual = eval_graph(graph, feeds)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_close(np.asarray(a), e, dtype, rtol, atol)


def test_layer_norm_with_two_unknown_dims_matches_numpy() -> None:
    b = GraphBuilder("ln")
    x = b.create_input(0, name="x", shape=[-1, -1, 4])
    gamma = b.create_input(1, name="gamma", shape=[4])
    beta = b.create_input(2, name="beta", shape=[4])
    out = ge.es.LayerNorm(x, gamma, beta, begin_norm_axis=2, begin_params_axis=2, epsilon=1e-5)
    graph = b.build_and_reset([out.y, out.mean, out.variance])
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 4)).astype(np.float32)
    g = rng.normal(size=4).astype(np.float32)
    bb = rng.normal(size=4).astype(np.float32)
    y, mean, var = eval_graph(graph, [a, g, bb])
    m = a.mean(axis=2, keepdims=True)
    v = ((a - m) ** 2).mean(axis=2, keepdims=True)
    np.testing.assert_allclose(mean, m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, (a - m) / np.sqrt(v + 1e-5) * g + bb, rtol=1e-4, atol=1e-5)
    assert mean.shape == var.shape == (2, 3, 1)


@pytest.mark.parametrize("index_shape", [[-2], [-1, -1]])
def test_gather_with_batch_dims_keeps_its_shape_when_the_rank_is_unknown(
    index_shape: list[int],
) -> None:
    b = GraphBuilder("gather")
    x = b.create_input(0, name="x", shape=[2, 3, 4])
    i = b.create_input(1, name="i", data_type=DataType.DT_INT64, shape=index_shape)
    axis = b.create_input(2, name="axis", data_type=DataType.DT_INT64, shape=[1])
    graph = b.build_and_reset([ge.es.GatherV2(x, i, axis, batch_dims=1)])
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[0, 2, 2], [1, 1, 0]], np.int64)
    (got,) = eval_graph(graph, [a, idx, np.array([1])])
    expected = np.stack([np.take(a[k], idx[k], axis=0) for k in range(2)])
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, expected)
