"""The Cholesky/MatrixSolve kernels (``ge.compiler.kernels.linalg``) against numpy.

Each case builds one node, checks that the plan runs it as a kernel (no reference fallback)
and compares with ``np.linalg``; failed factorizations give NaN for their batch element only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge.es
from ge.compiler.executable import CompiledGraph
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.ops import add_op_node
from ge.runtime.plan import KernelTask
from ge.session import Session

from ..ops._cases import data_node

TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _run(op: str, feeds: list[np.ndarray], attrs: dict[str, Any] | None = None) -> np.ndarray:
    graph = Graph("g")
    names = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64"}
    inputs = [(data_node(graph, i, list(x.shape), names[x.dtype]), 0) for i, x in enumerate(feeds)]
    node = add_op_node(graph, op, inputs, attrs or {}, name="op")
    graph.set_outputs([(node, 0)])
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([list(x.shape) for x in feeds])
    assert plan is not None
    tasks = [t for t in plan.tasks if t.name == "op"]
    assert tasks and all(isinstance(t, KernelTask) for t in tasks)  # no reference fallback
    (y,) = compiled.run_arrays(feeds)
    return np.asarray(y)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    m = rng.normal(size=shape)
    return np.asarray(m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 2, 6, 6), (40, 3, 3)])
def test_cholesky_matches_numpy(shape: tuple[int, ...], dtype: Any) -> None:
    x = _spd(np.random.default_rng(len(shape)), shape, dtype)
    got = _run("Cholesky", [x])
    want = np.linalg.cholesky(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])
    assert (np.triu(got, 1) == 0).all()


def test_cholesky_reads_the_lower_triangle_only() -> None:
    x = _spd(np.random.default_rng(1), (5, 5), np.float64)
    junk = x + np.triu(np.full((5, 5), 7.0), 1)  # numpy ignores the upper triangle too
    np.testing.assert_allclose(_run("Cholesky", [junk]), np.linalg.cholesky(x), rtol=1e-12)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan() -> None:
    good = _spd(np.random.default_rng(2), (3, 3), np.float64)
    bad = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # eigenvalue -1
    with_nan = good.copy()
    with_nan[2, 1] = np.nan
    got = _run("Cholesky", [np.stack([good, bad, with_nan, -np.eye(3)])])
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(bad)
    np.testing.assert_allclose(got[0], np.linalg.cholesky(good), rtol=1e-12)
    assert np.isnan(got[1:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((1, 1), (1, 1)), ((5, 5), (5, 3)), ((2, 1, 4, 4), (3, 4, 2)), ((4, 4), (6, 4, 1))],
)
def test_solve_matches_numpy(a_shape: Any, b_shape: Any, dtype: Any) -> None:
    rng = np.random.default_rng(len(a_shape) + len(b_shape))
    a = (rng.normal(size=a_shape) + 2 * np.eye(a_shape[-1])).astype(dtype)
    b = rng.normal(size=b_shape).astype(dtype)
    got = _run("MatrixSolve", [a, b])
    want = np.linalg.solve(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    adjoint = _run("MatrixSolve", [a, b], {"adjoint": True})
    np.testing.assert_allclose(
        adjoint, np.linalg.solve(np.swapaxes(a, -1, -2), b), rtol=TOL[dtype] * 10, atol=1e-4
    )


def test_solve_pivots_a_zero_leading_entry() -> None:
    a = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(_run("MatrixSolve", [a, b]), np.linalg.solve(a, b), rtol=1e-12)


def test_solve_of_a_singular_matrix_is_nan_for_that_batch_element() -> None:
    a = np.stack([np.eye(3), np.ones((3, 3)), np.zeros((3, 3))])
    b = np.arange(18.0).reshape(3, 3, 2)
    got = _run("MatrixSolve", [a, b])
    np.testing.assert_array_equal(got[0], b[0])
    assert np.isnan(got[1:]).all()


def test_large_batches_split_over_blocks() -> None:
    rng = np.random.default_rng(7)
    x = _spd(rng, (3000, 3, 3), np.float64)  # enough work for several blocks
    np.testing.assert_allclose(_run("Cholesky", [x]), np.linalg.cholesky(x), rtol=1e-10)
    b = rng.normal(size=(3000, 3, 2))
    np.testing.assert_allclose(_run("MatrixSolve", [x, b]), np.linalg.solve(x, b), rtol=1e-9)


def test_session_runs_the_ge_es_ops_as_numpy() -> None:
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    b = GraphBuilder("linalg")
    x = b.create_input(0, shape=[2, 3, 3], data_type=DataType.DT_DOUBLE)
    r = b.create_input(1, shape=[3, 2], data_type=DataType.DT_DOUBLE)
    graph = b.build_and_reset([ge.es.Cholesky(x), ge.es.MatrixSolve(x, r, adjoint=True)])
    a = _spd(np.random.default_rng(3), (2, 3, 3), np.float64)
    rhs = np.arange(6.0).reshape(3, 2)
    GeApi.ge_initialize(config)
    try:
        session = Session(config)
        session.add_graph(1, graph)
        factor, solved = session.run_graph(1, [Tensor.from_numpy(a), Tensor.from_numpy(rhs)])
    finally:
        GeApi.ge_finalize()
    np.testing.assert_allclose(factor.numpy(), np.linalg.cholesky(a), rtol=1e-12)
    want = np.linalg.solve(np.swapaxes(a, -1, -2), rhs)
    np.testing.assert_allclose(solved.numpy(), want, rtol=1e-10)
