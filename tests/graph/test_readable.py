"""Golden texts of ``str(graph)``: GE's readable dump (GE_ERRORS.md §12.1), character for
character, including the doc's own example (§12.1.3). Our listing, ``graph.as_text()``, is
golden-tested in test_printer.py."""

# ruff: noqa: E501  (golden dump lines are as long as GE prints them)

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest

from ge import es
from ge.es import GraphBuilder
from ge.graph import AttrValueType, DataType, DumpFormat, Graph, Tensor
from ge.graph._attr import AttrValue, make_attr_value
from ge.graph._readable import render_attr

VT = AttrValueType


def golden(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_the_example_of_ge_errors_12_1_3() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    y = b.create_input(1)
    z = x + 1.0
    b.set_graph_output(z, 0)
    b.set_graph_output(y, 1)
    g = b.build_and_reset()
    assert str(g) == golden(
        """
        graph("g"):
          %input_0 : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %input_1 : [#users=1] = Node[type=Data] (attrs = {index: 1})
          %Const_0 : [#users=1] = Node[type=Const] (attrs = {value: [1.000000]})
          %Add_1 : [#users=1] = Node[type=Add] (inputs = (x1=%input_0, x2=%Const_0))

          return (output_0=%Add_1, output_1=%input_1)
        """
    )
    assert g.dump_to_stream() == g.dump_to_stream(DumpFormat.kReadable) == str(g)


def test_empty_graph() -> None:
    assert str(Graph("g")) == 'graph("g"):\n'


def test_multi_output_nodes_dynamic_inputs_and_long_consts() -> None:
    b = GraphBuilder("m")
    x = b.create_input(0, name="x", shape=[4, 6])
    y = b.create_input(1, name="y", shape=[4, 6])
    parts = es.SplitV(x, [2, 4], 1, 2, num_split=2)
    s = es.AddN([parts[0], parts[0]], N=2)
    c = es.ConcatV2([s, parts[1]], 1, N=2)
    r = es.ReduceSum(c, [1], keep_dims=True)
    k = es.Cast(r, dst_type=int(DataType.DT_INT32))
    ln = es.LayerNorm(y, [1.0] * 6, [0.0] * 6, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-5)
    b.create_const_int64(list(range(1, 11)), [10])
    g = b.build_and_reset([k, ln.y])
    assert str(g) == golden(
        """
        graph("m"):
          %x : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %y : [#users=1] = Node[type=Data] (attrs = {index: 1})
          %Const_0 : [#users=1] = Node[type=Const] (attrs = {value: [2 4]})
          %Const_1 : [#users=1] = Node[type=Const] (attrs = {value: [1]})
          %SplitV_2 : [#users=2] = Node[type=SplitV] (inputs = (x=%x, size_splits=%Const_0, split_dim=%Const_1), attrs = {num_split: 2})
          %ret : [#users=2] = get_element[node=%SplitV_2](0)
          %ret_1 : [#users=1] = get_element[node=%SplitV_2](1)
          %AddN_3 : [#users=1] = Node[type=AddN] (inputs = (x_0=%ret, x_1=%ret), attrs = {N: 2})
          %Const_4 : [#users=1] = Node[type=Const] (attrs = {value: [1]})
          %ConcatV2_5 : [#users=1] = Node[type=ConcatV2] (inputs = (x_0=%AddN_3, x_1=%ret_1, concat_dim=%Const_4), attrs = {N: 2})
          %Const_6 : [#users=1] = Node[type=Const] (attrs = {value: [1]})
          %ReduceSum_7 : [#users=1] = Node[type=ReduceSum] (inputs = (x=%ConcatV2_5, axes=%Const_6), attrs = {keep_dims: true, noop_with_empty_axes: true})
          %Cast_8 : [#users=1] = Node[type=Cast] (inputs = (x=%ReduceSum_7), attrs = {dst_type: 3})
          %Const_9 : [#users=1] = Node[type=Const] (attrs = {value: [1.000000 1.000000 1.000000 1.000000 1.000000 1.000000]})
          %Const_10 : [#users=1] = Node[type=Const] (attrs = {value: [0.000000 0.000000 0.000000 0.000000 0.000000 0.000000]})
          %LayerNorm_11 : [#users=3] = Node[type=LayerNorm] (inputs = (x=%y, gamma=%Const_9, beta=%Const_10), attrs = {begin_norm_axis: 1, begin_params_axis: 1, epsilon: 0.000010})
          %ret_2 : [#users=1] = get_element[node=%LayerNorm_11](0)
          %ret_3 : [#users=0] = get_element[node=%LayerNorm_11](1)
          %ret_4 : [#users=0] = get_element[node=%LayerNorm_11](2)
          %Const_12 : [#users=1] = Node[type=Const] (attrs = {value: [1 2 3 ... 8 9 10]})

          return (output_0=%Cast_8, output_1=%ret_2)
        """
    )


def _branch(name: str, op: Any) -> Graph:
    b = GraphBuilder(name)
    x = b.create_input(0, name="x", shape=[2])
    return b.build_and_reset([op(x)])


def test_subgraphs_follow_their_graph_and_a_single_output_returns_bare() -> None:
    b = GraphBuilder("root")
    c = b.create_input(0, name="cond", shape=[])
    x = b.create_input(1, name="x", shape=[2])
    out = es.If(c, [x], 1, _branch("then_g", es.Relu), _branch("else_g", es.Neg))
    g = b.build_and_reset([out[0]])
    assert str(g) == golden(
        """
        graph("root"):
          %cond : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %x : [#users=1] = Node[type=Data] (attrs = {index: 1})
          %If_0 : [#users=1] = Node[type=If] (inputs = (cond=%cond, input_0=%x), attrs = {then_branch: %then_g, else_branch: %else_g})

          return (%If_0)

        graph("then_g"):
          %x : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %Relu_0 : [#users=1] = Node[type=Relu] (inputs = (x=%x))

          return (%Relu_0)

        graph("else_g"):
          %x : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %Neg_0 : [#users=1] = Node[type=Neg] (inputs = (x=%x))

          return (%Neg_0)
        """
    )
    then_g = g.get_subgraph("then_g")
    assert then_g is not None and str(then_g).startswith('graph("then_g"):\n')


def test_no_ir_names_unconnected_cross_graph_and_private_attrs() -> None:
    """Ports without IR names print ``_input_<i>``; unconnected inputs, inputs fed from
    another graph and private attributes are not printed; without NetOutput, no return."""
    g = Graph("g")
    a = g.add_node("Data", "a", num_outputs=1)
    a.set_attr("index", 0)
    a.set_attr("_private", "p")
    n = g.add_node("Foo", "n", num_inputs=3, num_outputs=1)
    g.add_data_edge(a, 0, n, 2)
    other = Graph("h").add_node("Foo", "f", num_outputs=1)
    g.add_data_edge(other, 0, n, 0)
    g.set_outputs([(n, 0)])
    assert str(g) == golden(
        """
        graph("g"):
          %a : [#users=1] = Node[type=Data] (attrs = {index: 0})
          %n : [#users=1] = Node[type=Foo] (inputs = (_input_2=%a))
        """
    )


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [
        (VT.VT_INT, -1, "-1"),
        (VT.VT_FLOAT, 2.5, "2.500000"),
        (VT.VT_FLOAT, 1e-6, "0.000001"),
        (VT.VT_BOOL, False, "false"),
        (VT.VT_STRING, "text", '"text"'),
        (VT.VT_STRING, "", ""),
        (VT.VT_DATA_TYPE, DataType.DT_UNDEFINED, "DT_UNDEFINED"),
        (VT.VT_LIST_INT, [0], "{0}"),
        (VT.VT_LIST_INT, [], ""),
        (VT.VT_LIST_FLOAT, [1.0, 2.0], "{1.000000, 2.000000}"),
        (VT.VT_LIST_BOOL, [True, False], "{true, false}"),
        (VT.VT_LIST_STRING, ["a", "", "b"], '{"a", "b"}'),
        (VT.VT_LIST_DATA_TYPE, [DataType.DT_FLOAT, DataType.DT_INT32], "{DT_FLOAT, DT_INT32}"),
        (VT.VT_LIST_LIST_INT, [[1, 2], [], [3]], "{{1, 2}, {3}}"),
        (VT.VT_TENSOR, Tensor([-1, 7168], None, DataType.DT_INT32, shape=[2]), "[-1 7168]"),
        (VT.VT_TENSOR, Tensor([True, False], None, DataType.DT_BOOL, shape=[2]), "[true false]"),
        (VT.VT_TENSOR, Tensor(), "<empty>"),
        (VT.VT_TENSOR, Tensor.from_numpy(np.ones(2, np.complex64)), "<not_supported>"),
        (VT.VT_TENSOR, Tensor.from_numpy(np.float16([0.5])), "[0.500000]"),
        (VT.VT_BYTES, b"x", ""),
        (VT.VT_LIST_LIST_FLOAT, [[1.0]], ""),
    ],
)
def test_attribute_rendering(kind: AttrValueType, value: Any, text: str) -> None:
    stored: AttrValue = make_attr_value(value, kind)
    assert render_attr(stored) == text
