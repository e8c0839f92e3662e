"""Graphs for people in Jupyter: Graphviz DOT text, SVG when Graphviz is installed, and an
HTML listing otherwise.

``to_dot(graph)`` draws one box per node: its name, op type, the constants it reads and its
output descs. Decisions the issue left open:

- A ``Const``/``Constant`` whose every use is a data input, with no control edge and not a
  graph output, is no box of its own: each consumer's label gets a line ``input = value``
  (``x2 = 2.0``, ``shape = [3, 1]``), the input named by the op's IR port name (``in1``
  where unknown). Values of up to ``_INLINE_ITEMS`` elements whose text fits in
  ``_INLINE_CHARS`` characters are written out, bigger ones as their desc (``f32[1000]``).
- A ``Data`` node is an ellipse labelled by its node name (``ge.jit`` names them after the
  function's parameters) and its output desc; ``NetOutput`` is an inverted house.
- A data edge is labelled with the consumer's input name when the consumer has several
  inputs, prefixed ``port->`` when the producer has several outputs; control edges are dashed.
- Each subgraph reachable from the graph's nodes is a cluster, and its control-flow node
  (``If``/``While``/``Case``/...) has a dashed edge into the cluster labelled with the
  subgraph's IR slot (``then_branch``, ``body``, ``branches1``). A root graph also draws the
  registered subgraphs that no node holds, unattached.

``to_svg`` renders the DOT text with the ``graphviz`` Python package and its ``dot`` program
and returns ``None`` when either is missing, when ``dot`` fails, or for graphs of more than
``_MAX_DRAWN_NODES`` nodes (``dot`` takes minutes on those and the drawing is unreadable).
``to_mimebundle`` is what Jupyter displays: exactly one of SVG or the HTML listing
(``as_text()`` in a ``<pre>`` block), so JupyterLab, which ranks ``text/html`` above
``image/svg+xml``, shows the drawing whenever there is one.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ge.error import GeError
from ge.graph._printer import format_desc, format_graph
from ge.graph.tensor import Tensor

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.node import Node

__all__ = ["can_draw", "to_dot", "to_html", "to_mimebundle", "to_svg"]

_CONST_TYPES = frozenset({"Const", "Constant"})
_NODE_SHAPES = {"Data": "ellipse", "NetOutput": "invhouse"}
_INLINE_ITEMS = 8
_INLINE_CHARS = 40
_MAX_DRAWN_NODES = 2000


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --- constants folded into their consumers ------------------------------------------------------
def _folds(node: Node, outputs: set[int]) -> bool:
    """Whether Const ``node`` is drawn inside its consumers' labels instead of as a box."""
    return (
        node.type in _CONST_TYPES
        and id(node) not in outputs
        and not node.control_inputs
        and not node.control_outputs
        and any(node.users_by_port)
    )


def _items(array: np.ndarray) -> str:
    if array.ndim == 0:
        return str(array[()])
    return "[" + ", ".join(_items(row) for row in array) + "]"


def _const_text(const: Node) -> str:
    """``2.0``, ``[3, 1]``, or the desc (``f32[1000]``) when the value is big or unreadable."""
    stored = const.attr_value("value")
    value = stored.value if stored is not None else None
    desc = format_desc(const.output_descs[0]) if const.output_descs else "?"
    if not isinstance(value, Tensor):
        return desc
    try:
        array: np.ndarray = value.numpy()
    except GeError:  # unknown dims, short or freed data: the desc says what it is
        return desc
    if array.size > _INLINE_ITEMS:
        return format_desc(value._desc)
    text = _items(array)
    return text if len(text) <= _INLINE_CHARS else format_desc(value._desc)


def _input_name(node: Node, port: int) -> str:
    names = node.input_names
    return names[port] if port < len(names) and names[port] else f"in{port}"


# --- boxes and edges ----------------------------------------------------------------------------
def _label(node: Node, folded: set[int]) -> str:
    lines = [node.name] if node.type == "Data" else [node.name, node.type]
    for port, edge in enumerate(node.inputs):
        if edge is not None and id(edge[0]) in folded:
            lines.append(f"{_input_name(node, port)} = {_const_text(edge[0])}")
    descs = ", ".join(format_desc(d) for d in node.output_descs)
    return "\n".join([*lines, descs] if descs else lines)


