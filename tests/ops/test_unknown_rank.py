"""Every registered op builds on inputs of unknown rank (``[-2]``) or unknown dims (``-1``).

GE builds any graph and leaves what it cannot decide unknown (GE_ERRORS.md §13.2); our eager
inference must not refuse more. For each built-in op of the registry, the op's table record
(``_cases.RECORDS``, whose variants give valid attributes) builds every variant three ways:
its Data inputs declared ``[-2]`` (or all ``-1``); every input so, Const ones turned into Data
inputs (their values hidden from inference); and each input alone so, the others at their
real shapes (with the Const inputs kept, and again turned into Data inputs).
The graph-boundary and control-flow ops, which have no record, are built by hand here.

Each build must raise nothing, and each output desc must admit what the fully known build
gives: the same dtype, and a shape that is an unknown rank or has the known build's rank with
each known dim equal. The builds with Const inputs turned into Data also evaluate to the known
build's values (the references then read those values, and the op's rule is held to them at
run time).
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ge.graph import Graph, Node, TensorDesc
from ge.ops import add_op_node, eval_graph, get_op
from ge.ops.registry import registry

from ._cases import BY_OP, Arg, Built, Record, Variant, build, const_node, data_node

Declare = Callable[[list[int]], list[int]]
DECLARE: dict[str, Declare] = {
    "rank": lambda shape: [-2],
    "dims": lambda shape: [-1] * len(shape),
}
BUILT_IN = sorted(op.type for op in registry() if op.source == "ge")


def _admits(inferred: list[int], real: list[int]) -> bool:
    """Whether a tensor of shape ``real`` fits the inferred shape."""
    if inferred == [-2]:
        return True
    if len(inferred) != len(real):
        return False
    return all(i in (-1, r) for i, r in zip(inferred, real, strict=True))


def _descs(node: Node) -> list[TensorDesc]:
    return [node.get_output_desc(i) for i in range(node.get_outputs_size())]


def _assert_admits(hidden: Node, known: Node) -> None:
    got, real = _descs(hidden), _descs(known)
    assert len(got) == len(real)
    for i, (g, r) in enumerate(zip(got, real, strict=True)):
        assert g.get_data_type() == r.get_data_type(), f"output {i}"
        shapes = list(g.get_shape()), list(r.get_shape())
        assert _admits(*shapes), f"output {i}: inferred {shapes[0]} does not admit {shapes[1]}"


# --- ops with a table record ------------------------------------------------------------------
def _as_data(item: Any) -> Any:
    """``item`` (an IR input of a variant) with its Const inputs made Data inputs."""
    if isinstance(item, list):
        return [_as_data(a) for a in item]
    return dataclasses.replace(item, const=False) if isinstance(item, Arg) else item


def _dtype(record: Record, variant: Variant) -> str:
    dtypes = [d for d in record.claimed() if variant.dtypes is None or d in variant.dtypes]
    return "float32" if "float32" in dtypes else dtypes[0]


# which inputs are declared unknown: every Data input; every input (Const ones made Data);
# each Data input alone, the others known (one build per input)
HIDE = ("data", "consts", "each")


def _record_cases() -> list[tuple[str, Variant, str, str]]:
    out = []
    for op_type in BUILT_IN:
        record = BY_OP.get(op_type)
        for variant in () if record is None else record.variants:
            if any(variant.dtypes is None or d in variant.dtypes for d in record.claimed()):
                out += [(op_type, variant, mode, hide) for mode in DECLARE for hide in HIDE]
    return out


RECORD_CASES = _record_cases()


def _only(k: int, declare: Declare) -> Declare:
    """``declare`` for the ``k``-th Data input built, the real shape for the others."""
    count = iter(range(1 << 30))
    return lambda shape: declare(shape) if next(count) == k else shape


def _param(case: tuple[str, Variant, str, str]) -> Any:
    """The default tier builds every op with all its Data inputs unknown; hiding Consts and
    one-input-at-a-time builds (4 of each op's 6 cases) run with ``-m slow``."""
    o, v, m, h = case
    marks = () if h == "data" else (pytest.mark.slow,)
    return pytest.param(*case, id=f"{o}-{v.label}-{m}-{h}", marks=marks)


@pytest.mark.parametrize(("op_type", "variant", "mode", "hide"), [_param(c) for c in RECORD_CASES])
def test_op_builds_on_unknown_inputs(op_type: str, variant: Variant, mode: str, hide: str) -> None:
    dtype = _dtype(BY_OP[op_type], variant)
    seed = zlib.crc32(f"{op_type}-{variant.label}".encode())

    def make(inputs: tuple[Any, ...], declare: Declare | None = None) -> Built:
        args = (variant.attrs, dtype, np.random.default_rng(seed), variant.output_counts)
        return build(op_type, inputs, *args, declare=declare)

    known = make(variant.inputs)
    as_data = tuple(_as_data(a) for a in variant.inputs)
    if hide == "each":  # Consts kept, then Consts made Data inputs (values unknown)
        for inputs in (variant.inputs, as_data):
            for k in range(len(make(inputs).feeds)):
                _assert_admits(make(inputs, _only(k, DECLARE[mode])).node, known.node)
        return
    inputs = as_data if hide == "consts" else variant.inputs
    hidden = make(inputs, DECLARE[mode])
    _assert_admits(hidden.node, known.node)
    if hide == "consts":
        expected = eval_graph(known.graph, known.feeds)
        for got, want in zip(eval_graph(hidden.graph, hidden.feeds), expected, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


# --- ops without a record: graph boundary and control flow ------------------------------------
Make = Callable[[Declare], Node]


def _sub(name: str, body: Callable[[Graph, tuple[Node, int]], tuple[Node, int]]) -> Graph:
    """A subgraph taking parent input 1 (``_parent_node_index``) through ``body``."""
    g = Graph(name)
    x = add_op_node(g, "Data", [None], {"_parent_node_index": 1}, declared=[TensorDesc([-2])])
    add_op_node(g, "NetOutput", [[body(g, (x, 0))]])
    return g


def _unary(op_type: str) -> Callable[[Graph, tuple[Node, int]], tuple[Node, int]]:
    return lambda g, x: (add_op_node(g, op_type, [x]), 0)


def _sum_rows(g: Graph, x: tuple[Node, int]) -> tuple[Node, int]:
    axes = const_node(g, np.array([-1], np.int32))
    return add_op_node(g, "ReduceSum", [x, (axes, 0)], {"keep_dims": True}), 0


def _body(name: str, body: Callable[[Graph, tuple[Node, int]], tuple[Node, int]]) -> Graph:
    """A subgraph taking its input 0 by ``index`` (While, fused bodies)."""
    g = Graph(name)
    x = add_op_node(g, "Data", [None], {"index": 0}, declared=[TensorDesc([-2])])
    add_op_node(g, "NetOutput", [[body(g, (x, 0))]])
    return g


def _data(op_type: str) -> Make:
    def make(declare: Declare) -> Node:
        g = Graph("g")
        node = add_op_node(g, op_type, [None], {"index": 0}, declared=[TensorDesc(declare([2, 3]))])
        return node

    return make


def _net_output(declare: Declare) -> Node:
    g = Graph("g")
    x = data_node(g, 0, declare([2, 3]), "float32")
    return add_op_node(g, "NetOutput", [[(x, 0)]])


def _branching(op_type: str, selector: str) -> Make:
    def make(declare: Declare) -> Node:
        g = Graph("g")
        cond = data_node(g, 0, declare([]), selector)
        x = data_node(g, 1, declare([2, 3]), "float32")
        branches = [_sub("a", _unary("Relu")), _sub("b", _unary("Neg"))]
        subgraphs = branches if op_type == "If" else [branches]  # Case: one dynamic entry
        return add_op_node(
            g, op_type, [(cond, 0), [(x, 0)]], subgraphs=subgraphs, output_counts=[1]
        )

    return make


def _while(declare: Declare) -> Node:
    g = Graph("g")
    x = data_node(g, 0, declare([2, 3]), "float32")

    def positive(sub: Graph, v: tuple[Node, int]) -> tuple[Node, int]:
        zero = const_node(sub, np.array(0, np.float32))
        return add_op_node(sub, "Greater", [v, (zero, 0)]), 0

    subgraphs = [_body("cond", positive), _body("body", _unary("Neg"))]
    return add_op_node(g, "While", [[(x, 0)]], subgraphs=subgraphs, output_counts=[1])


def _fused(op_type: str, body: Callable[[Graph, tuple[Node, int]], tuple[Node, int]]) -> Make:
    def make(declare: Declare) -> Node:
        g = Graph("g")
        x = data_node(g, 0, declare([2, 3]), "float32")
        return add_op_node(
            g, op_type, [[(x, 0)]], subgraphs=[_body("body", body)], output_counts=[1]
        )

    return make


def _debug_print(declare: Declare) -> Node:
    g = Graph("g")
    x = data_node(g, 0, declare([2, 3]), "float32")
    return add_op_node(g, "JitDebugPrint", [[(x, 0)]], {"fmt": "{}", "print_id": 0})


HAND_BUILT: dict[str, Make] = {
    **{t: _data(t) for t in ("Data", "RefData", "AippData", "AnyData", "Variable")},
    "NetOutput": _net_output,
    "If": _branching("If", "bool"),
    "Case": _branching("Case", "int32"),
    "While": _while,
    "FusedElementwise": _fused("FusedElementwise", _unary("Relu")),
    "FusedReduce": _fused("FusedReduce", _sum_rows),
    "JitDebugPrint": _debug_print,
}
# Ops that take no tensor input: nothing of theirs can be unknown.
NO_INPUTS = frozenset({"Const"})
HAND_CASES = [(t, m) for t in sorted(HAND_BUILT) for m in DECLARE]


@pytest.mark.parametrize(("op_type", "mode"), HAND_CASES, ids=[f"{t}-{m}" for t, m in HAND_CASES])
def test_op_without_record_builds_on_unknown_inputs(op_type: str, mode: str) -> None:
    make = HAND_BUILT[op_type]
    known = make(lambda shape: shape)
    hidden = make(DECLARE[mode])
    _assert_admits(hidden, known)
    for desc in _descs(hidden):
        shape = list(desc.get_shape())
        assert shape == [-2] or -1 in shape, f"{op_type} output {shape} claims to be known"


def test_every_built_in_op_is_built_on_unknown_inputs() -> None:
    """A new op needs a table record (or a hand-built case here) to be held to this."""
    covered = {c[0] for c in RECORD_CASES} | set(HAND_BUILT) | NO_INPUTS
    assert sorted(set(BUILT_IN) - covered) == []
    assert all(not get_op(t).inputs for t in NO_INPUTS)
