"""Golden ``graph.as_text()`` texts (our listing; GE's ``str(graph)``: test_readable.py),
written from the format in ``ge/graph/_printer.py``'s docstring:
one line per node ``name = Type(inputs) {attrs} -> outputs``; inputs ``producer:port``, ``_``
when unconnected, ``^producer`` for control inputs; attributes sorted by name; outputs as
``<dtype>[dims]`` plus ``@FORMAT`` when not ND; a ``return`` line; subgraph blocks after the
root, each naming its parent node."""

from __future__ import annotations

import textwrap

from ge.graph import AttrValueType, DataType, Format, Graph, NamedAttrs, Node, Tensor, TensorDesc


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def _desc(shape: list[int], dt: DataType = DataType.DT_FLOAT, fmt: Format = Format.FORMAT_ND):
    return TensorDesc(shape, fmt, dt)


def _data_relu() -> Graph:
    g = Graph("demo")
    x = g.add_node("Data", "x", num_outputs=1)
    x.set_attr("index", 0)
    x.update_output_desc(0, _desc([2, 3]))
    relu = g.add_node("Relu", num_inputs=1, num_outputs=1)
    relu.update_output_desc(0, _desc([2, 3]))
    g.add_data_edge(x, 0, relu, 0)
    g.set_outputs([(relu, 0)])
    return g


def test_data_relu() -> None:
    assert _data_relu().as_text() == golden(
        """
        graph demo {
          x = Data() {index=0} -> f32[2,3]
          Relu_0 = Relu(x:0) -> f32[2,3]
          return Relu_0:0
        }
        """
    )


def test_empty_graph() -> None:
    assert Graph("e").as_text() == "graph e {\n}"


def test_const_with_tensor_attr() -> None:
    g = Graph("c")
    const = g.add_node("Const", num_outputs=1)
    const.set_attr("value", Tensor([1, 2, 3, 4], None, DataType.DT_INT32, Format.FORMAT_ND, [2, 2]))
    const.update_output_desc(0, _desc([2, 2], DataType.DT_INT32))
    g.set_outputs([(const, 0)])
    assert g.as_text() == golden(
        """
        graph c {
          Const_0 = Const() {value=tensor<i32[2,2]>[1, 2, 3, 4]} -> i32[2,2]
          return Const_0:0
        }
        """
    )


def test_long_tensor_attr_is_cut() -> None:
    g = Graph("c")
    const = g.add_node("Const", "k", num_outputs=1)
    const.set_attr(
        "value", Tensor(list(range(10)), None, DataType.DT_INT64, Format.FORMAT_ND, [10])
    )
    const.update_output_desc(0, _desc([10], DataType.DT_INT64))
    assert g.as_text().splitlines()[1] == (
        "  k = Const() {value=tensor<i64[10]>[0, 1, 2, 3, 4, 5, 6, 7, ...]} -> i64[10]"
    )


def test_multi_output_node() -> None:
    g = Graph("m")
    x = g.add_node("Data", "x", num_outputs=1)
    x.update_output_desc(0, _desc([4]))
    split = g.add_node("Split", num_inputs=1, num_outputs=2)
    split.set_attr("num_split", 2)
    split.update_output_desc(0, _desc([2]))
    split.update_output_desc(1, _desc([2]))
    a = g.add_node("Relu", "a", num_inputs=1, num_outputs=1)
    a.update_output_desc(0, _desc([2]))
    g.add_data_edge(x, 0, split, 0)
    g.add_data_edge(split, 1, a, 0)
    g.set_outputs([(split, 0), (a, 0)])
    assert g.as_text() == golden(
        """
        graph m {
          x = Data() -> f32[4]
          Split_0 = Split(x:0) {num_split=2} -> (f32[2], f32[2])
          a = Relu(Split_0:1) -> f32[2]
          return Split_0:0, a:0
        }
        """
    )


