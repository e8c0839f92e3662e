"""``Range`` (ge.ops.shape) with limits that are not finite numbers, or a length no dim can
hold: an ``InferError`` (a ``ValueError``) at the user's line, not Python's ``ValueError`` or
``OverflowError`` from converting NaN or infinity to an int."""

from __future__ import annotations

import math

import pytest

import ge.es
from ge.error import InferError
from ge.es import GraphBuilder


def range_of(start: float, limit: float, delta: float) -> ge.es.TensorHolder:
    b = GraphBuilder("g")
    return ge.es.Range(
        b.create_const_float(start), b.create_const_float(limit), b.create_const_float(delta)
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, math.nan, 1.0), r"limit must be a finite number, got nan"),
        ((0.0, math.inf, 1.0), r"limit must be a finite number, got inf"),
        ((-math.inf, 0.0, 1.0), r"start must be a finite number, got -inf"),
        ((0.0, 1.0, math.nan), r"delta must be a finite number, got nan"),
        ((0.0, 1.0, 0.0), r"delta must be non-zero"),
        ((0.0, 1e30, 1.0), r"the range has \d+ elements, more than a dim can hold"),
    ],
)
def test_bad_range_is_an_infer_error_naming_the_input(
    args: tuple[float, float, float], message: str
) -> None:
    with pytest.raises(InferError, match=r"Range\(.*\) at .*test_shape_range\.py:\d+: " + message):
        range_of(*args)


def test_a_sane_range_still_builds() -> None:
    assert range_of(0.0, 5.0, 2.0).shape == (3,)
