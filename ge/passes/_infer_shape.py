"""``infer_shape(replacement, source)``: a replacement graph's descs from what it will replace
(GE_ERRORS.md §9.4). Each replacement ``Data`` ``i`` gets the desc of what the source's input
``i`` reads, then the whole replacement is inferred. Re-exported by ``ge.passes.replacement``
(GE keeps it in ``base.py``; it sits beside the boundary types it reads)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ge.error import GeError, GeTypeError
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc

__all__ = ["infer_shape"]


def _is_match_result(source: object) -> bool:
    """A ``MatchResult``, or anything with its two methods ``infer_shape`` reads."""
    from ge.passes import pattern  # noqa: PLC0415  (pattern imports the matcher; load lazily)

    match_class = getattr(pattern, "MatchResult", None)
    if isinstance(match_class, type) and isinstance(source, match_class):
        return True
    return callable(getattr(source, "_input_ports", None)) and callable(
        getattr(source, "get_pattern_graph_name", None)
    )


def _fed_desc(node: Node, port: int) -> TensorDesc:
    """What input ``port`` of ``node`` reads: its producer's desc, else the node's own."""
    edge = node.inputs[port]
    return node.get_input_desc(port) if edge is None else edge[0].get_output_desc(edge[1])


def _match_descs(match: Any) -> list[TensorDesc]:
    return [node.get_output_desc(index) for node, index in match._input_ports()]


def _node_descs(node: Node) -> list[TensorDesc]:
    """The descs of the node's connected inputs, in port order: a node's replacement has one
    ``Data`` per connected input (as the decompose flow makes its boundary)."""
    return [_fed_desc(node, i) for i, e in enumerate(node.inputs) if e is not None]


def _is_boundary(source: object) -> bool:
    from ge.passes.replacement import SubgraphBoundary  # noqa: PLC0415  (it re-exports us)

    return isinstance(source, SubgraphBoundary)


def _boundary_descs(boundary: Any) -> list[TensorDesc]:
    descs: list[TensorDesc] = []
    for i, anchors in sorted(boundary._inputs.items()):
        if i != len(descs) or not anchors:
            raise GeError(f"boundary input slot {len(descs)} has no anchor")
        descs.append(_fed_desc(*anchors[0]))
    return descs


@dataclass(frozen=True)
class _SourceKind:
    """One kind of ``infer_shape`` source: how to recognise it, its name for messages and the
    descs of its inputs by slot."""

    type_name: str
    accepts: Callable[[object], bool]
    label: Callable[[Any], str]
    descs: Callable[[Any], list[TensorDesc]]


_SOURCE_KINDS = (
    _SourceKind("Node", lambda s: isinstance(s, Node), lambda n: n.name, _node_descs),
    _SourceKind(
        "SubgraphBoundary", _is_boundary, lambda b: "",
        _boundary_descs,
    ),
    _SourceKind(
        "MatchResult", _is_match_result, lambda m: str(m.get_pattern_graph_name()), _match_descs
    ),
)  # fmt: skip


def _set_inputs(replacement: Graph, descs: Sequence[TensorDesc]) -> None:
    from ge.passes.replacement import _data_index, _is_graph_input  # noqa: PLC0415

    for node in replacement.get_direct_nodes():
        if not _is_graph_input(node):
            continue
        index = _data_index(node)
        if not 0 <= index < len(descs):
            raise GeError(
                f"Data node {node.name} has index {index}, but the source has {len(descs)} inputs"
            )
        node.update_output_desc(0, descs[index])
        if node.get_inputs_size():
            node.update_input_desc(0, descs[index])


def infer_shape(replacement: Graph, source: Any) -> None:
    """Set each replacement ``Data`` ``i``'s desc from what the source's input ``i`` reads, then
    infer the whole replacement (``ge.ops.infer.infer_graph``). ``source`` is a ``MatchResult``
    (its pattern inputs), a ``Node`` (its connected inputs, in port order: the slots a
    decomposed node's boundary has) or a ``SubgraphBoundary`` (its input slots). Errors of the
    inference raise ``RuntimeError("infer_shape failed, …: <reason>")``, the replacement's Data
    descs already set."""
    from ge.ops.infer import infer_graph  # noqa: PLC0415  (ops sit above the pass helpers)

    if not isinstance(replacement, Graph):
        raise GeTypeError("replacement must be a ge.graph.Graph")
    kind = next((k for k in _SOURCE_KINDS if k.accepts(source)), None)
    if kind is None:
        raise GeTypeError("source must be MatchResult, Node, or SubgraphBoundary")
    try:
        nodes = replacement.get_all_nodes()
    except Exception:
        raise GeError("replacement Graph handle is empty") from None
    if not nodes:
        raise GeError("replacement graph is empty")
    if isinstance(source, Node) and source.graph is None:
        raise GeError("source Node handle is empty")
    label = kind.label(source)  # an expired MatchResult raises its own error here
    text = f"infer_shape failed, replacement_graph={replacement.name}, source_type={kind.type_name}"
    if label:
        text += f", source_name={label}"
    try:
        _set_inputs(replacement, kind.descs(source))
        infer_graph(replacement)
    except Exception as e:
        raise GeError(f"{text}: {e}") from e
