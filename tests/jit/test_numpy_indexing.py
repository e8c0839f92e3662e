"""numpy's flip, pad (reflect / symmetric / wrap), put/take_along_axis and traced integer-array
keys (``x[idx]``, ``x[idx] = v``, ``x[idx] += v``, ``x[i, idx] = v``) through ``@ge.jit``, against
numpy: values, dtype and shape, the caller's array written back, and bad input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeError, GeTypeError, GeValueError
from ge.es import _advanced_index, _inplace

RNG = np.random.default_rng(11)
X34 = RNG.normal(size=(3, 4)).astype(np.float32)
X345 = RNG.normal(size=(3, 4, 5)).astype(np.float32)


def _same(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def _check(fn: Callable[..., Any], *args: Any) -> None:
    """``ge.jit(fn)`` gives numpy's result, and writes back into its arguments as numpy does."""
    ours = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    theirs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    _same(ge.jit(fn)(*ours), fn(*theirs))
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


# --- np.flip --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "axis", [None, 0, -1, (0, 2), (-1, 1)], ids=lambda a: f"axis={a}".replace(" ", "")
)
def test_flip(axis: Any) -> None:
    _check(lambda x: np.flip(x, axis), X345)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float64"])
def test_flip_dtypes_scalar_empty_and_views(dtype: str) -> None:
    x = (RNG.normal(size=(4, 3)) * 5).astype(dtype)
    _check(lambda a: np.flip(a, 0), x)
    _check(np.flip, x.T)  # non-contiguous
    _check(np.flip, np.asarray(3, dtype))  # 0-d
    _check(lambda a: np.flip(a, 1), np.zeros((0, 2), dtype))


def test_flip_is_one_reverse_node() -> None:
    lowered = ge.jit(lambda x: np.flip(x, (0, 1))).lower(X34)
    types = [n.type for n in lowered.graph.get_direct_nodes()]
    assert types.count("ReverseV2") == 1 and "StridedSlice" not in types


# --- np.pad ---------------------------------------------------------------------------------------
WIDTHS = [1, (2, 3), ((1, 2), (3, 0)), ((0, 0), (9, 5)), 7]


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "wrap", "edge"])
@pytest.mark.parametrize("width", WIDTHS, ids=lambda w: str(w).replace(" ", ""))
def test_pad_modes(mode: str, width: Any) -> None:
    _check(lambda x: np.pad(x, width, mode=mode), X34)


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "wrap"])
def test_pad_odd_inputs(mode: str) -> None:
    _check(lambda x: np.pad(x, 2, mode=mode), np.arange(5, dtype=np.int32))
    _check(lambda x: np.pad(x, 3, mode=mode), np.array([[4]], np.int64))  # size-1 axes
    _check(lambda x: np.pad(x, ((1, 1), (0, 0)), mode=mode), np.zeros((2, 0), np.float32))
    _check(lambda x: np.pad(x, 1, mode=mode), np.asarray(2.5, np.float32))  # 0-d
    _check(lambda x: np.pad(x, ((1, 2), (2, 1)), mode=mode), X34.T)  # non-contiguous
    _check(lambda x: np.pad(x, 1, mode=mode, **_even(mode)), X34 > 0)


def _even(mode: str) -> dict[str, str]:
    return {"reflect_type": "even"} if mode != "wrap" else {}


def test_pad_within_one_reflection_is_one_mirror_pad() -> None:
    lowered = ge.jit(lambda x: np.pad(x, ((2, 1), (3, 3)), mode="reflect")).lower(X34)
    types = [n.type for n in lowered.graph.get_direct_nodes()]
    assert types.count("MirrorPad") == 1 and "GatherV2" not in types


# --- traced integer-array keys -----------------------------------------------------------------
def _set(key: Callable[[Any], Any], value: Any) -> Callable[[Any, Any], Any]:
    def fn(x: Any, i: Any) -> Any:
        x[key(i)] = value
        return x

    return fn


def _add(key: Callable[[Any], Any], value: Any) -> Callable[[Any, Any], Any]:
    def fn(x: Any, i: Any) -> Any:
        x[key(i)] += value
        return x

    return fn


