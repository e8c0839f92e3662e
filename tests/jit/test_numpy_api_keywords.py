"""numpy's keywords on the rules that once took ``**_`` and ignored them (``zeros_like``,
``ones_like``, ``full_like``, ``empty_like``, ``concatenate``, ``stack``, ``reshape``, ``clip``,
``copy``) or refused them all (``einsum``): what numpy honours (``dtype=``, ``shape=``,
``casting=``, ``order='C'``, ``min=``/``max=``, ``optimize=``) is honoured, ``order='F'`` is
refused saying so, and a keyword no rule takes raises ``GeTypeError`` naming it.

Each case runs two ways: calling the ``ge.es._numpy_api`` rule itself inside ``ge.jit`` (the
"rule" path), and calling ``np.<name>`` (the "numpy" path, through
``TensorHolder.__array_function__``). The numpy path is skipped for a name whose entry in
``tensor_holder``'s own table is still not this rule (that table comes first: see the
report of issue #16, H6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError, GeValueError
from ge.es import GraphBuilder, _numpy_api, tensor_holder
from ge.es.tensor_holder import TensorHolder


class _Via:
    """``via.zeros_like(x, ...)``: numpy's function, or the rule of ``_numpy_api``."""

    def __init__(self, direct: bool) -> None:
        self.direct = direct

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if not self.direct:
            return getattr(np, name)  # type: ignore[no-any-return]
        rule = _numpy_api.FUNCTIONS[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            flat = [a for v in args for a in (v if isinstance(v, (list, tuple)) else [v])]
            anchor = next(a for a in flat if isinstance(a, TensorHolder))
            return rule(anchor, *args, **kwargs)

        return call


def _routed(name: str) -> bool:
    return tensor_holder._FUNCTIONS.get(name) is _numpy_api.FUNCTIONS[name]


X = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 4
Y = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
INTS = np.arange(12, dtype=np.int32).reshape(3, 4)
XT = np.ascontiguousarray(X.T).T  # a non-contiguous view of X's values

# (id, numpy name, fn(np-or-rule, x, y, i), (inputs))
CASES: tuple[tuple[str, str, Callable[..., Any], tuple[np.ndarray, ...]], ...] = (
    ("zeros_like_dtype", "zeros_like", lambda n, x: n.zeros_like(x, dtype=np.int8), (X,)),
    ("zeros_like_shape", "zeros_like", lambda n, x: n.zeros_like(x, shape=(2, 5)), (X,)),
    ("zeros_like_order", "zeros_like", lambda n, x: n.zeros_like(x, order="C"), (XT,)),
    ("zeros_like_0d", "zeros_like", lambda n, x: n.zeros_like(x[0, 0], np.float64), (X,)),
    ("ones_like_bool", "ones_like", lambda n, x: n.ones_like(x, dtype=bool), (X,)),
    (
        "ones_like_shape",
        "ones_like",
        lambda n, x: n.ones_like(x, np.float16, "K", True, (4,)),
        (X,),
    ),
    ("ones_like_empty", "ones_like", lambda n, x: n.ones_like(x[:0], dtype=np.int64), (X,)),
    ("full_like_dtype", "full_like", lambda n, x: n.full_like(x, 7, np.int16, "A"), (X,)),
    ("full_like_shape", "full_like", lambda n, x: n.full_like(x, 2.5, shape=(2, 1, 3)), (X,)),
    (
        "concatenate_dtype",
        "concatenate",
        lambda n, x, y: n.concatenate([x, y], axis=1, dtype=np.float64),
        (X, Y),
    ),
    ("concatenate_none", "concatenate", lambda n, x, y: n.concatenate([x, y], None), (X, Y)),
    ("concatenate_promotes", "concatenate", lambda n, x, i: n.concatenate([x, i]), (X, INTS)),
    (
        "concatenate_unsafe",
        "concatenate",
        lambda n, x: n.concatenate([x, x], dtype=np.int32, casting="unsafe"),
        (XT,),
    ),
    (
        "stack_dtype",
        "stack",
        lambda n, x, y: n.stack([x, y], axis=-1, dtype=np.float16),
        (X, Y),
    ),
    ("stack_axis", "stack", lambda n, x, i: n.stack((x, i), 1), (X, INTS)),
    ("reshape", "reshape", lambda n, x: n.reshape(x, (2, -1)), (XT,)),
    ("reshape_order_c", "reshape", lambda n, x: n.reshape(x, shape=(12,), order="C"), (X,)),
    ("reshape_copy", "reshape", lambda n, x: n.reshape(x, (6, 2), copy=True), (X,)),
    ("clip_dtype", "clip", lambda n, x: n.clip(x, -1, 1, dtype=np.float64), (X,)),
    ("clip_min", "clip", lambda n, x: n.clip(x, min=0), (X,)),
    ("clip_max", "clip", lambda n, i: n.clip(i, max=5), (INTS,)),
    ("clip_int_to_float", "clip", lambda n, i: n.clip(i, 1.5, 3, dtype=np.float32), (INTS,)),
    ("clip_arrays", "clip", lambda n, x, y: n.clip(x, y, 1.0), (X, Y)),
    ("copy_order", "copy", lambda n, x: n.copy(x, order="C"), (XT,)),
    (
        "einsum_dtype",
        "einsum",
        lambda n, x, y: n.einsum("ij,kj->ik", x, y, dtype=np.float64),
        (X, Y),
    ),
    (
        "einsum_unsafe",
        "einsum",
        lambda n, x, y: n.einsum("ij,ij->j", x, y, dtype=np.int32, casting="unsafe"),
        (X, Y),
    ),
    (
        "einsum_optimize",
        "einsum",
        lambda n, x, y: n.einsum("ij,kj", x, y, optimize=True, order="C"),
        (XT, Y),
    ),
)


def _params(cases: tuple[Any, ...]) -> list[Any]:
    return [
        pytest.param(case, direct, id=f"{case[0]}-{'rule' if direct else 'numpy'}")
        for case in cases
        for direct in (True, False)
    ]


def _skip_unrouted(name: str, direct: bool) -> None:
    """``np.<name>`` must reach the rule these cases test, not another rule of that name."""
    assert direct or _routed(name), f"np.{name} does not reach the numpy rule family's rule"


@pytest.mark.parametrize(("case", "direct"), _params(CASES))
def test_matches_numpy(case: tuple[Any, ...], direct: bool) -> None:
    _, name, fn, inputs = case
    _skip_unrouted(name, direct)
    expected = fn(np, *inputs)
    actual = np.asarray(ge.jit(lambda *a: fn(_Via(direct), *a))(*inputs))
    assert (actual.shape, actual.dtype) == (expected.shape, expected.dtype)
    if actual.dtype.kind == "f":  # einsum may add in another order than numpy
        np.testing.assert_allclose(actual, expected, rtol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


def test_empty_like_is_zeros_of_the_asked_dtype_and_shape() -> None:
    out = ge.jit(lambda x: np.empty_like(x, np.int16, "C", True, (2, 2)))(X)
    assert (out.shape, out.dtype) == ((2, 2), np.int16)
    np.testing.assert_array_equal(out, 0)


BAD: tuple[tuple[str, str, Callable[..., Any], type[Exception], str], ...] = (
    ("zeros_like_F", "zeros_like", lambda n, x: n.zeros_like(x, order="F"), GeValueError, "'F'"),
    (
        "zeros_like_dtype",
        "zeros_like",
        lambda n, x: n.zeros_like(x, dtype="no"),
        GeTypeError,
        "dtype",
    ),
    (
        "ones_like_device",
        "ones_like",
        lambda n, x: n.ones_like(x, device="gpu"),
        GeValueError,
        "device",
    ),
    (
        "full_like_F",
        "full_like",
        lambda n, x: n.full_like(x, 1, order="F"),
        GeValueError,
        "C-ordered",
    ),
    (
        "concatenate_out",
        "concatenate",
        lambda n, x: n.concatenate([x, x], out=x),
        GeTypeError,
        "'out'",
    ),
    (
        "concatenate_same_kind",
        "concatenate",
        lambda n, x: n.concatenate([x, x], dtype=np.int32),
        GeTypeError,
        "according to the rule 'same_kind'",
    ),
    (
        "concatenate_no",
        "concatenate",
        lambda n, x: n.concatenate([x, x.astype(np.float16)], casting="no"),
        GeTypeError,
        "dtype('float16') to dtype('float32') according to the rule 'no'",
    ),
    (
        "concatenate_casting",
        "concatenate",
        lambda n, x: n.concatenate([x, x], casting="bogus"),
        GeValueError,
        "casting must be one of",
    ),
    (
        "concatenate_0d",
        "concatenate",
        lambda n, x: n.concatenate([x[0, 0]]),
        GeValueError,
        "zero-dim",
    ),
    (
        "concatenate_axis",
        "concatenate",
        lambda n, x: n.concatenate([x, x], 2),
        GeValueError,
        "axis 2",
    ),
    ("stack_shapes", "stack", lambda n, x: n.stack([x, x[:1]]), GeValueError, "same shape"),
    ("stack_out", "stack", lambda n, x: n.stack([x, x], out=x), GeTypeError, "'out'"),
    ("reshape_F", "reshape", lambda n, x: n.reshape(x, 12, order="F"), GeValueError, "order='C'"),
    ("reshape_A", "reshape", lambda n, x: n.reshape(x, 12, order="A"), GeValueError, "C-ordered"),
    ("clip_both", "clip", lambda n, x: n.clip(x, 0, 1, min=0), GeValueError, "forbidden"),
    ("clip_out", "clip", lambda n, x: n.clip(x, 0, 1, out=x), GeTypeError, "'out'"),
    ("clip_where", "clip", lambda n, x: n.clip(x, 0, 1, where=True), GeTypeError, "'where'"),
    ("clip_cast", "clip", lambda n, x: n.clip(x, 0, 1, dtype=np.int8), GeTypeError, "same_kind"),
    ("copy_F", "copy", lambda n, x: n.copy(x, order="F"), GeValueError, "order='F'"),
    (
        "einsum_safe",
        "einsum",
        lambda n, x: n.einsum("ij->i", x, dtype=np.int32),
        GeTypeError,
        "dtype('float32') to dtype('int32') according to the rule 'safe'",
    ),
    ("einsum_out", "einsum", lambda n, x: n.einsum("ij->i", x, out=x), GeTypeError, "'out'"),
    ("einsum_F", "einsum", lambda n, x: n.einsum("ij->i", x, order="F"), GeValueError, "'F'"),
)


@pytest.mark.parametrize(("case", "direct"), _params(BAD))
def test_bad_keywords(case: tuple[Any, ...], direct: bool) -> None:
    _, name, fn, error, text = case
    _skip_unrouted(name, direct)
    with pytest.raises(error) as info:
        ge.jit(lambda x: fn(_Via(direct), x))(X)
    assert text in str(info.value), str(info.value)
    assert f"np.{name}" in str(info.value), str(info.value)


def test_nothing_to_join_says_so() -> None:
    rule = _numpy_api.FUNCTIONS["concatenate"]
    with pytest.raises(GeValueError, match=r"np\.concatenate: need at least one array"):
        ge.jit(lambda x: rule(x, []))(X)


def test_an_es_holder_keeps_ge_py_rules_but_honours_dtype() -> None:
    b = GraphBuilder("join")
    x = b.create_input(0, shape=[2, 3])  # float32
    i = b.create_const_int64([1, 2, 3, 4, 5, 6], [2, 3])
    joined = _numpy_api.FUNCTIONS["concatenate"](x, [x, x], axis=0, dtype=np.float64)
    assert (joined.shape, joined.dtype) == ((4, 3), np.float64)
    zeros = _numpy_api.FUNCTIONS["zeros_like"](i, i, dtype=np.float16)
    assert (zeros.shape, zeros.dtype) == ((2, 3), np.float16)
