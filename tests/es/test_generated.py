"""Generated op functions (GE_REFERENCE.md §3.5) and plugin modules (§3.1), plus control flow
(If/While/Case) built from GraphBuilder subgraphs and run with ``ge.ops.eval_graph``.

The expected signatures are written out here from the rules, not derived from the code.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ge.es
import ge.ops
from ge.es import GraphBuilder, TensorHolder
from ge.graph import AttrValueType, DataType, Graph, Tensor, TensorDesc
from ge.ops import AttrSpec, OpDef, PortKind, SubgraphSpec, TensorSpec, eval_graph

P = inspect.Parameter
DT = DataType
VT = AttrValueType
POS = P.POSITIONAL_OR_KEYWORD
KW = P.KEYWORD_ONLY
EMPTY = P.empty


def sig(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def accepts_tensor_like(annotation: Any) -> bool:
    args = set(typing.get_args(annotation))
    return (
        TensorHolder in args
        and int in args
        and float in args
        and any(typing.get_origin(a) is list for a in args)
    )


def elem(annotation: Any) -> Any:
    assert typing.get_origin(annotation) is list, annotation
    (inner,) = typing.get_args(annotation)
    return inner


# ============================================================================== signatures ====


def test_add_signature() -> None:
    fn = ge.es.Add
    assert fn.__name__ == "Add"
    assert sig(fn) == [("x1", POS, EMPTY), ("x2", POS, EMPTY)]
    params = inspect.signature(fn).parameters
    assert accepts_tensor_like(params["x1"].annotation)
    assert accepts_tensor_like(params["x2"].annotation)
    assert inspect.signature(fn).return_annotation is TensorHolder


def test_add_accepts_tensor_like_and_evaluates() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = ge.es.Add(x, 1.5)
    z = ge.es.Add([[1.0], [2.0]], y)
    g = b.build_and_reset([z])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (got,) = eval_graph(g, [a])
    np.testing.assert_allclose(got, np.array([[1.0], [2.0]], np.float32) + (a + 1.5))


def test_relu_signature_single_input_is_tensor_holder_only() -> None:
    assert sig(ge.es.Relu) == [("x", POS, EMPTY)]
    assert inspect.signature(ge.es.Relu).parameters["x"].annotation is TensorHolder


def test_relu_rejects_a_list() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        ge.es.Relu([x])


def test_relu_rejects_tensor_like_with_a_builder_around() -> None:
    b = GraphBuilder("g")
    b.create_input(0, shape=[2])
    with pytest.raises((TypeError, ValueError)):
        ge.es.Relu(1.0)


def test_matmulv2_signature() -> None:
    assert sig(ge.es.MatMulV2) == [
        ("x1", POS, EMPTY),
        ("x2", POS, EMPTY),
        ("bias", POS, None),
        ("offset_w", POS, None),
        ("transpose_x1", KW, False),
        ("transpose_x2", KW, False),
        ("offset_x", KW, 0),
    ]
    params = inspect.signature(ge.es.MatMulV2).parameters
    assert type(None) in typing.get_args(params["bias"].annotation)
    assert params["transpose_x1"].annotation is bool
    assert params["offset_x"].annotation is int


def test_matmulv2_builds_and_evaluates() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3, 4])
    w = b.create_input(1, shape=[5, 4])
    bias = b.create_input(2, shape=[5])
    y = ge.es.MatMulV2(x, w, bias, transpose_x2=True)
    assert y.shape == (3, 5)
    g = b.build_and_reset([y])
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    c = rng.standard_normal((5, 4)).astype(np.float32)
    d = rng.standard_normal(5).astype(np.float32)
    (got,) = eval_graph(g, [a, c, d])
    np.testing.assert_allclose(got, a @ c.T + d, rtol=1e-5, atol=1e-6)
    node = g.find_node_by_name(y.name)
    assert node.get_attr("transpose_x2") is True
    assert node.get_attr("transpose_x1") is False


def test_attrs_are_keyword_only() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    with pytest.raises(TypeError):
        ge.es.MatMulV2(x, x, None, None, True)


def test_concatv2_signature_and_use() -> None:
    assert sig(ge.es.ConcatV2) == [("x", POS, EMPTY), ("concat_dim", POS, EMPTY), ("N", KW, 1)]
    params = inspect.signature(ge.es.ConcatV2).parameters
    assert typing.get_origin(params["x"].annotation) is list
    assert accepts_tensor_like(elem(params["x"].annotation))
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[2, 1])
    out = ge.es.ConcatV2([x, y], 1, N=2)
    assert out.shape == (2, 4)
    g = b.build_and_reset([out])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = np.array([[7.0], [8.0]], np.float32)
    np.testing.assert_array_equal(eval_graph(g, [a, c])[0], np.concatenate([a, c], axis=1))


def test_concatv2_with_an_int_tensor_dim() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[1, 3])
    out = ge.es.ConcatV2([x, y, x], b.create_scalar_int32(0), N=3)
    assert out.shape == (5, 3)
    g = b.build_and_reset([out])
    assert g.find_node_by_name(out.name).get_attr("N") == 3
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = np.array([[7.0, 8.0, 9.0]], np.float32)
    np.testing.assert_array_equal(eval_graph(g, [a, c])[0], np.concatenate([a, c, a]))


def test_concatv2_dynamic_input_needs_a_list() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        ge.es.ConcatV2(x, 0, N=1)


def test_splitv_signature_and_use() -> None:
    assert sig(ge.es.SplitV) == [
        ("x", POS, EMPTY),
        ("size_splits", POS, EMPTY),
        ("split_dim", POS, EMPTY),
        ("y_num", POS, EMPTY),
        ("num_split", KW, EMPTY),
    ]
    params = inspect.signature(ge.es.SplitV).parameters
    assert params["y_num"].annotation is int
    assert params["num_split"].annotation is int
    assert inspect.signature(ge.es.SplitV).return_annotation == list[TensorHolder]
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 5])
    parts = ge.es.SplitV(x, [1, 4], 1, 2, num_split=2)
    assert isinstance(parts, list)
    assert [p.shape for p in parts] == [(2, 1), (2, 4)]
    g = b.build_and_reset(parts)
    a = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = eval_graph(g, [a])
    for part, ref in zip(got, np.split(a, [1], axis=1), strict=True):
        np.testing.assert_array_equal(part, ref)


def test_splitv_with_int_tensor_args() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[6, 2])
    parts = ge.es.SplitV(
        x, b.create_vector_int64([1, 2, 3]), b.create_scalar_int64(0), 3, num_split=3
    )
    assert [p.shape for p in parts] == [(1, 2), (2, 2), (3, 2)]
    g = b.build_and_reset(parts)
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    for part, ref in zip(eval_graph(g, [a]), np.split(a, [1, 3]), strict=True):
        np.testing.assert_array_equal(part, ref)


def test_splitv_required_attr_is_required() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 4])
    with pytest.raises(TypeError):
        ge.es.SplitV(x, [2, 2], 1, 2)


def test_if_signature() -> None:
    assert sig(ge.es.If) == [
        ("cond", POS, EMPTY),
        ("input", POS, EMPTY),
        ("output_num", POS, EMPTY),
        ("then_branch", POS, EMPTY),
        ("else_branch", POS, EMPTY),
    ]
    params = inspect.signature(ge.es.If).parameters
    assert typing.get_origin(params["input"].annotation) is list
    assert params["output_num"].annotation is int
    assert params["then_branch"].annotation is Graph
    assert params["else_branch"].annotation is Graph


def test_case_signature() -> None:
    assert sig(ge.es.Case) == [
        ("branch_index", POS, EMPTY),
        ("input", POS, EMPTY),
        ("output_num", POS, EMPTY),
        ("branches", POS, EMPTY),
    ]
    assert inspect.signature(ge.es.Case).parameters["branches"].annotation == list[Graph]


def test_while_signature() -> None:
    assert sig(ge.es.While) == [
        ("input", POS, EMPTY),
        ("output_num", POS, EMPTY),
        ("cond", POS, EMPTY),
        ("body", POS, EMPTY),
        ("parallel_iterations", KW, 10),
    ]
    params = inspect.signature(ge.es.While).parameters
    # one (dynamic) IR input: TensorHolder only
    assert params["input"].annotation == list[TensorHolder]
    assert params["cond"].annotation is Graph


def test_selectv2_escapes_else() -> None:
    assert sig(ge.es.SelectV2) == [
        ("condition", POS, EMPTY),
        ("then", POS, EMPTY),
        ("in_else", POS, EMPTY),
    ]
    b = GraphBuilder("g")
    c = b.create_input(0, data_type=DT.DT_BOOL, shape=[4])
    x = b.create_input(1, shape=[4])
    y = ge.es.SelectV2(c, x, in_else=-1.0)
    g = b.build_and_reset([y])
    cv = np.array([True, False, True, False])
    xv = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(eval_graph(g, [cv, xv])[0], np.where(cv, xv, -1.0))


def test_layernorm_returns_output_object() -> None:
    sig_ = inspect.signature(ge.es.LayerNorm)
    assert [p.name for p in sig_.parameters.values()][:3] == ["x", "gamma", "beta"]
    assert sig_.return_annotation == "LayerNormOutput"
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 4])
    gamma = b.create_input(1, shape=[4])
    beta = b.create_input(2, shape=[4])
    out = ge.es.LayerNorm(x, gamma, beta, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-5)
    assert type(out).__name__ == "LayerNormOutput"
    assert all(isinstance(t, TensorHolder) for t in (out.y, out.mean, out.variance))
    assert out.y.shape == (2, 4)
    assert out.mean.name == out.y.name  # one node, three outputs
    g = b.build_and_reset([out.y, out.mean, out.variance])
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4)).astype(np.float32)
    gm = rng.standard_normal(4).astype(np.float32)
    bt = rng.standard_normal(4).astype(np.float32)
    y, mean, var = eval_graph(g, [a, gm, bt])
    ref_mean = a.mean(axis=1, keepdims=True)
    ref_var = a.var(axis=1, keepdims=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, ref_var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        y, (a - ref_mean) / np.sqrt(ref_var + 1e-5) * gm + bt, rtol=1e-4, atol=1e-5
    )


def test_const_takes_the_builder_first() -> None:
    params = sig(ge.es.Const)
    assert params[0] == ("owner_graph_builder", POS, EMPTY)
    assert [(n, k) for n, k, _ in params[1:]] == [("value", KW)]
    b = GraphBuilder("g")
    c = ge.es.Const(b, value=Tensor([1, 2, 3], None, DT.DT_INT32, shape=[3]))
    assert c.name == "Const_0"
    assert c.shape == (3,)
    assert c.data_type == DT.DT_INT32
    (got,) = eval_graph(b.build_and_reset([c]), [])
    np.testing.assert_array_equal(got, np.array([1, 2, 3], np.int32))


def test_netoutput_signature() -> None:
    assert sig(ge.es.NetOutput) == [("x", POS, EMPTY)]
    assert inspect.signature(ge.es.NetOutput).parameters["x"].annotation == list[TensorHolder]


def test_no_tensor_and_no_builder_is_value_error() -> None:
    with pytest.raises(ValueError, match="Please ensure at least one input tensor or an explicit"):
        ge.es.Add(1, 2)
    with pytest.raises(ValueError, match="Please ensure at least one input tensor or an explicit"):
        ge.es.ConcatV2([[1.0], [2.0]], 0, N=2)


def test_generated_function_rejects_unknown_keyword() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        ge.es.Relu(x, alpha=1.0)


# ========================================================================== plugin modules ====


def test_plugin_modules_serve_their_groups() -> None:
    from ge.es.math import Add

    assert Add is ge.es.Add
    assert ge.es.nn.Relu is ge.es.Relu
    assert ge.es.all.Add is ge.es.Add
    assert ge.es.all.Relu is ge.es.Relu
    assert ge.es.control.If is ge.es.If
    assert "Add" in dir(ge.es.math)
    assert "If" in dir(ge.es.control)
    assert "Add" in dir(ge.es.all)
    assert "Relu" in dir(ge.es.all)


@pytest.mark.parametrize(
    ("module", "name"),
    [("nn", "Add"), ("math", "Relu"), ("control", "Add"), ("math", "If"), ("all", "NoSuchOp")],
)
def test_op_of_another_group_is_not_in_a_module(module: str, name: str) -> None:
    mod = getattr(ge.es, module)
    with pytest.raises(AttributeError):
        getattr(mod, name)
    assert name not in dir(mod)


def test_import_from_wrong_module_fails() -> None:
    with pytest.raises(ImportError):
        exec("from ge.es.nn import Add", {})


def test_unknown_top_level_op_is_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = ge.es.NoSuchOp


def test_list_and_get_plugins() -> None:
    plugins = ge.es.list_plugins()
    assert {"math", "nn", "all", "control", "array", "custom"} <= set(plugins)
    assert ge.es.get_plugin("math") is ge.es.math
    assert ge.es.get_plugin("control") is ge.es.control
    assert ge.es.get_plugin("no_such_plugin") is None


def test_es_all_names() -> None:
    assert {"GraphBuilder", "TensorHolder", "list_plugins", "get_plugin"} <= set(ge.es.__all__)


# ============================================================ ops registered at run time ====


def _same_infer(ctx: Any) -> list[Any]:
    x = ctx.inputs[0]

    def like_x() -> TensorDesc:
        return TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())

    return [
        [like_x() for _ in range(count)] if spec.dynamic else like_x()
        for spec, count in zip(ctx.op.outputs, ctx.output_counts, strict=True)
    ]


def _scale_infer(ctx: Any) -> list[TensorDesc]:
    x = ctx.inputs[0]
    return [TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())]


def _scale_reference(ctx: Any) -> list[np.ndarray]:
    x, y = ctx.inputs
    out = x * np.float32(ctx.attrs["alpha"])
    if y is not None:
        out = out + y
    return [out.astype(x.dtype)]


def _custom_ops() -> list[OpDef]:
    return [
        OpDef(
            "TestsScaleAdd",
            inputs=(TensorSpec("x"), TensorSpec("y", PortKind.OPTIONAL)),
            outputs=(TensorSpec("z"),),
            attrs=(AttrSpec("alpha", VT.VT_FLOAT, 2.0),),
            infer=_scale_infer,
            reference=_scale_reference,
            source="tests",
            group="custom",
        ),
        # phony_1opi1i_1o: optional attr declared first, required attr last
        OpDef(
            "TestsPhony1",
            inputs=(TensorSpec("x"), TensorSpec("dx", PortKind.OPTIONAL)),
            outputs=(TensorSpec("y"),),
            attrs=(AttrSpec("dt", VT.VT_DATA_TYPE, DT.DT_FLOAT), AttrSpec("flag", VT.VT_BOOL)),
            infer=_same_infer,
            source="tests",
            group="custom",
        ),
        # optional inputs followed by a required one: no defaults (pass None explicitly)
        OpDef(
            "TestsPhony2",
            inputs=(
                TensorSpec("x1", PortKind.OPTIONAL),
                TensorSpec("x2", PortKind.OPTIONAL),
                TensorSpec("x3"),
            ),
            outputs=(TensorSpec("y"),),
            infer=_same_infer_last,
            source="tests",
            group="custom",
        ),
        # all inputs optional: an owner_builder parameter after them
        OpDef(
            "TestsPhony3",
            inputs=(TensorSpec("x1", PortKind.OPTIONAL), TensorSpec("x2", PortKind.OPTIONAL)),
            outputs=(TensorSpec("y"),),
            infer=lambda ctx: [TensorDesc([1])],
            source="tests",
            group="custom",
        ),
        # keyword and collision escaping, dynamic output, subgraph, several outputs
        OpDef(
            "TestsPhony4",
            inputs=(TensorSpec("x"), TensorSpec("else")),
            outputs=(TensorSpec("x"), TensorSpec("z", PortKind.DYNAMIC)),
            attrs=(AttrSpec("x", VT.VT_INT, 1), AttrSpec("lambda", VT.VT_FLOAT, 0.5)),
            subgraphs=(SubgraphSpec("class"),),
            infer=_same_infer,
            source="tests",
            group="custom",
        ),
        # a dynamic subgraph
        OpDef(
            "TestsPhony5",
            inputs=(TensorSpec("x"),),
            outputs=(TensorSpec("y"),),
            subgraphs=(SubgraphSpec("branches", dynamic=True),),
            infer=_same_infer,
            source="tests",
            group="custom",
        ),
    ]


def _same_infer_last(ctx: Any) -> list[TensorDesc]:
    x = ctx.inputs[2]
    return [TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())]


@pytest.fixture
def custom_ops() -> Iterator[list[OpDef]]:
    ops = _custom_ops()
    registered: list[str] = []
    try:
        for op in ops:
            ge.ops.register_op_def(op)
            registered.append(op.type)
        yield ops
    finally:
        for op_type in registered:
            ge.ops.registry().unregister(op_type)


def test_runtime_op_appears_in_custom_and_evaluates(custom_ops: list[OpDef]) -> None:
    from ge.es.custom import TestsScaleAdd

    assert sig(TestsScaleAdd) == [("x", POS, EMPTY), ("y", POS, None), ("alpha", KW, 2.0)]
    assert ge.es.all.TestsScaleAdd is TestsScaleAdd
    assert "TestsScaleAdd" in dir(ge.es.custom)
    with pytest.raises(AttributeError):
        _ = ge.es.math.TestsScaleAdd
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])
    y = b.create_input(1, shape=[3])
    z1 = TestsScaleAdd(x)
    z2 = TestsScaleAdd(x, y, alpha=-1.0)
    assert z1.name == "TestsScaleAdd_0"
    assert z2.shape == (3,)
    g = b.build_and_reset([z1, z2])
    assert g.find_node_by_name(z2.name).get_attr("alpha") == -1.0
    a = np.array([1.0, 2.0, 3.0], np.float32)
    c = np.array([0.5, 0.5, 0.5], np.float32)
    got = eval_graph(g, [a, c])
    np.testing.assert_allclose(got[0], a * 2.0)
    np.testing.assert_allclose(got[1], -a + c)


def test_runtime_op_is_gone_after_unregister() -> None:
    op = _custom_ops()[0]
    ge.ops.register_op_def(op)
    try:
        assert "TestsScaleAdd" in dir(ge.es.custom)
    finally:
        ge.ops.registry().unregister(op.type)
    with pytest.raises(AttributeError):
        _ = ge.es.custom.TestsScaleAdd
    with pytest.raises(ImportError):
        exec("from ge.es.custom import TestsScaleAdd", {})


def test_builtin_op_is_not_custom() -> None:
    with pytest.raises(AttributeError):
        _ = ge.es.custom.Add


def test_required_attrs_come_first_without_default(custom_ops: list[OpDef]) -> None:
    fn = ge.es.custom.TestsPhony1
    assert sig(fn) == [
        ("x", POS, EMPTY),
        ("dx", POS, None),
        ("flag", KW, EMPTY),
        ("dt", KW, DT.DT_FLOAT),
    ]
    params = inspect.signature(fn).parameters
    assert params["flag"].annotation is bool
    assert params["dt"].annotation is DataType
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with pytest.raises(TypeError):
        fn(x)  # flag is required
    y = fn(x, flag=True)
    node = b.build_and_reset([y]).find_node_by_name(y.name)
    assert node.get_attr("flag") is True
    assert node.get_attr("dt") == DT.DT_FLOAT


def test_optional_input_before_required_has_no_default(custom_ops: list[OpDef]) -> None:
    fn = ge.es.custom.TestsPhony2
    assert sig(fn) == [("x1", POS, EMPTY), ("x2", POS, EMPTY), ("x3", POS, EMPTY)]
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = fn(None, None, x)
    g = b.build_and_reset([y])
    node = g.find_node_by_name(y.name)
    assert node.get_in_data_nodes_and_port_indexes(2)[0].name == "input_0"


def test_all_optional_inputs_get_owner_builder(custom_ops: list[OpDef]) -> None:
    fn = ge.es.custom.TestsPhony3
    assert sig(fn) == [("x1", POS, None), ("x2", POS, None), ("owner_builder", POS, None)]
    params = inspect.signature(fn).parameters
    assert accepts_tensor_like(params["x1"].annotation)  # all optional -> TensorLike accepted
    with pytest.raises(ValueError, match="Please ensure at least one input tensor"):
        fn()
    b = GraphBuilder("g")
    y = fn(owner_builder=b)
    assert y.get_owner_builder() is b
    assert y.name == "TestsPhony3_0"


def test_escaping_dynamic_outputs_subgraphs_and_output_class(custom_ops: list[OpDef]) -> None:
    fn = ge.es.custom.TestsPhony4
    assert sig(fn) == [
        ("x", POS, EMPTY),
        ("in_else", POS, EMPTY),
        ("z_num", POS, EMPTY),
        ("subgraph_class", POS, EMPTY),
        ("attr_x", KW, 1),
        ("attr_lambda", KW, 0.5),
    ]
    params = inspect.signature(fn).parameters
    assert params["z_num"].annotation is int
    assert params["subgraph_class"].annotation is Graph
    assert inspect.signature(fn).return_annotation == "TestsPhony4Output"

    sb = GraphBuilder("cls_body")
    sx = sb.create_input(0, shape=[2])
    body = sb.build_and_reset([sx, sx])  # GE: as many values as the first dynamic output

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    out = fn(x, 1.0, 2, body, attr_x=5)
    assert type(out).__name__ == "TestsPhony4Output"
    assert isinstance(out.ref_x, TensorHolder)
    assert isinstance(out.z, list)
    assert len(out.z) == 2
    assert [t.name for t in out.z] == [out.ref_x.name] * 2
    g = b.build_and_reset([out.ref_x, *out.z])
    node = g.find_node_by_name(out.ref_x.name)
    assert node.get_outputs_size() == 3
    assert node.get_attr("x") == 5
    assert node.get_attr("lambda") == pytest.approx(0.5)
    assert g.get_subgraph("cls_body") is body


def test_dynamic_subgraph_parameter(custom_ops: list[OpDef]) -> None:
    fn = ge.es.custom.TestsPhony5
    assert sig(fn) == [("x", POS, EMPTY), ("branches", POS, EMPTY)]
    assert inspect.signature(fn).parameters["branches"].annotation == list[Graph]


# ============================================================== control flow with subgraphs ====


def branch(name: str, fn: Callable[..., Any], specs: list[tuple[DataType, list[int]]]) -> Graph:
    b = GraphBuilder(name)
    ins = [b.create_input(i, data_type=dt, shape=shape) for i, (dt, shape) in enumerate(specs)]
    outs = fn(*ins)
    return b.build_and_reset(list(outs) if isinstance(outs, (list, tuple)) else [outs])


F3 = (DT.DT_FLOAT, [3])


def test_if_builds_and_evaluates() -> None:
    then_g = branch("then_g", lambda a, c: (a * c, a + 1.0), [F3, F3])
    else_g = branch("else_g", lambda a, c: (a - c, np.exp(a)), [F3, F3])
    b = GraphBuilder("root")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[3])
    y = b.create_input(2, shape=[3])
    outs = ge.es.If(cond, [x, y], 2, then_g, else_g)
    assert isinstance(outs, list)
    assert [o.shape for o in outs] == [(3,), (3,)]
    g = b.build_and_reset(outs)
    assert {s.name for s in g.get_all_subgraphs()} == {"then_g", "else_g"}
    node = g.find_node_by_name(outs[0].name)
    assert node.type == "If"
    assert node.get_subgraph_names() == ["then_g", "else_g"]
    a = np.array([1.0, -2.0, 3.0], np.float32)
    c = np.array([0.5, 4.0, -1.0], np.float32)

    def python(flag: bool) -> list[np.ndarray]:
        return [a * c, a + 1.0] if flag else [a - c, np.exp(a)]

    for flag in (True, False):
        got = eval_graph(g, [np.array(flag), a, c])
        for gv, ev in zip(got, python(flag), strict=True):
            np.testing.assert_allclose(gv, ev, rtol=1e-6)


def test_if_accepts_python_cond() -> None:
    then_g = branch("t", lambda a: a * 2.0, [F3])
    else_g = branch("e", lambda a: a * 3.0, [F3])
    b = GraphBuilder("root")
    x = b.create_input(0, shape=[3])
    (y,) = ge.es.If(x.sum() > 0.0, [x], 1, then_g, else_g)
    g = b.build_and_reset([y])
    for a in (np.array([1.0, 2.0, 3.0], np.float32), np.array([-1.0, -2.0, 0.5], np.float32)):
        expected = a * 2.0 if a.sum() > 0 else a * 3.0
        np.testing.assert_allclose(eval_graph(g, [a])[0], expected)


def test_while_builds_and_evaluates() -> None:
    i32 = (DT.DT_INT32, [])
    cond_g = branch("cond_g", lambda i, acc: i < 5, [i32, F3])
    body_g = branch("body_g", lambda i, acc: (i + 1, acc * 2.0 + 1.0), [i32, F3])
    b = GraphBuilder("root")
    i0 = b.create_input(0, data_type=DT.DT_INT32)
    acc0 = b.create_input(1, shape=[3])
    outs = ge.es.While([i0, acc0], 2, cond_g, body_g)
    assert [o.shape for o in outs] == [(), (3,)]
    assert outs[0].data_type == DT.DT_INT32
    g = b.build_and_reset(outs)
    node = g.find_node_by_name(outs[0].name)
    assert node.type == "While"
    assert node.get_attr("parallel_iterations") == 10
    for start in (0, 3, 7):
        acc = np.array([0.0, 1.0, -1.0], np.float32)
        i = start
        while i < 5:
            i, acc = i + 1, acc * 2.0 + 1.0
        got_i, got_acc = eval_graph(
            g, [np.array(start, np.int32), np.array([0.0, 1.0, -1.0], np.float32)]
        )
        assert int(got_i) == i
        np.testing.assert_allclose(got_acc, acc)


def test_case_builds_and_evaluates() -> None:
    fns = [lambda a: a + 1.0, lambda a: a * a, lambda a: -a]
    branches = [branch(f"br{k}", fn, [F3]) for k, fn in enumerate(fns)]
    b = GraphBuilder("root")
    idx = b.create_input(0, data_type=DT.DT_INT32)
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.Case(idx, [x], 1, branches)
    g = b.build_and_reset([y])
    assert g.find_node_by_name(y.name).get_subgraph_names() == ["br0", "br1", "br2"]
    a = np.array([1.0, -2.0, 3.0], np.float32)
    for k in range(3):
        np.testing.assert_allclose(eval_graph(g, [np.array(k, np.int32), a])[0], fns[k](a))


def test_nested_subgraphs_move_to_the_root() -> None:
    bool_ = (DT.DT_BOOL, [])
    inner_then = branch("inner_then", lambda a: a + 10.0, [F3])
    inner_else = branch("inner_else", lambda a: a - 10.0, [F3])

    def outer_then_fn(a: TensorHolder, c: TensorHolder) -> Any:
        return ge.es.If(c, [a], 1, inner_then, inner_else)

    outer_then = branch("outer_then", outer_then_fn, [F3, bool_])
    outer_else = branch("outer_else", lambda a, c: a * 3.0, [F3, bool_])
    b = GraphBuilder("root")
    c = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[3])
    (y,) = ge.es.If(c, [x, c], 1, outer_then, outer_else)
    g = b.build_and_reset([y])
    assert {s.name for s in g.get_all_subgraphs()} == {
        "outer_then",
        "outer_else",
        "inner_then",
        "inner_else",
    }
    assert g.get_subgraph("inner_then") is inner_then
    assert inner_then.parent_node is not None
    assert inner_then.parent_node.graph is outer_then
    assert outer_then.parent_node is g.find_node_by_name(y.name)
    a = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(eval_graph(g, [np.array(True), a])[0], a + 10.0)
    np.testing.assert_allclose(eval_graph(g, [np.array(False), a])[0], a * 3.0)


def test_if_with_a_non_graph_branch_is_type_error() -> None:
    b = GraphBuilder("root")
    c = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1, shape=[3])
    else_g = branch("e", lambda a: a, [F3])
    with pytest.raises(TypeError):
        ge.es.If(c, [x], 1, "then", else_g)
    assert (x * 2.0).name == "Mul_1"


# ===================================================== GE_ERRORS.md §3.5 / §13.2 behaviours ====


def test_generated_op_accepts_tensors_of_different_builders() -> None:
    """GE links them across graphs (the owner is the first input's builder); the compile
    step's graph check reports the foreign producer later."""
    a = GraphBuilder("a")
    x = a.create_input(0, shape=[2])
    y = GraphBuilder("b").create_input(0, shape=[2])
    z = ge.es.Add(x, y)
    assert z.get_owner_builder() is a
    assert [z._node.get_in_data_nodes_and_port_indexes(i)[0].name for i in (0, 1)] == [
        x.name,
        y.name,
    ]
    w = ge.es.Add(y, x)
    assert w.get_owner_builder() is y.get_owner_builder()


def test_an_input_holder_wins_over_owner_builder(custom_ops: list[OpDef]) -> None:
    """GE-PY's ``resolve_builder(<inputs>, owner_builder)``: inputs first, left to right."""
    a, other = GraphBuilder("a"), GraphBuilder("o")
    x = a.create_input(0, shape=[2])
    fn = ge.es.custom.TestsPhony3
    assert fn(x, None, owner_builder=other).get_owner_builder() is a
    assert fn(None, None, owner_builder=other).get_owner_builder() is other
    assert fn(1, 2.0, owner_builder=other).get_owner_builder() is other
