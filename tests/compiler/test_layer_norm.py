"""LayerNorm's row kernel (ge.compiler.kernels.rows): per-column gamma/beta over the last
axes, float64 statistics; other layouts take the general kernel. Both match eval_graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge.es
from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import rows
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.ops import eval_graph

TYPES = {
    "float32": (DataType.DT_FLOAT, np.float32, 1e-5),
    "float64": (DataType.DT_DOUBLE, np.float64, 1e-12),
    "float16": (DataType.DT_FLOAT16, np.float16, 2e-3),
}


def _graph(
    shape: list[int], params: list[int], axis: int, params_axis: int, dtype: DataType
) -> Any:
    b = GraphBuilder("ln")
    x = b.create_input(0, shape=shape, data_type=dtype)
    g = b.create_input(1, shape=params, data_type=dtype)
    beta = b.create_input(2, shape=params, data_type=dtype)
    out = ge.es.LayerNorm(x, g, beta, begin_norm_axis=axis, begin_params_axis=params_axis)
    return b.build_and_reset([out.y, out.mean, out.variance])


@pytest.mark.parametrize("type_name", sorted(TYPES))
@pytest.mark.parametrize(
    ("shape", "params", "axis", "params_axis", "fast"),
    [
        ([4, 64], [64], -1, -1, True),
        ([2, 3, 17], [3, 17], 1, 1, True),
        ([1, 9], [9], 1, 1, True),
        ([5, 8], [8], 0, 1, False),  # statistics over all, gamma per column: general kernel
        ([3, 4, 6], [6], 1, 2, False),
    ],
)
def test_layer_norm_matches_the_reference(
    monkeypatch: pytest.MonkeyPatch,
    type_name: str,
    shape: list[int],
    params: list[int],
    axis: int,
    params_axis: int,
    fast: bool,
) -> None:
    dtype, np_type, tol = TYPES[type_name]
    calls: list[Any] = []
    real = rows._layer_norm_source
    monkeypatch.setattr(rows, "_layer_norm_source", lambda d: calls.append(d) or real(d))
    graph = _graph(shape, params, axis, params_axis, dtype)
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    feeds = [rng.standard_normal(s).astype(np_type) * 3 + 1 for s in (shape, params, params)]
    compiled = CompiledGraph(graph)
    actual = compiled.run_arrays(feeds)
    assert bool(calls) == fast
    for a, e in zip(actual, eval_graph(graph, feeds), strict=True):
        np.testing.assert_allclose(
            a.astype(np.float64), np.asarray(e).astype(np.float64), rtol=tol, atol=tol
        )


def test_a_nan_in_a_row_stays_in_that_row() -> None:
    graph = _graph([3, 16], [16], -1, -1, DataType.DT_FLOAT)
    feeds = [np.ones((3, 16), np.float32), np.ones(16, np.float32), np.zeros(16, np.float32)]
    feeds[0][1, 5] = np.nan
    y = CompiledGraph(graph).run_arrays(feeds)[0]
    assert np.isnan(y[1]).all() and not np.isnan(y[[0, 2]]).any()
