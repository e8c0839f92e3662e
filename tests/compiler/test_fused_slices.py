"""Slices read in place by a fused elementwise kernel (``ge.compiler.fuse`` moves a constant
StridedSlice that only the group reads into its body; ``ge.compiler.kernels.fused`` reads it as
a strided view with an offset): results match numpy, and the slices leave no copy task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.runtime.plan import KernelTask

Fn = Callable[[Any], Any]


def _stencil(u: Any) -> Any:
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def _lowered(fn: Fn, u: np.ndarray) -> tuple[str, list[str]]:
    jitted = ge.jit(fn)
    np.testing.assert_allclose(np.asarray(jitted(u)), fn(u), rtol=1e-6)
    lowered = jitted.lower(u)
    plan = lowered.plan
    assert all(isinstance(t, KernelTask) for t in plan.tasks), plan.tasks  # no host fallback
    return str(lowered.as_text()), [t.name for t in plan.tasks]


def _data(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(3).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(
    ("fn", "shape"),
    [
        (_stencil, (9, 7)),
        (_stencil, (300, 260)),  # several blocks
        (lambda u: u[::2, 1:] * 2 + u[1::2, :-1], (10, 6)),  # strided rows
        (lambda u: u[1:] - u[:-1], (50,)),  # rank 1: contiguous stretches
        (lambda u: u[1:, :] * 3 + u[:-1, :], (8, 5)),  # whole rows: one stretch each
        (lambda u: u[2] + u[3] * 2, (6, 9)),  # a shrunk axis
        (lambda u: u[1:-1, 1:-1, :] + u[:-2, 2:, :], (5, 6, 2)),  # rank 3
    ],
)
def test_slices_are_read_in_place(fn: Fn, shape: tuple[int, ...]) -> None:
    _, tasks = _lowered(fn, _data(shape))
    assert not any(name.startswith("StridedSlice") for name in tasks), tasks
    assert len(tasks) == 1


@pytest.mark.parametrize(
    "fn",
    [
        lambda u: u[:, ::-1] + u * 2,  # the last dim reversed
        lambda u: u[:, ::2] * 2 + 1,  # every other element
        lambda u: (u[:, 1] + 1) * u[:, 0],  # columns
    ],
)
def test_slices_not_walking_rows_stay_copies(fn: Fn) -> None:
    _, tasks = _lowered(fn, _data((4, 5)))
    assert any(name.startswith("StridedSlice") for name in tasks)


def test_slice_used_outside_the_group_stays_a_copy() -> None:
    def fn(u: Any) -> Any:
        s = u[1:, 1:]
        return s * 2 + 1, s

    jitted = ge.jit(fn)
    u = _data((5, 4))
    got = jitted(u)
    for a, e in zip(got, fn(u), strict=True):
        np.testing.assert_allclose(np.asarray(a), e, rtol=1e-6)
    assert any(t.name.startswith("StridedSlice") for t in jitted.lower(u).plan.tasks)


def test_slice_that_broadcasts_stays_a_copy() -> None:
    def fn(u: Any) -> Any:
        return u[1:2, :] + u  # (1, 5) broadcast against (4, 5)

    _, tasks = _lowered(fn, _data((4, 5)))
    assert any(name.startswith("StridedSlice") for name in tasks)


def test_source_read_whole_and_as_a_view() -> None:
    def fn(u: Any) -> Any:
        return u[:, 1:] * 2 + np.exp(u[:, 1:]) + u[:, :-1]

    _, tasks = _lowered(fn, _data((6, 7)))
    assert len(tasks) == 1

    def whole(u: Any) -> Any:
        return (u * 3 + 1)[1:] - u[:-1] + u[1:]

    u = _data((9, 4))
    np.testing.assert_allclose(np.asarray(ge.jit(whole)(u)), whole(u), rtol=1e-6)
