"""One place per op: the compiler's tables are derived from the op records (issue #13)."""

from __future__ import annotations

from typing import Any

import pytest

from ge.compiler.kernels import LOWERINGS, kernels_of, register_kernels
from ge.compiler.kernels.elementwise import FUSIBLE_OPS, lower_elementwise
from ge.compiler.kernels.rows import REDUCTIONS
from ge.error import RegistryError
from ge.ops.registry import get_op, registry
from ge.ops.schema import OpDef, ScalarBody, TensorSpec


def _builtins() -> list[OpDef]:
    return [op for op in registry() if op.source == "ge"]


def test_scalar_body_iff_elementwise() -> None:
    """Every built-in elementwise op has a scalar body, and only those have one."""
    with_body = {op.type for op in _builtins() if op.scalar is not None}
    elementwise = {op.type for op in _builtins() if op.elementwise}
    assert with_body == elementwise


def test_fusible_is_elementwise_minus_own_broadcasts() -> None:
    """Fusible = elementwise with a numpy-broadcasting body; the two exceptions broadcast
    along a chosen axis (BiasAdd: the channel; Select: a row-picking vector condition)."""
    elementwise = {op.type for op in _builtins() if op.elementwise}
    fusible = {op.type for op in _builtins() if op.fusible}
    assert elementwise - fusible == {"BiasAdd", "Select"}
    assert fusible <= elementwise
    assert {t for t in FUSIBLE_OPS if get_op(t).source == "ge"} == fusible
    assert "Add" in FUSIBLE_OPS and "BiasAdd" not in FUSIBLE_OPS and "NoSuchOp" not in FUSIBLE_OPS


def test_every_scalar_op_is_lowered_by_the_elementwise_kernel() -> None:
    for op in _builtins():
        if op.scalar is not None:
            assert kernels_of(op).lowering is lower_elementwise, op.type
            assert op.type in LOWERINGS


def test_reductions_view() -> None:
    assert dict(REDUCTIONS) == {
        "ReduceSum": "sum",
        "ReduceMean": "mean",
        "ReduceMax": "max",
        "ReduceMin": "min",
        "ReduceProd": "prod",
    }
    assert "ArgMaxV2" not in REDUCTIONS


def test_lowerings_view_is_a_mapping() -> None:
    assert LOWERINGS["MatMul"] is kernels_of(get_op("MatMul")).lowering
    assert "Data" not in LOWERINGS and "NoSuchOp" not in LOWERINGS
    with pytest.raises(KeyError):
        LOWERINGS["NoSuchOp"]
    assert len(LOWERINGS) == len(list(LOWERINGS))


def test_register_kernels_refuses_a_second_record() -> None:
    with pytest.raises(RegistryError, match="already registered"):
        register_kernels("MatMul", lowering=lambda ctx: None)


def test_scalar_body_needs_elementwise() -> None:
    op = OpDef(
        "KernelRecordsNotElementwise",
        inputs=(TensorSpec("x"),),
        outputs=(TensorSpec("y"),),
        infer=lambda ctx: [ctx.inputs[0]],
        scalar=ScalarBody("a"),
        source="test",
    )
    with pytest.raises(RegistryError, match="not elementwise"):
        registry().register(op)
    assert "KernelRecordsNotElementwise" not in registry()


def test_ufunc_names_are_unique() -> None:
    op = OpDef(
        "KernelRecordsAdd",
        inputs=(TensorSpec("x"), TensorSpec("y")),
        outputs=(TensorSpec("z"),),
        infer=lambda ctx: [ctx.inputs[0]],
        elementwise=True,
        ufunc="add",
        source="test",
    )
    with pytest.raises(RegistryError, match="already op 'Add'"):
        registry().register(op)


def test_numpy_ufuncs_come_from_the_op_rows() -> None:
    import numpy as np

    from ge.es import GraphBuilder

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[3])

    def op_type(value: Any) -> str:
        return str(value._node.type)

    assert op_type(np.add(x, x)) == "Add"
    assert op_type(np.negative(x)) == "Neg"
    assert op_type(np.divide(x, x)) == "RealDiv"  # a composite rule of ge.es
    assert {op.ufunc for op in _builtins() if op.ufunc} >= {"add", "exp", "logical_not"}