def _edge_attrs(node: Node, port: int, src: Node, src_port: int) -> str:
    several_outputs = len(src.output_descs) > 1
    if len(node.inputs) < 2 and not several_outputs:
        return ""
    text = _input_name(node, port)
    return f" [label={_quote(f'{src_port}->{text}' if several_outputs else text)}]"


def _node_lines(node: Node, prefix: str, folded: set[int]) -> Iterator[str]:
    me = _quote(prefix + node.name)
    shape = _NODE_SHAPES.get(node.type)
    extra = f", shape={shape}" if shape else ""
    yield f"  {me} [label={_quote(_label(node, folded))}{extra}];"
    edges = [(p, e) for p, e in enumerate(node.inputs) if e is not None and id(e[0]) not in folded]
    for port, (src, src_port) in edges:
        attrs = _edge_attrs(node, port, src, src_port)
        yield f"  {_quote(prefix + src.name)} -> {me}{attrs};"
    for src in node.control_inputs:
        yield f"  {_quote(prefix + src.name)} -> {me} [style=dashed];"


def _block(graph: Graph, prefix: str) -> list[str]:
    nodes = graph.get_direct_nodes()
    outputs = {id(n) for n, _ in graph.get_outputs()}
    folded = {id(n) for n in nodes if _folds(n, outputs)}
    lines: list[str] = []
    for node in nodes:
        if id(node) not in folded:
            lines += _node_lines(node, prefix, folded)
    return lines


# --- subgraphs as clusters ----------------------------------------------------------------------
def _slot_names(node: Node) -> list[str]:
    """The IR slot of each of ``node``'s subgraph instances (``then_branch``, ``branches0``);
    ``subgraph{i}`` when the op is unknown or its instances do not match its prototype."""
    count = len(node.subgraph_names)
    specs = node.op.subgraphs if node.op is not None else ()
    dynamic = sum(spec.dynamic for spec in specs)
    spare = count - (len(specs) - dynamic)
    names: list[str] = []
    for spec in specs:
        if not spec.dynamic:
            names.append(spec.name)
        elif dynamic == 1:
            names += [f"{spec.name}{i}" for i in range(max(spare, 0))]
    return names if len(names) == count else [f"subgraph{i}" for i in range(count)]


def _prefix(graph: Graph, root: Graph) -> str:
    return "" if graph is root else f"{graph.name}/"


def _subgraphs(graph: Graph) -> list[Graph]:
    """The subgraphs drawn with ``graph``: those its nodes hold, depth first, then (for a root)
    every other registered one."""
    found: dict[int, Graph] = {}

    def visit(owner: Graph) -> None:
        for node in owner.get_direct_nodes():
            for name in node.subgraph_names:
                sub = owner.get_subgraph(name) if name else None
                if sub is not None and id(sub) not in found and sub is not graph:
                    found[id(sub)] = sub
                    visit(sub)

    visit(graph)
    if graph._parent_graph is None:
        for sub in graph.get_all_subgraphs():
            found.setdefault(id(sub), sub)
    return list(found.values())


def _cluster(sub: Graph, k: int, graph: Graph) -> list[str]:
    parent = sub.parent_node
    title = sub.name + (f" (of {parent.name})" if parent is not None else "")
    body = _block(sub, _prefix(sub, graph))
    if not body:  # an edge needs a node to point at: an empty subgraph gets an invisible one
        body = [f"  {_quote(_prefix(sub, graph))} [shape=point, style=invis];"]
    return [
        f"  subgraph cluster_{k} {{",
        f"    label={_quote(title)}; style=rounded; color=gray50;",
        *("  " + line for line in body),
        "  }",
    ]


def _anchor(sub: Graph, graph: Graph) -> str:
    nodes = sub.get_direct_nodes()
    outputs = {id(n) for n, _ in sub.get_outputs()}
    drawn = [n for n in nodes if not _folds(n, outputs)]
    return _prefix(sub, graph) + (drawn[0].name if drawn else "")


