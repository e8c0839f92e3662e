"""Every op of the table, compiled: ``CompiledGraph`` (kernels where an op has one, the op's
reference on device buffers where not) gives what ``eval_graph`` gives, for every dtype and
odd shape of tests/ops/_cases.py."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from ge.compiler.executable import CompiledGraph
from ge.compiler.kernels import LOWERINGS
from ge.ops import eval_graph
from ge.runtime import live_bytes

from .._tiers import default_pairs, main_dtype
from ..ops._cases import Record, Variant, build, cases
from ..ops.test_ops_table import assert_close


def _split_cases() -> list[Any]:
    """Default: every op in its representative dtypes (tests/_tiers.py: one float, one integer,
    bool; the first variant) and every variant in its main dtype (float32 mostly): every op and
    every shape path, each dtype at least once, ~1/4 of the kernels. The rest runs under -m slow
    (every variant in every claimed dtype)."""
    table = cases()
    default = default_pairs((record.op, dtype) for record, _, dtype in table)
    claimed: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for record, variant, dtype in table:
        claimed.setdefault(record.op, []).append(dtype)
        first.setdefault(record.op, variant.label)
    params = []
    for record, variant, dtype in table:
        quick = dtype == main_dtype(claimed[record.op]) or (
            variant.label == first[record.op] and (record.op, dtype) in default
        )
        marks = () if quick else (pytest.mark.slow,)
        params.append(
            pytest.param(
                record, variant, dtype, marks=marks, id=f"{record.op}-{variant.label}-{dtype}"
            )
        )
    return params


@pytest.mark.parametrize(("record", "variant", "dtype"), _split_cases())
def test_compiled_matches_eval_graph(record: Record, variant: Variant, dtype: str) -> None:
    built = build(
        record.op,
        variant.inputs,
        variant.attrs,
        dtype,
        np.random.default_rng(zlib.crc32(f"{record.op}-{variant.label}-{dtype}".encode())),
        variant.output_counts,
    )
    expected = eval_graph(built.graph, built.feeds)
    before = live_bytes()
    compiled = CompiledGraph(built.graph)
    actual = compiled.run_arrays(built.feeds)
    rtol, atol = record.tolerance(dtype)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert_close(a, np.asarray(e), dtype, rtol, atol)
    del compiled
    assert live_bytes() <= before + 1024  # only the plan's constants could outlive the run


def test_elementwise_ops_have_kernels() -> None:
    for op in ("Add", "Mul", "Exp", "Relu", "Cast", "SelectV2", "AddN", "Less", "BiasAdd"):
        assert op in LOWERINGS
