"""GE_ERRORS.md §3.1 (GraphBuilder), §3.2 (scopes), §3.4 (tensor_like helpers) and §3.5
(generated op functions), row by row: the condition -> GE-PY's exception type and its text,
which the message must contain (ours may add more after it). Rows named ``order:`` set two
conditions and expect the check GE runs first."""

from __future__ import annotations

import copy
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pytest

import ge.es
from ge.error import GeError
from ge.es.graph_builder import GraphBuilder, attr_scope, control_dependency_scope
from ge.es.tensor_like import convert_to_tensor_holder, resolve_builder
from ge.graph import Graph
from ge.graph.types import DataType

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


LIKE_OR_NONE = "Value must be TensorHolder or int|float or nested lists of int|float or None"


def _branch(name: str, outputs: int = 1, inputs: int = 1) -> Graph:
    s = GraphBuilder(name)
    x = s.create_inputs(inputs)[0]
    return s.build_and_reset([ge.es.Relu(x)] * outputs)


def _if(b: GraphBuilder, then_outputs: int = 1, then_inputs: int = 1) -> Any:
    cond = b.create_input(0, data_type=DataType.DT_BOOL)
    x = b.create_input(1, shape=[2])
    then_g = _branch("then_g", then_outputs, then_inputs)
    return ge.es.If(cond, [x], 1, then_g, _branch("else_g"))


def _if_twice(b: GraphBuilder) -> Any:
    cond = b.create_input(0, data_type=DataType.DT_BOOL)
    x = b.create_input(1, shape=[2])
    then_g, else_g = _branch("then_g"), _branch("else_g")
    ge.es.If(cond, [x], 1, then_g, else_g)
    return ge.es.If(cond, [x], 1, then_g, _branch("else_2"))


def _x(call: Callable[[GraphBuilder, Any], Any]) -> Callable[[GraphBuilder], Any]:
    """``call(b, x)`` with ``x`` an input of ``b``."""
    return lambda b: call(b, b.create_input(0))


def _enter(scope: AbstractContextManager[Any]) -> None:
    with scope:
        pass


