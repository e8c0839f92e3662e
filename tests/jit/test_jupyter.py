"""What ``ge.jit`` shows in Jupyter: ``Data`` nodes named after the Python parameters, and a
``.lower()`` result drawn as a graph or listed (exactly one of them, ``_repr_mimebundle_``)."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import numpy as np
import pytest

import ge
from ge.graph import _dot
from ge.graph.graph import Graph
from ge.jit._pytree import data_names


def _data(graph: Graph) -> list[str]:
    return [n.name for n in graph.get_direct_nodes() if n.type == "Data"]


@dataclasses.dataclass
class Batch:
    image: Any
    label: Any


def test_data_nodes_carry_parameter_names_and_pytree_paths() -> None:
    @ge.jit
    def f(x, params, batch, *rest, scale=1.0, **extra):
        return x * params["w"] + params["b"] + batch.image + rest[0] + extra["k"]

    a = np.ones(3, np.float32)
    graph = f.trace(a, {"w": a, "b": a}, Batch(a, 3), a, k=a)
    assert _data(graph) == ["x", "params_b", "params_w", "batch_image", "args_3", "k"]
    assert f(a, {"w": a, "b": a}, Batch(a, 3), a, k=a).tolist() == [5.0, 5.0, 5.0]


def test_data_names_of_nested_paths_and_static_arguments() -> None:
    @ge.jit(static_argnums=1)
    def f(pairs, n):
        return pairs[0][0] * n + pairs[1][1]

    a = np.arange(2, dtype=np.float32)
    graph = f.trace(((a, a), (a, a)), 2)
    assert _data(graph) == ["pairs_0_0", "pairs_0_1", "pairs_1_0", "pairs_1_1"]


@pytest.mark.parametrize(
    ("paths", "names"),
    [
        (["x", "y"], ["x", "y"]),
        (["params['w']", "params_w", "params_w_1"], ["params_w", "params_w_1", "params_w_1_1"]),
        (["batch[0].image", "args[2]"], ["batch_0_image", "args_2"]),
        (["Add_0", "ReduceSum_12", "Add"], ["arg_Add_0", "arg_ReduceSum_12", "Add"]),
        (["d[1]", "d['']", "[0]"], ["d_1", "d", "arg_0"]),
        (["x", "x"], ["x", "x_1"]),
    ],
)
def test_data_names_are_unique_identifiers(paths: list[str], names: list[str]) -> None:
    assert data_names(paths) == names


def test_a_parameter_named_like_a_generated_node_does_not_collide() -> None:
    @ge.jit
    def f(Add_0):  # noqa: N803  (the point of the test)
        return Add_0 + 1.0

    assert f(np.zeros(2, np.float32)).tolist() == [1.0, 1.0]
    assert _data(f.trace(np.zeros(2, np.float32))) == ["arg_Add_0"]


def test_lowered_renders_as_svg_of_the_optimised_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    @ge.jit
    def f(x):
        return np.exp(x) + 1.0

    lowered = f.lower(np.ones(4, np.float32))
    drawn: list[Graph] = []

    def fake_svg(graph: Graph) -> str:
        drawn.append(graph)
        return f"<svg>{graph.name}</svg>"

    monkeypatch.setattr(_dot, "to_svg", fake_svg)
    assert lowered._repr_mimebundle_() == {"image/svg+xml": f"<svg>{lowered.graph.name}</svg>"}
    assert drawn == [lowered.graph]


def test_lowered_falls_back_to_html_text_without_graphviz(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @ge.jit
    def f(x, y):
        return x < y

    lowered = f.lower(np.ones(4, np.float32), np.zeros(4, np.float32))
    monkeypatch.setattr(_dot, "to_svg", lambda graph: None)  # what it gives without Graphviz
    bundle = lowered._repr_mimebundle_()
    assert list(bundle) == ["text/html"]
    page = bundle["text/html"]
    assert page.startswith("<pre>") and page.endswith("</pre>")
    assert html.unescape(page[5:-6]) == lowered.as_text()
    assert "<" not in page[5:-6]  # nothing in the listing is read as markup


def test_lowered_text_names_the_inputs_by_parameter() -> None:
    @ge.jit
    def f(weights, bias):
        return weights + bias

    text = f.lower(np.ones(2, np.float32), np.ones(2, np.float32)).as_text()
    assert "weights" in text and "bias" in text
    assert "input_0" not in text
