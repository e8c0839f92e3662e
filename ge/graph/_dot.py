"""Graphs for people in Jupyter: Graphviz DOT text, SVG when Graphviz is installed, and an
HTML listing otherwise.

``to_dot(graph)`` draws one box per node (name, op type, output descs) and one edge per data
input (labelled ``port -> input`` when a node has several), dashed for control edges, with
each subgraph in a cluster of its own. ``to_svg`` renders it with the ``graphviz`` Python
package and its ``dot`` program, and returns ``None`` when either is missing, so Jupyter falls
back to the HTML listing (``str(graph)`` in a ``<pre>`` block).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ge.graph._printer import format_desc, format_graph

if TYPE_CHECKING:
    from ge.graph.graph import Graph

__all__ = ["to_dot", "to_html", "to_svg"]


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _block(graph: Graph, prefix: str) -> list[str]:
    lines = []
    for node in graph.get_direct_nodes():
        descs = ", ".join(format_desc(d) for d in node._output_descs)
        label = f"{node.name}\n{node.type}" + (f"\n{descs}" if descs else "")
        lines.append(f"  {_quote(prefix + node.name)} [label={_quote(label)}];")
        for port, edge in enumerate(node._in_edges):
            if edge is None:
                continue
            src, src_port = edge
            many = len(node._in_edges) > 1 or len(src._out_edges) > 1
            attrs = f" [label={_quote(f'{src_port}->{port}')}]" if many else ""
            lines.append(f"  {_quote(prefix + src.name)} -> {_quote(prefix + node.name)}{attrs};")
        for src in node._in_ctrl:
            lines.append(
                f"  {_quote(prefix + src.name)} -> {_quote(prefix + node.name)} [style=dashed];"
            )
    return lines


def to_dot(graph: Graph) -> str:
    lines = [f"digraph {_quote(graph.name)} {{", "  node [shape=box, fontsize=10];"]
    lines += _block(graph, "")
    for k, sub in enumerate(graph.get_all_subgraphs()):
        parent = sub.parent_node
        title = sub.name + (f" (of {parent.name})" if parent is not None else "")
        lines.append(f"  subgraph cluster_{k} {{ label={_quote(title)};")
        lines += ["  " + line for line in _block(sub, f"{sub.name}/")]
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def to_svg(graph: Graph) -> str | None:
    """SVG text, or ``None`` without Graphviz (the package or its ``dot`` program)."""
    try:
        import graphviz  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError:
        return None
    try:
        svg: bytes = graphviz.Source(to_dot(graph)).pipe(format="svg")
    except Exception:  # graphviz raises its own errors when dot is missing
        return None
    return svg.decode()


def to_html(graph: Graph) -> str:
    return f"<pre>{html.escape(format_graph(graph))}</pre>"
