"""The op registry: OpDef validation, (re-)registration, look-up errors, run-time custom ops,
and GE prototype facts checked against OPS_REFERENCE.md (transcribed here by hand)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ge.error import GeError, GeTypeError, GeValueError, InferError, RegistryError
from ge.graph import AttrValueType, DataType, Graph, Tensor, TensorDesc
from ge.ops import (
    REQUIRED,
    AttrSpec,
    ExecContext,
    InferContext,
    OpDef,
    OpRegistry,
    PortKind,
    SubgraphSpec,
    TensorSpec,
    add_op_node,
    eval_graph,
    find_op,
    get_op,
    list_ops,
    register_op_def,
    registry,
)

from ._cases import data_node

VT = AttrValueType
_counter = itertools.count()


def fresh_name(stem: str = "TestOp") -> str:
    return f"{stem}{next(_counter)}x{id(object())}"


def _scale_infer(ctx: InferContext) -> list[TensorDesc]:
    x = ctx.inputs[0]
    return [TensorDesc(list(x.get_shape()), x.get_format(), x.get_data_type())]


def _scale_reference(ctx: ExecContext) -> list[np.ndarray]:
    x = ctx.inputs[0]
    return [(x * ctx.attrs["alpha"]).astype(x.dtype)]


def scale_op(name: str, **changes: Any) -> OpDef:
    fields: dict[str, Any] = {
        "inputs": (TensorSpec("x"),),
        "outputs": (TensorSpec("y"),),
        "attrs": (AttrSpec("alpha", VT.VT_FLOAT, 2.0),),
        "infer": _scale_infer,
        "reference": _scale_reference,
        "group": "custom",
        "source": "tests",
    }
    fields.update(changes)
    return OpDef(name, **fields)


@pytest.fixture
def custom() -> Iterator[list[str]]:
    """Names registered by the test; unregistered afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        if find_op(name) is not None:
            registry().unregister(name)


# --- validation: all-or-nothing -----------------------------------------------------------------
BAD_DEFS = [
    ("duplicate-input", {"inputs": (TensorSpec("x"), TensorSpec("x"))}, "input names"),
    ("duplicate-output", {"outputs": (TensorSpec("y"), TensorSpec("y"))}, "output names"),
    (
        "duplicate-attr",
        {"attrs": (AttrSpec("a", VT.VT_INT, 0), AttrSpec("a", VT.VT_FLOAT, 0.0))},
        "attribute names",
    ),
    (
        "duplicate-subgraph",
        {"subgraphs": (SubgraphSpec("f"), SubgraphSpec("f"))},
        "subgraph names",
    ),
    ("empty-input-name", {"inputs": (TensorSpec(""),)}, "input names"),
    ("int-attr-string-default", {"attrs": (AttrSpec("a", VT.VT_INT, "one"),)}, "'a'"),
    ("bool-attr-int-default", {"attrs": (AttrSpec("flag", VT.VT_BOOL, 1),)}, "'flag'"),
    (
        "list-int-attr-float-default",
        {"attrs": (AttrSpec("axes", VT.VT_LIST_INT, [0.5]),)},
        "'axes'",
    ),
    ("missing-infer", {"infer": None}, "infer"),
    ("optional-output", {"outputs": (TensorSpec("y", PortKind.OPTIONAL),)}, "optional"),
]


@pytest.mark.parametrize(
    ("changes", "pattern"), [(c, p) for _, c, p in BAD_DEFS], ids=[n for n, _, _ in BAD_DEFS]
)
def test_malformed_definitions_are_refused(changes: dict[str, Any], pattern: str) -> None:
    name = fresh_name()
    before = list_ops()
    with pytest.raises(RegistryError, match=pattern) as info:
        register_op_def(scale_op(name, **changes))
    assert isinstance(info.value, ValueError)
    assert name in str(info.value)
    assert find_op(name) is None
    assert list_ops() == before


@pytest.mark.parametrize("bad", ["", "1abc", "my-op", "a b"])
def test_op_type_must_be_an_identifier(bad: str) -> None:
    before = list_ops()
    with pytest.raises(RegistryError):
        register_op_def(scale_op(bad))
    assert list_ops() == before


