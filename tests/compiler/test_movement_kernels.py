"""The affine copy kernel's run-walking path (``ge.compiler.kernels.movement``): copies without
``mod``/``bound`` split over several blocks, each block starting mid-row and carrying its
odometer across dims, must match numpy for every layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge

SHAPE = (37, 41, 29)  # 43993 elements: more than one block, rows that blocks split


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.transpose(x, (2, 0, 1)),
        lambda x: x[1:-1:2, ::-3, 3:],
        lambda x: x[:, 5, ::2],
        lambda x: np.broadcast_to(x[:, :1, :], SHAPE) + 0 * x,
        lambda x: np.concatenate([x[:, :7], x[:, 7:]], axis=1),
        lambda x: x.reshape(1, 37, 1, 41, 29, 1).transpose(5, 4, 3, 2, 1, 0),
    ],
)
def test_multi_block_copies_match_numpy(fn: Callable[[Any], Any]) -> None:
    x = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    np.testing.assert_array_equal(np.asarray(ge.jit(fn)(x)), fn(x))


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.int64])
def test_every_element_size_is_moved_exactly(dtype: Any) -> None:
    x = (np.arange(np.prod(SHAPE)) % 120).astype(dtype).reshape(SHAPE)

    def fn(a: Any) -> Any:
        return a[::-1, 2:, ::3]

    np.testing.assert_array_equal(np.asarray(ge.jit(fn)(x)), fn(x))


def test_empty_copy_writes_nothing() -> None:
    x = np.zeros((0, 5), np.float32)

    def fn(a: Any) -> Any:
        return np.transpose(a) + 1

    out = ge.jit(fn)(x)
    assert np.asarray(out).shape == (5, 0)
