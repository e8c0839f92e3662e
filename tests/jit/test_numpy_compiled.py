"""Every numpy name ``ge.jit.numpy_support()`` lists as supported runs compiled: after warm-up
(``.lower()`` waits for the kernels), the plan of one representative call has no ``reference``
host task (an op's numpy reference run inside the plan, ``ge.compiler.lower._reference_task``),
in it or in any sub-plan.

The call is made up from the row (``_call``): a ufunc on inputs of a dtype it takes, a ufunc
method as numpy users call it, an operator's own expression, a function or method from the
first of a few argument lists numpy itself accepts, with ``_CALLS`` for the names none of those
fit. Names whose ops still have no kernel are listed in ``NEED_KERNELS`` (they are expected to
fall back, and the test fails when one no longer does, so the list stays true).

Run ``python tests/jit/test_numpy_compiled.py`` for the report (names falling back, and why).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ge
from ge.runtime.plan import PYTHON_TASK, HostTask, Plan

Call = tuple[Callable[..., Any], tuple[Any, ...]]

_RNG = np.random.default_rng(16)
_X = (_RNG.random((3, 4)) * 0.8 + 0.1).astype(np.float32)  # in (0.1, 0.9): arcsin & co.
_Y = (_RNG.random((3, 4)) * 0.8 + 0.1).astype(np.float32)
_I = _RNG.integers(1, 7, (3, 4)).astype(np.int32)
_J = _RNG.integers(1, 3, (3, 4)).astype(np.int32)
_B = _RNG.random((3, 4)) < 0.5
_C = _RNG.random((3, 4)) < 0.5
_SQUARE = (_RNG.random((4, 4)) + 4 * np.eye(4)).astype(np.float32)

# ufuncs on integers, on booleans, on (float, int)
_INT_UFUNCS = frozenset(
    {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "gcd", "lcm", "left_shift"}
    | {"right_shift"}
)
_BOOL_UFUNCS = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})
_OPERANDS: dict[str, tuple[Any, Any]] = {"ldexp": (_X, _J), "matmul": (_X, _X.T.copy())}


def _setitem(x: Any, y: Any) -> Any:
    x[1:, :2] = y[:2, :2]
    return x


def _matmul_in_place(x: Any, y: Any) -> Any:
    x @= y
    return x


# calls no generic argument list fits (keyed by the row's name)
_CALLS: dict[str, Call] = {
    "numpy.allclose": (np.allclose, (_X, _Y)),
    **{
        f"numpy.{name}": (lambda x, y, name=name: getattr(np, name)([x, y]), (_X, _Y))
        for name in ("concatenate", "stack", "hstack", "vstack", "dstack", "column_stack")
    },
    "numpy.row_stack": (lambda x, y: np.vstack([x, y]), (_X, _Y)),  # a deprecated alias
    "numpy.cumulative_sum": (lambda x: np.cumulative_sum(x, axis=1), (_X,)),
    "numpy.cumulative_prod": (lambda x: np.cumulative_prod(x, axis=1), (_X,)),
    "numpy.expand_dims": (lambda x: np.expand_dims(x, 1), (_X,)),
    "numpy.array_equal": (np.array_equal, (_X, _Y)),
    "numpy.array_split": (lambda x: np.array_split(x, 2, axis=1), (_X,)),
    "numpy.split": (lambda x: np.split(x, 2, axis=1), (_X,)),
    "numpy.broadcast_to": (lambda x: np.broadcast_to(x, (2, 3, 4)), (_X,)),
    "numpy.copyto": (lambda x, y: (np.copyto(x, y), x)[1], (_X.copy(), _Y)),
    "numpy.einsum": (lambda x, y: np.einsum("ij,kj->ik", x, y), (_X, _Y)),
    "numpy.full_like": (lambda x: np.full_like(x, 2.5), (_X,)),
    "numpy.linalg.cholesky": (lambda a: np.linalg.cholesky(a @ a.T), (_SQUARE,)),
    "numpy.linalg.solve": (np.linalg.solve, (_SQUARE, _SQUARE[:, :2].copy())),
    "numpy.linalg.outer": (np.linalg.outer, (_X[0], _Y[0])),
    "numpy.linalg.tensordot": (lambda x, y: np.linalg.tensordot(x, y.T, axes=1), (_X, _Y)),
    "numpy.tensordot": (lambda x, y: np.tensordot(x, y.T, axes=1), (_X, _Y)),
    "numpy.linalg.matmul": (np.linalg.matmul, (_X, _Y.T.copy())),
    "numpy.dot": (np.dot, (_X, _Y.T.copy())),
    "numpy.pad": (lambda x: np.pad(x, 1, mode="reflect"), (_X,)),
    "numpy.put_along_axis": (
        lambda x, i: (np.put_along_axis(x, i, 0.0, axis=1), x)[1],
        (_X.copy(), np.argsort(_X, axis=1)[:, :1]),
    ),
    "numpy.take_along_axis": (
        lambda x, i: np.take_along_axis(x, i, axis=1),
        (_X, np.argsort(_X, axis=1)),
    ),
    "numpy.take": (lambda x: np.take(x, [2, 0], axis=1), (_X,)),
    "numpy.repeat": (lambda x: np.repeat(x, 2, axis=0), (_X,)),
    "numpy.reshape": (lambda x: np.reshape(x, (4, 3)), (_X,)),
    "numpy.select": (lambda x, y: np.select([x > 0.5, y > 0.5], [x, y], 0.0), (_X, _Y)),
    "numpy.where": (lambda x, y: np.where(x > y, x, y), (_X, _Y)),
    "numpy.tile": (lambda x: np.tile(x, (2, 1)), (_X,)),
    "numpy.moveaxis": (lambda x: np.moveaxis(x, 0, 1), (_X,)),
    "numpy.swapaxes": (lambda x: np.swapaxes(x, 0, 1), (_X,)),
    "numpy.argpartition": (lambda x: np.argpartition(x, 1, axis=1), (_X,)),
    "numpy.partition": (lambda x: np.partition(x, 1, axis=1), (_X,)),
    "numpy.percentile": (lambda x: np.percentile(x, 30.0, axis=1), (_X,)),
    "numpy.nanpercentile": (lambda x: np.nanpercentile(x, 30.0, axis=1), (_X,)),
    "numpy.quantile": (lambda x: np.quantile(x, 0.3, axis=1), (_X,)),
    "numpy.nanquantile": (lambda x: np.nanquantile(x, 0.3, axis=1), (_X,)),
    "numpy.roll": (lambda x: np.roll(x, 1, axis=1), (_X,)),
    "numpy.isclose": (np.isclose, (_X, _Y)),
    "numpy.ndarray.argpartition": (lambda x: x.argpartition(1, axis=1), (_X,)),
    "numpy.ndarray.astype": (lambda x: x.astype(np.float64), (_X,)),
    "numpy.ndarray.fill": (lambda x: (x.fill(0.5), x)[1], (_X.copy(),)),
    "numpy.ndarray.repeat": (lambda x: x.repeat(2, axis=1), (_X,)),
    "numpy.ndarray.reshape": (lambda x: x.reshape(6, 2), (_X,)),
    "numpy.ndarray.swapaxes": (lambda x: x.swapaxes(0, 1), (_X,)),
    "numpy.ndarray.take": (lambda x: x.take([1, 0], axis=0), (_X,)),
    "numpy.ndarray.dot": (lambda x, y: x.dot(y.T), (_X, _Y)),
    "numpy.ndarray.clip": (lambda x: x.clip(0.2, 0.6), (_X,)),
    "numpy.clip": (lambda x: np.clip(x, 0.2, 0.6), (_X,)),
    "numpy.ndarray.nonzero": (lambda b: b.nonzero(), (_B,)),
    "numpy.ndarray.T": (lambda x: x.T + 0.0, (_X,)),
    "x[k]": (lambda x: x[1:, ::2], (_X,)),
    "x[k] = v": (_setitem, (_X.copy(), _Y)),
    "x @ y": (lambda x, y: x @ y.T, (_X, _Y)),
    "x @= y": (_matmul_in_place, (_SQUARE.copy(), _SQUARE)),
}


def _ufunc_operands(name: str, count: int) -> tuple[Any, ...]:
    if name in _OPERANDS:
        return _OPERANDS[name][:count]
    if name in _INT_UFUNCS:
        return (_I, _J)[:count]
    if name in _BOOL_UFUNCS:
        return (_B, _C)[:count]
    return (_X, _Y)[:count]


def _ufunc_call(name: str) -> Call:
    ufunc = getattr(np, name)
    return ufunc, _ufunc_operands(name, ufunc.nin)


def _method_call(name: str) -> Call | None:
    """The ufunc method on the first operands numpy takes it on: the ufunc's own, else bool
    (comparisons reduce only booleans), else int32 (``ldexp.reduce``)."""
    ufunc_name, method = name.split(".")
    ufunc = getattr(np, ufunc_name)
    fn: Callable[..., Any]
    if method == "outer":
        fn = lambda x, y: ufunc.outer(x[0], y[0])  # noqa: E731
    elif method == "accumulate":
        fn = lambda x: ufunc.accumulate(x, axis=1)  # noqa: E731
    else:
        fn = lambda x: ufunc.reduce(x, axis=1)  # noqa: E731
    count = 2 if method == "outer" else 1
    candidates = [_ufunc_operands(ufunc_name, 2), (_B, _C), (_I, _J)]
    return _first_accepted(fn, [c[:count] for c in candidates])


def _first_accepted(fn: Callable[..., Any], candidates: list[tuple[Any, ...]]) -> Call | None:
    """``fn`` with the first argument list numpy accepts, or ``None`` when it takes none."""
    for args in candidates:
        try:
            with np.errstate(all="ignore"):
                fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        except Exception:
            continue
        return fn, args
    return None


def _operator_call(expression: str) -> Call:
    """An operator row's own expression on ``x`` and ``y``; statements (``x += y``) rebind
    ``x`` and return it."""
    ints = any(op in expression for op in ("&", "|", "^", "<<", ">>", "~", "//", "%"))
    x, y = (_I.copy(), _J) if ints else (_X.copy(), _Y)
    if "=" in expression and not any(c in expression for c in ("==", "<=", ">=", "!=")):
        code = compile(f"def f(x, y):\n    {expression}\n    return x\n", "<operator>", "exec")
    elif expression == "len(x)":
        code = compile("def f(x, y):\n    return x[: len(x)]\n", "<operator>", "exec")
    else:
        code = compile(f"def f(x, y):\n    return {expression}\n", "<operator>", "exec")
    scope: dict[str, Any] = {}
    exec(code, scope)
    return scope["f"], (x, y)


def _generic_call(fn: Callable[..., Any]) -> Call | None:
    """The first argument list numpy accepts for ``fn``: ``(x)``, then ``(x, y)``."""
    return _first_accepted(fn, [(_X,), (_X, _Y)])


def _call(row: Any) -> Call | None:
    if row.name in _CALLS:
        return _CALLS[row.name]
    if row.kind == "operator":
        return _operator_call(row.name)
    name = row.name.removeprefix("numpy.")
    if row.kind == "ufunc":
        return _ufunc_call(name)
    if row.kind == "ufunc method":
        return _method_call(name)
    if row.kind == "function":
        module, _, attr = row.name.rpartition(".")
        return _generic_call(getattr(sys.modules[module], attr))
    if row.kind == "method":
        method = row.name.removeprefix("numpy.ndarray.")
        return _generic_call(lambda x, *rest: getattr(x, method)(*rest))
    return None  # attributes other than T are Python values: no graph


def _fallbacks(plan: Plan | None) -> list[str]:
    """The op types of the plan's reference host tasks (sub-plans included)."""
    if plan is None:
        return []
    found = []
    for task in plan.tasks:
        if isinstance(task, HostTask) and task.op in ("reference", PYTHON_TASK):
            found.append(str(task.params.get("op_type", task.name)))
    for sub in plan.subplans:
        found += _fallbacks(sub)
    return found


