"""What ``Graph.verify()`` and ``Session.add_graph`` check of the boundary ops (ge.ops.io): the
graph's input nodes have distinct indexes 0..n-1, a subgraph's input nodes distinct slots, and
every Const holds a value with the bytes its desc needs. Before these checks a duplicate index
crashed ``run_graph`` and a Const without its value leaked ``KeyError``; the crash-prone runs
go through a child process so a segfault fails the test instead of ending the session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

import ge.es
from ge.error import GeError, GraphError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Graph, Tensor, TensorDesc
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0"}


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


def two_inputs(second_index: int) -> Graph:
    """``x + y`` with the Data node of ``y`` given ``second_index``."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    y = b.create_input(1, shape=[2])
    g = b.build_and_reset([x + y])
    g.find_node_by_name("input_1").set_attr("index", second_index)
    return g


def with_const(value: Tensor | None) -> Graph:
    """``x + c``, the Const's value replaced by ``value`` (``None``: removed)."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    g = b.build_and_reset([x + 1.0])
    const = next(n for n in g.get_direct_nodes() if n.type == "Const")
    if value is None:
        del const._attrs["value"]  # what a hand-made or foreign graph can hold
    else:
        const.set_attr("value", value)
    return g


def rejected(graph: Graph, match: str) -> None:
    """Both verify() and add_graph refuse ``graph`` with a message matching ``match``."""
    with pytest.raises(GraphError, match=match):
        graph.verify()
    with pytest.raises(GeError, match=r"(?s)AddGraph failed; graph_id=1; .*" + match) as info:
        Session().add_graph(1, graph)
    assert not isinstance(info.value, (KeyError, IndexError))


# --- graph input indexes --------------------------------------------------------------------------
def test_duplicate_data_index_is_rejected_with_the_nodes_and_the_fix() -> None:
    rejected(
        two_inputs(0),
        r"input nodes input_0 \(Data\), input_1 \(Data\) all have index 0; give each input "
        r"node its own index",
    )


def test_gap_in_data_indexes_names_the_missing_index() -> None:
    rejected(
        two_inputs(2), r"input indexes are \[0, 2\], but must be 0..1 .*no input node has index 1"
    )


def test_negative_data_index_is_rejected() -> None:
    rejected(two_inputs(-1), r"input indexes are \[-1, 0\].*-1 < 0")


def test_data_nodes_without_index_read_as_index_zero() -> None:
    g = Graph("g")
    a = g.add_node("Data", "a", num_inputs=1, num_outputs=1)
    b = g.add_node("Data", "b", num_inputs=1, num_outputs=1)
    add = g.add_node("Add", "add", num_inputs=2, num_outputs=1)
    g.add_data_edge(a, 0, add, 0)
    g.add_data_edge(b, 0, add, 1)
    g.set_outputs([(add, 0)])
    rejected(g, r"input nodes a \(Data\), b \(Data\) all have index 0")


def test_a_variable_and_a_data_node_share_the_inputs_list() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    v = b.create_variable(1, "v")
    g = b.build_and_reset([x, v])
    g.find_node_by_name("v").set_attr("index", 0)
    rejected(g, r"input nodes input_0 \(Data\), v \(Variable\) all have index 0")


def branch(name: str) -> Graph:
    b = GraphBuilder(name)
    p, q = b.create_input(0, shape=[2]), b.create_input(1, shape=[2])
    return b.build_and_reset([p + q])


def test_duplicate_slots_in_a_subgraph_are_rejected() -> None:
    b = GraphBuilder("g")
    c, x, y = (
        b.create_input(0, shape=[]),
        b.create_input(1, shape=[2]),
        b.create_input(2, shape=[2]),
    )
    (out,) = ge.es.If(c, [x, y], 1, branch("then_g"), branch("else_g"))
    g = b.build_and_reset([out])
    g.verify()
    then_g = g.get_subgraph("then_g")
    assert then_g is not None
    then_g.find_node_by_name("input_1").set_attr("index", 0)
    rejected(g, r"\[then_g\] input nodes input_0 \(Data\), input_1 \(Data\) all have index 0")


def test_valid_indexes_pass_and_run() -> None:
    g = two_inputs(1)
    g.verify()
    s = Session()
    s.add_graph(1, g)
    (out,) = s.run_graph(1, [Tensor.from_numpy(np.ones(2, np.float32))] * 2)
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])


# --- Const values ---------------------------------------------------------------------------------
def test_const_without_value_is_rejected() -> None:
    rejected(with_const(None), r"node Const_\d+ \(Const\) has no 'value' attribute; set it")


def test_const_with_an_empty_tensor_is_rejected() -> None:
    rejected(with_const(Tensor()), r"its value holds 0 bytes, but shape \[\] of DT_FLOAT needs 4")


def test_const_value_of_the_wrong_kind_is_rejected() -> None:
    g = Graph("g")
    c = g.add_node("Const", "c", num_outputs=1)
    c.set_attr("value", 3)
    g.set_outputs([(c, 0)])
    rejected(g, r"attribute 'value' is VT_INT, the op declares VT_TENSOR")


def test_const_value_with_unknown_dims_is_rejected() -> None:
    value = Tensor._from_parts(TensorDesc([0, -1]), b"")  # as a file may hold it
    rejected(with_const(value), r"its value has unknown dims \[0, -1\]")


def test_zero_size_const_is_fine() -> None:
    g = Graph("g")
    c = g.add_node("Const", "c", num_outputs=1)
    c.set_attr("value", Tensor.from_numpy(np.zeros((0, 3), np.float32)))
    c.update_output_desc(0, TensorDesc([0, 3]))
    g.set_outputs([(c, 0)])
    g.verify()


# --- the crash, in a child process ------------------------------------------------------------
_CHILD = """
import numpy as np
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Tensor
from ge.session import Session
from ge.compiler.executable import CompiledGraph
GeApi.ge_initialize({"ge.exec.deviceId": "0"})
b = GraphBuilder("g")
x = b.create_input(0, shape=[2])
y = b.create_input(1, shape=[2])
g = b.build_and_reset([x + y])
g.find_node_by_name("input_1").set_attr("index", 0)
s = Session()
try:
    s.add_graph(1, g)
    s.run_graph(1, [Tensor.from_numpy(np.ones(2, np.float32))])
    print("RAN")
except GeError as e:
    print("SESSION", type(e).__name__)
try:
    CompiledGraph(g, optimize=False)  # no verify on this path: lowering must still refuse
    print("COMPILED")
except GeError as e:
    print("LOWER", e)
"""


def test_duplicate_index_never_crashes_a_run() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = done.stdout.splitlines()
    assert lines[0] == "SESSION GeError", done.stdout
    assert lines[1].startswith("LOWER") and "two input nodes with index 0" in lines[1], done.stdout
