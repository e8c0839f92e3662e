"""GE_ERRORS.md rows of §2.1, §3.1, §3.4, §3.5, §12.1.6 and §13.2/§13.5 that the other
table-driven tests (test_ge_errors*.py, tests/graph/test_ge_errors.py) do not walk, found by
the #17 audit. Each row states GE-PY's behaviour; a message must START with GE's text.

Rows marked ``xfail(strict=True)`` are mismatches the audit found in files it does not own
(``ge/es/graph_builder.py``, ``ge/es/_generator.py``): they fail today on our behaviour, and
the strict marker makes the fix visible (XPASS fails) so whoever lands it removes the marker.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ge.es
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_like import convert_to_tensor_holder
from ge.graph import DataType, DumpFormat, Format, Graph, Tensor

DT = DataType


def _branch(name: str, outputs: int = 1) -> Graph:
    s = GraphBuilder(name)
    x = s.create_input(0)
    return s.build_and_reset([ge.es.Relu(x)] * outputs)


def _if_graph() -> Graph:
    b = GraphBuilder("g")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1)
    ge.es.If(cond, [x], 1, _branch("then"), _branch("else"))
    return b.build_and_reset()


# --- rows that raise ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    call: Callable[[], Any]
    error: type[BaseException]
    text: str  # GE's text: the message must start with it


def _const_twice() -> Any:
    b = GraphBuilder("g")
    value = Tensor([1.0], None, DT.DT_FLOAT, Format.FORMAT_ND, [1])
    ge.es.Const(b, value=value)
    return ge.es.Const(b, value=value)


def _default_const_twice() -> Any:
    """GE-PY evaluates the ``Tensor()`` default of an optional tensor attr once."""
    b = GraphBuilder("g")
    ge.es.Const(b)
    return ge.es.Const(b)


def _subgraph_reused_after_a_failed_call() -> Any:
    b = GraphBuilder("g")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1)
    bad = _branch("bad", outputs=2)  # If has 1 output: the C call fails ([] for If, §3.5 step 7)
    assert ge.es.If(cond, [x], 1, bad, _branch("e1")) == []
    return ge.es.If(cond, [x], 1, bad, _branch("e2"))


def _subgraph_reused_after_a_later_bad_subgraph() -> Any:
    b = GraphBuilder("g")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1)
    then = _branch("then")
    with pytest.raises(AttributeError):
        ge.es.If(cond, [x], 1, then, 1)  # type: ignore[arg-type]
    return ge.es.If(cond, [x], 1, then, _branch("e2"))


def _add_existing_subgraph() -> Any:
    g = _if_graph()
    return g.add_subgraph(g.get_subgraph("then"))


AGAIN = "cannot transfer ownership again"
NO_BUILDER = (
    "Please ensure at least one input tensor or an explicit owner_builder is provided when "
    "supported"
)

ROWS = [
    Row(
        "S2.1 add_subgraph: a subgraph of that name exists",
        _add_existing_subgraph,
        RuntimeError,
        "Failed to add subgraph 'then' to graph 'g'",
    ),
    *[
        Row(
            f"S3.4 convert_to_tensor_holder({value!r}, None)",
            lambda value=value: convert_to_tensor_holder(value, None),  # type: ignore[arg-type]
            AttributeError,
            f"'NoneType' object has no attribute '{method}'",
        )
        for value, method in (
            (1, "create_scalar_int64"),
            (True, "create_scalar_int64"),
            (1.5, "create_scalar_float"),
            ([1, 2], "create_const_int64"),
            ([1, 2.5], "create_const_float"),
        )
    ],
    Row(
        "S3.1 set_graph_attr_string('a', 1)",
        lambda: GraphBuilder("g").set_graph_attr_string("a", 1),  # type: ignore[arg-type]
        TypeError,
        "Value must be a string",
    ),
    Row(
        "S3.1 set_graph_attr_bool('a', 1)",
        lambda: GraphBuilder("g").set_graph_attr_bool("a", 1),
        TypeError,
        "Value must be a boolean",
    ),
    Row(
        "S3.1 order: set_graph_attr_bool name before value",
        lambda: GraphBuilder("g").set_graph_attr_bool(1, 1),  # type: ignore[arg-type]
        TypeError,
        "Attribute name must be a string",
    ),
    pytest.param(
        Row(
            "S3.5 step 5: a Tensor attr used twice",
            _const_twice,
            RuntimeError,
            "Tensor already has an new owner builder :g, " + AGAIN,
        ),
    ),
    pytest.param(
        Row(
            "S3.5 step 5: the shared default Tensor() of Const, second call",
            _default_const_twice,
            RuntimeError,
            "Tensor already has an new owner builder :g, " + AGAIN,
        ),
    ),
    pytest.param(
        Row(
            "S13.5 a subgraph is marked transferred before the C call fails",
            _subgraph_reused_after_a_failed_call,
            RuntimeError,
            "Graph :bad already has an new owner builder :g, " + AGAIN,
        ),
    ),
    pytest.param(
        Row(
            "S13.5 a subgraph is marked transferred before a later one fails",
            _subgraph_reused_after_a_later_bad_subgraph,
            RuntimeError,
            "Graph :then already has an new owner builder :g, " + AGAIN,
        ),
    ),
    pytest.param(
        Row(
            "S3.5 step 1: Add(1, 2), GE's text first",
            lambda: ge.es.Add(1, 2),
            ValueError,
            NO_BUILDER,
        ),
    ),
    pytest.param(
        Row(
            "S3.5 step 1: Variable() (all inputs optional), GE's text first",
            ge.es.Variable,
            ValueError,
            NO_BUILDER,
        ),
    ),
    pytest.param(
        Row(
            "S3.5 step 1': AddN([]) (one dynamic input) reads x[0]",
            lambda: ge.es.AddN([], N=0),
            IndexError,
            "list index out of range",
        ),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_row(row: Row) -> None:
    with pytest.raises(row.error) as info:
        row.call()
    assert str(info.value).startswith(row.text), (str(info.value), row.text)


# --- rows that GE accepts (§3.1 rules, §13.2) -----------------------------------------------------


def test_empty_names_fall_back_as_ge() -> None:
    assert GraphBuilder("").build_and_reset().name == "graph"
    b = GraphBuilder("g")
    b.create_input(0, name="")
    assert next(n.name for n in b.build_and_reset().get_direct_nodes()) == "input_0"


def test_bool_passes_the_int_checks_of_create() -> None:
    b = GraphBuilder("g")
    assert len(b.create_inputs(True)) == 1  # bool passes isinstance(x, int)
    b.create_scalar_int32(2**40)  # c_int32 wraps, no range check
    b.create_scalar_int64(2**70)
    b.set_graph_attr_int64("n", 3)
    b.set_graph_attr_bool("flag", True)  # an empty builder's graph is valid
    b.build_and_reset()


def test_empty_graph_listings_are_empty() -> None:
    g = Graph("e")
    assert g.get_all_nodes() == [] and g.get_direct_nodes() == [] and g.get_all_subgraphs() == []


def test_add_subgraph_of_a_subgraph_attached_to_another_graph() -> None:
    then = _if_graph().get_subgraph("then")
    other = Graph("other")
    other.add_subgraph(then)
    assert other.get_subgraph("then") is then  # registered, not copied


def test_bool_passes_the_int_check_of_set_attr_int64() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0)
    b.set_graph_attr_int64("a", True)
    b.set_tensor_attr_int64(x, "a", True)
    b.set_node_attr_int64(x, "a", True)


def test_unsigned_const_lists_wrap_as_ctypes_arrays() -> None:
    b = GraphBuilder("g")
    b.create_const_uint64([-1, 2])
    b.create_const_uint32([2**33, 1])


def test_uint64_scalar_above_the_range_wraps() -> None:
    GraphBuilder("g").create_scalar_uint64(2**64)  # only value < 0 is refused


def test_const_shape_is_not_type_checked() -> None:
    assert GraphBuilder("g").create_const_int64([1, 2], shape=(2,)).shape == (2,)  # type: ignore[arg-type]


def test_generated_scalar_attrs_marshal_as_ctypes() -> None:
    x = GraphBuilder("g").create_input(0, shape=[2])
    ge.es.Cast(x, dst_type=True)  # c_int64 takes a bool
    ge.es.ReduceSum(x, 0, keep_dims=1)  # c_bool takes any object


# --- §12.1.6 dump_to_file directories ---------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "subdir"),
    [
        ("NPU_COLLECT_PATH", f"extra-info/graph/{os.getpid()}_0"),
        ("DUMP_GRAPH_PATH", f"pid_{os.getpid()}_deviceid_0"),
    ],
    ids=["NPU_COLLECT_PATH", "DUMP_GRAPH_PATH"],  # not the pid: ids must not vary by process
)
def test_dump_to_file_directory_from_the_environment(
    variable: str, subdir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NPU_COLLECT_PATH", raising=False)
    monkeypatch.delenv("DUMP_GRAPH_PATH", raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    g = Graph("g")
    g.dump_to_file(DumpFormat.kReadable, "s")
    files = list((tmp_path / subdir).glob("ge_readable_*_graph_0_s.txt"))
    assert len(files) == 1 and files[0].read_text() == 'graph("g"):\n'


def test_npu_collect_path_comes_before_dump_graph_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPU_COLLECT_PATH", str(tmp_path / "a"))
    monkeypatch.setenv("DUMP_GRAPH_PATH", str(tmp_path / "b"))
    Graph("g").dump_to_file(DumpFormat.kTxt, "s")
    assert list((tmp_path / "a").rglob("ge_proto_*_s.txt")) and not (tmp_path / "b").exists()


# --- §12.1.1 dynamic subgraph names, nested subgraphs depth-first -----------------------------


def _unary_branch(name: str, op: Any) -> Graph:
    s = GraphBuilder(name)
    return s.build_and_reset([op(s.create_input(0, shape=[2]))])


def _if_branch(name: str) -> Graph:
    s = GraphBuilder(name)
    y = s.create_input(0, shape=[2])
    cond = ge.es.Cast(s.create_scalar_int64(1), dst_type=int(DT.DT_BOOL))
    out = ge.es.If(
        cond, [y], 1, _unary_branch(f"{name}_t", ge.es.Relu), _unary_branch(f"{name}_e", ge.es.Neg)
    )
    return s.build_and_reset([out[0]])


def test_readable_dump_of_case_with_a_nested_if() -> None:
    """``branches<k>`` (no underscore) for a dynamic subgraph IR; each subgraph after its
    graph, depth-first in reference order: b0, b1, b1's then/else, b2."""
    b = GraphBuilder("root")
    index = b.create_input(0, data_type=DT.DT_INT32)
    x = b.create_input(1, shape=[2])
    branches = [_unary_branch("b0", ge.es.Relu), _if_branch("b1"), _unary_branch("b2", ge.es.Abs)]
    out = ge.es.Case(index, [x], 1, branches)
    text = str(b.build_and_reset([out[0]]))
    assert text.splitlines()[3] == (
        "  %Case_0 : [#users=1] = Node[type=Case] (inputs = (branch_index=%input_0, "
        "input_0=%input_1), attrs = {branches0: %b0, branches1: %b1, branches2: %b2})"
    )
    headers = [line for line in text.splitlines() if line.startswith("graph(")]
    assert headers == [f'graph("{n}"):' for n in ("root", "b0", "b1", "b1_t", "b1_e", "b2")]
    assert (
        "  %If_2 : [#users=1] = Node[type=If] (inputs = (cond=%Cast_1, input_0=%input_0), "
        "attrs = {then_branch: %b1_t, else_branch: %b1_e})\n"
    ) in text
    assert "\n\ngraph(" in text and not text.endswith("\n\n")


def test_a_failed_op_with_a_single_dynamic_output_returns_an_empty_list() -> None:
    """§3.5 step 7: the zeroed C struct has ``num == 0`` (If, Case, While have one dynamic
    output); only a single or static output is ``ValueError("Tensor handle cannot be None")``."""
    b = GraphBuilder("g")
    cond = b.create_input(0, data_type=DT.DT_BOOL)
    x = b.create_input(1)
    assert ge.es.If(cond, [x], 1, _branch("bad", outputs=2), _branch("e")) == []
