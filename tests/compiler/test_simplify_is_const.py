"""``simplify``'s neutral-value test reads one-element Consts as Python scalars: it must agree
with numpy's ``np.all(array == value)`` for every dtype and value, NaN and -0.0 included."""

from __future__ import annotations

import numpy as np
import pytest

from ge.compiler._graphs import ConstValues
from ge.compiler.simplify import _is_const
from ge.graph import Graph, Tensor
from ge.ops.construct import add_op_node

VALUES = [0, 1, -0.0, 1.0000001, 2, np.nan, np.inf, True, False]
DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int64, np.bool_, np.complex64]


def _const(array: np.ndarray) -> tuple[object, int]:
    g = Graph("g")
    return add_op_node(g, "Const", [], {"value": Tensor.from_numpy(array)}), 0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (0,)], ids=str)
def test_is_const_agrees_with_numpy(dtype: type, shape: tuple[int, ...]) -> None:
    for x in VALUES:
        with np.errstate(invalid="ignore"):
            array = np.full(shape, x).astype(dtype)
        port = _const(array)
        for value in (0, 1):
            expected = array.size > 0 and bool(np.all(array == value))
            assert _is_const(port, value, ConstValues()) is expected, (x, value)  # type: ignore[arg-type]


def test_mixed_elements_are_not_neutral() -> None:
    port = _const(np.array([1.0, 2.0], np.float32))
    assert not _is_const(port, 1, ConstValues())  # type: ignore[arg-type]
    assert _is_const(_const(np.ones((2, 2), np.float32)), 1, ConstValues())  # type: ignore[arg-type]
    assert not _is_const(None, 1, ConstValues())
