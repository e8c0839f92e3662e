"""ge.jit.fori_loop: JAX's counted loop, one While node when traced, a Python loop otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError


def test_a_traced_state_loops_in_one_while_node() -> None:
    @ge.jit
    def power(x: Any) -> Any:
        return ge.jit.fori_loop(0, 5, lambda i, v: v * 2.0, x)

    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(power(x), x * 32)
    assert power(x).dtype == np.float32
    assert "While" in {n.type for n in power.trace(x).get_direct_nodes()}


def test_the_counter_is_an_int64_array_and_bounds_may_be_traced() -> None:
    @ge.jit
    def triangle(n: Any) -> Any:
        return ge.jit.fori_loop(0, n, lambda i, total: total + i, np.int64(0))

    out = triangle(np.int64(5))
    assert int(out) == 10 and out.dtype == np.int64
    assert int(triangle(np.int64(0))) == 0


def test_without_traced_values_it_is_a_python_loop() -> None:
    assert ge.jit.fori_loop(2, 5, lambda i, acc: acc + [i], []) == [2, 3, 4]


@pytest.mark.parametrize("bad", [1.5, "3", None])
def test_bounds_must_be_ints(bad: Any) -> None:
    with pytest.raises(GeTypeError, match="fori_loop: upper must be an int or a traced integer"):
        ge.jit.fori_loop(0, bad, lambda i, v: v, 0)
    with pytest.raises(TypeError, match="body_fn"):
        ge.jit.fori_loop(0, 3, "not callable", 0)  # type: ignore[arg-type]