def test_register_needs_an_opdef() -> None:
    with pytest.raises(GeTypeError):
        register_op_def("Relu")  # type: ignore[arg-type]


def test_required_attr_needs_no_valid_default() -> None:
    op = scale_op(fresh_name(), attrs=(AttrSpec("alpha", VT.VT_FLOAT),))
    assert op.attrs[0].required and op.attrs[0].default is REQUIRED
    reg = OpRegistry()
    assert reg.register(op) is op


# --- re-registration ------------------------------------------------------------------------------
def test_identical_reregistration_is_a_no_op(custom: list[str]) -> None:
    name = fresh_name()
    custom.append(name)
    first = register_op_def(scale_op(name))
    count = len(registry())
    again = register_op_def(scale_op(name, doc="same prototype, other doc"))
    assert again is first
    assert get_op(name) is first
    assert len(registry()) == count


@pytest.mark.parametrize(
    "changes",
    [
        {"attrs": (AttrSpec("alpha", VT.VT_FLOAT, 3.0),)},
        {"attrs": (AttrSpec("alpha", VT.VT_INT, 2),)},
        {"inputs": (TensorSpec("x"), TensorSpec("z", PortKind.OPTIONAL))},
        {"inputs": (TensorSpec("x", PortKind.DYNAMIC),)},
        {"outputs": (TensorSpec("out"),)},
        {"source": "other-plugin"},
    ],
    ids=["default", "attr-type", "extra-input", "input-kind", "output-name", "source"],
)
def test_conflicting_reregistration_raises(custom: list[str], changes: dict[str, Any]) -> None:
    name = fresh_name()
    custom.append(name)
    first = register_op_def(scale_op(name))
    with pytest.raises(RegistryError, match=name):
        register_op_def(scale_op(name, **changes))
    assert get_op(name) is first


def test_builtin_ops_cannot_be_redefined_or_removed() -> None:
    add = get_op("Add")
    with pytest.raises(RegistryError, match="Add"):
        register_op_def(
            OpDef("Add", inputs=(TensorSpec("x"),), outputs=(TensorSpec("y"),), infer=_scale_infer)
        )
    with pytest.raises(GeValueError, match="built in"):
        registry().unregister("Add")
    assert get_op("Add") is add


# --- look-up --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("typo", "hint"),
    [("Relux", "Relu"), ("MatMulV3", "MatMulV2"), ("Concatv2", "ConcatV2"), ("reducesum", None)],
)
def test_unknown_op_type_suggests_close_names(typo: str, hint: str | None) -> None:
    with pytest.raises(GeValueError, match=repr(typo)) as info:
        get_op(typo)
    assert isinstance(info.value, ValueError)
    if hint is not None:
        assert "did you mean" in str(info.value)
        assert hint in str(info.value)
    assert find_op(typo) is None


def test_unknown_op_type_without_close_names() -> None:
    with pytest.raises(GeValueError) as info:
        get_op("Qwxzzy")
    assert "did you mean" not in str(info.value)


def test_add_op_node_reports_unknown_types_with_hints() -> None:
    g = Graph("g")
    with pytest.raises(GeValueError, match="Sigmoid"):
        add_op_node(g, "Sigmod", [None])
    assert g.get_direct_nodes() == []


def test_list_ops_is_sorted_and_complete() -> None:
    ops = list_ops()
    assert ops == sorted(ops)
    assert {"Add", "ConcatV2", "If", "While", "Case", "Data", "NetOutput"} <= set(ops)
    assert all(op in registry() for op in ops)
    assert len(ops) == len(registry())


