"""The default tier keeps every op of the big dtype sweeps (tests/_tiers.py) and the slow tier
keeps every claimed dtype: what moving cases to -m slow (for a cold kernel cache) must not lose."""

from __future__ import annotations

from typing import Any

import pytest

from ._tiers import default_pairs, main_dtype, representatives
from .compiler import test_compiled_ops, test_fuse
from .jit import test_numpy_table, test_numpy_ufuncs
from .ops._cases import cases


def _is_slow(param: Any) -> bool:
    return any(mark.name == "slow" for mark in param.marks)


def test_representatives_take_one_dtype_per_kind() -> None:
    every = ["float16", "float32", "float64", "bfloat16", "int8", "int32", "int64", "uint8", "bool"]
    assert representatives(every) == {"float32", "int32", "bool"}
    assert representatives(["float64", "int64", "uint8"]) == {"float64", "int64"}
    assert representatives(["uint16", "uint8", "bfloat16"]) == {"uint16", "bfloat16"}
    assert representatives([]) == frozenset()


def test_main_dtype_prefers_a_float_then_an_integer() -> None:
    assert main_dtype(["int8", "float16", "bool"]) == "float16"
    assert main_dtype(["bool", "uint8"]) == "uint8"
    assert main_dtype(["bool"]) == "bool"
    with pytest.raises(ValueError, match="claimed"):
        main_dtype([])


def test_default_pairs_cover_each_dtype_once_beyond_the_representatives() -> None:
    pairs = [("A", "float32"), ("A", "float16"), ("B", "float16"), ("B", "int8"), ("C", "int8")]
    assert default_pairs(pairs) == {
        ("A", "float32"),
        ("B", "float16"),
        ("B", "int8"),
        ("C", "int8"),
    }


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(test_compiled_ops._split_cases, id="compiled_ops"),
        pytest.param(test_fuse._fusible_cases, id="fuse"),
    ],
)
def test_op_table_sweeps_keep_every_op_by_default_and_every_dtype_when_slow(params: Any) -> None:
    swept = params()
    ids = [p.id for p in swept]
    assert len(ids) == len(set(ids))
    every = {(p.values[0].op, p.values[2]) for p in swept}
    default = {(p.values[0].op, p.values[2]) for p in swept if not _is_slow(p)}
    assert {op for op, _ in default} == {op for op, _ in every}
    assert {dtype for _, dtype in default} == {dtype for _, dtype in every}
    claimed = {(r.op, d) for r, _, d in cases()}
    assert every <= claimed
    assert len(default) < len(every) / 2  # the point: a cold cache builds a fraction


def test_compiled_ops_sweep_is_the_whole_table() -> None:
    swept = {
        (p.values[0].op, p.values[1].label, p.values[2]) for p in test_compiled_ops._split_cases()
    }
    assert swept == {(r.op, v.label, d) for r, v, d in cases()}


def test_numpy_table_keeps_every_record_and_shape_by_default() -> None:
    swept = test_numpy_table._params()
    default = [p for p in swept if not _is_slow(p)]
    records = test_numpy_table.RECORDS
    assert {(p.values[0].name, p.values[1]) for p in default} == {
        (r.name, shapes) for r in records for shapes in r.shapes
    }
    assert {p.values[2] for p in default} == {d for r in records for d in r.dtypes}
    assert len(swept) == sum(len(r.shapes) * len(r.dtypes) for r in records)


def test_numpy_ufunc_sweeps_keep_every_ufunc_by_default() -> None:
    for names, dtypes in [
        (test_numpy_ufuncs.UNARY, ["float32", "float64"]),
        (test_numpy_ufuncs.BINARY_INT, ["int8", "int32", "int64", "uint8", "uint16"]),
    ]:
        swept = test_numpy_ufuncs._sweep(names, dtypes)
        default = [p for p in swept if not _is_slow(p)]
        assert {p.values[0] for p in default} == set(names)
        assert {p.values[1] for p in default} == set(dtypes)
        assert len(swept) == len(names) * len(dtypes)
