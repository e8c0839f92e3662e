"""Damaged AIR files: every load either gives a graph that passes ``Graph.verify(ops=False)``
or raises ``RuntimeError("Failed to load graph from AIR format...")`` — never another exception
type, never a hang, and a failed ``load_from_air`` leaves the target graph as it was.

``verify(ops=False)``: the structural checks. A damaged file may well hold a sound graph whose
descs no longer match what an op's infer rule gives; that is not a loading error.

A guard (autouse fixture) counts the TensorDescs the loader creates per load: a reference such
as ``"a:99999999999"`` must not make it grow a node's outputs until memory runs out.

Most cases go through ``ge.graph._air.model_from_bytes`` (no file I/O); a handful go through
real files and ``Graph.load_from_air``. Mutations use a seeded numpy RNG, so a failure names a
reproducible case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge.graph._air as air
from ge.graph import AttrValueType, DataType, Format, Graph, NamedAttrs, Tensor, TensorDesc
from tests.graph._helpers import assert_same_graph

LOAD_ERROR = "Failed to load graph from AIR format"
VT = AttrValueType


def fuzz_graph() -> Graph:
    """A compact graph (about 2 KB as AIR) that still uses every structure of the format."""
    g = Graph("fz")
    a = g.add_node("Data", "a", num_outputs=1, output_names=["y"])
    a.set_attr("index", 0)
    b = g.add_node("Data", "b", num_outputs=1)
    b.set_attr("index", 1)
    b.update_output_desc(0, TensorDesc([2, -1], Format.FORMAT_NCHW, DataType.DT_INT32))
    c = g.add_node("Const", "c", num_outputs=1)
    c.set_attr("value", Tensor.from_numpy(np.arange(4, dtype=np.int16)))
    n1 = g.add_node("Add", "n1", num_inputs=3, num_outputs=2, input_names=["x", "o", "y"])
    g.add_data_edge(a, 0, n1, 0)  # input 1 unconnected
    g.add_data_edge(c, 0, n1, 2)
    n1.set_attr("l", [1, 2, 3])
    n1.set_attr("ll", [[1], [2, 3]], VT.VT_LIST_LIST_INT)
    n1.set_attr("s", "str")
    n1.set_attr("dt", DataType.DT_BF16)
    n1.set_attr("na", NamedAttrs.of("f", {"k": 1.5}), VT.VT_NAMED_ATTRS)
    n1.set_attr("e", [], VT.VT_LIST_TENSOR)
    n2 = g.add_node("If", "n2", num_inputs=2, num_outputs=1)
    g.add_data_edge(b, 0, n2, 0)
    g.add_data_edge(n1, 1, n2, 1)
    g.add_control_edge(a, n2)
    g.add_control_edge(n1, n2)
    t = Graph("t")
    t_in = t.add_node("Data", "a", num_outputs=1)
    t_out = t.add_node("Relu", "r", num_inputs=1, num_outputs=1)
    t.add_data_edge(t_in, 0, t_out, 0)
    t.set_outputs([(t_out, 0)])
    e = Graph("e")
    e.add_node("Data", "a", num_outputs=1).set_attr("g", Graph("gv"), VT.VT_GRAPH)
    g.set_node_subgraph(n2, 0, t)
    g.set_node_subgraph(n2, 1, e)
    g.set_attr("ga", True)
    g.set_outputs([(n2, 0), (n1, 0)])
    g.verify(ops=False)
    return g


FUZZ_BYTES = air.model_to_bytes(fuzz_graph())


class _TooManyPorts(BaseException):
    """Raised (past every ``except Exception``) when one load creates absurdly many descs."""


class _Guard:
    limit = 50_000
    count = 0


@pytest.fixture(autouse=True)
def port_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    real = air.TensorDesc

    def counting(*args: Any, **kwargs: Any) -> TensorDesc:
        _Guard.count += 1
        if _Guard.count > _Guard.limit:
            raise _TooManyPorts(f"one load created more than {_Guard.limit} TensorDescs")
        return real(*args, **kwargs)

    monkeypatch.setattr(air, "TensorDesc", counting)


def load_outcome(data: bytes) -> str:
    """"loaded" or "rejected"; raises AssertionError on anything else."""
    _Guard.count = 0
    try:
        graph = air.model_from_bytes(data)
    except RuntimeError as e:
        assert str(e).startswith(LOAD_ERROR), f"RuntimeError with the wrong text: {e}"
        return "rejected"
    graph.verify(ops=False)  # a loaded graph must be a valid one
    return "loaded"


def run_cases(cases: Iterator[tuple[str, bytes]]) -> dict[str, int]:
    """Load every case; collect all misbehaviours and fail once, listing a few of them."""
    counts = {"loaded": 0, "rejected": 0}
    failures: list[str] = []
    for label, data in cases:
        try:
            counts[load_outcome(data)] += 1
        except (Exception, _TooManyPorts) as e:  # anything else is what we look for
            failures.append(f"{label}: {type(e).__name__}: {str(e)[:200]}")
    assert not failures, (
        f"{len(failures)} of {sum(counts.values()) + len(failures)} damaged inputs misbehaved "
        f"(neither a verified graph nor '{LOAD_ERROR}'):\n  " + "\n  ".join(failures[:15])
    )
    return counts


def mutations(data: bytes, count: int, seed: int) -> Iterator[tuple[str, bytes]]:
    rng = np.random.default_rng(seed)
    size = len(data)
    for k in range(count):
        buf = bytearray(data)
        kind = k % 6
        if kind == 0:  # one byte replaced
            pos = int(rng.integers(size))
            buf[pos] = (buf[pos] + int(rng.integers(1, 256))) % 256
            label = f"byte[{pos}]={buf[pos]}"
        elif kind == 1:  # one bit flipped
            pos, bit = int(rng.integers(size)), int(rng.integers(8))
            buf[pos] ^= 1 << bit
            label = f"bit {bit} of byte {pos}"
        elif kind == 2:  # 2-6 bytes replaced
            positions = rng.integers(size, size=int(rng.integers(2, 7)))
            for pos in positions:
                buf[int(pos)] = int(rng.integers(256))
            label = f"bytes {sorted(int(p) for p in positions)}"
        elif kind == 3:  # one byte inserted
            pos = int(rng.integers(size + 1))
            buf.insert(pos, int(rng.integers(256)))
            label = f"insert at {pos}"
        elif kind == 4:  # a run deleted
            pos = int(rng.integers(size))
            del buf[pos : pos + int(rng.integers(1, 9))]
            label = f"delete at {pos}"
        else:  # a chunk copied over another place
            src, dst, n = int(rng.integers(size)), int(rng.integers(size)), int(rng.integers(1, 33))
            buf[dst : dst + n] = data[src : src + n]
            label = f"copy {src}+{n} -> {dst}"
        yield f"seed {seed} case {k} ({label})", bytes(buf)


# ================================================================================ cases ====


def test_fuzz_fixture_is_valid_and_small() -> None:
    assert 1000 < len(FUZZ_BYTES) < 4000
    assert_same_graph(fuzz_graph(), air.model_from_bytes(FUZZ_BYTES))


def test_empty_input_is_rejected() -> None:
    with pytest.raises(RuntimeError) as info:
        air.model_from_bytes(b"")
    assert str(info.value).startswith(LOAD_ERROR)


def test_every_truncation() -> None:
    counts = run_cases((f"prefix {n}", FUZZ_BYTES[:n]) for n in range(len(FUZZ_BYTES)))
    assert counts["rejected"] > len(FUZZ_BYTES) // 2


def test_random_bytes() -> None:
    rng = np.random.default_rng(7)
    cases = (
        (f"random blob {k}", rng.integers(0, 256, size=int(rng.integers(0, 600))).astype(
            np.uint8).tobytes())
        for k in range(300)
    )
    run_cases(cases)


def test_random_mutations() -> None:
    counts = run_cases(mutations(FUZZ_BYTES, 2000, seed=20240601))
    # The mix must exercise both outcomes, or the fuzzing tests nothing.
    assert counts["loaded"] > 0 and counts["rejected"] > 0


@pytest.mark.slow
def test_random_mutations_many() -> None:
    for seed in range(5):
        run_cases(mutations(FUZZ_BYTES, 10_000, seed=seed))


def test_damaged_files_through_load_from_air(tmp_path: Path) -> None:
    """Real files: failed loads leave the target untouched, successful ones verify."""
    cases = [("empty", b""), ("truncated", FUZZ_BYTES[: len(FUZZ_BYTES) // 2])]
    cases += list(mutations(FUZZ_BYTES, 12, seed=99))
    cases += [("random", np.random.default_rng(3).integers(0, 256, 200, np.uint8).tobytes())]
    problems = []
    for i, (label, data) in enumerate(cases):
        path = tmp_path / f"case{i}.air"
        path.write_bytes(data)
        target = fuzz_graph()
        nodes = target.get_direct_nodes()
        _Guard.count = 0
        try:
            target.load_from_air(str(path))
        except RuntimeError as e:
            if not str(e).startswith(LOAD_ERROR):
                problems.append(f"{label}: wrong text {e}")
            try:
                assert target.get_direct_nodes() == nodes
                assert_same_graph(fuzz_graph(), target)
            except AssertionError as err:
                problems.append(f"{label}: the failed load changed the graph: {err}")
            continue
        except (Exception, _TooManyPorts) as e:
            problems.append(f"{label}: {type(e).__name__}: {e}")
            continue
        try:
            target.verify(ops=False)
        except RuntimeError as e:
            problems.append(f"{label}: loaded an invalid graph: {e}")
    assert not problems, "\n".join(problems)


# ================================================= hostile files, built field by field ====


def _base_model() -> Any:
    model = air.schema().ModelDef()
    model.ParseFromString(FUZZ_BYTES)
    return model


def _op(model: Any, graph: int, name: str) -> Any:
    return next(op for op in model.graph[graph].op if op.name == name)


def _set_input(model: Any, op: str, index: int, ref: str) -> None:
    _op(model, 0, op).input[index] = ref


HOSTILE: dict[str, Callable[[Any], None]] = {
    "no graph": lambda m: m.ClearField("graph"),
    "op without type": lambda m: setattr(_op(m, 0, "n1"), "type", ""),
    "op without name": lambda m: setattr(_op(m, 0, "n1"), "name", ""),
    "duplicate op names": lambda m: setattr(_op(m, 0, "b"), "name", "a"),
    "duplicate graph names": lambda m: setattr(m.graph[2], "name", "t"),
    "subgraph named like the root": lambda m: setattr(m.graph[1], "name", "fz"),
    "input names a missing op": lambda m: _set_input(m, "n1", 0, "zz:0"),
    "input without index": lambda m: _set_input(m, "n1", 0, "a"),
    "input with empty name": lambda m: _set_input(m, "n1", 0, ":0"),
    "input with text index": lambda m: _set_input(m, "n1", 0, "a:x"),
    "control input names a missing op": lambda m: _set_input(m, "n2", 2, "zz:-1"),
    "graph output names a missing op": lambda m: m.graph[0].output.append("zz:0"),
    "graph output past the outputs": lambda m: m.graph[0].output.append("a:5"),
    "graph output negative": lambda m: m.graph[0].output.append("a:-1"),
    "graph output without index": lambda m: m.graph[0].output.append("a"),
    "missing subgraph": lambda m: _op(m, 0, "n2").subgraph_name.append("nowhere"),
    "subgraph used twice": lambda m: _op(m, 0, "n1").subgraph_name.append("t"),
    "subgraph of itself": lambda m: m.graph[1].op[0].subgraph_name.append("t"),
    "subgraph cycle": lambda m: (m.graph[1].op[0].subgraph_name.append("e"),
                                 m.graph[2].op[0].subgraph_name.append("t")),
    "root used as a subgraph": lambda m: m.graph[1].op[0].subgraph_name.append("fz"),
    "unknown format_for_int": lambda m: _op(m, 0, "b").output_desc[0].attr[
        "format_for_int"].__setattr__("i", 200),
    "unknown origin_format_for_int": lambda m: _op(m, 0, "b").output_desc[0].attr[
        "origin_format_for_int"].__setattr__("i", -1),
    "unknown raw data type": lambda m: _op(m, 0, "n1").attr["dt"].__setattr__("dt", 999),
    "unknown raw data type in list": lambda m: _op(m, 0, "n1").attr["bad"].list.dt.append(-3),
    "expression attr": lambda m: _op(m, 0, "n1").attr["x"].__setattr__("expression", b"s0"),
    "origin_format not utf-8": lambda m: _op(m, 0, "b").output_desc[0].attr[
        "origin_format"].__setattr__("s", b"\xff\xfe"),
    "port names of the wrong kind": lambda m: _op(m, 0, "a").attr[
        "_output_name_key"].__setattr__("i", 3),
    "port name index out of range": lambda m: _op(m, 0, "a").attr[
        "_output_name_value"].list.i.__setitem__(0, 9),
    "port name key as a tensor": lambda m: _op(m, 0, "a").attr[
        "_output_name_value"].t.__setattr__("data", b"\x00"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file(case: str) -> None:
    model = _base_model()
    HOSTILE[case](model)
    run_cases(iter([(case, model.SerializeToString())]))


# Files that load into a graph with a cycle: GE would parse them too, but ge's contract is a
# graph that verifies, so they must be refused at load time.
CYCLES: dict[str, Callable[[Any], None]] = {
    "data self-loop": lambda m: _set_input(m, "n1", 0, "n1:0"),
    "data two-cycle": lambda m: _set_input(m, "n1", 0, "n2:0"),
    "control self-loop": lambda m: _set_input(m, "n2", 2, "n2:-1"),
    "control two-cycle": lambda m: _op(m, 0, "n1").input.append("n2:-1"),
}


@pytest.mark.parametrize("case", sorted(CYCLES))
def test_cyclic_file_is_refused(case: str) -> None:
    model = _base_model()
    CYCLES[case](model)
    with pytest.raises(RuntimeError) as info:
        air.model_from_bytes(model.SerializeToString())
    assert str(info.value).startswith(LOAD_ERROR)


def test_empty_subgraph_slot_gives_a_valid_graph_or_an_error() -> None:
    model = _base_model()
    _op(model, 0, "n1").subgraph_name.append("")
    run_cases(iter([("empty subgraph name", model.SerializeToString())]))


@pytest.mark.parametrize("index", [2**31, 2**62, 2**70], ids=["2**31", "2**62", "2**70"])
def test_huge_output_index_is_refused_without_building_ports(index: int) -> None:
    """``"a:<huge>"`` names an output node 'a' (one output) does not have. It must be refused,
    not answered by growing 'a' towards that many outputs (which never finishes)."""
    model = _base_model()
    _set_input(model, "n1", 0, f"a:{index}")
    _Guard.count = 0
    try:
        air.model_from_bytes(model.SerializeToString())
    except _TooManyPorts as e:
        pytest.fail(f"the loader grew node 'a' towards {index} outputs ({e})")
    except RuntimeError as e:
        assert str(e).startswith(LOAD_ERROR)
    else:
        pytest.fail(f"a reference to output {index} of a 1-output node was accepted")


def test_deeply_nested_graph_attrs_are_handled() -> None:
    """A graph attribute nested far deeper than any real file: refused or loaded, no crash."""
    p = air.schema()
    inner = p.GraphDef(name="leaf")
    for depth in range(300):
        outer = p.GraphDef(name=f"g{depth}")
        outer.op.add(name="n", type="Op").attr["g"].g.CopyFrom(inner)
        inner = outer
    model = p.ModelDef()
    model.graph.add().CopyFrom(inner)
    run_cases(iter([("nesting 300", model.SerializeToString())]))


def test_unknown_proto_dtype_reads_as_undefined() -> None:
    """GE maps unknown proto data types to DT_UNDEFINED; so do we (no error)."""
    model = _base_model()
    _op(model, 0, "b").output_desc[0].dtype = 77
    g = air.model_from_bytes(model.SerializeToString())
    assert g.find_node_by_name("b").get_output_desc(0).data_type == DataType.DT_UNDEFINED


def test_unknown_fields_are_ignored() -> None:
    model = _base_model()
    op = _op(model, 0, "n1")
    op.workspace.extend([1, 2])
    op.stream_id = 4
    op.output_desc[0].size = 64
    data = model.SerializeToString() + b"\xa8\x06\x01"  # field 101, varint 1: unknown to us
    assert_same_graph(fuzz_graph(), air.model_from_bytes(data))
