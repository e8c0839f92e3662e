"""A fused body that reads single elements of an input in place (constant StridedSlices with
shrink_axis, as np.median's middle elements are) runs as a kernel, not by its reference: a
one-element view's offset is the whole view (regression: lower_program refused it)."""

import numpy as np
import pytest

import ge
from ge.runtime.plan import HostTask


@pytest.mark.parametrize("shape", [(12,), (3, 4), (1, 12)])
def test_element_reads_of_an_input_run_compiled(shape: tuple[int, ...]) -> None:
    def middle(x: np.ndarray) -> np.ndarray:
        flat = x.reshape(-1)
        return (flat[5] + flat[6]) / 2 + flat[11]

    x = np.arange(12, dtype=np.float32).reshape(shape) * 1.5 - 3
    fn = ge.jit(middle)
    plan = fn.lower(x).plan
    assert plan is not None
    host = [t for t in plan.tasks if isinstance(t, HostTask) and t.op == "reference"]
    assert not host, [t.params.get("op_type") for t in host]
    got = fn(x)
    want = middle(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
