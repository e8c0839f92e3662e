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


@pytest.fixture
def failing_add(monkeypatch: pytest.MonkeyPatch) -> None:
    """``infer_node`` raises for Add nodes only, after their Const operand was made."""
    real = ge.ops.construct.infer_node

    def infer(node: Any, op: Any = None) -> Any:
        if node.type == "Add":
            raise Boom("interrupted")
        return real(node, op)

    monkeypatch.setattr(ge.ops.construct, "infer_node", infer)


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
    real = ge.ops.construct.infer_node
    monkeypatch.setattr(
        ge.ops.construct,
        "infer_node",
        lambda node, op=None: (
            (_ for _ in ()).throw(KeyError("bug")) if node.type == "Mul" else real(node, op)
        ),
    )
    with pytest.raises(KeyError):
        ge.es.Mul(x, 3.0)
    monkeypatch.setattr(ge.ops.construct, "infer_node", real)
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
    real = ge.ops.construct.infer_node
    monkeypatch.setattr(
        ge.ops.construct,
        "infer_node",
        lambda node, op=None: (
            (_ for _ in ()).throw(Boom("stop")) if node.type == "NetOutput" else real(node, op)
        ),
    )
    with pytest.raises(Boom):
        b.build_and_reset([y])
    monkeypatch.setattr(ge.ops.construct, "infer_node", real)
    g = b.build_and_reset([y])  # the first attempt left no output index taken
    assert [n.type for n in g.get_direct_nodes()].count("NetOutput") == 1
    g.verify()
