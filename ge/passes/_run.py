"""Running the registered passes of one ``PassStage`` on a graph, each as a transaction.

The compile pipeline (``ge.compiler.pipeline``) calls ``run_stage`` at each of the four
stages, for every graph it compiles (``Session``, ``ge.jit``, ``build_model``). Passes run in
registration order; each kind has its flow (GE_REFERENCE.md §6):

    fusion_base     ``run(graph, context)``; the result maps as GE's bridge maps it: ``None``
                    or ``True`` succeed, ``False`` fails, an ``int`` is a status (0 succeeds),
                    anything else fails
    pattern_fusion  for each pattern (``@pattern`` methods, or ``patterns()``), one sweep of
                    its non-overlapping matches in topological order: ``meet_requirements``,
                    ``replacement``, then the match region is replaced by the replacement
                    (``SubgraphRewriter.replace`` with the context, which checks ``can_fuse``
                    and reports the fusion)
    decompose       each node of ``op_types``: ``meet_requirements``, ``replacement``, then the
                    node is replaced

A pass that raises, or whose result means failure, leaves the graph exactly as it was before
the pass ran (the graph's contents are restored from a snapshot taken before it) and fails the
compile with ``PassError`` naming the pass, its stage and the message.

Decisions (ours, where GE's docs are silent):

* pattern and decompose passes visit the root graph and every subgraph; ``run()`` of a
  ``fusion_base`` pass gets the root graph only (it can walk ``get_all_subgraphs()``).
* a pattern is swept once: matches that a replacement creates are not looked for again in the
  same run (so a replacement that contains its own pattern cannot loop).
* a decomposed node's replacement inputs are the node's connected inputs, in port order.
* at ``AFTER_INFER_SHAPE`` and later, a graph a pass changed is inferred again after the pass,
  so a replacement without exact descs (a forgotten ``infer_shape``) cannot miscompile.
* a pass class is instantiated once per run, with no arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ge.error import GeError, GeTypeError, PassError
from ge.graph._snapshot import restore
from ge.graph._snapshot import snapshot as take_snapshot
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.passes import _hooks
from ge.passes.base import PassContext, PatternFusionPass
from ge.passes.bootstrap import ensure_plugins_loaded
from ge.passes.registry import PassDescriptor, registered_passes_at
from ge.passes.stage import PassStage

if TYPE_CHECKING:
    from ge.passes.pattern import MatchResult, Pattern

__all__ = ["PassRecord", "PatternRecord", "StageReport", "run_stage"]

# called with (pass name, graph, "before" | "after") around a pass that changed the graph
OnChange = Callable[[str, Graph, str], None]

_INFERRED_STAGES = frozenset(
    {
        PassStage.AFTER_INFER_SHAPE,
        PassStage.AFTER_BUILTIN_FUSION_PASS,
        PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE,
    }
)


@dataclass(frozen=True)
class PatternRecord:
    """One pattern of a pattern pass in one run: how many matches it found and replaced, and
    (when explaining) why it matched nothing: the closest partial match's first mismatch."""

    name: str
    found: int
    replaced: int
    why: str = ""


@dataclass
class PassRecord:
    """What one pass did in one run: the fusions it reported (node names before -> after) and,
    for a pattern pass, how many matches each pattern had and how many it replaced."""

    pass_name: str
    stage: PassStage
    fusions: list[tuple[list[str], list[str]]] = field(default_factory=list)
    patterns: list[PatternRecord] = field(default_factory=list)
    changed: bool = False
    explain: bool = False  # whether pattern records say why they matched nothing


@dataclass
class StageReport:
    stage: PassStage
    records: list[PassRecord] = field(default_factory=list)


