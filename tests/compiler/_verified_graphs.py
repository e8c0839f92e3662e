"""The search behind ``test_verified_graphs_run.py``: random graphs that ``Graph.verify()``
accepts must run, or fail with a ``GeError``.

Graphs come from two sources. ``ge.es.GraphBuilder`` calls (one generated function per op, with
Python scalars and lists as operands), and direct IR work: ``add_op_node`` for every op of the
registry followed by edits the builder never makes (``Graph.add_node`` with arbitrary port
counts, rewired and removed edges, attributes and Data indexes changed after inference, graph
outputs on Data and Const nodes, control edges), then ``infer_graph`` or not. Inputs are random
in dtype (bool, int8..int64, unsigned, float16/32/64, bfloat16 and a few types nothing
computes), rank (scalars up to rank 3), size (0-size dims), declared shapes (``-1`` dims,
unknown rank) and value (NaN, infinities, the extremes of each integer type); attributes and
the Consts that carry axes, shapes and perms range inside and outside what their op accepts.

For each graph that verifies: ``eval_graph`` and ``Session.run_graph`` each either return or
raise a ``GeError``; when both return they agree (shape, dtype, values within the dtype's
tolerance); a second ``run_graph`` gives the same result. Building and editing may fail only
with ``GeError``s too.

Run as ``python -m tests.compiler._verified_graphs --examples N [--seed S] [--last FILE]``:
before each graph runs, its listing and feeds are written to ``FILE``, so a crash (which kills
this process) still leaves the graph that caused it.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import math
import os
import resource
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import ge.es
from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import AttrValueType, DataType, Graph, Tensor, TensorDesc
from ge.graph._dtypes import numpy_dtype
from ge.ops import add_op_node, eval_graph, get_op, infer_graph, list_ops
from ge.session import Session

DT = DataType
# dtypes that compute, with weights by how often they appear; then a few that do not
COMPUTING = [
    DT.DT_FLOAT,
    DT.DT_FLOAT,
    DT.DT_FLOAT16,
    DT.DT_DOUBLE,
    DT.DT_BF16,
    DT.DT_INT32,
    DT.DT_INT32,
    DT.DT_INT64,
    DT.DT_INT8,
    DT.DT_INT16,
    DT.DT_UINT8,
    DT.DT_UINT16,
    DT.DT_UINT32,
    DT.DT_UINT64,
    DT.DT_BOOL,
    DT.DT_BOOL,
]
EXOTIC = [DT.DT_STRING, DT.DT_COMPLEX64, DT.DT_INT4, DT.DT_UNDEFINED, DT.DT_QINT8]
INDEX_TYPES = [DT.DT_INT32, DT.DT_INT64]

# ops not generated: graph boundaries are made on purpose below, fused ops carry bodies the
# lowering makes itself, control flow needs subgraphs (made by the control-flow step), and
# ge.jit's body print has no outputs and runs only the sinks its trace registered
# (tests/jit/test_debug_print_control.py)
SKIP = frozenset(
    {"Data", "RefData", "AippData", "AnyData", "Variable", "NetOutput", "Const", "JitDebugPrint"}
)
SKIP_BODY = frozenset({"FusedElementwise", "FusedReduce", "If", "Case", "While"})
OPS = [name for name in list_ops() if name not in SKIP | SKIP_BODY]

TOLERANCE = {
    "e": (2e-3, 2e-3),  # float16
    "f4": (1e-4, 1e-5),
    "f8": (1e-9, 1e-12),
    "bf": (2e-2, 2e-2),
}


def _np_type(dt: DataType) -> np.dtype[Any] | None:
    try:
        return np.dtype(numpy_dtype(dt))
    except (GeError, TypeError, ValueError, KeyError):
        return None


# ------------------------------------------------------------------------------ values --------
@st.composite
def odd_array(draw: st.DrawFn, shape: tuple[int, ...], dt: np.dtype[Any]) -> np.ndarray:
    """An array of ``dt``: ordinary values, with extremes, NaN and infinities mixed in."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        return rng.random(size).reshape(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        small = rng.integers(max(info.min, -9), min(info.max, 9) + 1, size=size)
        values = small.astype(dt)
        if size and draw(st.integers(0, 3)) == 0:
            extremes = np.array([info.min, info.max, 0, 1, info.max // 2], dtype=dt)
            pick = rng.random(size) < 0.3
            values[pick] = rng.choice(extremes, size=int(pick.sum()))
        return values.reshape(shape)
    values = rng.normal(0.0, 2.0, size=size).astype(np.float64)
    if size and draw(st.integers(0, 3)) == 0:
        odd = np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, -1e30, 6e4, 1e-40])
        pick = rng.random(size) < 0.3
        values[pick] = rng.choice(odd, size=int(pick.sum()))
    with np.errstate(all="ignore"):
        return values.astype(dt).reshape(shape)


