"""Compiled kernels on IEEE special values (infinities, NaN, signed zeros) agree with numpy.

The random graph search found ``Relu(-inf)`` giving NaN (its body computed the zero as
``a * 0``); these cases are checked directly, unfused and fused, for every float type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ge import es
from ge.compiler.executable import CompiledGraph
from ge.es import GraphBuilder
from ge.graph._dtypes import data_type_from_numpy

SPECIAL = [-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, np.nan]


def _run(build: Any, values: np.ndarray) -> np.ndarray:
    b = GraphBuilder("special")
    x = b.create_input(0, shape=list(values.shape), data_type=data_type_from_numpy(values.dtype))
    (out,) = CompiledGraph(b.build_and_reset([build(x)])).run_arrays([values])
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [[7], []], ids=["vector", "scalar"])
def test_relu_of_special_values_is_numpys(dtype: Any, shape: list[int]) -> None:
    values = np.array(SPECIAL, dtype) if shape else np.array(-np.inf, dtype)
    want = np.maximum(values, dtype(0))
    np.testing.assert_array_equal(_run(es.Relu, values), want)
    fused = _run(lambda x: es.Relu(x * 1.0) + 0.0, values)  # Relu inside a fused body
    np.testing.assert_array_equal(fused, np.maximum(values * dtype(1), dtype(0)) + dtype(0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_relu_of_integers_is_numpys(dtype: Any) -> None:
    values = np.array([np.iinfo(dtype).min, -3, 0, 5, np.iinfo(dtype).max], dtype)
    got = _run(es.Relu, values)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, np.maximum(values, dtype(0)))


@pytest.mark.parametrize("op", ["SoftmaxV2", "LogSoftmaxV2"])
def test_softmax_over_no_axes_is_the_references_ones_or_zeros(op: str) -> None:
    """Each element its own row: ones (zeros for the log form) as the reference defines it,
    for inf and NaN too (a kernel's x - max made those NaN; found by the graph search)."""
    values = np.array(SPECIAL, np.float32)
    got = _run(lambda x: getattr(es, op)(x, axes=[]), values)
    np.testing.assert_array_equal(got, np.zeros(7) if op == "LogSoftmaxV2" else np.ones(7))