def _inside(scope: AbstractContextManager[Any], call: Callable[[], Any]) -> Any:
    with scope:
        return call()


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
    # --- create_input ---------------------------------------------------------------------
    Row("create_input(-1)", lambda b: b.create_input(-1), RuntimeError, "Failed to create input"),
    Row(
        "create_input: index used",
        lambda b: (b.create_input(0), b.create_input(0)),
        RuntimeError,
        "Failed to create input",
    ),
    Row(
        "create_input(shape=(1,))",
        lambda b: b.create_input(0, shape=(1,)),  # type: ignore[arg-type]
        TypeError,
        "Shape must be a list of integers",
    ),
    Row(
        "create_input(shape=[1.5])",
        lambda b: b.create_input(0, shape=[1.5]),  # type: ignore[list-item]
        TypeError,
        "Shape must be a list of integers",
    ),
    Row(
        "order: index type before shape",
        lambda b: b.create_input(None, shape="x"),  # type: ignore[arg-type]
        TypeError,
        "Input index must be an integer",
    ),
    Row(
        "built: create_inputs",
        _built(lambda b: b.create_inputs(1)),
        RuntimeError,
        f"Cannot create inputs: {BUILT}",
    ),
    Row(
        "built: create_variable",
        _built(lambda b: b.create_variable(0, "v")),
        RuntimeError,
        f"Cannot create variable: {BUILT}",
    ),
    # --- constants, vectors, scalars ----------------------------------------------------
    *[
        Row(
            f"create_const_{kind}({value!r})",
            lambda b, kind=kind, value=value: getattr(b, f"create_const_{kind}")(value),
            TypeError,
            "Value must be an integer or list of integers",
        )
        for kind in ("int64", "int32", "uint64", "uint32")
        for value in ("1", 1.5, [1, 1.5], (1, 2), None)
    ],
    *[
        Row(
            f"create_const_float({value!r})",
            lambda b, value=value: b.create_const_float(value),
            TypeError,
            "Value must be a float or list of floats",
        )
        for value in ("x", [1.0, "a"], (1.0,), None)
    ],
    Row(
        "create_const_int64([1, 2], shape=[])",
        lambda b: b.create_const_int64([1, 2], shape=[]),
        ValueError,
        "Value count (2) doesn't match shape [] (expected 1 elements)",
    ),
    Row(
        "create_const_float(1.0, shape=[2])",
        lambda b: b.create_const_float(1.0, shape=[2]),
        ValueError,
        "Value count (1) doesn't match shape [2] (expected 2 elements)",
    ),
    Row(
        "create_const_uint64(-1): the scalar's check",
        lambda b: b.create_const_uint64(-1),
        ValueError,
        "Value must be non-negative for uint64",
    ),
    Row(
        "create_const_uint32([7], shape=[]): the scalar's check",
        lambda b: b.create_const_uint32([2**32], shape=[]),
        ValueError,
        "Value must be in range [0, 2^32-1] for uint32",
    ),
    Row(
        "built: create_const_int64",
        _built(lambda b: b.create_const_int64(1)),
        RuntimeError,
        f"Cannot create constant: {BUILT}",
    ),
    Row(
        "order: built before value type",
        _built(lambda b: b.create_const_uint64("x")),
        RuntimeError,
        f"Cannot create constant: {BUILT}",
    ),
    Row(
        "create_vector_int64(1)",
        lambda b: b.create_vector_int64(1),  # type: ignore[arg-type]
        TypeError,
        "Value must be a list of integers",
    ),
    Row(
        "create_vector_int64([1.5])",
        lambda b: b.create_vector_int64([1.5]),  # type: ignore[list-item]
        TypeError,
        "Value must be a list of integers",
    ),
    Row(
        "built: create_vector_int64",
        _built(lambda b: b.create_vector_int64([1])),
        RuntimeError,
        f"Cannot create vector: {BUILT}",
    ),
    *[
        Row(
            f"create_scalar_{kind}({value!r})",
            lambda b, kind=kind, value=value: getattr(b, f"create_scalar_{kind}")(value),
            TypeError,
            "Value must be an integer",
        )
        for kind in ("int64", "int32", "uint64", "uint32")
        for value in (1.5, "1", [1], None)
    ],
    *[
        Row(
            f"create_scalar_float({value!r})",
            lambda b, value=value: b.create_scalar_float(value),
            TypeError,
            "Value must be a number",
        )
        for value in ("1", [1.0], None)
    ],
    Row(
        "create_scalar_uint64(-1)",
        lambda b: b.create_scalar_uint64(-1),
        ValueError,
        "Value must be non-negative for uint64",
    ),
    *[
        Row(
            f"create_scalar_uint32({value})",
            lambda b, value=value: b.create_scalar_uint32(value),
            ValueError,
            "Value must be in range [0, 2^32-1] for uint32",
        )
        for value in (-1, 2**32)
    ],
    Row(
        "built: create_scalar_float",
        _built(lambda b: b.create_scalar_float(1.0)),
        RuntimeError,
        f"Cannot create scalar: {BUILT}",
    ),
    # --- outputs and building -----------------------------------------------------------
    Row(
        "set_graph_output(t, -1)",
        lambda b: b.set_graph_output(b.create_input(0), -1),
        RuntimeError,
        "Failed to set graph output for graph g output index -1",
    ),
    Row(
        "set_graph_output: index already set",
        lambda b: [b.set_graph_output(b.create_input(i), 0) for i in range(2)],
        RuntimeError,
        "Failed to set graph output for graph g output index 0",
    ),
    Row(
        "set_graph_output: already set on the tensor's builder",
        lambda b: [
            b.set_graph_output(t, 0)
            for t in [GraphBuilder("other").create_input(0)]
            for _ in range(2)
        ],
        RuntimeError,
        "Failed to set graph output for graph other output index 0",
    ),
    Row(
        "built: set_graph_output",
        _x(lambda b, x: (b.build_and_reset(), b.set_graph_output(x, 0))),
        RuntimeError,
        f"Cannot set graph output: {BUILT}",
    ),
    Row(
        "build_and_reset([t]): index 0 set earlier",
        _x(lambda b, x: (b.set_graph_output(x, 0), b.build_and_reset([x]))),
        RuntimeError,
        "Failed to set graph output for graph g output index 0",
    ),
    Row(
        "build_and_reset: input index gap",
        lambda b: (b.create_input(0), b.create_input(2), b.build_and_reset()),
        RuntimeError,
        "Failed to build graph",
    ),
    Row(
        "build_and_reset: inputs not from 0",
        lambda b: (b.create_input(1), b.build_and_reset()),
        RuntimeError,
        "Failed to build graph",
    ),
    Row(
        "build_and_reset: Data 1 + Variable 0",
        lambda b: (b.create_input(1), b.create_variable(0, "v"), b.build_and_reset()),
        RuntimeError,
        "Failed to build graph",
    ),
    Row(
        "build_and_reset: output index gap",
        lambda b: (b.set_graph_output(b.create_input(0), 1), b.build_and_reset()),
        RuntimeError,
        "Failed to build graph",
    ),
    # --- attributes -----------------------------------------------------------------------
    *[
        Row(
            f"set_graph_attr_{kind}('a', {value!r})",
            lambda b, kind=kind, value=value: getattr(b, f"set_graph_attr_{kind}")("a", value),
            TypeError,
            text,
        )
        for kind, value, text in (
            ("int64", "1", "Value must be an integer"),
            ("string", 1, "Value must be a string"),
            ("bool", 1, "Value must be a boolean"),
        )
    ],
    *[
        Row(
            f"set_{target}_attr_{kind}(t, 'a', {value!r})",
            lambda b, target=target, kind=kind, value=value: getattr(
                b, f"set_{target}_attr_{kind}"
            )(b.create_input(0), "a", value),
            TypeError,
            text,
        )
        for target in ("tensor", "node")
        for kind, value, text in (
            ("int64", "1", "Value must be an integer"),
            ("string", 1, "Value must be a string"),
            ("bool", 1, "Value must be a boolean"),
        )
    ],
    *[
        Row(
            f"set_{target}_attr_int64(1, 'a', 1)",
            lambda b, target=target: getattr(b, f"set_{target}_attr_int64")(1, "a", 1),
            TypeError,
            "Tensor must be a TensorHolder",
        )
        for target in ("tensor", "node")
    ],
    Row(
        "order: set_tensor_attr tensor before name before value",
        lambda b: b.set_tensor_attr_string(1, 2, 3),  # type: ignore[arg-type]
        TypeError,
        "Tensor must be a TensorHolder",
    ),
    Row(
        "order: set_node_attr name before value",
        lambda b: b.set_node_attr_bool(b.create_input(0), 2, 3),  # type: ignore[arg-type]
        TypeError,
        "Attribute name must be a string",
    ),
    *[
        Row(
            f"built: set_{what.replace(' ', '_')}",
            _x(lambda b, x, call=call: (b.build_and_reset(), call(b, x))),
            RuntimeError,
            f"Cannot set {what}ibute: {BUILT}",
        )
        for what, call in (
            ("graph attr", lambda b, x: b.set_graph_attr_int64("a", 1)),
            ("tensor attr", lambda b, x: b.set_tensor_attr_int64(x, "a", 1)),
            ("node attr", lambda b, x: b.set_node_attr_int64(x, "a", 1)),
        )
    ],
    # --- control dependencies -------------------------------------------------------------
    Row(
        "add_control_dependency(t, [1])",
        lambda b: b.add_control_dependency(b.create_input(0), [1]),  # type: ignore[list-item]
        TypeError,
        "src_tensors must be a list of TensorHolder",
    ),
    Row(
        "add_control_dependency(t, (t,))",
        _x(lambda b, x: b.add_control_dependency(x, (x,))),
        TypeError,
        "src_tensors must be a list",
    ),
    Row(
        "built: add_control_dependency",
        _x(lambda b, x: (b.build_and_reset(), b.add_control_dependency(x, []))),
        RuntimeError,
        f"Cannot add control dependency: {BUILT}",
    ),
    # --- scopes (§3.2) ------------------------------------------------------------------
    Row(
        "attr_scope(1)", lambda b: _enter(attr_scope(1)), TypeError, "'int' object is not a mapping"
    ),  # type: ignore[arg-type]
    Row(
        "attr_scope: unsupported value, at node creation",
        lambda b: _inside(attr_scope({"_a": {}}), lambda: b.create_input(0)),
        ValueError,
        "Unsupported attribute type: <class 'dict'> for value: {}",
    ),
    Row(
        "control_dependency_scope((t,))",
        lambda b: _enter(control_dependency_scope((b.create_input(0),))),  # type: ignore[arg-type]
        TypeError,
        'can only concatenate list (not "tuple") to list',
    ),
    Row(
        "control_dependency_scope([1]): at node creation",
        lambda b: _inside(control_dependency_scope([1]), lambda: b.create_input(0)),  # type: ignore[list-item]
        TypeError,
        "src_tensors must be a list of TensorHolder",
    ),
    # --- generated op functions (§3.5) --------------------------------------------------
    Row(
        "Add(1, 2): no builder",
        lambda b: ge.es.Add(1, 2),
        ValueError,
        "Please ensure at least one input tensor or an explicit owner_builder is provided "
        "when supported",
    ),
    *[
        Row(
            f"Relu({value!r}): not a TensorHolder",
            lambda b, value=value: ge.es.Relu(value),
            TypeError,
            f"'{type(value).__name__}' object has no attribute 'get_owner_builder'",
        )
        for value in (1, [1.0], None)
    ],
    Row(
        "AddN([x, 1]): elements are not converted",
        _x(lambda b, x: ge.es.AddN([x, 1], N=2)),
        TypeError,
        "'int' object has no attribute '_handle'",
    ),
    *[
        Row(
            f"Add(x, {value!r}): conversion",
            _x(lambda b, x, value=value: ge.es.Add(x, value)),
            error,
            text,
        )
        for value, error, text in (
            ("a", TypeError, LIKE_OR_NONE),
            ((1, 2), TypeError, LIKE_OR_NONE),
            ([[]], TypeError, "Value must be int|float or nested lists of int|float"),
            ([1, "a"], TypeError, "Value must be int|float or nested lists of int|float"),
            ([[1, 2], [3]], ValueError, "Irregular nested list"),
            (None, ValueError, "'NoneType' object has no attribute '_handle'"),
        )
    ],
    Row(
        "order: conversion of a later input before a missing required one",
        _x(lambda b, x: ge.es.Select(x, None, "a")),
        TypeError,
        LIKE_OR_NONE,
    ),
    Row(
        "Add(x, 1) on a built builder",
        _x(lambda b, x: (b.build_and_reset([x]), ge.es.Add(x, 1))),
        RuntimeError,
        f"Cannot create scalar: {BUILT}",
    ),
    Row(
        "Add(x, [1]) on a built builder",
        _x(lambda b, x: (b.build_and_reset([x]), ge.es.Add(x, [1.0]))),
        RuntimeError,
        f"Cannot create constant: {BUILT}",
    ),
    Row(
        "If: a subgraph passed twice",
        _if_twice,
        RuntimeError,
        "Graph :then_g already has an new owner builder :g, cannot transfer ownership again",
    ),
]


@pytest.mark.parametrize(
    ("then_outputs", "then_inputs", "problem"),
    [(2, 1, "returns 2 values"), (1, 2, "has Data index 1")],
)
def test_if_refused_by_the_c_checks_returns_an_empty_list(
    then_outputs: int, then_inputs: int, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GE_ERRORS §3.5 step 7: an op with a single dynamic output (If/Case/While) returns the
    zeroed struct's empty list, and the C side prints why on stderr."""
    b = GraphBuilder("g")
    assert _if(b, then_outputs=then_outputs, then_inputs=then_inputs) == []
    assert problem in capsys.readouterr().err


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