# Supported rows no call can run compiled, and why (checked: the call raises this).
REFUSED = {
    "numpy.ndarray.nonzero": "its output size depends on the values",
}


def check(row: Any) -> tuple[str, list[str]]:
    """``("ok" | "numpy refuses" | "error: ..." , reference op types)`` for a supported row."""
    call = _call(row)
    if call is None:
        return "numpy refuses", []
    fn, args = call
    try:
        lowered = ge.jit(fn).lower(*args)
    except Exception as e:
        return f"error: {type(e).__name__}: {str(e)[:120]}", []
    return "ok", _fallbacks(lowered.plan)


# Supported names whose ops have no kernel yet: each still runs a reference host task.
NEED_KERNELS: dict[str, str] = {}

_ROWS = [
    r
    for r in ge.jit.numpy_support().select(status="supported")
    if r.kind != "attribute" or r.name == "numpy.ndarray.T"
]


@pytest.mark.slow
@pytest.mark.parametrize("row", _ROWS, ids=[r.name for r in _ROWS])
def test_a_supported_numpy_name_runs_compiled(row: Any) -> None:
    status, fallbacks = check(row)
    if status == "numpy refuses":
        pytest.skip(f"numpy itself takes no call of {row.name}")
    if row.name in REFUSED:
        assert REFUSED[row.name] in status, status
        return
    assert status == "ok", f"{row.name}: {status}"
    if row.name in NEED_KERNELS:
        assert fallbacks, f"{row.name} runs compiled now: drop it from NEED_KERNELS"
    else:
        assert not fallbacks, f"{row.name} runs {fallbacks} by their numpy reference"


def main() -> None:
    bad = 0
    for row in _ROWS:
        status, fallbacks = check(row)
        if status != "ok" or fallbacks:
            bad += 1
            print(f"{row.name:34} {status:10} reference: {', '.join(sorted(set(fallbacks)))}")
    print(f"{bad} of {len(_ROWS)} supported names fall back or could not be called")


if __name__ == "__main__":
    main()


def test_the_check_finds_a_reference_host_task() -> None:
    """An op with a reference and no kernel runs as a reference host task: the check sees it
    (so the table test above can fail)."""
    from ge.ops import OpDef, TensorSpec, register_op_def, registry

    op_type = "TestsNumpyCompiledNoKernel"
    register_op_def(
        OpDef(
            op_type,
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            infer=lambda ctx: [ctx.inputs[0]._clone()],
            reference=lambda ctx: [np.negative(ctx.inputs[0])],
            group="custom",
            source="tests",
        )
    )

    def uses_it(x: Any) -> Any:
        return getattr(ge.es.custom, op_type)(x)

    try:
        lowered = ge.jit(uses_it).lower(_X)
        assert _fallbacks(lowered.plan) == [op_type]
    finally:
        registry().unregister(op_type)
