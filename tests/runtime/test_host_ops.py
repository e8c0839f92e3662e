"""The runtime's data host ops (``ge.runtime.host_ops.HOST_OPS``) on plain arrays, and the one
condition rule control flow uses in both places that need it."""

from __future__ import annotations

import numpy as np
import pytest

from ge.error import GeValueError
from ge.ops.control import truthy as ops_truthy
from ge.runtime.host_ops import HOST_OPS, host_function, truthy
from ge.runtime.plan import host_task


@pytest.mark.parametrize(
    "value",
    [True, False, 0, 3, 0.0, -1.5, [0], [2], [[0]], [0, 0], [], np.zeros((2, 0)), np.ones((1, 1))],
)
def test_truthy_is_the_interpreters_rule(value: object) -> None:
    array = np.asarray(value)
    assert truthy(array) == ops_truthy(array)


def test_copy_copies_bytes_between_types_of_one_size() -> None:
    src, dst = np.arange(4, dtype=np.float32), np.zeros(16, np.uint8)
    host_function(host_task("c", "copy", [0, 1]))([src, dst])
    assert dst.view(np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    ("ta", "tb", "bias"), [(False, False, False), (True, False, True), (False, True, True)]
)
def test_matmul_transposes_and_adds_bias(ta: bool, tb: bool, bias: bool) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2) if ta else (2, 3)).astype(np.float32)
    b = rng.standard_normal((4, 3) if tb else (3, 4)).astype(np.float32)
    c = rng.standard_normal(4).astype(np.float32)
    out = np.zeros((2, 4), np.float32)
    views = [a, b, *([c] if bias else []), out]
    task = host_task(
        "m", "matmul", list(range(len(views))), transpose_a=ta, transpose_b=tb, bias=bias
    )
    host_function(task)(views)
    want = (a.T if ta else a) @ (b.T if tb else b) + (c if bias else 0)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_branch_and_while_run_their_sub_plans() -> None:
    double = lambda xs: [xs[0] * 2]  # noqa: E731
    negate = lambda xs: [-xs[0]]  # noqa: E731
    out = np.zeros(3, np.float32)
    x = np.arange(3, dtype=np.float32)
    # sub-plans are data (indexes into the plan's subplans), resolved to runners by bind
    task = host_task(
        "if", "branch", [0, 1, 2], case=False, inputs=1, branches=[0, 1], branch_inputs=[1, 1]
    )
    assert task.fn is None and task.params["branches"] == [0, 1]
    run = host_function(task, [double, negate])
    run([np.array(True), x, out])
    assert out.tolist() == [0.0, 2.0, 4.0]
    run([np.array(False), x, out])
    assert out.tolist() == [0.0, -1.0, -2.0]
    case = host_task(
        "case", "branch", [0, 1, 2], case=True, inputs=1, branches=[1, 0], branch_inputs=[1, 1]
    )
    host_function(case, [double, negate])([np.array(9, np.int32), x, out])  # out of range: the last
    assert out.tolist() == [0.0, 2.0, 4.0]
    loop = host_task("while", "while", [0, 1], inputs=1, cond=0, body=1)
    result = np.zeros((), np.int64)
    host_function(loop, [lambda xs: [xs[0] < 100], double])([np.array(3, np.int64), result])
    assert int(result) == 192


def test_parameters_must_be_exactly_the_ops() -> None:
    assert set(HOST_OPS) == {
        "copy",
        "matmul",
        "branch",
        "while",
        "reference",
        "custom_op",
        "debug_print",
    }
    with pytest.raises(GeValueError, match="takes parameters"):
        host_task("m", "matmul", [0, 1, 2], transpose_a=False)
