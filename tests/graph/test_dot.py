"""Graphs in Jupyter: DOT text (constants folded into their consumers, subgraph clusters linked
to their control-flow node), SVG only with Graphviz, the HTML listing otherwise, never both."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from collections.abc import Callable

import numpy as np
import pytest

import ge.es
from ge.es import GraphBuilder
from ge.graph import Graph, Tensor, _dot


def _lines(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines()]


def _box(dot: str, name: str) -> str:
    """The node statement of ``name`` (exactly one)."""
    found = [line for line in _lines(dot) if line.startswith(f'"{name}" [label=')]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def _graph() -> Graph:
    b = GraphBuilder('g"q')
    x = b.create_input(0, shape=[2])
    y = b.create_input(1, shape=[2])
    return b.build_and_reset([np.exp(x) * y + y])


def _if_graph() -> Graph:
    b = GraphBuilder("if_graph")
    cond = b.create_input(0, data_type=ge.DataType.DT_BOOL)
    x = b.create_input(1, shape=[3])
    branches = []
    for name in ("then_b", "else_b"):
        sub = GraphBuilder(name)
        branches.append(sub.build_and_reset([sub.create_input(0, shape=[3]) * 2.0]))
    (y,) = ge.es.If(cond, [x], 1, *branches)
    return b.build_and_reset([y])


def _const_graph(value: np.ndarray, **wiring: bool) -> tuple[Graph, str]:
    """``Relu(Add(x, c))`` with Const ``c`` holding ``value``; ``wiring`` adds a control edge
    from ``c``, makes ``c`` a graph output, or leaves it without users."""
    g = Graph("consts")
    x = g.add_node("Data", "x", num_outputs=1)
    c = g.add_node("Const", "c", num_outputs=1)
    c.set_attr("value", Tensor.from_numpy(value))
    add = g.add_node("Add", "add", num_inputs=2, num_outputs=1, input_names=["x1", "x2"])
    g.add_data_edge(x, 0, add, 0)
    if not wiring.get("unused"):
        g.add_data_edge(c, 0, add, 1)
    if wiring.get("control"):
        g.add_control_edge(c, add)
    g.set_outputs([(add, 0), (c, 0)] if wiring.get("output") else [(add, 0)])
    return g, g.to_dot()


# --- the DOT text -------------------------------------------------------------------------------
def test_small_graph_golden() -> None:
    b = GraphBuilder("demo")
    x = b.create_input(0, shape=[2, 3])
    graph = b.build_and_reset([np.tanh(x) * 0.5])
    [data, tanh, mul, out] = [n.name for n in graph.get_direct_nodes() if n.type != "Const"]
    assert graph.to_dot() == "\n".join(
        [
            'digraph "demo" {',
            "  compound=true;",
            "  node [shape=box, fontsize=10];",
            "  edge [fontsize=9];",
            f'  "{data}" [label="{data}\\nf32[2,3]", shape=ellipse];',
            f'  "{tanh}" [label="{tanh}\\nTanh\\nf32[2,3]"];',
            f'  "{data}" -> "{tanh}";',
            f'  "{mul}" [label="{mul}\\nMul\\nx2 = 0.5\\nf32[2,3]"];',
            f'  "{tanh}" -> "{mul}" [label="x1"];',
            f'  "{out}" [label="{out}\\nNetOutput", shape=invhouse];',
            f'  "{mul}" -> "{out}";',
            "}",
        ]
    )


def test_every_node_once_and_every_unfolded_edge_once() -> None:
    graph = _graph()
    dot = graph.to_dot()
    assert dot.startswith('digraph "g\\"q" {') and dot.endswith("}")
    nodes = graph.get_direct_nodes()
    for node in nodes:
        _box(dot, node.name.replace('"', '\\"'))
    edges = sum(1 for n in nodes for e in n.inputs if e is not None)
    assert dot.count(" -> ") == edges


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.float32(2.0), "x2 = 2.0"),
        (np.array([3, 1], np.int64), "x2 = [3, 1]"),
        (np.array([[1, 2], [3, 4]], np.int32), "x2 = [[1, 2], [3, 4]]"),
        (np.array([True, False]), "x2 = [True, False]"),
        (np.zeros(0, np.float32), "x2 = []"),
        (np.float16(0.1), "x2 = 0.1"),
        (np.ones(1000, np.float32), "x2 = f32[1000]"),  # big: its desc
        (np.full(4, 1 / 3, np.float64), "x2 = f64[4]"),  # few items, but long text
        (np.ones((3, 3), np.float32), "x2 = f32[3,3]"),
    ],
)
def test_a_const_is_folded_into_its_consumer(value: np.ndarray, text: str) -> None:
    _, dot = _const_graph(value)
    assert '"c" [' not in dot and '"c" ->' not in dot
    assert f"\\n{text}\\n" in _box(dot, "add")
    assert dot.count(" -> ") == 1  # only x -> add
    assert '"x" -> "add" [label="x1"];' in dot  # several inputs: the edge names its port


def test_a_const_read_by_two_nodes_is_in_both_labels() -> None:
    b = GraphBuilder("two")
    x = b.create_input(0, shape=[2])
    c = b.create_const_float(1.5)
    graph = b.build_and_reset([x * c, x + c])
    dot = graph.to_dot()
    labels = [line for line in _lines(dot) if "x2 = 1.5" in line]
    assert len(labels) == 2 and not any("\\nConst\\n" in line for line in _lines(dot))


@pytest.mark.parametrize("wiring", ["control", "output", "unused"])
def test_a_const_that_is_more_than_an_input_keeps_its_box(wiring: str) -> None:
    _, dot = _const_graph(np.float32(2.0), **{wiring: True})
    assert _box(dot, "c") == '"c" [label="c\\nConst\\nf32[]"];'
    assert "x2 = " not in dot


def test_a_const_without_a_readable_value_shows_its_desc() -> None:
    g = Graph("bare")
    c = g.add_node("Const", "c", num_outputs=1)  # no value attribute
    relu = g.add_node("Relu", "relu", num_inputs=1, num_outputs=1)
    g.add_data_edge(c, 0, relu, 0)
    g.set_outputs([(relu, 0)])
    assert _box(g.to_dot(), "relu") == '"relu" [label="relu\\nRelu\\nin0 = f32[]\\nf32[]"];'


def test_control_edges_are_dashed_and_labels_escaped() -> None:
    g = Graph("ctl")
    a = g.add_node("Data", 'a"b\\', num_outputs=1)
    n = g.add_node("NoOp", "n")
    g.add_control_edge(a, n)
    dot = g.to_dot()
    assert '"a\\"b\\\\" -> "n" [style=dashed];' in dot
    assert '"a\\"b\\\\" [label="a\\"b\\\\\\nf32[]", shape=ellipse];' in dot


def test_data_nodes_are_labelled_by_their_name() -> None:
    @ge.jit
    def f(weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return weights + bias

    graph = f.trace(np.ones(3, np.float32), np.ones(3, np.float32))
    dot = graph.to_dot()
    for node in graph.get_direct_nodes():
        if node.type == "Data":
            assert _box(dot, node.name).startswith(f'"{node.name}" [label="{node.name}\\nf32[3]"')
            assert "\\nData\\n" not in _box(dot, node.name)


# --- subgraphs ----------------------------------------------------------------------------------
def test_if_branches_are_clusters_linked_to_the_if_node() -> None:
    graph = _if_graph()
    dot = graph.to_dot()
    if_name = next(n.name for n in graph.get_direct_nodes() if n.type == "If")
    assert dot.count("subgraph cluster_") == 2 and "  compound=true;" in dot
    assert '"then_b/' in dot and '"else_b/' in dot
    then_data = next(n.name for n in graph.get_subgraph("then_b").get_direct_nodes())
    assert (
        f'"{if_name}" -> "then_b/{then_data}" [lhead=cluster_0, style=dashed, '
        'label="then_branch"];' in dot
    )
    assert 'lhead=cluster_1, style=dashed, label="else_branch"];' in dot
    assert "x2 = 2.0" in _box(dot, "then_b/Mul_1")  # folding works inside clusters too


def test_case_branches_are_numbered_slots() -> None:
    b = GraphBuilder("case_graph")
    index = b.create_input(0, data_type=ge.DataType.DT_INT32)
    x = b.create_input(1, shape=[2])
    branches = []
    for k in range(3):
        sub = GraphBuilder(f"branch{k}")
        branches.append(sub.build_and_reset([sub.create_input(0, shape=[2]) + float(k)]))
    (y,) = ge.es.Case(index, [x], 1, branches)
    dot = b.build_and_reset([y]).to_dot()
    for k in range(3):
        assert f'lhead=cluster_{k}, style=dashed, label="branches{k}"];' in dot


def test_nested_subgraphs_link_from_the_cluster_holding_the_node() -> None:
    @ge.jit
    def f(v: np.ndarray) -> np.ndarray:
        def step(i: object, a: np.ndarray) -> np.ndarray:
            return ge.jit.cond(a.sum() > 1.0, lambda t: t * 0.5, lambda t: t, a)

        return ge.jit.fori_loop(0, 3, step, v)

    graph = f.trace(np.ones(4, np.float32))
    dot = graph.to_dot()
    subs = graph.get_all_subgraphs()
    assert dot.count("subgraph cluster_") == len(subs) == 4
    holder = next(s for s in subs if any(n.type == "If" for n in s.get_direct_nodes()))
    if_node = next(n for n in holder.get_direct_nodes() if n.type == "If")
    source = f'"{holder.name}/{if_node.name}" ->'
    links = [line for line in _lines(dot) if line.startswith(source) and "lhead=" in line]
    assert [line.rsplit("label=", 1)[1] for line in links] == ['"then_branch"];', '"else_branch"];']
    assert sum(f'dashed, label="{slot}"]' in dot for slot in ("cond", "body")) == 2
    # A subgraph drawn alone shows only what it holds.
    alone = holder.to_dot()
    assert alone.count("subgraph cluster_") == 2 and f'"{if_node.name}" [label=' in alone


def test_an_empty_or_unattached_subgraph_is_still_drawn() -> None:
    g = Graph("root")
    node = g.add_node("PartitionedCall", "call")
    g.set_node_subgraph(node, 0, Graph("empty_body"))
    g.register_subgraph(Graph("loose"))
    dot = g.to_dot()
    assert '"empty_body/" [shape=point, style=invis];' in dot
    assert '"call" -> "empty_body/" [lhead=cluster_0, style=dashed, label="subgraph0"];' in dot
    assert 'label="loose"; style=rounded' in dot and dot.count("lhead=") == 1


# --- what Jupyter shows -------------------------------------------------------------------------
class _Source:
    """A stand-in for ``graphviz.Source`` whose ``pipe`` gives ``result`` or raises it."""

    result: bytes | Exception = b"<svg/>"

    def __init__(self, dot: str) -> None:
        self.dot = dot

    def pipe(self, format: str) -> bytes:
        assert format == "svg" and self.dot.startswith("digraph")
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


@pytest.fixture
def fake_graphviz(monkeypatch: pytest.MonkeyPatch) -> Callable[[bytes | Exception, bool], None]:
    def install(result: bytes | Exception = b"<svg/>", dot_on_path: bool = True) -> None:
        source = type("Source", (_Source,), {"result": result})
        monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Source=source))
        monkeypatch.setattr(shutil, "which", lambda name: f"/bin/{name}" if dot_on_path else None)

    return install


def test_without_the_graphviz_package_the_listing_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _graph()
    monkeypatch.setitem(sys.modules, "graphviz", None)  # not installed
    assert graph._repr_svg_() is None and not _dot.can_draw(graph)
    page = graph._repr_html_()
    assert page is not None and page.startswith("<pre>graph g&quot;q {") and "-&gt; f32[2]" in page
    assert graph._repr_mimebundle_() == {"text/html": page}


@pytest.mark.parametrize(
    "failure",
    [
        None,  # the package is there, no dot program on PATH
        RuntimeError("failed to execute PosixPath('dot')"),  # graphviz.ExecutableNotFound
        subprocess.CalledProcessError(1, ["dot", "-Tsvg"]),  # dot rejected the input
        OSError("exec format error"),
    ],
)
def test_without_a_working_dot_the_listing_shows(
    fake_graphviz: Callable[..., None], failure: Exception | None
) -> None:
    graph = _if_graph()
    fake_graphviz(failure if failure is not None else b"<svg/>", dot_on_path=failure is not None)
    assert graph._repr_svg_() is None
    bundle = graph._repr_mimebundle_()
    assert list(bundle) == ["text/html"] and "subgraph then_b" in bundle["text/html"]


def test_with_graphviz_only_the_svg_shows(fake_graphviz: Callable[..., None]) -> None:
    graph = _graph()
    fake_graphviz()
    assert graph._repr_svg_() == "<svg/>"
    assert graph._repr_html_() is None  # else IPython would add it and JupyterLab pick it
    assert graph._repr_mimebundle_(include=None, exclude=None) == {"image/svg+xml": "<svg/>"}


def test_a_graph_too_big_to_draw_is_listed(
    fake_graphviz: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = _if_graph()  # 4 root nodes and 8 in the branches
    fake_graphviz()
    monkeypatch.setattr(_dot, "_MAX_DRAWN_NODES", 11)
    assert graph._repr_svg_() is None and graph._repr_html_() is not None
    monkeypatch.setattr(_dot, "_MAX_DRAWN_NODES", 12)
    assert graph._repr_svg_() == "<svg/>"


def test_mimebundle_listing_is_escaped() -> None:
    graph = _graph()
    bundle = _dot.to_mimebundle(graph, listing="a < b & c")
    if "text/html" in bundle:
        assert bundle == {"text/html": "<pre>a &lt; b &amp; c</pre>"}


@pytest.mark.parametrize("drawn", [True, False])
def test_ipython_displays_exactly_one_rich_repr(
    fake_graphviz: Callable[..., None], drawn: bool
) -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    fake_graphviz(dot_on_path=drawn)
    data, _ = formatters.DisplayFormatter().format(_graph())
    rich = "image/svg+xml" if drawn else "text/html"
    assert set(data) == {rich, "text/plain"}
    assert data["text/plain"] == "<Graph 'g\"q': 6 nodes>"


def _have_graphviz() -> bool:
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


@pytest.mark.skipif(not _have_graphviz(), reason="needs the graphviz package and dot")
def test_real_graphviz_draws_the_graph() -> None:
    graph = _if_graph()
    svg = graph._repr_svg_()
    assert svg is not None and "<svg" in svg and "then_branch" in svg and "If_0" in svg
    assert graph._repr_mimebundle_() == {"image/svg+xml": svg}