def concrete_shapes() -> st.SearchStrategy[tuple[int, ...]]:
    dims = st.sampled_from([1, 2, 3, 4, 0, 1, 2, 3])
    return st.lists(dims, min_size=0, max_size=3).map(tuple)


def declared_shape(draw: st.DrawFn, shape: tuple[int, ...]) -> list[int]:
    """How a Data node declares ``shape``: as is, with some dims -1, or unknown rank."""
    kind = draw(st.sampled_from(["exact", "exact", "exact", "dynamic", "rank"]))
    if kind == "dynamic":
        return [-1 if draw(st.booleans()) else d for d in shape]
    if kind == "rank":
        return [-2]
    return list(shape)


def small_ints(lo: int = -4, hi: int = 5) -> st.SearchStrategy[int]:
    odd = st.sampled_from([2**31 - 1, -(2**31), 2**40, -(2**63), 2**63 - 1, 1000])
    return st.one_of(st.integers(lo, hi), st.integers(lo, hi), st.integers(lo, hi), odd)


def attr_value(draw: st.DrawFn, op_type: str, name: str, kind: AttrValueType) -> Any:
    if kind is AttrValueType.VT_INT:
        if name in ("dst_type", "dtype"):
            return int(draw(st.sampled_from([*COMPUTING, *EXOTIC, DT.DT_MAX])))
        if name.endswith("_mask"):
            return draw(st.integers(0, 15) | small_ints())
        return draw(small_ints(-2, 4))
    if kind is AttrValueType.VT_FLOAT:
        return draw(
            st.sampled_from([-1.0, 0.0, 0.5, 2.0, 1e-7, 3.0, -2.5, np.nan, np.inf, -np.inf, 1e300])
        )
    if kind is AttrValueType.VT_BOOL:
        return draw(st.booleans())
    if kind is AttrValueType.VT_STRING:
        return draw(st.sampled_from(["NHWC", "NCHW", "ND", "", "bogus"]))
    if kind is AttrValueType.VT_LIST_INT:
        return draw(st.lists(small_ints(-4, 4), max_size=3))
    if kind is AttrValueType.VT_DATA_TYPE:
        return draw(st.sampled_from([*COMPUTING, *EXOTIC]))
    if kind is AttrValueType.VT_TENSOR:
        np_dt = _np_type(draw(st.sampled_from(COMPUTING)))
        assert np_dt is not None
        return Tensor.from_numpy(np.array(draw(odd_array(draw(concrete_shapes()), np_dt))))
    raise LookupError(f"no generator for {kind.name} attributes")


def op_attrs(draw: st.DrawFn, op_type: str, counts: dict[str, int]) -> dict[str, Any]:
    """Attributes for ``op_type``: each one left at its default or drawn at random; counts of
    dynamic inputs (``N``, ``num_split``) usually right."""
    op = get_op(op_type)
    attrs: dict[str, Any] = {}
    for spec in op.attrs:
        if spec.name in ("N", "num_split") and spec.name in counts and draw(st.integers(0, 5)):
            attrs[spec.name] = counts[spec.name]
        elif spec.required or draw(st.integers(0, 2)) == 0:
            attrs[spec.name] = attr_value(draw, op_type, spec.name, spec.type)
    return attrs


# ------------------------------------------------------------------------------ graphs --------
@dataclass
class Feed:
    index: int
    shape: tuple[int, ...]
    dtype: DataType


class Case:
    """A graph, the inputs to feed it and how it was made (shown when a check fails; a plain
    class, so hypothesis prints its ``repr`` rather than its fields)."""

    def __init__(self, graph: Graph, feeds: list[Any], how: list[str]) -> None:
        self.graph = graph
        self.feeds = feeds
        self.how = how

    def __repr__(self) -> str:
        feeds = "\n".join(
            f"  inputs[{i}] = {f.dtype}{list(f.shape)}: {np.array2string(f.ravel()[:12])}"
            if isinstance(f, np.ndarray)
            else f"  inputs[{i}] = {f!r}"
            for i, f in enumerate(self.feeds)
        )
        return f"made by: {'; '.join(self.how)}\n{self.graph}\nfeeds:\n{feeds or '  (none)'}"