def test_unconnected_input_and_default_desc() -> None:
    g = Graph("u")
    x = g.add_node("Data", "x", num_outputs=1)
    add = g.add_node("Add", num_inputs=2, num_outputs=1)
    g.add_data_edge(x, 0, add, 1)
    assert g.as_text() == golden(
        """
        graph u {
          x = Data() -> f32[]
          Add_0 = Add(_, x:0) -> f32[]
        }
        """
    )


def test_control_inputs() -> None:
    g = Graph("ctl")
    x = g.add_node("Data", "x", num_outputs=1)
    c = g.add_node("NoOp", "c")
    d = g.add_node("NoOp", "d")
    r = g.add_node("Relu", "r", num_inputs=1, num_outputs=1)
    g.add_control_edge(x, c)
    g.add_control_edge(c, r)
    g.add_control_edge(d, r)
    g.add_data_edge(x, 0, r, 0)
    assert g.as_text() == golden(
        """
        graph ctl {
          x = Data() -> f32[]
          c = NoOp(^x)
          d = NoOp()
          r = Relu(x:0, ^c, ^d) -> f32[]
        }
        """
    )


def test_non_nd_format_and_dtypes() -> None:
    g = Graph("fmt")
    x = g.add_node("Data", "x", num_outputs=1)
    x.update_output_desc(0, _desc([1, 3, 8, 8], DataType.DT_FLOAT16, Format.FORMAT_NCHW))
    y = g.add_node("Cast", "y", num_inputs=1, num_outputs=1)
    y.update_output_desc(0, _desc([1, 8, 8, 3], DataType.DT_BF16, Format.FORMAT_NHWC))
    z = g.add_node("Cast", "z", num_inputs=1, num_outputs=1)
    z.update_output_desc(0, _desc([-1, 2], DataType.DT_BOOL))
    g.add_data_edge(x, 0, y, 0)
    g.add_data_edge(y, 0, z, 0)
    assert g.as_text() == golden(
        """
        graph fmt {
          x = Data() -> f16[1,3,8,8]@NCHW
          y = Cast(x:0) -> bf16[1,8,8,3]@NHWC
          z = Cast(y:0) -> bool[-1,2]
        }
        """
    )


def test_graph_attrs_line_and_sorted_attrs() -> None:
    g = Graph("attrs")
    g.set_attr("zeta", "s")
    g.set_attr("alpha", 1)
    g.set_attr("mid", [0.5, 2.0])
    g.set_attr("flag", True)
    n = g.add_node("Foo", "n", num_outputs=1)
    n.set_attr("z", ["a", "b"])
    n.set_attr("dt", DataType.DT_INT32)
    n.set_attr("f", 0.1)
    n.set_attr("ints", [1, -2])
    assert g.as_text() == golden(
        """
        graph attrs {
          attrs {alpha=1, flag=True, mid=[0.5, 2.0], zeta='s'}
          n = Foo() {dt=DT_INT32, f=0.1, ints=[1, -2], z=['a', 'b']} -> f32[]
        }
        """
    )


def test_other_attr_kinds() -> None:
    g = Graph("k")
    n = g.add_node("Foo", "n")
    n.set_attr("b", b"\x00a", AttrValueType.VT_BYTES)  # kinds GE's rules refuse: explicit
    n.set_attr("d", TensorDesc([3], data_type=DataType.DT_INT8), AttrValueType.VT_TENSOR_DESC)
    n.set_attr("fn", NamedAttrs.of("f", {"y": 2, "x": "s"}))
    n.set_attr("g", Graph("sub"), AttrValueType.VT_GRAPH)
    assert g.as_text().splitlines()[1] == (
        "  n = Foo() {b=b'\\x00a', d=desc<i8[3]>, fn=f{x='s', y=2}, g=graph<sub>}"
    )


