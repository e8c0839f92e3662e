"""Integer-only binary ops refuse inputs that promote out of their types (int64 with uint64
promote to float64, as in numpy, which has no integer loop for that pair either): an
InferError when the node is built, never a reference that fails at run time (found by the
verified-graph search: Lcm of int64 and uint64 ran compiled but its reference failed)."""

import numpy as np
import pytest

from ge.error import InferError
from ge.graph import DataType, Graph, TensorDesc
from ge.ops import add_op_node, eval_graph

_INT_ONLY = ["Gcd", "Lcm", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"]


def _pair(a: DataType, b: DataType) -> tuple[Graph, object, object]:
    g = Graph("g")
    x = add_op_node(g, "Data", [None], {"index": 0}, declared=[TensorDesc([3], data_type=a)])
    y = add_op_node(g, "Data", [None], {"index": 1}, declared=[TensorDesc([3], data_type=b)])
    return g, x, y


@pytest.mark.parametrize("op", _INT_ONLY)
def test_int64_with_uint64_is_refused_naming_the_promotion(op: str) -> None:
    g, x, y = _pair(DataType.DT_INT64, DataType.DT_UINT64)
    before = len(g.get_direct_nodes())
    with pytest.raises(
        InferError, match=r"x1 \(DT_INT64\) and x2 \(DT_UINT64\) promote to DT_DOUBLE"
    ):
        add_op_node(g, op, [(x, 0), (y, 0)])
    assert len(g.get_direct_nodes()) == before


@pytest.mark.parametrize("op", _INT_ONLY)
def test_pairs_that_stay_integers_still_run(op: str) -> None:
    g, x, y = _pair(DataType.DT_INT32, DataType.DT_UINT16)
    node = add_op_node(g, op, [(x, 0), (y, 0)])
    g.set_outputs([(node, 0)])
    a, b = np.array([12, -8, 7], np.int32), np.array([18, 3, 2], np.uint16)
    want = getattr(
        np,
        {
            "Gcd": "gcd",
            "Lcm": "lcm",
            "BitwiseAnd": "bitwise_and",
            "BitwiseOr": "bitwise_or",
            "BitwiseXor": "bitwise_xor",
            "LeftShift": "left_shift",
            "RightShift": "right_shift",
        }[op],
    )(a, b)
    (got,) = eval_graph(g, [a, b])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