# --- run-time custom ops ---------------------------------------------------------------------
def test_custom_op_builds_infers_and_evaluates(custom: list[str]) -> None:
    name = fresh_name("Scale")
    custom.append(name)
    op = register_op_def(scale_op(name))
    assert op.source == "tests"
    assert name in list_ops()

    g = Graph("g")
    x = data_node(g, 0, [2, 3], "float16")
    y = add_op_node(g, name, [(x, 0)], name="scaled")
    z = add_op_node(g, name, [(y, 0)], {"alpha": -0.5}, name="halved")
    g.set_outputs([(y, 0), (z, 0)])
    assert y.get_attr("alpha") == 2.0  # the default is written onto the node
    assert list(z.get_output_desc(0).get_shape()) == [2, 3]
    assert z.get_output_desc(0).get_data_type() == DataType.DT_FLOAT16
    assert f"= {name}(" in g.as_text()
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    got = eval_graph(g, [a])
    np.testing.assert_array_equal(got[0], a * 2)
    np.testing.assert_array_equal(got[1], -a)

    registry().unregister(name)
    assert find_op(name) is None and name not in list_ops()
    with pytest.raises(GeValueError, match=name):
        get_op(name)
    with pytest.raises(GeValueError, match="not registered"):
        registry().unregister(name)


def test_custom_op_can_be_registered_again_after_unregister(custom: list[str]) -> None:
    name = fresh_name()
    custom.append(name)
    register_op_def(scale_op(name))
    registry().unregister(name)
    second = register_op_def(scale_op(name, attrs=(AttrSpec("alpha", VT.VT_FLOAT, 5.0),)))
    assert get_op(name) is second


def test_custom_op_with_dynamic_input_and_required_attr(custom: list[str]) -> None:
    name = fresh_name("WeightedSum")
    custom.append(name)

    def infer(ctx: InferContext) -> list[TensorDesc]:
        xs = ctx.inputs[0]
        if len(xs) != len(ctx.attrs["weights"]):
            raise InferError(f"{len(xs)} inputs but {len(ctx.attrs['weights'])} weights")
        return [TensorDesc(list(xs[0].get_shape()), data_type=xs[0].get_data_type())]

    def reference(ctx: ExecContext) -> list[np.ndarray]:
        xs, w = ctx.inputs[0], ctx.attrs["weights"]
        return [sum(wi * xi for wi, xi in zip(w, xs, strict=True)).astype(xs[0].dtype)]

    register_op_def(
        OpDef(
            name,
            inputs=(TensorSpec("x", PortKind.DYNAMIC),),
            outputs=(TensorSpec("y"),),
            attrs=(AttrSpec("weights", VT.VT_LIST_FLOAT),),
            infer=infer,
            reference=reference,
            source="tests",
        )
    )
    g = Graph("g")
    a, b = data_node(g, 0, [2], "float32"), data_node(g, 1, [2], "float32")
    with pytest.raises(GeValueError, match="weights"):
        add_op_node(g, name, [[(a, 0), (b, 0)]])
    with pytest.raises(
        InferError, match=rf"^{name}\(x: \[f32\[2\], f32\[2\]\]\): 2 inputs but 1 weights"
    ):
        add_op_node(g, name, [[(a, 0), (b, 0)]], {"weights": [1.0]})
    y = add_op_node(g, name, [[(a, 0), (b, 0)]], {"weights": [1.0, -2.0]})
    assert y.get_input_names() == ["x0", "x1"]
    g.set_outputs([(y, 0)])
    (got,) = eval_graph(g, [np.array([1, 2], np.float32), np.array([3, 4], np.float32)])
    np.testing.assert_array_equal(got, [-5.0, -6.0])


def test_custom_op_without_reference_cannot_be_evaluated(custom: list[str]) -> None:
    name = fresh_name()
    custom.append(name)
    register_op_def(scale_op(name, reference=None))
    g = Graph("g")
    x = data_node(g, 0, [2], "float32")
    y = add_op_node(g, name, [(x, 0)])
    g.set_outputs([(y, 0)])
    with pytest.raises(GeError, match=name):
        eval_graph(g, [np.zeros(2, np.float32)])


def test_listeners_see_new_ops_and_a_failing_listener_rolls_back() -> None:
    reg = OpRegistry()
    seen: list[str] = []
    reg.add_listener(lambda op: seen.append(op.type))
    first = reg.register(scale_op("Alpha"))
    reg.register(scale_op("Alpha"))  # identical: no second notification
    assert seen == ["Alpha"]
    assert reg.get("Alpha") is first

    def refuse(op: OpDef) -> None:
        if op.type == "Beta":
            raise RuntimeError("listener refuses Beta")

    reg.add_listener(refuse)
    with pytest.raises(RuntimeError, match="refuses"):
        reg.register(scale_op("Beta"))
    assert reg.find("Beta") is None and "Beta" not in reg
    assert len(reg) == 1