IDX = np.array([0, 2, 0, -1])  # duplicates and a negative index
I2X = np.array([2, -1])
SET_CASES = [
    ("x[i]=s", X34, _set(lambda i: i, 5.0), IDX),
    ("x[i]=row", X34, _set(lambda i: i, np.arange(4, dtype=np.float32)), IDX),
    ("x[i]=col", X34, _set(lambda i: i, np.arange(4, dtype=np.float32)[:, None]), IDX),
    ("x[i]+=1", X34, _add(lambda i: i, 1.0), IDX),
    ("x[1,i]=s", X34, _set(lambda i: (1, i), -3.0), np.array([0, 3, -2])),
    ("x[:,i]=v", X34, _set(lambda i: (slice(None), i), np.ones((3, 1, 2))), np.array([[0, 1]])),
    ("x[i,:,i]", X345, _set(lambda i: (i, slice(1, 3), i), 0.0), np.array([1, 2])),
    ("x[...,i]", X345, _set(lambda i: (Ellipsis, i), 7.0), np.array([4, 0])),
    ("x[::-1,i,1:]", X345, _set(lambda i: (slice(None, None, -1), i, slice(1, None)), 2.0), IDX),
    ("x[i] int32", X34.astype(np.int32) * 0, _set(lambda i: i, 2.7), np.array([1], np.int32)),
    ("x[i] bool", X34 > 0, _set(lambda i: (i, 0), True), np.array([2, 1])),
    ("x[i] empty", X34, _set(lambda i: i, 1.0), np.zeros(0, np.int64)),
    ("x[2d i]", X34, _add(lambda i: i, 1.0), np.array([[0, 1], [1, 1]])),
    ("x[None,i]", X34, _set(lambda i: (None, i), 0.0), IDX),
    ("x[:,i,None]=v", X34, _set(lambda i: (slice(None), i, None), np.ones((3, 1, 1))), I2X),
    ("x[i,None,i]=v", X345, _set(lambda i: (i, None, i), np.arange(5.0)), I2X),
    ("x[...,None,i]+=", X345, _add(lambda i: (Ellipsis, None, i), 1.0), I2X),
    ("x[None,i] empty", X34, _set(lambda i: (None, i), 1.0), np.zeros(0, np.int64)),
]


@pytest.mark.parametrize(
    ("x", "fn", "idx"), [c[1:] for c in SET_CASES], ids=[c[0] for c in SET_CASES]
)
def test_traced_index_setitem(x: np.ndarray, fn: Callable[..., Any], idx: np.ndarray) -> None:
    _check(fn, x, idx)


def test_traced_index_add_applies_once_per_index() -> None:
    # numpy: x[[0, 0]] += 1 adds 1 once (gather, add, scatter), unlike np.add.at
    _check(_add(lambda i: i, 1.0), np.zeros(3, np.float32), np.array([0, 0, 0]))


def test_traced_index_on_non_contiguous_argument() -> None:
    _check(_set(lambda i: (slice(None), i), 0.0), np.asfortranarray(X34), np.array([3, 1]))


@pytest.mark.parametrize(
    "key",
    [
        lambda i: (i,),
        lambda i: (1, i),
        lambda i: (slice(None), i),
        lambda i: (i, slice(1, 3), 2),
        lambda i: (i, Ellipsis, i),
        lambda i: (slice(None, None, -1), i, slice(0, 5, 2)),
    ],
    ids=["i", "1,i", ":,i", "i,1:3,2", "i,...,i", "::-1,i,::2"],
)
def test_advanced_gather_reads_like_numpy(key: Callable[[Any], Any]) -> None:
    idx = np.array([0, -1, 2])
    _same(ge.jit(lambda x, i: _advanced_index.gather(x, key(i)))(X345, idx), X345[key(idx)])


def test_traced_index_read() -> None:
    _check(lambda x, i: x[i], X34, np.array([[2, -1], [0, 0]]))
    _check(lambda x, i: x[:, i], X34, np.array([3, 0]))


# --- np.put_along_axis --------------------------------------------------------------------------
def _put(axis: Any, values: Any) -> Callable[[Any, Any], Any]:
    def fn(x: Any, i: Any) -> Any:
        np.put_along_axis(x, i, values, axis=axis)
        return x

    return fn


@pytest.mark.parametrize(
    ("axis", "values", "idx"),
    [
        (1, 9.0, np.array([[0], [3], [1]])),
        (-1, np.array([[1.0], [2.0], [3.0]]), np.array([[0], [3], [-1]])),
        (0, np.arange(4.0), np.array([[2, 0, 1, 1]])),
        (None, 7.0, np.array([0, 11, 5])),
    ],
    ids=["axis1", "neg-axis", "axis0", "flat"],
)
def test_put_along_axis_traced_indices(axis: Any, values: Any, idx: np.ndarray) -> None:
    _check(_put(axis, values), X34, idx)