def test_output_desc_attrs() -> None:
    g = Graph("da")
    n = g.add_node("Foo", "n", num_outputs=1)
    n.update_output_desc(0, _desc([2]))
    n.set_output_attr("tag", 0, "t")
    assert g.as_text().splitlines()[1] == "  n = Foo() -> f32[2]{tag='t'}"


def _if_graph() -> tuple[Graph, Node]:
    root = Graph("root")
    cond = root.add_node("Data", "cond", num_outputs=1)
    cond.update_output_desc(0, _desc([], DataType.DT_BOOL))
    x = root.add_node("Data", "x", num_outputs=1)
    x.update_output_desc(0, _desc([2]))
    if_node = root.add_node("If", num_inputs=2, num_outputs=1)
    if_node.update_output_desc(0, _desc([2]))
    root.add_data_edge(cond, 0, if_node, 0)
    root.add_data_edge(x, 0, if_node, 1)
    root.set_outputs([(if_node, 0)])

    then_g = Graph("then_g")
    t_in = then_g.add_node("Data", "t_in", num_outputs=1)
    t_in.set_attr("index", 0)
    t_in.update_output_desc(0, _desc([2]))
    t_relu = then_g.add_node("Relu", "t_relu", num_inputs=1, num_outputs=1)
    t_relu.update_output_desc(0, _desc([2]))
    then_g.add_data_edge(t_in, 0, t_relu, 0)
    then_g.set_outputs([(t_relu, 0)])

    else_g = Graph("else_g")
    e_in = else_g.add_node("Data", "e_in", num_outputs=1)
    e_in.set_attr("index", 0)
    e_in.update_output_desc(0, _desc([2]))
    else_g.set_outputs([(e_in, 0)])

    root.set_node_subgraph(if_node, 0, then_g)
    root.set_node_subgraph(if_node, 1, else_g)
    return root, if_node


def test_subgraph_blocks() -> None:
    root, _ = _if_graph()
    assert root.as_text() == golden(
        """
        graph root {
          cond = Data() -> bool[]
          x = Data() -> f32[2]
          If_0 = If(cond:0, x:0) subgraphs=[then_g, else_g] -> f32[2]
          return If_0:0
        }
        subgraph then_g (parent If_0) {
          t_in = Data() {index=0} -> f32[2]
          t_relu = Relu(t_in:0) -> f32[2]
          return t_relu:0
        }
        subgraph else_g (parent If_0) {
          e_in = Data() {index=0} -> f32[2]
          return e_in:0
        }
        """
    )


def test_node_with_attrs_and_subgraphs() -> None:
    root, if_node = _if_graph()
    if_node.set_attr("branch", 1)
    assert root.as_text().splitlines()[3] == (
        "  If_0 = If(cond:0, x:0) {branch=1} subgraphs=[then_g, else_g] -> f32[2]"
    )


def test_removed_subgraph_shows_a_hole() -> None:
    root, _ = _if_graph()
    root.remove_subgraph("then_g")
    text = root.as_text()
    assert "  If_0 = If(cond:0, x:0) subgraphs=[_, else_g] -> f32[2]" in text.splitlines()
    assert "then_g" not in text
    assert "subgraph else_g (parent If_0) {" in text.splitlines()


def test_deterministic_for_the_same_construction() -> None:
    assert _if_graph()[0].as_text() == _if_graph()[0].as_text()
    assert _data_relu().as_text() == _data_relu().as_text()
    g = _data_relu()
    first = g.as_text()
    assert g.as_text() == first


def test_attr_insertion_order_does_not_matter() -> None:
    def build(order: list[str]) -> str:
        g = Graph("o")
        n = g.add_node("Foo", "n")
        values = {"a": 1, "b": "x", "c": [1.5], "d": False}
        for key in order:
            n.set_attr(key, values[key])
            g.set_attr(key, values[key])
        return g.as_text()

    assert build(["a", "b", "c", "d"]) == build(["d", "c", "b", "a"]) == build(["c", "a", "d", "b"])