def run_stage(
    graph: Graph,
    stage: PassStage,
    options: Mapping[str, str] | None = None,
    *,
    on_change: OnChange | None = None,
    infer: Callable[[Graph], None] | None = None,
    explain: bool = False,
) -> StageReport:
    """Run every pass registered at ``stage`` on ``graph`` (in place). ``infer`` re-infers a
    graph a pass changed at the stages after shape inference; ``on_change`` sees the graph
    before and after each pass that changed it (the pipeline's ``GE_DUMP_GRAPH`` dumps);
    ``explain`` says, for each pattern that matched nothing, what the closest match missed."""
    ensure_plugins_loaded()
    report = StageReport(stage)
    for descriptor in registered_passes_at(stage):
        report.records.append(
            _run_pass(graph, descriptor, options or {}, on_change, infer, explain)
        )
    return report


def _run_pass(
    graph: Graph,
    descriptor: PassDescriptor,
    options: Mapping[str, str],
    on_change: OnChange | None,
    infer: Callable[[Graph], None] | None,
    explain: bool,
) -> PassRecord:
    record = PassRecord(descriptor.pass_name, descriptor.stage)
    record.explain = explain
    context = PassContext._create(descriptor.pass_name, options)
    snapshot = take_snapshot(graph)
    reinfer = infer is not None and descriptor.stage in _INFERRED_STAGES
    # what run() of a fusion_base pass did is known only by comparing
    before = graph.as_text() if on_change is not None or reinfer else None
    try:
        flow = _FLOWS.get(descriptor.kind)
        if flow is None:
            raise _PassFailedError(
                f"unknown pass kind {descriptor.kind!r}; expected one of {sorted(_FLOWS)}"
            )
        changed = flow(graph, descriptor, context, record)
        if changed is None:
            changed = before is not None and graph.as_text() != before
        if changed and reinfer:
            assert infer is not None
            infer(graph)
    except BaseException as e:  # any failure, KeyboardInterrupt too: the graph is restored
        restore(graph, snapshot)
        if isinstance(e, Exception):
            raise _failure(descriptor, context, e) from e
        raise
    record.fusions = [(list(b), list(a)) for b, a in context._fuse_records]
    record.changed = changed
    if on_change is not None and changed:
        on_change(descriptor.pass_name, snapshot, "before")
        on_change(descriptor.pass_name, graph, "after")
    return record


def _failure(descriptor: PassDescriptor, context: PassContext, error: Exception) -> PassError:
    message = context.get_error_message() or (
        str(error) if isinstance(error, GeError) else f"{type(error).__name__}: {error}"
    )
    if isinstance(error, _PassFailedError) and error.status is not None:
        message = f"{message} (status {error.status})"
    return PassError(
        f"python pass {descriptor.pass_name} ({descriptor.kind}, stage "
        f"{descriptor.stage.name}) failed: {message}"
    )


