"""``ge.jit`` refuses bad input with GeErrors that name what is wrong (issue #12): bad
static/donate specs, calls that do not fit the function's signature, self-referencing pytrees,
and control flow whose condition is not one value or whose branches/body change shapes
(GE's While would read ``x < 10`` of a vector as "has elements" and loop forever)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeTypeError, GeValueError


def _add(x: Any, y: Any) -> Any:
    return x + y


X = np.ones(3, np.float32)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"static_argnums": 1.5}, "static_argnums must be an int or a sequence of ints"),
        ({"static_argnums": "0"}, "static_argnums must be an int or a sequence of ints"),
        ({"static_argnames": 3}, "static_argnames must be a str or a sequence of str"),
        ({"donate_argnums": object()}, "donate_argnums must be an int or a sequence of ints"),
    ],
)
def test_bad_static_and_donate_specs_are_type_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(GeTypeError, match=message):
        ge.jit(_add, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((X,), {}, "_add: missing a required argument: 'y'"),
        ((X, X, X), {}, "_add: too many positional arguments"),
        ((X, X), {"z": 1}, "_add: got an unexpected keyword argument 'z'"),
    ],
)
@pytest.mark.parametrize("how", ["call", "trace", "lower"])
def test_calls_that_do_not_fit_the_signature_name_the_function(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str, how: str
) -> None:
    jitted = ge.jit(_add)
    call = {"call": jitted, "trace": jitted.trace, "lower": jitted.lower}[how]
    with pytest.raises(GeTypeError, match=message):
        call(*args, **kwargs)


def test_a_self_referencing_argument_is_refused() -> None:
    loop: list[Any] = [X]
    loop.append(loop)
    with pytest.raises(GeValueError, match="contains itself"):
        ge.jit(lambda v: v[0])(loop)


def test_a_vector_loop_condition_is_refused_not_looped_forever() -> None:
    f = ge.jit(lambda x: ge.jit.while_loop(lambda a: a < 10, lambda a: a + 1, x))
    with pytest.raises(GeValueError, match=r"cond_fn's result must be a scalar .* shape \[3\]"):
        f(X)


def test_a_loop_body_must_keep_the_state_shape() -> None:
    f = ge.jit(
        lambda x: ge.jit.while_loop(lambda a: a.sum() < 10, lambda a: np.concatenate([a, a]), x)
    )
    with pytest.raises(GeTypeError, match="dtypes and shapes"):
        f(X)


def test_cond_needs_callables_a_scalar_pred_and_matching_branches() -> None:
    with pytest.raises(GeTypeError, match="true_fn must be callable, got int"):
        ge.jit(lambda x: ge.jit.cond(x.sum() > 0, 1, 2, x))(X)
    with pytest.raises(GeValueError, match=r"pred must be a scalar .* shape \[3\]"):
        ge.jit(lambda x: ge.jit.cond(x > 0, lambda a: a, lambda a: -a, x))(X)
    with pytest.raises(GeValueError, match="different structures, dtypes or shapes"):
        ge.jit(lambda x: ge.jit.cond(x.sum() > 0, lambda a: a, lambda a: a.sum(), x))(X)
    with pytest.raises(GeTypeError, match="body_fn must be callable"):
        ge.jit.while_loop(lambda a: a, None, X)  # type: ignore[arg-type]


def test_good_control_flow_still_runs() -> None:
    loop = ge.jit(lambda x: ge.jit.while_loop(lambda a: a.sum() < 10, lambda a: a + 1, x))
    np.testing.assert_array_equal(loop(X), np.full(3, 4, np.float32))
    pick = ge.jit(lambda x: ge.jit.cond(x.sum() > 0, lambda a: a, lambda a: -a, x))
    np.testing.assert_array_equal(pick(X), X)
    one = ge.jit(lambda x: ge.jit.cond(x[:1] > 0, lambda a: a * 2, lambda a: a, x))
    np.testing.assert_array_equal(one(X), X * 2)  # one element, of shape [1], is a predicate
