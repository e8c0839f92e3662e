"""``TensorHolder`` methods given dims, axes or indexes that are not int64 values: a
``GeTypeError``/``GeValueError`` naming what was wrong, where ``int()`` or numpy leaked
``ValueError``/``TypeError``/``OverflowError`` (NaN, inf, None, str, 2**70), and no node is
left behind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ge.error import GeTypeError, GeValueError
from ge.es import GraphBuilder, TensorHolder

BAD: list[tuple[Any, type[Exception]]] = [
    (None, GeTypeError),
    (float("nan"), GeTypeError),
    (float("inf"), GeTypeError),
    (1.5, GeTypeError),
    ("x", GeTypeError),
    (b"\xff", GeTypeError),
    (True, GeTypeError),
    (object(), GeTypeError),
    (2**70, GeValueError),
    (-(2**70), GeValueError),
]

CALLS: dict[str, Callable[[TensorHolder, Any], Any]] = {
    "reshape": lambda x, v: x.reshape(v, -1),
    "transpose": lambda x, v: x.transpose(v, 0),
    "sum": lambda x, v: x.sum(axis=v),
    "max": lambda x, v: x.max(axis=[0, v]),
    "slice start": lambda x, v: x[v:],
    "slice step": lambda x, v: x[::v],
    "index array": lambda x, v: x[[0, v]],
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
@pytest.mark.parametrize(("value", "error"), BAD, ids=[repr(v)[:12] for v, _ in BAD])
def test_bad_ints_are_ge_errors_and_leave_no_node(
    call: Callable[[TensorHolder, Any], Any], value: Any, error: type[Exception]
) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3, 2])
    before = [n.name for n in b._graph.get_direct_nodes()]
    if value is True and call is CALLS["index array"]:
        assert call(x, value).shape == (2, 2)  # [0, True] is the int array [0, 1], as in numpy
        return
    if value is None and call in (CALLS["sum"], CALLS["slice start"], CALLS["slice step"]):
        call(x, value)  # axis=None, x[None:], x[::None] mean what numpy says
        return
    with pytest.raises(error):
        call(x, value)
    assert [n.name for n in b._graph.get_direct_nodes()] == before


def test_good_ints_still_work() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3, 2])
    assert x.reshape(np.int64(2), -1).shape == (2, 3)
    assert x.transpose(1, 0).shape == (2, 3)
    assert x.sum(axis=np.int32(1)).shape == (3,)
    assert x[np.array([0, 2])].shape == (2, 2)
    assert x[[]].shape == (0, 2)
    assert x[1:, ::2].shape == (2, 1)
