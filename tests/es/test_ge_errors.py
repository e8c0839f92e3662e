"""GE_ERRORS.md §3.1 (GraphBuilder) and §3.4 (tensor_like helpers), row by row: the condition
-> GE-PY's exception type and its text, which the message must contain (ours may add more
after it). Rows named ``order:`` set two conditions and expect the check GE runs first."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ge.error import GeError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_like import convert_to_tensor_holder, resolve_builder

BUILT = "GraphBuilder has already been built. Create a new GraphBuilder to build another graph."


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[GraphBuilder], Any]
    error: type[BaseException]
    text: str


def _built(call: Callable[[GraphBuilder], Any]) -> Callable[[GraphBuilder], Any]:
    def run(b: GraphBuilder) -> Any:
        b.build_and_reset()
        return call(b)

    return run


ROWS = [
    Row("GraphBuilder(1)", lambda b: GraphBuilder(1), TypeError, "Graph name must be a string"),  # type: ignore[arg-type]
    Row("copy", copy.copy, RuntimeError, "GraphBuilder does not support copy"),
    Row(
        "deepcopy",
        copy.deepcopy,
        RuntimeError,
        "GraphBuilder does not support deepcopy",
    ),
    Row(
        "create_input('0')",
        lambda b: b.create_input("0"),
        TypeError,
        "Input index must be an integer",
    ),  # type: ignore[arg-type]
    Row(
        "built: create_input",
        _built(lambda b: b.create_input(0)),
        RuntimeError,
        f"Cannot create input: {BUILT}",
    ),
    Row(
        "order: built before type",
        _built(lambda b: b.create_input("x")),
        RuntimeError,
        f"Cannot create input: {BUILT}",
    ),
    Row(
        "create_inputs(0)",
        lambda b: b.create_inputs(0),
        TypeError,
        "Number of inputs must be a positive integer",
    ),
    Row(
        "create_inputs(1, -1)",
        lambda b: b.create_inputs(1, -1),
        TypeError,
        "Start index must be a non-negative integer",
    ),
    Row(
        "create_variable('0', 'v')",
        lambda b: b.create_variable("0", "v"),
        TypeError,
        "Index must be an integer",
    ),  # type: ignore[arg-type]
    Row(
        "create_variable(0, 1)",
        lambda b: b.create_variable(0, 1),
        TypeError,
        "Name must be a string",
    ),  # type: ignore[arg-type]
    Row(
        "set_graph_output(1, 0)",
        lambda b: b.set_graph_output(1, 0),
        TypeError,
        "Tensor must be a TensorHolder",
    ),  # type: ignore[arg-type]
    Row(
        "set_graph_output(t, '0')",
        lambda b: b.set_graph_output(b.create_input(0), "0"),  # type: ignore[arg-type]
        TypeError,
        "Output index must be an integer",
    ),
    Row(
        "set_graph_attr_int64(1, 1)",
        lambda b: b.set_graph_attr_int64(1, 1),
        TypeError,
        "Attribute name must be a string",
    ),  # type: ignore[arg-type]
    Row(
        "set_node_attr_int64(t, 1, 1)",
        lambda b: b.set_node_attr_int64(b.create_input(0), 1, 1),  # type: ignore[arg-type]
        TypeError,
        "Attribute name must be a string",
    ),
    Row(
        "add_control_dependency(1, [])",
        lambda b: b.add_control_dependency(1, []),
        TypeError,
        "dst_tensor must be a TensorHolder",
    ),  # type: ignore[arg-type]
    Row(
        "add_control_dependency(t, t)",
        lambda b: b.add_control_dependency(b.create_input(0), b.create_input(1)),  # type: ignore[arg-type]
        TypeError,
        "src_tensors must be a list",
    ),
    Row("build_and_reset(1)", lambda b: b.build_and_reset(1), TypeError, "Outputs must be a list"),  # type: ignore[arg-type]
    Row(
        "build_and_reset([1])",
        lambda b: b.build_and_reset([1]),
        TypeError,
        "All outputs must be TensorHolder objects",
    ),  # type: ignore[list-item]
    Row(
        "built: build_and_reset",
        _built(lambda b: b.build_and_reset()),
        RuntimeError,
        f"Cannot build_and_reset: {BUILT}",
    ),
    Row(
        "convert_to_tensor_holder('a')",
        lambda b: convert_to_tensor_holder("a", b),
        TypeError,
        "Value must be TensorHolder or int|float or nested lists of int|float or None",
    ),
    Row(
        "convert_to_tensor_holder([[]])",
        lambda b: convert_to_tensor_holder([[]], b),
        TypeError,
        "Value must be int|float or nested lists of int|float",
    ),
    Row(
        "convert_to_tensor_holder([1, 'a'])",
        lambda b: convert_to_tensor_holder([1, "a"], b),
        TypeError,
        "Value must be int|float or nested lists of int|float",
    ),
    Row(
        "convert_to_tensor_holder ragged",
        lambda b: convert_to_tensor_holder([[1, 2], [3]], b),
        ValueError,
        "Irregular nested list: all sub-lists must have the same shape",
    ),
    Row(
        "resolve_builder()",
        lambda b: resolve_builder(),
        ValueError,
        "At least one argument is required to resolve GraphBuilder",
    ),
    Row(
        "resolve_builder(1, [t])",
        lambda b: resolve_builder(1, [b.create_input(0)]),
        ValueError,
        "Please ensure at least one input tensor or an explicit owner_builder is provided "
        "when supported",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_row(row: Row) -> None:
    with pytest.raises(row.error) as info:
        row.call(GraphBuilder("g"))
    assert isinstance(info.value, GeError)
    assert row.text in str(info.value)


def test_convert_and_resolve_results() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    assert convert_to_tensor_holder(None, b) is None
    assert convert_to_tensor_holder(x, GraphBuilder("other")) is x
    assert convert_to_tensor_holder(3, b).shape == ()  # type: ignore[union-attr]
    assert convert_to_tensor_holder([[1, 2.5]], b).shape == (1, 2)  # type: ignore[union-attr]
    assert convert_to_tensor_holder([], b).shape == (0,)  # type: ignore[union-attr]
    other = GraphBuilder("o")
    assert resolve_builder(1, x, other) is b
    assert resolve_builder(None, other, x) is other