class _PassFailedError(GeError):
    """A pass reported failure without raising."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# --- fusion_base ------------------------------------------------------------------------------
def _run_fusion_base(
    graph: Graph, descriptor: PassDescriptor, context: PassContext, record: PassRecord
) -> bool | None:
    instance = descriptor.cls()
    result = instance.run(graph, context)
    if result is None or result is True:
        return None  # run() may have edited anything: the caller compares when it matters
    if result is False:
        raise _PassFailedError("run() returned False")
    if isinstance(result, int):
        if result == 0:
            return None
        raise _PassFailedError("run() returned a failure status", result)
    raise _PassFailedError(
        f"run() returned {type(result).__name__}; expected None, a bool or an int status"
    )


# --- decompose ---------------------------------------------------------------------------------
def _run_decompose(
    graph: Graph, descriptor: PassDescriptor, context: PassContext, record: PassRecord
) -> bool:
    """Each node of ``op_types`` (every graph level) that meets the requirements is replaced
    by its replacement graph: a whole-node rule of the one rewrite driver."""
    from ge.passes.rewrite import Rule, rewrite  # noqa: PLC0415  (only when used)

    instance = descriptor.cls()

    def decompose(node: Node, ctx: PassContext) -> Graph | None:
        if not _hooks.call_meet_requirements(instance, node, ctx):
            return None
        replacement = _hooks.call_replacement(instance, node, ctx)
        if not isinstance(replacement, Graph):
            raise GeTypeError("DecomposePass.replacement must return ge.graph.Graph")
        return replacement

    rule = Rule(descriptor.pass_name, frozenset(descriptor.op_types or ()), decompose, True)
    changed = False
    for g in _all_graphs(graph):
        changed = rewrite(g, [rule], descriptor.pass_name, state=context) or changed
    return changed


# --- pattern_fusion ---------------------------------------------------------------------------
def _run_pattern_fusion(
    graph: Graph, descriptor: PassDescriptor, context: PassContext, record: PassRecord
) -> bool:
    from ge.passes._match import explain_match, find_matches  # noqa: PLC0415  (only when used)
    from ge.passes.pattern import PatternMatcherConfig  # noqa: PLC0415

    instance = descriptor.cls()
    config = instance.matcher_config
    if config is not None and not isinstance(config, PatternMatcherConfig):
        raise TypeError("PatternFusionPass.matcher_config must be PatternMatcherConfig or None")
    changed = False
    for pattern in _patterns_of(instance):
        found = done = 0
        for g in _all_graphs(graph):
            for match in find_matches(g, pattern, config):
                if not match.still_valid():  # an earlier replacement took part of it
                    continue
                found += 1
                if _apply_match(instance, pattern, match, context):
                    done += 1
        name = pattern._live_graph().name
        why = explain_match(graph, pattern, config) if record.explain and not found else ""
        record.patterns.append(PatternRecord(name, found, done, why))
        changed = changed or done > 0
    return changed


def _patterns_of(instance: PatternFusionPass) -> list[Pattern]:
    from ge.passes.pattern import build_expression_pattern, ensure_pattern  # noqa: PLC0415

    names = _hooks.pattern_method_names(type(instance))
    if names:
        return [build_expression_pattern(instance, name) for name in names]
    items = instance.patterns()
    if items is None:
        return []
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError("PatternFusionPass.patterns must return an iterable of Pattern or Graph")
    return [ensure_pattern(item) for item in items]


def _apply_match(
    instance: PatternFusionPass, pattern: Pattern, match: Any, context: PassContext
) -> bool:
    from ge.passes.replacement import SubgraphRewriter, boundary_from_match  # noqa: PLC0415

    result = match.result(pattern)
    try:
        if not _hooks.call_meet_requirements(instance, result, context):
            return False
        replacement = _replacement_of(instance, result, context)
        SubgraphRewriter.replace(boundary_from_match(result), replacement, context=context)
        return True
    finally:
        result._invalidate()


def _replacement_of(
    instance: PatternFusionPass, result: MatchResult, context: PassContext
) -> Graph:
    if not _hooks.is_expression_replacement(type(instance)):
        graph = _hooks.call_replacement(instance, result, context)
        if not isinstance(graph, Graph):
            raise GeTypeError("PatternFusionPass.replacement must return ge.graph.Graph")
        return graph
    from ge.passes.pattern import replacement_inputs  # noqa: PLC0415

    descs = [node.get_output_desc(port) for node, port in result._input_ports()]
    builder, inputs = replacement_inputs(type(instance).__name__, len(descs), descs)
    if descs:
        inputs[len(descs) - 1]  # every input exists, used or not: they line up with the boundary
    value = _hooks.call_expression_replacement(instance, inputs, result, context)
    return _as_graph(builder, value)


def _as_graph(builder: Any, value: Any) -> Graph:
    from ge.passes.pattern import holder_outputs  # noqa: PLC0415

    if isinstance(value, Graph):
        return value
    outputs = holder_outputs(value)
    if outputs is None:
        raise GeTypeError(
            "Expression-style replacement must return a TensorHolder or a non-empty "
            "list/tuple of TensorHolder"
        )
    graph: Graph = builder.build_and_reset(outputs)
    return graph


def _all_graphs(graph: Graph) -> list[Graph]:
    return [graph, *graph.get_all_subgraphs()]


_FLOWS: dict[str, Callable[[Graph, PassDescriptor, PassContext, PassRecord], bool | None]] = {
    "fusion_base": _run_fusion_base,
    "pattern_fusion": _run_pattern_fusion,
    "decompose": _run_decompose,
}