class LeakError(AssertionError):
    """A non-GeError escaped from ``ge``."""


@contextlib.contextmanager
def only_ge_errors(what: str) -> Iterator[None]:
    """Let ``GeError``s through (the caller decides), turn anything else into a ``LeakError``."""
    try:
        yield
    except GeError:
        raise
    except Exception as e:  # a bare exception out of ge: the bug this search looks for
        raise LeakError(f"{what} raised {type(e).__name__}: {e}") from e


class Pool:
    """Values made so far: ``(node, port)`` pairs (IR) or ``TensorHolder``s (builder), with
    their current descs."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.feeds: dict[int, Feed] = {}

    def desc(self, value: Any) -> TensorDesc:
        if isinstance(value, tuple):
            node, port = value
            return node.get_output_desc(port)
        return value._node.get_output_desc(value._port)


def _next_index(draw: st.DrawFn, pool: Pool) -> int:
    used = sorted(pool.feeds)
    fresh = len(used)
    if used and draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([*used, fresh + 1, fresh]))  # a duplicate or a gap
    return fresh


def _index_const_value(draw: st.DrawFn, rank: int | None) -> np.ndarray:
    """Values for axes/shape/perm-like inputs: mostly plausible for ``rank``, sometimes not."""
    r = 2 if rank is None or rank < 0 else rank
    kind = draw(st.sampled_from(["scalar", "vector", "vector", "perm", "empty"]))
    if kind == "scalar":
        return np.asarray(draw(small_ints(-r - 1, r + 1)))
    if kind == "perm" and r:
        perm = draw(st.permutations(list(range(r))))
        return np.asarray(perm)
    if kind == "empty":
        return np.zeros(0, np.int64)
    return np.asarray(draw(st.lists(small_ints(-r - 1, r + 3), min_size=1, max_size=r + 1)))


class IrMaker:
    """Graphs made with ``add_op_node`` and the raw ``Graph`` edits."""

    def __init__(self, draw: st.DrawFn, how: list[str]) -> None:
        self.draw = draw
        self.how = how
        self.graph = Graph("ir")
        self.pool = Pool()

    def data(self, shape: tuple[int, ...] | None = None, dtype: DataType | None = None) -> Any:
        draw = self.draw
        shape = draw(concrete_shapes()) if shape is None else shape
        if dtype is None:
            dtype = (
                draw(st.sampled_from(COMPUTING))
                if draw(st.integers(0, 15))
                else draw(st.sampled_from(EXOTIC))
            )
        index = _next_index(draw, self.pool)
        declared = TensorDesc(declared_shape(draw, shape), data_type=dtype)
        with only_ge_errors("add_op_node(Data)"):
            node = add_op_node(self.graph, "Data", [None], {"index": index}, declared=[declared])
        self.pool.feeds.setdefault(index, Feed(index, shape, dtype))
        self.pool.values.append((node, 0))
        self.how.append(f"Data index {index} {dtype.name}{list(declared.shape)}")
        return (node, 0)

    def const(self, array: np.ndarray) -> Any:
        with only_ge_errors("add_op_node(Const)"):
            tensor = Tensor.from_numpy(np.array(array, order="C"))
            node = add_op_node(self.graph, "Const", [], {"value": tensor})
        self.pool.values.append((node, 0))
        return (node, 0)

    def operand(self, like: Any | None = None) -> Any:
        """An existing value, or a new Data/Const (often broadcast-compatible with ``like``)."""
        draw = self.draw
        choice = draw(st.integers(0, 5))
        if self.pool.values and choice <= 2:
            return draw(st.sampled_from(self.pool.values))
        if choice == 3:
            dt = draw(st.sampled_from(COMPUTING))
            np_dt = _np_type(dt)
            assert np_dt is not None
            return self.const(draw(odd_array(draw(concrete_shapes()), np_dt)))
        if like is not None and choice == 4:
            desc = self.pool.desc(like)
            dims = [d if d >= 0 else 2 for d in desc.shape if d != -2]
            suffix = tuple(1 if draw(st.booleans()) else d for d in dims[len(dims) // 2 :])
            return self.data(suffix, desc.data_type)
        return self.data()

    def value_input(self, like: Any | None) -> Any:
        draw = self.draw
        rank = None
        if like is not None:
            rank = len(self.pool.desc(like).shape)
        if draw(st.integers(0, 7)) == 0:  # a value known only at run time
            return self.data(
                draw(st.sampled_from([(), (1,), (2,), (3,)])), draw(st.sampled_from(INDEX_TYPES))
            )
        value = _index_const_value(draw, rank)
        dt = draw(st.sampled_from(INDEX_TYPES))
        with np.errstate(all="ignore"):
            if dt is DT.DT_INT32:
                value = value.astype(np.int64).astype(np.int32)
            return self.const(value.astype(_np_type(dt)))

    def op(self) -> None:
        draw = self.draw
        op_type = draw(st.sampled_from(OPS))
        op = get_op(op_type)
        inputs: list[Any] = []
        counts: dict[str, int] = {}
        first: Any | None = None
        for spec in op.inputs:
            if spec.dynamic:
                n = draw(st.integers(0, 3))
                items = [self.operand(first) for _ in range(n)]
                first = first or (items[0] if items else None)
                counts["N"] = counts["num_split"] = n
                inputs.append(items)
            elif spec.optional and draw(st.booleans()):
                inputs.append(None)
            elif spec.name in op.value_inputs:
                inputs.append(self.value_input(first))
            else:
                value = self.operand(first)
                first = first or value
                inputs.append(value)
        output_counts = None
        if any(s.dynamic for s in op.outputs):
            n_out = draw(st.integers(0, 4))
            counts["num_split"] = n_out
            output_counts = [n_out if s.dynamic else 1 for s in op.outputs]
        attrs = op_attrs(draw, op_type, counts)
        try:
            with only_ge_errors(f"add_op_node({op_type})"):
                node = add_op_node(self.graph, op_type, inputs, attrs, output_counts=output_counts)
        except GeError:
            self.how.append(f"{op_type} refused")
            return
        self.how.append(f"{node.name} {attrs}")
        self.pool.values += [(node, p) for p in range(node.get_outputs_size())]

    # --- edits the builder never makes -------------------------------------------------------
    def edit(self) -> None:  # noqa: PLR0912  (one branch per kind of edit)
        draw = self.draw
        g = self.graph
        nodes = g.get_direct_nodes()
        if not nodes:  # an earlier edit removed every node
            return
        kind = draw(
            st.sampled_from(["attr", "index", "rewire", "unlink", "raw", "remove", "ctrl", "desc"])
        )
        node = draw(st.sampled_from(nodes))
        self.how.append(f"edit {kind} {node.name}")
        op = get_op(node.type)
        if kind == "attr" and op.attrs:
            spec = draw(st.sampled_from(op.attrs))
            node.set_attr(spec.name, attr_value(draw, node.type, spec.name, spec.type))
        elif kind == "index" and op.io == "input":
            node.set_attr("index", draw(st.integers(-1, len(self.pool.feeds) + 1)))
        elif kind in ("rewire", "unlink") and node.get_inputs_size():
            port = draw(st.integers(0, node.get_inputs_size() - 1))
            edge = node.get_in_data_nodes_and_port_indexes(port)
            if edge is not None:
                g.remove_edge(edge[0], edge[1], node, port)
            if kind == "rewire" and self.pool.values:
                src, src_port = draw(st.sampled_from(self.pool.values))
                if src.name in {n.name for n in g.get_direct_nodes()}:
                    g.add_data_edge(src, src_port, node, port)
        elif kind == "raw":
            op_type = draw(st.sampled_from([*OPS, "Identity", "Const", "Data"]))
            n_in = draw(st.integers(0, 3))
            n_out = draw(st.integers(0, 2))
            raw = g.add_node(op_type, num_inputs=n_in, num_outputs=n_out)
            for port in range(n_in):
                if self.pool.values and draw(st.booleans()):
                    src, src_port = draw(st.sampled_from(self.pool.values))
                    g.add_data_edge(src, src_port, raw, port)
            self.pool.values += [(raw, p) for p in range(n_out)]
        elif kind == "remove" and op.io != "output":
            g.remove_node(node)
            self.pool.values = [v for v in self.pool.values if v[0] is not node]
        elif kind == "ctrl":
            g.add_control_edge(node, draw(st.sampled_from(nodes)))
        elif kind == "desc" and node.get_outputs_size():
            dt = draw(st.sampled_from(COMPUTING))
            shape = draw(concrete_shapes())
            node.update_output_desc(0, TensorDesc(list(shape), data_type=dt))
            if op.io == "input":
                index = node.get_attr("index")
                if isinstance(index, int):
                    self.pool.feeds[index] = Feed(index, shape, dt)


class BuilderMaker:
    """Graphs made through ``ge.es``: one generated function per op, Python operands too."""

    def __init__(self, draw: st.DrawFn, how: list[str]) -> None:
        self.draw = draw
        self.how = how
        self.builder = GraphBuilder("es")
        self.pool = Pool()

    def data(self) -> Any:
        draw = self.draw
        shape = draw(concrete_shapes())
        dtype = draw(st.sampled_from(COMPUTING))
        index = _next_index(draw, self.pool)
        declared = declared_shape(draw, shape)
        try:
            with only_ge_errors("create_input"):
                holder = self.builder.create_input(index, data_type=dtype, shape=declared)
        except GeError:  # a taken index makes a taken name: GE-PY refuses it too
            index = max(self.pool.feeds, default=-1) + 1
            holder = self.builder.create_input(index, data_type=dtype, shape=declared)
        self.pool.feeds.setdefault(index, Feed(index, shape, dtype))
        self.pool.values.append(holder)
        self.how.append(f"create_input({index}, {dtype.name}, {declared})")
        return holder

    def operand(self, value_input: bool = False) -> Any:
        draw = self.draw
        choice = draw(st.integers(0, 5))
        if value_input and choice < 4:
            return draw(st.one_of(small_ints(-3, 4), st.lists(small_ints(-3, 4), max_size=3)))
        if self.pool.values and choice <= 2:
            return draw(st.sampled_from(self.pool.values))
        if choice == 3:
            return draw(
                st.sampled_from([0, 1, -1, 2.5, True, [1.0, 2.0], [[1, 2], [3, 4]], 2**40, 1e300])
            )
        return self.data()

    def op(self) -> None:
        draw = self.draw
        op_type = draw(st.sampled_from(OPS))
        op = get_op(op_type)
        fn = getattr(ge.es, op_type)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        counts: dict[str, int] = {}
        by_name = {s.name: s for s in op.inputs}
        for param in inspect.signature(fn).parameters.values():
            spec = by_name.get(param.name)
            if spec is not None and spec.dynamic:
                n = draw(st.integers(0, 3))
                counts["N"] = counts["num_split"] = n
                args.append([self.operand() for _ in range(n)])
            elif spec is not None and spec.optional and draw(st.booleans()):
                args.append(None)
            elif spec is not None:
                args.append(self.operand(spec.name in op.value_inputs))
            elif param.name.endswith("_num"):
                n_out = draw(st.integers(0, 4))
                counts["num_split"] = n_out
                args.append(n_out)
        attrs = op_attrs(draw, op_type, counts)
        kwargs.update(attrs)
        try:
            with only_ge_errors(f"ge.es.{op_type}"):
                out = fn(*args, **kwargs)
        except GeError:
            self.how.append(f"es.{op_type} refused")
            return
        self.how.append(f"es.{op_type}{tuple(type(a).__name__ for a in args)} {attrs}")
        items = out if isinstance(out, (list, tuple)) else [out]
        self.pool.values += [h for h in items if isinstance(h, ge.es.TensorHolder)]


def _feeds(draw: st.DrawFn, feeds: dict[int, Feed]) -> list[Any]:
    if not feeds:
        return []
    arrays: list[Any] = []
    # a graph whose Data indexes run past 64 (a mutated index) gets one feed per Data: the
    # wrong count, which ge must refuse (a feed per index up to 2**31 would exhaust memory)
    indexes = sorted(feeds) if max(feeds) >= 64 else range(max(max(feeds) + 1, 0))
    for index in indexes:
        feed = feeds.get(index)
        if feed is None:
            arrays.append(np.zeros(2, np.float32))
            continue
        dt = _np_type(feed.dtype)
        if dt is None:
            arrays.append(np.zeros(feed.shape, np.float32))
            continue
        if math.prod(feed.shape) > 1 << 20:  # a mutated shape: a short feed ge must refuse
            arrays.append(np.zeros(3, dt))
            continue
        arrays.append(draw(odd_array(feed.shape, dt)))
    if draw(st.integers(0, 9)) == 0:  # a wrong feed: dtype, shape or count
        k = draw(st.integers(0, len(arrays) - 1))
        arrays[k] = draw(
            st.sampled_from([np.zeros((5, 1), np.float64), np.ones((), np.int8), None, "x"])
        )
        if arrays[k] is None:
            del arrays[k]
        elif isinstance(arrays[k], str):
            arrays[k] = np.zeros(3, np.float32)[::2]
    return arrays


@st.composite
def cases(draw: st.DrawFn) -> Case:
    how: list[str] = []
    source = draw(st.sampled_from(["builder", "ir", "ir", "edited"]))
    how.append(source)
    if source == "builder":
        maker: Any = BuilderMaker(draw, how)
        for _ in range(draw(st.integers(1, 4))):
            maker.op()
        values = maker.pool.values or [maker.data()]
        outs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
        try:
            with only_ge_errors("build_and_reset"):
                graph = maker.builder.build_and_reset(outs)
        except GeError:
            how.append("build_and_reset refused")
            graph = Graph("refused")
        return Case(graph, _feeds(draw, maker.pool.feeds), how)
    ir = IrMaker(draw, how)
    for _ in range(draw(st.integers(1, 4))):
        ir.op()
    if not ir.pool.values:
        ir.data()
    outs = draw(st.lists(st.sampled_from(ir.pool.values), min_size=1, max_size=3))
    with only_ge_errors("set_outputs"):
        ir.graph.set_outputs(outs)
    if source == "edited":
        for _ in range(draw(st.integers(1, 3))):
            try:
                with only_ge_errors("graph edit"):
                    ir.edit()
            except GeError as e:
                how.append(f"edit refused: {str(e)[:60]}")
        if draw(st.booleans()):
            try:
                with only_ge_errors("infer_graph"):
                    infer_graph(ir.graph)
                how.append("infer_graph")
            except GeError:
                how.append("infer_graph refused")
    return Case(ir.graph, _feeds(draw, ir.pool.feeds), how)


# ------------------------------------------------------------------------------ the check -----
def _tolerance(dtype: np.dtype[Any]) -> tuple[float, float] | None:
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return TOLERANCE["bf"]
    if dtype.kind == "f":
        return TOLERANCE["e" if dtype.itemsize == 2 else "f4" if dtype.itemsize == 4 else "f8"]
    return None


def assert_agree(graph: Graph, expected: list[np.ndarray], actual: list[np.ndarray]) -> None:
    assert len(actual) == len(expected), (len(actual), len(expected))
    for k, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.shape == e.shape, f"output {k}: run_graph shape {a.shape}, eval_graph {e.shape}"
        assert a.dtype == e.dtype, f"output {k}: run_graph dtype {a.dtype}, eval_graph {e.dtype}"
        tol = _tolerance(e.dtype)
        if tol is None:
            np.testing.assert_array_equal(a, e, err_msg=f"output {k}")
            continue
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        # transcendental kernels may differ from numpy by ulps; values near overflow may
        # round either way: compare finite values, and where the references overflow only that
        # the kernel's value is as large
        both = np.isfinite(a64) & np.isfinite(e64)
        np.testing.assert_array_equal(np.isnan(a64), np.isnan(e64), err_msg=f"output {k} NaNs")
        scale = max(1.0, float(np.max(np.abs(e64[both]), initial=0.0)))
        np.testing.assert_allclose(
            a64[both], e64[both], rtol=tol[0], atol=tol[1] * scale, err_msg=f"output {k}"
        )
        inf = np.isinf(e64)
        np.testing.assert_array_equal(a64[inf], e64[inf], err_msg=f"output {k} infinities")


def _eval_ok(cause: BaseException) -> bool:
    return isinstance(cause, MemoryError) or "too big" in str(cause)


def _run_ok(cause: BaseException) -> bool:
    bug = (IndexError, KeyError, AttributeError, AssertionError, ZeroDivisionError, NameError)
    return not isinstance(cause, bug)


_EVAL_OK = _eval_ok
_RUN_OK = _run_ok


def masked(error: GeError, what: str, fine: Callable[[BaseException], bool]) -> None:
    """A ``GeError`` wrapped around a bare exception that a check should have caught first
    (``eval_graph`` names the node of any failing reference; sessions wrap failed runs)."""
    cause = error.__cause__
    while isinstance(cause, GeError) and cause.__cause__ is not None:
        cause = cause.__cause__
    if cause is not None and not isinstance(cause, GeError) and not fine(cause):
        raise LeakError(f"{what}: {type(cause).__name__} wrapped as a GeError: {error}") from error


@dataclass
class Outcome:
    verified: bool = False
    eval_error: str = ""
    run_error: str = ""


def check(case: Case, last: str | None = None, offline: bool = False) -> Outcome:
    """The property, for one case (see the module docstring). ``offline``: a graph that ran
    also goes through an offline model (build_model, load_model from bytes, execute), which
    must refuse it with a GeError or agree with run_graph."""
    outcome = Outcome()
    graph = case.graph
    try:
        with only_ge_errors("Graph.verify"):
            graph.verify()
    except GeError:
        return outcome
    outcome.verified = True
    if last:
        with open(last, "w") as f:
            f.write(repr(case))
    expected: list[np.ndarray] | None = None
    try:
        with only_ge_errors("eval_graph"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = [np.asarray(v) for v in eval_graph(graph, case.feeds)]
    except GeError as e:
        outcome.eval_error = f"{type(e).__name__}: {e}"
        masked(e, "eval_graph", _EVAL_OK)
    session = Session()
    actual: list[np.ndarray] | None = None
    try:
        with only_ge_errors("Session.run_graph"):
            session.add_graph(1, graph)
            tensors = [Tensor.from_numpy(np.asarray(f)) for f in case.feeds]
            actual = [t.numpy() for t in session.run_graph(1, tensors)]
            again = [t.numpy() for t in session.run_graph(1, tensors)]
            for a, b in zip(again, actual, strict=True):
                np.testing.assert_array_equal(a, b, err_msg="a second run_graph differs")
    except GeError as e:
        outcome.run_error = f"{type(e).__name__}: {e}"
        masked(e, "Session.run_graph", _RUN_OK)
    if expected is not None and actual is not None:
        assert_agree(graph, expected, actual)
    if offline and actual is not None:
        check_offline(graph, case.feeds, actual)
    return outcome


def check_offline(graph: Graph, feeds: list[Any], actual: list[np.ndarray]) -> None:
    """The graph as an offline model, its inputs' shapes fixed to the feeds': it is refused
    with a GeError (host Python, value-dependent shapes) or runs and agrees with run_graph."""
    from ge import offline_compile
    from ge.runtime import load_model

    arrays = [np.asarray(f, order="C") for f in feeds]  # (ascontiguousarray makes 0-d 1-d)
    data = sorted(
        (n for n in graph.get_direct_nodes() if n.type == "Data"),
        key=lambda n: int(n.get_attr("index")),
    )
    shapes = ";".join(
        f"{n.name}:{','.join(str(d) for d in a.shape)}" for n, a in zip(data, arrays, strict=False)
    )
    try:
        with only_ge_errors("offline model"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            offline_compile.build_initialize({})
            model = load_model(
                offline_compile.build_model(graph, {"input_shape": shapes}).get_bytes()
            )
            results = model.execute(arrays)
            again = model.execute(arrays)
    except GeError:
        return
    try:
        assert_agree(graph, actual, [np.asarray(r) for r in results])
    except AssertionError as e:  # "run_graph" in its text is the model here
        raise AssertionError(
            f"offline model (as run_graph) against run_graph (as eval_graph): {e}"
        ) from None
    for a, b in zip(again, results, strict=True):
        np.testing.assert_array_equal(a, b, err_msg="a second Model.execute differs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--last", default=None)
    parser.add_argument("--memory-gb", type=float, default=6.0)
    parser.add_argument("--offline", action="store_true", help="also check offline models")
    args = parser.parse_args(argv)
    # a graph may ask for outputs of any size: cap the address space so that is a
    # MemoryError (which ge must turn into a GeError), not the OOM killer on a shared machine
    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    stats = {"cases": 0, "verified": 0, "eval_error": 0, "run_error": 0}

    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(cases())
    def search(case: Case) -> None:
        outcome = check(case, args.last, args.offline)
        stats["cases"] += 1
        stats["verified"] += outcome.verified
        stats["eval_error"] += bool(outcome.eval_error)
        stats["run_error"] += bool(outcome.run_error)
        if os.environ.get("GE_VERIFIED_GRAPHS_VERBOSE") and outcome.verified:
            print(repr(case), outcome, sep="\n", flush=True)

    if args.seed is not None:
        search = hypothesis_seed(args.seed)(search)
    search()
    print(f"stats: {stats}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Case", "LeakError", "cases", "check", "main"]
