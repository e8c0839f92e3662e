"""A builder shares descs between a producer's output and its consumers' inputs (and between a
Const and its tensor); every way of editing a desc on a node replaces it with an edited copy,
so an edit on one side never shows on the other (what the copies per edge guaranteed before).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ge.es import GraphBuilder, TensorHolder
from ge.graph import DataType, Format, Graph, Node, Tensor
from ge.ops import infer_graph


def _built() -> tuple[GraphBuilder, TensorHolder, TensorHolder, Node, Node]:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = x * 2.0
    mul = y._node
    return b, x, y, x._node, mul


def test_input_descs_are_the_producers_output_descs() -> None:
    _, _, _, data, mul = _built()
    const = mul.input(1)
    assert const is not None
    assert mul.input_desc(0) is data.output_desc(0)
    assert mul.input_desc(1) is const[0].output_desc(0)
    assert const[0].output_desc(0) is const[0].attr_value("value").value._desc


Edit = Callable[[GraphBuilder, TensorHolder], object]
EDITS: dict[str, Edit] = {
    "set_data_type": lambda b, x: x.set_data_type(DataType.DT_FLOAT16),
    "set_format": lambda b, x: x.set_format(Format.FORMAT_NCHW),
    "set_shape": lambda b, x: x.set_shape([4, 5]),
    "set_tensor_attr": lambda b, x: b.set_tensor_attr_int64(x, "k", 3),
    "set_output_attr": lambda b, x: x._node.set_output_attr("k", 0, 3),
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_editing_a_producers_output_leaves_the_consumers_input(edit: str) -> None:
    b, x, _, data, mul = _built()
    before = mul.input_desc(0)
    snapshot = before._clone()
    EDITS[edit](b, x)
    assert mul.input_desc(0) is before and mul.input_desc(0) == snapshot
    assert data.output_desc(0) is not before and data.output_desc(0) != snapshot


def test_editing_a_consumers_input_leaves_the_producers_output() -> None:
    _, _, _, data, mul = _built()
    shared = data.output_desc(0)
    mul.set_input_attr("k", 0, 7)
    assert mul.get_input_attr("k", 0) == 7
    assert data.output_desc(0) is shared and not shared._attrs
    with pytest.raises(RuntimeError, match="no such attribute"):
        data.get_output_attr("k", 0)


def test_a_failed_attr_edit_changes_nothing() -> None:
    _, _, _, data, mul = _built()
    descs = list(mul.input_descs)
    with pytest.raises(RuntimeError, match="has 2 inputs"):
        mul.set_input_attr("k", 2, 7)
    assert list(mul.input_descs) == descs and all(
        a is b for a, b in zip(mul.input_descs, descs, strict=True)
    )
    assert data.output_desc(0) is descs[0]


def test_editing_a_const_output_leaves_its_tensor() -> None:
    b, _, _, _, mul = _built()
    const = mul.input(1)
    assert const is not None
    holder = TensorHolder._make(b, const[0], 0)
    holder.set_data_type(DataType.DT_INT32)
    tensor = const[0].attr_value("value").value
    assert tensor.get_data_type() == DataType.DT_FLOAT
    assert const[0].output_desc(0).get_data_type() == DataType.DT_INT32
    assert mul.input_desc(1).get_data_type() == DataType.DT_FLOAT
    np.testing.assert_array_equal(tensor.numpy(), np.float32(2.0))


def test_input_shapes_replace_the_data_desc_not_edit_it() -> None:
    b, _, y, data, mul = _built()
    graph: Graph = b.build_and_reset([y])
    shared = data.output_desc(0)
    infer_graph(graph, [[4, 3]])
    assert list(shared.get_shape()) == [2, 3]  # the old desc, still shared before, kept
    assert list(data.output_desc(0).get_shape()) == [4, 3]
    assert mul.input_desc(0) is data.output_desc(0)
    assert list(mul.output_desc(0).get_shape()) == [4, 3]


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (1.000001, DataType.DT_FLOAT, np.float32),
        (1e10, DataType.DT_FLOAT16, np.float16),  # inf in float16, as numpy converts it
        (-0.0, DataType.DT_DOUBLE, np.float64),
        (float("nan"), DataType.DT_FLOAT, np.float32),
        (7, DataType.DT_INT32, np.int32),
        (-3, DataType.DT_INT8, np.int8),
        (3, DataType.DT_FLOAT16, np.float16),
        (2**40, DataType.DT_INT32, np.int64),  # does not fit: GE-PY's int64
        (0.5, DataType.DT_INT32, np.float32),  # a float does not take an int's type
    ],
)
def test_a_new_number_makes_the_tensor_from_numpy_makes(
    value: float, dtype: DataType, expected: type[np.generic]
) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2], data_type=dtype)
    const = (x + value)._node.input(1)
    assert const is not None
    tensor = const[0].attr_value("value").value
    with np.errstate(over="ignore"):
        reference = Tensor.from_numpy(np.array(np.asarray(value), dtype=expected))
    assert tensor.get_tensor_desc() == reference.get_tensor_desc()
    assert tensor.get_data_type() == reference.get_data_type()
    assert tensor.numpy().dtype == expected
    assert tensor.numpy().tobytes() == reference.numpy().tobytes()


def test_new_numbers_of_one_dtype_share_a_desc_and_edits_stay_apart() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    first = (x * 1.0000011)._node.input(1)
    second = (x * 1.0000012)._node.input(1)
    assert first is not None and second is not None
    t1 = first[0].attr_value("value").value
    t2 = second[0].attr_value("value").value
    t1.set_format(Format.FORMAT_NCHW)
    assert t1.get_format() == Format.FORMAT_NCHW
    assert t2.get_format() == Format.FORMAT_ND
    assert first[0].output_desc(0).get_format() == Format.FORMAT_ND
    np.testing.assert_array_equal(t2.numpy(), np.float32(1.0000012))
    np.testing.assert_array_equal(first[0].output_desc(0).get_shape(), [])
