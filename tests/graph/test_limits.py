"""Sizes and counts that cannot be real: ``Shape.get_shape_size`` never wraps or goes negative
(other than -1, "no known size"), and absurd port counts are refused at once with a
``GeValueError`` instead of allocating millions of ports."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ge.error import GeValueError
from ge.graph import Graph, Shape
from ge.graph.graph import MAX_PORTS


@pytest.mark.parametrize(
    ("dims", "size"),
    [
        ([], 0),
        ([0], 0),
        ([2, 3], 6),
        ([2, -1], -1),
        ([-2], -1),
        ([0, -1], -1),
        ([3, -5], -1),  # an invalid dim has no size either (GE would give -15)
        ([2**40, 2**40], 2**80),  # exact: GE gives 0 past int64, which reads as "empty"
        ([2**62, 4], 2**64),
    ],
)
def test_shape_size(dims: list[int], size: int) -> None:
    assert Shape(dims).get_shape_size() == size


@given(st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=6))
def test_shape_size_is_the_exact_product_or_minus_one(dims: list[int]) -> None:
    size = Shape(dims).get_shape_size()
    if not dims:
        assert size == 0
    elif any(d < 0 for d in dims):
        assert size == -1
    else:
        product = 1
        for d in dims:
            product *= d
        assert size == product >= 0


@pytest.mark.parametrize("what", ["num_inputs", "num_outputs"])
def test_absurd_port_counts_are_refused_at_once(what: str) -> None:
    g = Graph("g")
    start = time.perf_counter()
    with pytest.raises(GeValueError, match=rf"{what} must be at most {MAX_PORTS} .*got 10000000"):
        g.add_node("Relu", **{what: 10**7})  # type: ignore[arg-type]
    assert time.perf_counter() - start < 1.0  # refused, not built (that took ~50 s)
    assert g.get_direct_nodes() == []


def test_the_largest_allowed_port_count_works() -> None:
    node = Graph("g").add_node("NetOutput", num_inputs=MAX_PORTS)
    assert node.get_inputs_size() == MAX_PORTS
