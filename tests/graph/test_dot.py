"""Graphs in Jupyter: DOT text, SVG only with Graphviz, an HTML listing always."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder
from ge.graph import Graph


def _graph() -> Graph:
    b = GraphBuilder('g"q')
    x = b.create_input(0, shape=[2])
    y = b.create_input(1, shape=[2])
    return b.build_and_reset([np.exp(x) * y + y])


def test_dot_has_every_node_and_edge_once() -> None:
    graph = _graph()
    dot = graph.to_dot()
    assert dot.startswith('digraph "g\\"q" {') and dot.endswith("}")
    lines = [line.strip() for line in dot.splitlines()]
    for node in graph.get_direct_nodes():
        quoted = '"' + node.name.replace('"', '\\"') + '"'
        assert sum(line.startswith(f"{quoted} [label=") for line in lines) == 1
    edges = sum(1 for n in graph.get_direct_nodes() for e in n._in_edges if e is not None)
    assert dot.count(" -> ") == edges


def test_subgraphs_are_clusters() -> None:
    b = GraphBuilder("if_graph")
    cond = b.create_input(0, data_type=ge.DataType.DT_BOOL)
    x = b.create_input(1, shape=[3])
    branches = []
    for name in ("then_b", "else_b"):
        sub = GraphBuilder(name)
        branches.append(sub.build_and_reset([sub.create_input(0, shape=[3]) * 2.0]))
    (y,) = ge.es.If(cond, [x], 1, *branches)
    dot = b.build_and_reset([y]).to_dot()
    assert dot.count("subgraph cluster_") == 2 and '"then_b/' in dot


def test_html_is_the_escaped_listing_and_svg_needs_graphviz(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    graph = _graph()
    html = graph._repr_html_()
    assert html.startswith("<pre>graph g&quot;q {") and "-&gt; f32[2]" in html
    monkeypatch.setitem(sys.modules, "graphviz", None)  # not installed
    assert graph._repr_svg_() is None

    class Source:
        def __init__(self, dot: str) -> None:
            self.dot = dot

        def pipe(self, format: str) -> bytes:
            assert format == "svg" and self.dot.startswith("digraph")
            return b"<svg/>"

    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Source=Source))
    assert graph._repr_svg_() == "<svg/>"
