"""``ge.passes.explain(graph)``: which registered passes fired where, and why a pattern did not.

The question users of a fusion framework ask most is "why didn't my pattern fire?". ``explain``
compiles a copy of the graph exactly as ``Session`` would (the whole pipeline, the registered
passes at their stages; elementwise fusion left out so the result reads op by op) and reports,
stage by stage, every pass that ran: the fusions it reported (node names before -> after) and,
for each pattern of a pattern pass, how often it matched and was replaced. For a pattern that
matched nothing it names the closest partial match and its first mismatch (op type, input
count, an inner value used outside the match, a cycle, a Const value or attribute).

    >>> from ge.es import GraphBuilder
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[2])
    >>> print(explain(b.build_and_reset([x + 1.0])))
    passes on graph 'g': none registered

Decision (ours): this is the one place ``ge.passes`` calls the compile pipeline — explaining a
compile means running one — so ``ge.compiler`` is imported when ``explain`` is called, not when
``ge.passes`` is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ge.error import GeTypeError
from ge.graph.graph import Graph
from ge.passes._run import PassRecord, StageReport

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """What ``explain`` found: the report of each stage and the graph the compile produced."""

    graph_name: str
    stages: tuple[StageReport, ...]
    graph: Graph

    def records(self) -> list[PassRecord]:
        return [record for stage in self.stages for record in stage.records]

    def __str__(self) -> str:
        if not self.records():
            return f"passes on graph '{self.graph_name}': none registered"
        lines = [f"passes on graph '{self.graph_name}':"]
        for stage in self.stages:
            if stage.records:
                lines.append(f"  {stage.stage.name}")
                for record in stage.records:
                    lines.extend(_describe(record))
        return "\n".join(lines)

    def __repr__(self) -> str:
        records = self.records()
        fired = sum(1 for r in records if r.changed)
        return f"<Explanation of '{self.graph_name}': {len(records)} passes, {fired} changed it>"


def _describe(record: PassRecord) -> list[str]:
    state = "changed the graph" if record.changed else "changed nothing"
    lines = [f"    {record.pass_name}: {state}"]
    for pattern in record.patterns:
        lines.append(
            f"      pattern {pattern.name}: {pattern.found} match(es), {pattern.replaced} replaced"
        )
        if pattern.why:
            lines.append(f"        {pattern.why}")
    for before, after in record.fusions:
        made = ", ".join(after) if after else "(deleted)"
        lines.append(f"      [{', '.join(before)}] -> [{made}]")
    return lines


def explain(graph: Graph, options: Mapping[str, str] | None = None) -> Explanation:
    """Compile a copy of ``graph`` with the registered passes and report what each did
    (``options``: the compile options passes read, as ``Session`` would give them)."""
    if not isinstance(graph, Graph):
        raise GeTypeError(f"graph must be a ge.graph.Graph, got {type(graph).__name__}")
    from ge.compiler.pipeline import optimize_graph  # noqa: PLC0415  (see the module doc)

    reports: list[StageReport] = []
    compiled = optimize_graph(graph, fuse=False, options=options, reports=reports)
    return Explanation(graph.name, tuple(reports), compiled)