# --- prototype facts (OPS_REFERENCE.md §4) -----------------------------------------------------
R, OPT, Y = PortKind.REQUIRED, PortKind.OPTIONAL, PortKind.DYNAMIC
PROTOTYPES: dict[str, dict[str, Any]] = {
    "ConcatV2": {
        "inputs": [("x", Y), ("concat_dim", R)],
        "outputs": [("y", R)],
        "attrs": [("N", VT.VT_INT, 1)],
    },
    "SplitV": {
        "inputs": [("x", R), ("size_splits", R), ("split_dim", R)],
        "outputs": [("y", Y)],
        "attrs": [("num_split", VT.VT_INT, REQUIRED)],
    },
    "SelectV2": {
        "inputs": [("condition", R), ("then", R), ("else", R)],
        "outputs": [("result", R)],
        "attrs": [],
    },
    "Select": {
        "inputs": [("condition", R), ("x1", R), ("x2", R)],
        "outputs": [("y", R)],
        "attrs": [],
    },
    "LogSoftmaxV2": {
        "inputs": [("logits", R)],
        "outputs": [("logsoftmax", R)],
        "attrs": [("axes", VT.VT_LIST_INT, [-1])],
    },
    "SoftmaxV2": {
        "inputs": [("x", R)],
        "outputs": [("y", R)],
        "attrs": [("axes", VT.VT_LIST_INT, [-1]), ("half_to_float", VT.VT_BOOL, False)],
    },
    "LayerNorm": {
        "inputs": [("x", R), ("gamma", R), ("beta", R)],
        "outputs": [("y", R), ("mean", R), ("variance", R)],
        "attrs": [
            ("begin_norm_axis", VT.VT_INT, 0),
            ("begin_params_axis", VT.VT_INT, 0),
            ("epsilon", VT.VT_FLOAT, 1e-7),
        ],
    },
    "MatMul": {
        "inputs": [("x1", R), ("x2", R), ("bias", OPT)],
        "outputs": [("y", R)],
        "attrs": [("transpose_x1", VT.VT_BOOL, False), ("transpose_x2", VT.VT_BOOL, False)],
    },
    "MatMulV2": {
        "inputs": [("x1", R), ("x2", R), ("bias", OPT), ("offset_w", OPT)],
        "outputs": [("y", R)],
        "attrs": [
            ("transpose_x1", VT.VT_BOOL, False),
            ("transpose_x2", VT.VT_BOOL, False),
            ("offset_x", VT.VT_INT, 0),
        ],
    },
    "BatchMatMulV2": {
        "inputs": [("x1", R), ("x2", R), ("bias", OPT), ("offset_w", OPT)],
        "outputs": [("y", R)],
        "attrs": [
            ("adj_x1", VT.VT_BOOL, False),
            ("adj_x2", VT.VT_BOOL, False),
            ("offset_x", VT.VT_INT, 0),
        ],
    },
    "ArgMaxV2": {
        "inputs": [("x", R), ("dimension", R)],
        "outputs": [("y", R)],
        "attrs": [("dtype", VT.VT_DATA_TYPE, DataType.DT_INT64)],
    },
    "Cast": {
        "inputs": [("x", R)],
        "outputs": [("y", R)],
        "attrs": [("dst_type", VT.VT_INT, REQUIRED)],
    },
    "Shape": {"inputs": [("x", R)], "outputs": [("y", R)], "attrs": [("dtype", VT.VT_INT, 3)]},
    "AddN": {"inputs": [("x", Y)], "outputs": [("y", R)], "attrs": [("N", VT.VT_INT, REQUIRED)]},
    "ReduceMean": {
        "inputs": [("x", R), ("axes", R)],
        "outputs": [("y", R)],
        "attrs": [("keep_dims", VT.VT_BOOL, False), ("noop_with_empty_axes", VT.VT_BOOL, True)],
    },
    "Reshape": {
        "inputs": [("x", R), ("shape", R)],
        "outputs": [("y", R)],
        "attrs": [("axis", VT.VT_INT, 0), ("num_axes", VT.VT_INT, -1)],
    },
    "Squeeze": {
        "inputs": [("x", R)],
        "outputs": [("y", R)],
        "attrs": [("axis", VT.VT_LIST_INT, [])],
    },
    "Unsqueeze": {
        "inputs": [("x", R)],
        "outputs": [("y", R)],
        "attrs": [("axes", VT.VT_LIST_INT, [])],
    },
    "ExpandDims": {"inputs": [("x", R), ("axis", R)], "outputs": [("y", R)], "attrs": []},
    "StridedSlice": {
        "inputs": [("x", R), ("begin", R), ("end", R), ("strides", R)],
        "outputs": [("y", R)],
        "attrs": [
            (m, VT.VT_INT, 0)
            for m in (
                "begin_mask",
                "end_mask",
                "ellipsis_mask",
                "new_axis_mask",
                "shrink_axis_mask",
            )
        ],
    },
    "Slice": {
        "inputs": [("x", R), ("offsets", R), ("size", R)],
        "outputs": [("y", R)],
        "attrs": [],
    },
    "GatherV2": {
        "inputs": [("x", R), ("indices", R), ("axis", R)],
        "outputs": [("y", R)],
        "attrs": [
            ("batch_dims", VT.VT_INT, 0),
            ("is_preprocessed", VT.VT_BOOL, False),
            ("negative_index_support", VT.VT_BOOL, False),
        ],
    },
    "Fill": {"inputs": [("dims", R), ("value", R)], "outputs": [("y", R)], "attrs": []},
    "Range": {
        "inputs": [("start", R), ("limit", R), ("delta", R)],
        "outputs": [("y", R)],
        "attrs": [("is_closed", VT.VT_BOOL, False)],
    },
    "BiasAdd": {
        "inputs": [("x", R), ("bias", R)],
        "outputs": [("y", R)],
        "attrs": [("data_format", VT.VT_STRING, "NHWC")],
    },
    "Exp": {
        "inputs": [("x", R)],
        "outputs": [("y", R)],
        "attrs": [
            ("base", VT.VT_FLOAT, -1.0),
            ("scale", VT.VT_FLOAT, 1.0),
            ("shift", VT.VT_FLOAT, 0.0),
        ],
    },
    "Data": {"inputs": [("x", R)], "outputs": [("y", R)], "attrs": [("index", VT.VT_INT, 0)]},
    "NetOutput": {"inputs": [("x", Y)], "outputs": [], "attrs": []},
    "If": {
        "inputs": [("cond", R), ("input", Y)],
        "outputs": [("output", Y)],
        "attrs": [],
        "subgraphs": [("then_branch", False), ("else_branch", False)],
    },
    "While": {
        "inputs": [("input", Y)],
        "outputs": [("output", Y)],
        "attrs": [("parallel_iterations", VT.VT_INT, 10)],
        "subgraphs": [("cond", False), ("body", False)],
    },
    "Case": {
        "inputs": [("branch_index", R), ("input", Y)],
        "outputs": [("output", Y)],
        "attrs": [],
        "subgraphs": [("branches", True)],
    },
}


