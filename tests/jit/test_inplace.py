"""In-place updates inside @ge.jit (ge.es._inplace) and write-back into the caller's arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError, GeValueError


def _same(fn: Callable[..., Any], *arrays: np.ndarray) -> None:
    """``fn`` jitted and in numpy, on copies: same result and same updated arguments."""
    mine = [a.copy() for a in arrays]
    ref = [a.copy() for a in arrays]
    got = ge.jit(fn)(*mine)
    want = fn(*ref)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    for m, r in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(m, r)


def _set_slices(x: Any) -> Any:
    x[1] = 5
    x[::-2] = 9
    x[1:4:2] = np.arange(2)
    return x * 1


def _set_nd(x: Any) -> Any:
    x[..., 0] = -1
    x[None, 1:, ::2] = 3.7  # a float into an int array: numpy truncates silently
    x[0, -1] = 42
    return x + 0


def _set_mask(x: Any) -> Any:
    x[x > 2] = 0
    x[np.array([True, False, True, False, True, False, True])] = 8
    return x * 1


def _set_int_array(x: Any) -> Any:
    x[[0, 2, 2]] = np.array([1, 2, 3])  # repeated index: the last write wins
    x[np.array([-1])] = 7
    return x * 1


def _augmented(x: Any, y: Any) -> Any:
    x += y
    x[1:3] *= 2
    x -= 1
    x /= 4
    x **= 2
    return x * 1


def _augmented_int(x: Any) -> Any:
    x += 3
    x //= 2
    x %= 5
    x[::2] *= -1
    return x * 1


def _fill_copyto(x: Any, y: Any) -> Any:
    out = np.empty_like(x)
    out[...] = y
    z = np.zeros_like(x)
    np.copyto(z, x)
    np.copyto(x, y, where=y > 0)
    z.fill(2.5)
    return out + z


def test_setitem_basic_keys() -> None:
    _same(_set_slices, np.arange(7, dtype=np.int32))
    _same(_set_slices, np.linspace(0, 1, 7))


def test_setitem_nd_odd_shapes() -> None:
    _same(_set_nd, np.arange(30, dtype=np.int64).reshape(2, 3, 5))
    _same(_set_nd, np.arange(15, dtype=np.float32).reshape(1, 3, 5))


def test_setitem_masks_and_int_arrays() -> None:
    _same(_set_mask, np.arange(7, dtype=np.float32))
    _same(_set_int_array, np.arange(5, dtype=np.int32))


def test_setitem_empty_selection_and_zero_size() -> None:
    def f(x: Any) -> Any:
        x[3:1] = 1
        x[...] = 2
        return x + 0

    _same(f, np.zeros(4, np.float32))
    _same(f, np.zeros((0, 3), np.float32))


def test_augmented_assignment() -> None:
    _same(_augmented, np.arange(6, dtype=np.float64), np.ones(6))
    _same(
        _augmented,
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.float32(2) * np.ones(3, np.float32),
    )
    _same(_augmented_int, np.arange(-4, 5, dtype=np.int32))


def test_fill_copyto_empty_like() -> None:
    _same(_fill_copyto, np.arange(5, dtype=np.float32), np.array([1, -1, 2, -2, 3], np.float32))


def test_aliases_see_the_update() -> None:
    def f(x: Any) -> Any:
        y = x
        x[0] = 10
        return y + 0

    _same(f, np.arange(3, dtype=np.float32))


def test_write_back_first_call_and_cache_hit() -> None:
    @ge.jit
    def f(x: Any, y: Any) -> Any:
        x[1:3] += y
        return x.sum()

    a = np.arange(5, dtype=np.float32)
    b = np.ones(2, np.float32)
    ref = a.copy()
    for _ in range(3):
        ref[1:3] += b
        np.testing.assert_allclose(f(a, b), ref.sum())
        np.testing.assert_array_equal(a, ref)
    info = f.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_write_back_nested_and_non_contiguous() -> None:
    @ge.jit
    def f(d: Any) -> Any:
        d["w"] *= 2
        return d["b"] + 0

    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    w = base[:, ::2]  # a non-contiguous view: written back through it
    out = f({"w": w, "b": np.ones(2)})
    np.testing.assert_array_equal(out, np.ones(2))
    expect = np.arange(12, dtype=np.float64).reshape(3, 4)
    expect[:, ::2] *= 2
    np.testing.assert_array_equal(base, expect)


def test_unmutated_arguments_are_not_written() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        return x + 1

    a = np.zeros(3, np.float32)
    a.flags.writeable = False
    np.testing.assert_array_equal(f(a), np.ones(3))


def test_non_writeable_argument() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        x[0] = 1
        return x * 1

    a = np.zeros(3, np.float32)
    a.flags.writeable = False
    with pytest.raises(GeValueError, match=r"argument x .*not writeable"):
        f(a)
    b = np.zeros(3, np.float32)
    f(b)
    b.flags.writeable = False
    with pytest.raises(GeValueError, match="argument x"):
        f(b)  # a cache hit checks too


def test_casting_error_wording() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        x += 1.5
        return x

    a = np.zeros(3, np.int32)
    with pytest.raises(TypeError) as numpy_error:
        a += 1.5
    with pytest.raises(GeTypeError) as ours:
        f(np.zeros(3, np.int32))
    assert str(ours.value) == str(numpy_error.value)


def test_copyto_casting_error() -> None:
    @ge.jit
    def f(x: Any, y: Any) -> Any:
        np.copyto(x, y)
        return x

    with pytest.raises(GeTypeError, match="according to the rule 'same_kind'"):
        f(np.zeros(3, np.int32), np.ones(3))


def test_broadcast_errors() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        x[0:2] = np.ones(3)
        return x

    with pytest.raises(GeValueError, match="could not broadcast"):
        f(np.zeros(4))

    @ge.jit
    def g(x: Any, y: Any) -> Any:
        x += y
        return x

    with pytest.raises(GeValueError, match="non-broadcastable output"):
        g(np.zeros(3), np.ones((2, 3)))


def test_view_write_propagates_or_raises() -> None:
    @ge.jit
    def f(x: Any) -> Any:
        y = x[0:2]
        y[:] = 1
        return x

    np.testing.assert_array_equal(f(np.zeros(4)), [1, 1, 0, 0])  # numpy's aliasing

    @ge.jit
    def split_then_write(x: Any) -> Any:
        a, _ = np.split(x, 2)  # numpy's views, not recorded as such: never silently lost
        a[:] = 1
        return x

    with pytest.raises(GeTypeError, match="view"):
        split_then_write(np.zeros(4))

    @ge.jit
    def g(x: Any) -> Any:
        y = np.copy(x[0:2])
        y[:] = 1
        return y

    np.testing.assert_array_equal(g(np.zeros(4)), np.ones(2))


def test_traced_int_index_assigns() -> None:
    # traced integer-array keys scatter (more cases: tests/jit/test_numpy_indexing.py)
    @ge.jit
    def f(x: Any, i: Any) -> Any:
        x[i] = 1
        return x

    np.testing.assert_array_equal(f(np.zeros(4), np.array([1])), [0, 1, 0, 0])


def test_traced_mask_with_other_indices_raises() -> None:
    @ge.jit
    def f(x: Any, m: Any) -> Any:
        x[m, 0] = 1
        return x

    with pytest.raises(GeTypeError, match="boolean mask"):
        f(np.zeros((2, 2)), np.array([True, False]))


def test_ge_py_holders_unchanged() -> None:
    builder = ge.es.GraphBuilder("g")
    x = builder.create_input(0, shape=[3], data_type=ge.graph.DataType.DT_FLOAT)
    with pytest.raises(TypeError, match="does not support item assignment"):
        x[0] = 1
    before = x
    x += 1  # Python falls back to x + 1 and rebinds the name only
    assert x is not before
    assert before._node.type == "Data"


def test_copy_method_then_slice_update_leaves_the_argument_alone() -> None:
    def stencil(u):
        out = u.copy()
        out[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return out

    u = np.arange(30, dtype=np.float32).reshape(5, 6)
    before = u.copy()
    np.testing.assert_allclose(ge.jit(stencil)(u), stencil(u), rtol=1e-6)
    assert np.array_equal(u, before)
