"""The kernels of the elementwise ops numpy's ufuncs added (Cbrt, Gcd, Lcm, NextAfter) on the
values where they are easy to get wrong, against numpy, with no reference fallback."""

from __future__ import annotations

import numpy as np
import pytest

from ge.compiler.executable import CompiledGraph
from ge.graph import Graph
from ge.ops import add_op_node
from ge.runtime.plan import KernelTask

from ..ops._cases import data_node, name_of


def _run(op: str, *feeds: np.ndarray) -> np.ndarray:
    graph = Graph("g")
    inputs = [
        (data_node(graph, i, list(x.shape), name_of(x.dtype)), 0) for i, x in enumerate(feeds)
    ]
    node = add_op_node(graph, op, inputs, {}, name="op")
    graph.set_outputs([(node, 0)])
    compiled = CompiledGraph(graph)
    plan = compiled.plan_for([list(x.shape) for x in feeds])
    assert plan is not None
    assert any(isinstance(t, KernelTask) for t in plan.tasks)  # no reference fallback
    assert not [t for t in plan.tasks if t.name == "op" and not isinstance(t, KernelTask)]
    (y,) = compiled.run_arrays(list(feeds))
    return np.asarray(y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_specials(dtype: type) -> None:
    tiny = np.finfo(dtype).smallest_subnormal
    big = np.finfo(dtype).max
    x = np.array([0.0, -0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, tiny, -tiny, np.nan, 2.0, big, 1.0])
    y = np.array([1.0, -1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, np.inf, np.nan])
    x, y = x.astype(dtype), y.astype(dtype)
    with np.errstate(over="ignore"):  # max -> inf overflows, as it should
        want = np.nextafter(x, y)
    got = _run("NextAfter", x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # bit for bit, NaN where NaN
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_gcd_lcm_signs_and_zeros(dtype: type) -> None:
    info = np.iinfo(dtype)
    values = [0, 0, 12, 12, 7, 1, info.max, info.max]
    others = [0, 5, 18, 0, 21, 1, 3, info.max]
    if info.min < 0:
        values += [-12, -6, info.min + 1]
        others += [18, -4, 3]
    x, y = np.array(values, dtype), np.array(others, dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_run("Gcd", x, y), np.gcd(x, y))
        np.testing.assert_array_equal(_run("Lcm", x, y), np.lcm(x, y))


def test_cbrt_of_negatives_and_specials() -> None:
    x = np.array([-27.0, -8.0, -0.0, 0.0, 1e-300, 64.0, np.inf, -np.inf, np.nan])
    got = _run("Cbrt", x)
    np.testing.assert_allclose(got, np.cbrt(x), rtol=1e-15, equal_nan=True)
    assert (np.signbit(got) == np.signbit(np.cbrt(x)))[:-1].all()