def _same_default(actual: Any, expected: Any, kind: AttrValueType) -> bool:
    if expected is REQUIRED or actual is REQUIRED:
        return actual is expected
    if kind == VT.VT_FLOAT:
        return bool(np.float32(actual) == np.float32(expected))
    if kind == VT.VT_BOOL:
        return actual is expected
    return bool(actual == expected) and not isinstance(actual, bool)


@pytest.mark.parametrize("op_type", sorted(PROTOTYPES))
def test_prototype_matches_ops_reference(op_type: str) -> None:
    facts = PROTOTYPES[op_type]
    op = get_op(op_type)
    assert op.source == "ge"
    assert [(s.name, s.kind) for s in op.inputs] == facts["inputs"]
    assert [(s.name, s.kind) for s in op.outputs] == facts["outputs"]
    assert [(a.name, a.type) for a in op.attrs] == [(n, t) for n, t, _ in facts["attrs"]]
    for spec, (_, kind, default) in zip(op.attrs, facts["attrs"], strict=True):
        assert _same_default(spec.default, default, kind), (
            f"{spec.name}: {spec.default!r} != {default!r}"
        )
    assert [(s.name, s.dynamic) for s in op.subgraphs] == facts.get("subgraphs", [])


def test_matmul_v2_offset_w_is_input_3() -> None:
    op = get_op("MatMulV2")
    assert op.input_index("offset_w") == 3 and op.input_index("bias") == 2
    assert op.inputs[3].dtypes is not None and DataType.DT_INT8 in op.inputs[3].dtypes