def test_put_along_axis_constant_indices_and_traced_values() -> None:
    idx = np.argsort(X34, axis=1)[:, :2]

    def fn(x: Any, v: Any) -> Any:
        np.put_along_axis(x, idx, v, axis=1)
        return x

    _check(fn, X34, np.array([[5.0], [6.0], [7.0]], np.float32))


@pytest.mark.parametrize(
    ("x", "idx", "axis"),
    [
        (X34, np.array([[0], [3], [-1]]), 1),
        (X34, np.array([[2, 0, 1, 1]]), 0),
        (X345, np.array([[[4, 0]], [[1, 1]], [[-5, 2]]]), -1),
        (X34, np.array([5, 0, -1]), None),
        (X34 > 0, np.zeros((3, 0), np.int64), 1),
    ],
    ids=["axis1", "axis0-broadcast", "3d-neg", "flat", "empty-bool"],
)
def test_take_along_axis_traced_indices(x: np.ndarray, idx: np.ndarray, axis: Any) -> None:
    _check(lambda a, i: np.take_along_axis(a, i, axis), x, idx)


# --- bad input ------------------------------------------------------------------------------------
BAD: list[tuple[str, Callable[..., Any], tuple[Any, ...], type[Exception], str]] = [
    ("float index", _set(lambda i: i, 0.0), (X34, np.array([0.5])), GeTypeError, "integer"),
    ("too many", _set(lambda i: (0, 1, i), 0.0), (X34, IDX), GeValueError, "too many indices"),
    (
        "broadcast",
        _set(lambda i: i, np.ones(3)),
        (X34, np.array([0, 1])),
        GeValueError,
        "could not broadcast input array from shape \\(3,\\) into shape \\(2, 4\\)",
    ),
    (
        "index shapes",
        _set(lambda i: (i, np.array([0, 1, 2])), 0.0),
        (X34, np.array([0, 1])),
        GeValueError,
        "could not be broadcast together",
    ),
    (
        "const index oob",
        _set(lambda i: (i, np.array([7])), 0.0),
        (X34, np.array([0])),
        GeValueError,
        "index 7 is out of bounds for axis 1 with size 4",
    ),
    (
        "traced index oob",
        _set(lambda i: i, 0.0),
        (X34, np.array([1, 3])),
        GeError,
        "TensorScatterUpdate input 'indices' holds 3 at",
    ),
    (
        "take ndim",
        lambda x, i: np.take_along_axis(x, i, 1),
        (X34, np.array([0])),
        GeValueError,
        "same number of dimensions",
    ),
    ("put ndim", _put(1, 0.0), (X34, np.array([0])), GeValueError, "same number of dimensions"),
    ("pad width", lambda x: np.pad(x, ((1, 2, 3),), "reflect"), (X34,), GeValueError, "2 dims"),
    ("put axis", _put(2, 0.0), (X34, np.array([[0]])), GeValueError, "axis 2 is out of bounds"),
    (
        "put into numpy",
        lambda x, v: np.put_along_axis(np.zeros((2, 2)), np.array([[0]]), v, 1),
        (X34, np.float32(1)),
        GeTypeError,
        "must be a traced value",
    ),
]


