"""``GraphBuilder`` calls are all-or-nothing for *any* exception, not only ``GeError``: a bug's
``KeyError`` or a ``KeyboardInterrupt`` halfway through a multi-node call leaves the graph and
the name counter as they were, and the exception goes on unchanged."""

from __future__ import annotations

from typing import Any

import pytest

import ge.es
import ge.ops.construct
from ge.es import GraphBuilder


class Boom(BaseException):
    """Not an Exception at all, like KeyboardInterrupt."""


def _fail_infer(monkeypatch: pytest.MonkeyPatch, op_type: str, error: BaseException) -> None:
    """Inference of ``op_type`` nodes raises ``error`` (both ways ``add_op_node`` infers: the
    fixed-layout fast path and the general one); other nodes infer as usual."""
    real_node, real_fixed = ge.ops.construct.infer_node, ge.ops.construct.infer_fixed

    def infer_node(node: Any, op: Any = None) -> Any:
        if node.type == op_type:
            raise error
        return real_node(node, op)

    def infer_fixed(node: Any, op: Any, layout: Any) -> Any:
        if node.type == op_type:
            raise error
        return real_fixed(node, op, layout)

    monkeypatch.setattr(ge.ops.construct, "infer_node", infer_node)
    monkeypatch.setattr(ge.ops.construct, "infer_fixed", infer_fixed)


@pytest.fixture
def failing_add(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inference raises for Add nodes only, after their Const operand was made."""
    _fail_infer(monkeypatch, "Add", Boom("interrupted"))


@pytest.mark.usefixtures("failing_add")
def test_an_interrupt_inside_an_op_call_rolls_the_whole_call_back() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    before = [n.name for n in b._graph.get_direct_nodes()]
    with pytest.raises(Boom, match="interrupted"):
        ge.es.Add(x, 1.0)  # makes a Const, then the Add fails
    assert [n.name for n in b._graph.get_direct_nodes()] == before
    with pytest.raises(Boom):
        _ = x + 2.0
    assert [n.name for n in b._graph.get_direct_nodes()] == before


def test_after_a_rollback_names_continue_as_if_nothing_happened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    with monkeypatch.context() as patch:
        _fail_infer(patch, "Mul", KeyError("bug"))
        with pytest.raises(KeyError):
            ge.es.Mul(x, 3.0)
    y = ge.es.Mul(x, 3.0)
    assert y.name == "Mul_1"  # Const_0, Mul_1: the failed call used no numbers
    g = b.build_and_reset([y])
    g.verify()


def test_build_and_reset_restores_the_outputs_on_any_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = x + 1.0
    with monkeypatch.context() as patch:
        _fail_infer(patch, "NetOutput", Boom("stop"))
        with pytest.raises(Boom):
            b.build_and_reset([y])
    g = b.build_and_reset([y])  # the first attempt left no output index taken
    assert [n.type for n in g.get_direct_nodes()].count("NetOutput") == 1
    g.verify()