def test_case_branch_index_is_int32_only() -> None:
    assert get_op("Case").inputs[0].dtypes == frozenset({DataType.DT_INT32})


@pytest.mark.parametrize(
    "op", ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
)
def test_comparisons_output_bool(op: str) -> None:
    assert get_op(op).outputs[0].dtypes == frozenset({DataType.DT_BOOL})


def test_argmax_outputs_index_types() -> None:
    assert get_op("ArgMaxV2").outputs[0].dtypes == frozenset({DataType.DT_INT32, DataType.DT_INT64})


def test_layer_norm_epsilon_is_stored_as_float32() -> None:
    g = Graph("g")
    x = data_node(g, 0, [2, 4], "float32")
    gamma, beta = data_node(g, 1, [2, 4], "float32"), data_node(g, 2, [2, 4], "float32")
    ln = add_op_node(g, "LayerNorm", [(x, 0), (gamma, 0), (beta, 0)])
    assert ln.get_outputs_size() == 3
    assert ln.get_output_names() == ["y", "mean", "variance"]
    eps = ln.get_attr("epsilon")
    assert eps == float(np.float32(1e-7)) and eps != 1e-7


def test_optional_attrs_are_written_onto_nodes() -> None:
    """REG_OP's ATTR writes its default when the op is built (OPS_REFERENCE.md §1.2)."""
    g = Graph("g")
    x = data_node(g, 0, [2, 3], "float32")

    def const(value: list[int]) -> tuple[Any, int]:
        tensor = Tensor.from_numpy(np.array(value, np.int32))
        return add_op_node(g, "Const", [], {"value": tensor}), 0

    r = add_op_node(g, "Reshape", [(x, 0), const([3, 2])])
    assert (r.get_attr("axis"), r.get_attr("num_axes")) == (0, -1)
    c = add_op_node(g, "ConcatV2", [[(x, 0), (x, 0)], const([0])], {"N": 2})
    assert c.get_attr("N") == 2
    assert c.get_input_names() == ["x0", "x1", "concat_dim"]
    a = add_op_node(g, "ArgMaxV2", [(x, 0), const([1])])
    assert a.get_attr("dtype") == DataType.DT_INT64
    assert a.get_output_desc(0).get_data_type() == DataType.DT_INT64
    s = add_op_node(
        g, "SplitV", [(x, 0), const([1, 1]), const([0])], {"num_split": 2}, output_counts=[2]
    )
    assert s.get_output_names() == ["y0", "y1"]
    sh = add_op_node(g, "Shape", [(x, 0)])
    assert sh.get_attr("dtype") == 3


# --- resolvers: asked on misses only -----------------------------------------------------------
def test_resolvers_are_asked_on_misses_only() -> None:
    name = fresh_name("Resolved")
    asked: list[str] = []
    reg = OpRegistry()
    reg.register(scale_op("Known"))

    def resolver(op_type: str) -> bool:
        asked.append(op_type)
        if op_type == name:
            reg.register(scale_op(name))
            return True
        return False

    reg.add_resolver(resolver)
    reg.add_resolver(resolver)  # added once
    assert reg.find("Known") is not None and asked == []
    assert reg.get(name).type == name and asked == [name]
    assert reg.find(name) is not None and asked == [name]  # now a hit
    assert reg.find("Missing") is None and asked == [name, "Missing"]
    with pytest.raises(GeValueError, match="unknown op type 'Missing'"):
        reg.get("Missing")
    assert "Other" not in reg and asked == [name, "Missing", "Missing"]  # `in` never resolves