@pytest.mark.parametrize(
    ("fn", "args", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input(
    fn: Callable[..., Any], args: tuple[Any, ...], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ge.jit(fn)(*[np.array(a, copy=True) for a in args])


# --- views: writes through recorded views reach their base, and back ---------------------------
def _view(x: Any, key: Any) -> Any:
    """``x[key]``, recorded as a view (what TensorHolder's basic indexing does inside ge.jit);
    under numpy the record is inert and ``x[key]`` is numpy's own view."""
    y = x[key]
    _inplace.note_view(y, x, key)
    return y


def _view_add(x: Any) -> Any:
    y = _view(x, slice(0, 2))
    y += 1
    return x


def _view_setitem_and_base_write(x: Any) -> Any:
    y = _view(x, (slice(None), 1))
    y[0] = 7
    x[2, 1] += 100  # the base changes: the view sees it
    return x, y * 1


def _view_of_view(x: Any) -> Any:
    y = _view(x, slice(1, None))
    z = _view(y, (0, slice(None, None, 2)))
    z[:] = -1
    y += 0.5
    return x, y * 1, z * 1


@pytest.mark.parametrize("fn", [_view_add, _view_setitem_and_base_write, _view_of_view])
def test_view_writes_propagate(fn: Callable[..., Any]) -> None:
    _check(fn, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_view_augmented_assignment_writes_once() -> None:
    def fn(x: Any) -> Any:
        key = slice(0, 2)
        tmp = _view(x, key)
        tmp += 1
        x[key] = tmp  # what Python does after x[0:2] += 1
        return x

    _check(fn, X34)
    lowered = ge.jit(fn).lower(X34)
    types = [n.type for n in lowered.graph.get_direct_nodes()]
    assert types.count("SelectV2") + types.count("GatherV2") <= 2, types


def _plain_view_add(x: Any) -> Any:
    y = x[0:2]
    y += 1
    y[0, 0] = -5
    return x, y * 1


def test_plain_slice_views_follow_numpy() -> None:
    _check(_plain_view_add, np.arange(12, dtype=np.float32).reshape(3, 4))


def _views_chained(x: Any) -> Any:
    y = x[1:]
    z = y[0]  # an int index of a 2-d array: a view
    z += 1
    return x, y * 1, z * 1


def _views_with_steps(x: Any) -> Any:
    y = x[::2]
    z = y[:, ::-2]
    z[0] = 9
    y[-1, 1:] -= 3
    return x, z * 1


def _int_index_row_view(x: Any) -> Any:
    r = x[1]
    r *= 2
    return x


def _ellipsis_column_view(x: Any) -> Any:
    c = x[..., 0]
    c[:] = 0
    return x


def _new_axis_view(x: Any) -> Any:
    e = x[None]
    e[0, 0] = 3
    return x, e * 1


def _base_write_seen_by_view(x: Any) -> Any:
    y = x[0]
    x += 1
    x[0, 1] = -1
    return y * 1


def _scalar_is_a_copy(x: Any) -> Any:
    s = x[1, 2]  # one int per dim: numpy's scalar, not a view
    s += 1
    return x, s


def _fancy_read_is_a_copy(x: Any) -> Any:
    y = x[[0, 2]]
    y += 1
    y[0, 0] = 5
    z = x[x.shape[0] - 1, [1, 1]]
    z[:] = 7
    return x, y, z


@pytest.mark.parametrize(
    "fn",
    [
        _views_chained,
        _views_with_steps,
        _int_index_row_view,
        _ellipsis_column_view,
        _new_axis_view,
        _base_write_seen_by_view,
        _scalar_is_a_copy,
        _fancy_read_is_a_copy,
    ],
)
def test_views_and_copies_follow_numpy(fn: Callable[..., Any]) -> None:
    _check(fn, np.arange(12, dtype=np.float32).reshape(3, 4))


# --- mixed advanced reads: every key numpy calls advanced, constant index arrays --------------
I2 = np.array([1, 0])
READS: list[tuple[str, Callable[[Any], Any]]] = [
    ("x[i,idx]", lambda x: x[1, I2]),
    ("x[idx,1:3]", lambda x: x[I2, 1:3]),
    ("x[idx1,idx2]", lambda x: x[I2, np.array([2, -1])]),
    ("x[:,idx,None]", lambda x: x[:, I2, None]),
    ("x[idx,None,idx]", lambda x: x[I2, None, I2]),
    ("x[idx,:,i] separated", lambda x: x[I2, :, 1]),
    ("x[i,:,idx] separated", lambda x: x[1, :, I2]),
    ("x[:,i,idx] adjacent", lambda x: x[:, 1, I2]),
    ("x[...,idx]", lambda x: x[..., [-1, 0, 0]]),
    ("broadcast", lambda x: x[I2[:, None], :, np.array([0, 1, 3])[None, :]]),
    ("2-d idx", lambda x: x[np.array([[0, 1], [1, 1]])]),
    ("empty idx", lambda x: x[np.zeros(0, np.int64), 1]),
    ("empty list", lambda x: x[:, []]),
    ("list of lists", lambda x: x[[[0], [1]], [0, 2]]),
    ("tuple item", lambda x: x[(0, 1), 1]),
    ("mask", lambda x: x[np.array([True, False])]),
    ("mask 2-d", lambda x: x[np.array([[True, False, True, True], [False, False, True, False]])]),
    ("mask,None", lambda x: x[None, np.array([False, True]), ::2]),
    ("idx,mask", lambda x: x[I2, np.array([True, False, False, True])]),
    ("0-d idx", lambda x: x[np.array(1), 2]),
    ("neg step,idx", lambda x: x[::-1, I2, 1:]),
]


@pytest.mark.parametrize("key", [r[1] for r in READS], ids=[r[0] for r in READS])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_advanced_reads_match_numpy(key: Callable[[Any], Any], dtype: Any) -> None:
    _check(key, (X345[:2] * 10).astype(dtype))


@pytest.mark.parametrize(
    ("x", "key"),
    [
        (np.zeros((0, 3), np.float32), lambda x: x[:, [2, 0]]),
        (np.zeros((3, 0), np.float32), lambda x: x[[2, -3]]),
        (np.zeros((0,), np.float32), lambda x: x[[]]),
        (np.zeros((2, 0, 3), np.float32), lambda x: x[[1], :, [0]]),
        (X34.T, lambda x: x[[3, 1], 1:]),  # non-contiguous
    ],
    ids=["0-size dim0", "0-size dim1", "empty 1-d", "0-size middle", "transposed"],
)
def test_advanced_reads_odd_shapes(x: np.ndarray, key: Callable[[Any], Any]) -> None:
    _check(key, x)


TRACED_READS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("x[i,idx]", lambda x, i: x[1, i]),
    ("x[idx,1:3]", lambda x, i: x[i, 1:3]),
    ("x[idx,idx2]", lambda x, i: x[i, I2[:, None]]),
    ("x[:,idx,None]", lambda x, i: x[:, i, None]),
    ("x[idx,:,i]", lambda x, i: x[i, :, -1]),
    ("x[...,idx]", lambda x, i: x[..., i]),
]


@pytest.mark.parametrize("key", [r[1] for r in TRACED_READS], ids=[r[0] for r in TRACED_READS])
def test_traced_advanced_reads_match_numpy(key: Callable[[Any, Any], Any]) -> None:
    _check(key, X345[:2], np.array([1, -2]))


def test_single_array_key_is_one_gather() -> None:
    types = [n.type for n in ge.jit(lambda x: x[I2, 1:3]).lower(X34).graph.get_direct_nodes()]
    assert types.count("GatherV2") == 1 and "GatherNd" not in types, types


READ_ERRORS: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    (
        "oob",
        lambda x: x[:, [0, 4]],
        GeValueError,
        "index 4 is out of bounds for axis 1 with size 4",
    ),
    (
        "oob neg",
        lambda x: x[[-4], 0],
        GeValueError,
        "index -4 is out of bounds for axis 0 with size 3",
    ),
    (
        "oob int",
        lambda x: x[[0], 9],
        GeValueError,
        "index 9 is out of bounds for axis 1 with size 4",
    ),
    ("oob basic", lambda x: x[3], GeValueError, "index 3 is out of bounds for axis 0 with size 3"),
    (
        "oob ...",
        lambda x: x[..., -5],
        GeValueError,
        "index -5 is out of bounds for axis 1 with size 4",
    ),
    ("float", lambda x: x[[0.5]], GeTypeError, "must be of integer \\(or boolean\\) type"),
    ("shapes", lambda x: x[[0, 1], [0, 1, 2]], GeValueError, "could not be broadcast together"),
    ("too many", lambda x: x[[0], 0, 0], GeValueError, "too many indices"),
    (
        "mask shape",
        lambda x: x[np.array([True, False])],
        GeValueError,
        "boolean index did not match",
    ),
    ("traced mask", lambda x: x[x > 0], GeValueError, "np.where\\(mask, x, fill\\)"),
    ("bool scalar", lambda x: x[True], GeTypeError, "boolean scalar"),
    ("two ...", lambda x: x[..., [0], ...], GeValueError, "single ellipsis"),
]


@pytest.mark.parametrize(
    ("key", "error", "message"), [r[1:] for r in READ_ERRORS], ids=[r[0] for r in READ_ERRORS]
)
def test_advanced_read_errors(
    key: Callable[[Any], Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ge.jit(key)(X34)


def test_traced_index_out_of_range_is_refused_when_run() -> None:
    with pytest.raises(GeError, match="holds 3 at"):
        ge.jit(lambda x, i: x[i, 1:])(X34, np.array([0, 3]))


def test_traced_0d_index_reads_a_copy() -> None:
    def fn(x: Any, i: Any) -> Any:
        r = x[i]  # numpy: a 0-d integer array index is advanced, a copy
        r += 1
        s = x[1]  # a static int: a view
        s[0] = -1
        return x, r

    _check(fn, np.arange(12, dtype=np.float32).reshape(3, 4), np.array(-2))


def test_many_live_views_all_see_every_write() -> None:
    def fn(x: Any) -> Any:
        rows = [x[i] for i in range(x.shape[0])]
        cols = [x[:, j] for j in range(x.shape[1])]
        for i in range(x.shape[0]):
            x[i, i % x.shape[1]] = -float(i)
        cols[1] += 0.5  # a write through one view reaches the base and the other views
        return x, np.stack(rows), np.stack(cols)

    _check(fn, np.arange(24, dtype=np.float32).reshape(6, 4))