def _links(subs: list[Graph], graph: Graph) -> list[str]:
    """The dashed edge from each control-flow node into its subgraphs' clusters."""
    cluster = {id(sub): k for k, sub in enumerate(subs)}
    lines = []
    for owner in [graph, *subs]:
        for node in owner.get_direct_nodes():
            for name, slot in zip(node.subgraph_names, _slot_names(node), strict=True):
                sub = owner.get_subgraph(name) if name else None
                if sub is None or id(sub) not in cluster:
                    continue
                src = _quote(_prefix(owner, graph) + node.name)
                attrs = f"lhead=cluster_{cluster[id(sub)]}, style=dashed, label={_quote(slot)}"
                lines.append(f"  {src} -> {_quote(_anchor(sub, graph))} [{attrs}];")
    return lines


def to_dot(graph: Graph) -> str:
    """Graphviz DOT text of ``graph`` and the subgraphs it holds (see the module doc).

    >>> from ge.graph import Graph
    >>> g = Graph("demo")
    >>> x = g.add_node("Data", "x", num_outputs=1)
    >>> print(to_dot(g))  # doctest: +NORMALIZE_WHITESPACE
    digraph "demo" {
      compound=true;
      node [shape=box, fontsize=10];
      edge [fontsize=9];
      "x" [label="x\\nf32[]", shape=ellipse];
    }
    """
    subs = _subgraphs(graph)
    lines = [f"digraph {_quote(graph.name)} {{", "  compound=true;"]
    lines += ["  node [shape=box, fontsize=10];", "  edge [fontsize=9];", *_block(graph, "")]
    for k, sub in enumerate(subs):
        lines += _cluster(sub, k, graph)
    lines += _links(subs, graph)
    lines.append("}")
    return "\n".join(lines)


# --- what Jupyter shows -------------------------------------------------------------------------
def _node_count(graph: Graph) -> int:
    return len(graph.get_direct_nodes()) + sum(len(s.get_direct_nodes()) for s in _subgraphs(graph))


def can_draw(graph: Graph) -> bool:
    """Whether ``to_svg`` will try to draw ``graph``: the ``graphviz`` package imports, a
    ``dot`` program is on ``PATH`` and the graph has at most ``_MAX_DRAWN_NODES`` nodes."""
    try:
        import graphviz  # type: ignore[import-not-found]  # noqa: F401, PLC0415
    except ImportError:
        return False
    return shutil.which("dot") is not None and _node_count(graph) <= _MAX_DRAWN_NODES


def to_svg(graph: Graph) -> str | None:
    """SVG text, or ``None`` when Graphviz (the package or its ``dot`` program) is missing,
    ``dot`` fails, or the graph is too big to draw (``can_draw``)."""
    if not can_draw(graph):
        return None
    import graphviz  # noqa: PLC0415

    try:
        svg: bytes = graphviz.Source(to_dot(graph)).pipe(format="svg")
    except (RuntimeError, OSError, subprocess.CalledProcessError):
        # graphviz's ExecutableNotFound is a RuntimeError, its CalledProcessError subprocess's
        return None
    return svg.decode()


def to_html(graph: Graph) -> str:
    """``graph.as_text()`` (with its subgraphs) as preformatted, escaped HTML."""
    return f"<pre>{html.escape(format_graph(graph))}</pre>"


def to_mimebundle(graph: Graph, listing: str | None = None) -> dict[str, str]:
    """What Jupyter displays for ``graph``: ``{"image/svg+xml": ...}`` when it can be drawn,
    else ``{"text/html": ...}`` of ``listing`` (default: the graph's ``as_text()``) in a
    ``<pre>`` block. Never both: JupyterLab would show the HTML."""
    svg = to_svg(graph)
    if svg is not None:
        return {"image/svg+xml": svg}
    page = to_html(graph) if listing is None else f"<pre>{html.escape(listing)}</pre>"
    return {"text/html": page}
