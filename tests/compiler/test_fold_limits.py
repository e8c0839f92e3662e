"""Constant folding (ge.compiler.fold) of results too big to keep: a node whose recorded result
is over ``MAX_FOLD_ELEMENTS`` is not even computed (a 4 TiB ``Fill`` raised ``MemoryError``
out of ``add_graph``/``run_graph``), and a reference that cannot allocate its result leaves the
node to run time, where the failure is a clean ``GeError``."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

import ge.compiler.fold
import ge.es
from ge.compiler.fold import MAX_FOLD_ELEMENTS, fold_constants
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops.registry import get_op


def huge_fill() -> Graph:
    b = GraphBuilder("g")
    f = ge.es.Fill(b.create_vector_int64([2**20, 2**20]), b.create_const_float(1.0))
    return b.build_and_reset([f])


def test_a_known_huge_result_is_not_computed() -> None:
    g = huge_fill()
    start = time.perf_counter()
    fold_constants(g)
    assert time.perf_counter() - start < 5.0
    assert [n.type for n in g.get_direct_nodes()].count("Fill") == 1


def test_a_small_result_is_still_folded() -> None:
    b = GraphBuilder("g")
    f = ge.es.Fill(b.create_vector_int64([2, 3]), b.create_const_float(1.5))
    g = b.build_and_reset([f])
    assert fold_constants(g)
    assert "Fill" not in [n.type for n in g.get_direct_nodes()]
    assert MAX_FOLD_ELEMENTS >= 6


def test_a_reference_out_of_memory_leaves_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    b = GraphBuilder("g")
    f = ge.es.Fill(b.create_vector_int64([2, 3]), b.create_const_float(1.5))
    g = b.build_and_reset([f])

    def out_of_memory(ctx: object) -> list[np.ndarray]:
        raise MemoryError("Unable to allocate 4.00 TiB")

    failing = dataclasses.replace(get_op("Fill"), reference=out_of_memory)
    real = ge.compiler.fold.op_of
    monkeypatch.setattr(
        ge.compiler.fold, "op_of", lambda node: failing if node.type == "Fill" else real(node)
    )
    assert not fold_constants(g)
    assert "Fill" in [n.type for n in g.get_direct_nodes()]
