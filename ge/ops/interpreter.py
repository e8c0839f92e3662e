"""``eval_graph``: the reference interpreter, the oracle every kernel and rewrite is tested
against.

It walks the graph in topological order with an environment of numpy arrays, calling each op's
numpy ``reference``; control-flow ops run their subgraphs through the same walk. (A Python
custom op's reference runs its own implementation: ``ge.custom_op`` gives its ``OpDef`` one, so
this module needs no knowledge of custom ops.) ``eval_graph`` makes no attempt to be fast.

``Program`` is the same walk prepared once for a graph that runs many times (``ge.jit``'s
calls while their kernels compile): node order and per-node facts worked out up front, and
nodes whose reference is a numpy ufunc run as that ufunc into reused buffers, so that an
elementwise chain runs at numpy's own speed. Its results are ``eval_graph``'s (tested so).

    >>> import numpy as np
    >>> from ge.graph import Graph, TensorDesc
    >>> from ge.ops.construct import add_op_node
    >>> g = Graph("g")
    >>> x = add_op_node(g, "Data", [None], {"index": 0}, name="x", declared=[TensorDesc([2])])
    >>> y = add_op_node(g, "Relu", [(x, 0)])
    >>> g.set_outputs([(y, 0)])
    >>> eval_graph(g, [np.array([-1.0, 2.0], np.float32)])
    [array([0., 2.], dtype=float32)]
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ge.error import GeError, GeTypeError, GeValueError, GraphError
from ge.graph._dtypes import numpy_dtype
from ge.graph._verify import describe_cycle, topological_order
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.ops._rules import too_big
from ge.ops.infer import (
    _subgraph_slot,
    _subgraphs_of,
    const_value,
    graph_outputs,
    infer_on_values,
    node_attrs,
)
from ge.ops.layout import input_groups, output_groups
from ge.ops.registry import get_op
from ge.ops.schema import ExecContext, OpDef

__all__ = ["Program", "eval_graph", "eval_tensors", "run_reference"]

Env = dict[tuple[int, int], np.ndarray]


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(value)


def _feed(node: Node, feeds: Sequence[np.ndarray], offset: int) -> np.ndarray:
    slot = _subgraph_slot(node, offset)
    if not 0 <= slot < len(feeds):
        raise GeValueError(
            f"inputs: graph input {node.name} takes inputs[{slot}], but "
            f"{len(feeds)} inputs were given"
        )
    declared = node.output_descs[0]
    value = feeds[slot]
    expected = list(declared._shape)
    # the rule compiled graphs apply (ge.compiler.executable.InputSpec): the declared rank,
    # and every declared dim that is not -1; only an unknown rank takes any shape (a Data
    # declared as a scalar takes a scalar: its users were inferred for one)
    fits = expected == [-2] or (
        len(expected) == value.ndim
        and all(want in (-1, have) for want, have in zip(expected, value.shape, strict=True))
    )
    if not fits:
        raise GeValueError(
            f"inputs[{slot}] (for {node.name}) has shape {list(value.shape)}, expected {expected}"
        )
    return value.astype(numpy_dtype(declared._data_type), copy=False)


def _gather(
    node: Node, groups: list[list[int]], env: Env, optional: list[bool], dynamic: list[bool]
) -> list[Any]:
    edges = node.inputs

    def fetch(port: int) -> np.ndarray | None:
        edge = edges[port]
        return None if edge is None else env[(id(edge[0]), edge[1])]

    values: list[Any] = []
    for ports, is_opt, is_dyn in zip(groups, optional, dynamic, strict=True):
        if is_dyn:
            values.append([fetch(p) for p in ports])
        else:
            value = fetch(ports[0])
            if value is None and not is_opt:
                raise GraphError(f"node {node.name} input {ports[0]} is not connected")
            values.append(value)
    return values


def _decided_at_run_time(node: Node, op: OpDef) -> bool:
    """Whether inference left something about ``node`` to the values that reach it: an
    unknown dim in or out, or a value input (axes, shape...) not read from a Const."""
    if any(d._shape.is_unknown_shape() for d in node.output_descs):
        return True
    for edge in node.inputs:
        if edge is not None and edge[0].output_desc(edge[1])._shape.is_unknown_shape():
            return True
    if op.value_inputs:
        for spec, ports in zip(op.inputs, input_groups(op, node), strict=True):
            if spec.name in op.value_inputs and any(const_value(node, p) is None for p in ports):
                return True
    return False


def run_reference(op: OpDef, ctx: ExecContext, node: str) -> Sequence[Any]:
    """``op.reference(ctx)`` for node ``node``; what it raises other than a ``GeError`` comes
    out as one naming the node (``GeValueError``/``GeTypeError`` for numpy's ``ValueError``/
    ``TypeError``), so no bare exception leaves ``eval_graph`` or a plan's host task."""
    assert op.reference is not None
    try:
        return op.reference(ctx)
    except GeError:
        raise
    except MemoryError as e:  # numpy's _ArrayMemoryError says how much it wanted
        raise GeError(
            f"node {node} ({op.type}): out of host memory computing its outputs: {e}"
        ) from e
    except Exception as e:  # numpy refusing (an array too big to index...): name the node
        kind = (
            GeValueError
            if isinstance(e, ValueError)
            else GeTypeError
            if isinstance(e, TypeError)
            else GeError
        )
        raise kind(f"node {node} ({op.type}): its reference failed: {type(e).__name__}: {e}") from e


class _Step:
    """One node as the interpreter runs it, with what does not depend on the values worked
    out once: its op, input port groups, attributes, and whether inference left its output
    descs to the values (else the size check on them is done here, and raised when it runs)."""

    __slots__ = (
        "attrs",
        "decided",
        "dynamic",
        "groups",
        "io",
        "node",
        "op",
        "optional",
        "out_groups",
        "problem",
        "subgraphs",
    )

    def __init__(self, node: Node) -> None:
        op = get_op(node.type)
        self.node, self.op, self.io = node, op, op.io
        if op.io in ("input", "output"):
            return
        if op.reference is None:
            raise GeError(f"op {op.type} has no reference implementation")
        self.groups = input_groups(op, node)
        self.optional = [s.optional for s in op.inputs]
        self.dynamic = [s.dynamic for s in op.inputs]
        self.decided = not op.subgraphs and _decided_at_run_time(node, op)
        self.problem = None if self.decided else _size_problem(node, node.output_descs)
        self.attrs = node_attrs(op, node)
        self.subgraphs = _subgraphs_of(node)
        self.out_groups = output_groups(op, node)

    def run(self, env: Env, feeds: Sequence[np.ndarray], offset: int) -> None:
        node, op = self.node, self.op
        if self.io == "input":
            env[(id(node), 0)] = _feed(node, feeds, offset)
            return
        if self.io == "output":
            return
        inputs = _gather(node, self.groups, env, self.optional, self.dynamic)
        outputs = list(node.output_descs)
        problem = self.problem
        if self.decided:  # (a local: a Program's steps run in several threads at once)
            outputs = infer_on_values(node, op, inputs)
            problem = _size_problem(node, outputs)
        if problem is not None:  # before numpy tries (and fails some other way)
            raise GeValueError(problem)
        ctx = ExecContext(
            op,
            inputs,
            self.attrs,
            outputs=outputs,
            subgraphs=self.subgraphs,
            run_subgraph=_run_subgraph,
            output_counts=[len(g) for g in self.out_groups],
            node=node.name,
        )
        results = run_reference(op, ctx, node.name)
        port = 0
        for spec, result, group in zip(op.outputs, results, self.out_groups, strict=True):
            items: list[Any] = list(result) if spec.dynamic else [result]
            if len(items) != len(group):
                raise GeError(
                    f"{op.type} reference returned {len(items)} values for output "
                    f"'{spec.name}' ({len(group)} ports)"
                )
            for item in items:
                env[(id(node), port)] = np.asarray(item)
                port += 1


def _size_problem(node: Node, descs: Sequence[Any]) -> str | None:
    for desc in descs:
        problem = too_big(desc._shape, desc._data_type)
        if problem is not None:
            return f"node {node.name} ({node.type}): {problem}"
    return None


def _order(graph: Graph) -> list[Node]:
    order, cyclic = topological_order(graph)
    if cyclic:
        raise GraphError(describe_cycle(graph, cyclic))
    return order


def _run(graph: Graph, feeds: Sequence[np.ndarray], offset: int) -> list[np.ndarray]:
    env: Env = {}
    for node in _order(graph):
        _Step(node).run(env, feeds, offset)
    return [env[(id(node), port)] for node, port in graph_outputs(graph)]


class _UfuncStep:
    """A node whose reference is its numpy ufunc on inputs of the output's dtype (a float of
    at least 32 bits, an integer or a bool; a comparison's output is bool): run as that ufunc
    writing into a buffer (``out=``), which is one of the program's reused buffers or, when
    the value leaves the program or reaches a node run by its reference (which may keep a
    view of it), a new one."""

    __slots__ = ("dtype", "inputs", "key", "pooled", "shape", "ufunc")

    def __init__(self, node: Node, ufunc: np.ufunc, dtype: np.dtype[Any]) -> None:
        self.ufunc = ufunc
        self.inputs = [(id(e[0]), e[1]) for e in node.inputs if e is not None]
        self.key = (id(node), 0)
        self.dtype = dtype
        self.shape = tuple(node.output_descs[0]._shape)
        self.pooled = -1  # the reused buffer it writes into, else -1: a new one each run


# Ops whose reference is not their ufunc on these dtype kinds (integer Pow goes through
# float64 and truncates, where numpy's power refuses negative exponents); the ufunc test of
# tests/ops/test_interpreter_program.py finds any other.
_NOT_THE_UFUNC: dict[str, str] = {"Pow": "iu"}
# Ops without an ``OpDef.ufunc`` whose reference on floats is this ufunc (GE's Div and
# RealDiv truncate integers, and divide floats as numpy does)
_FLOAT_UFUNCS: dict[str, str] = {"Div": "divide", "RealDiv": "divide"}


def _at_defaults(op: OpDef, node: Node) -> bool:
    """Whether every attribute of ``node`` has its default (``Exp``'s base e, scale 1 and
    shift 0: the plain ufunc; the ufunc test checks this of every such op)."""
    if not op.attrs:
        return True
    values = node_attrs(op, node)
    return all(not s.required and values[s.name] == s.default for s in op.attrs)


def _ufunc_of(node: Node) -> tuple[np.ufunc, np.dtype[Any]] | None:
    """The ufunc and output dtype a node can run as (``_UfuncStep``), or ``None``."""
    op = get_op(node.type)
    name = op.ufunc or _FLOAT_UFUNCS.get(op.type, "")
    ufunc = getattr(np, name, None) if name and _at_defaults(op, node) else None
    edges = node.inputs
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.nin != len(edges):
        return None
    if any(e is None for e in edges) or len(node.output_descs) != 1:
        return None
    descs = [e[0].output_desc(e[1]) for e in edges if e is not None]
    out = node.output_descs[0]
    if any(d._shape.is_unknown_shape() for d in (*descs, out)):
        return None
    dtype = numpy_dtype(descs[0]._data_type)
    plain = dtype.kind in "biu" or (dtype.kind == "f" and dtype.itemsize >= 4)
    if not plain or any(d._data_type != descs[0]._data_type for d in descs):
        return None
    if dtype.kind in _NOT_THE_UFUNC.get(op.type, ""):
        return None
    if not op.ufunc and dtype.kind != "f":  # a _FLOAT_UFUNCS row
        return None
    out_dtype = numpy_dtype(out._data_type)
    if out_dtype not in (dtype, np.dtype(np.bool_)):
        return None
    return ufunc, out_dtype


class Program:
    """``eval_graph`` of one graph prepared to run many times, as fast as numpy running the
    same function: the node order and what each step needs are worked out once, a node whose
    reference is its numpy ufunc runs as that ufunc writing into a buffer (``_UfuncStep``), and
    the buffers of values used only by such nodes are reused, across the nodes of a run and
    across runs (so a chain of elementwise ops makes no temporaries).

    ``run`` returns arrays the caller owns: a value a ufunc step made is new; any other output
    is a copy (a reference may return a view of an input or a constant). Runs from several
    threads at once each take their own set of buffers. ``ge.jit`` runs a trace this way while
    its kernels compile (the graph must not change afterwards)."""

    def __init__(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise GeTypeError(f"graph: expected a ge.graph.Graph, got {type(graph).__name__}")
        self._steps: list[_Step | _UfuncStep] = []
        for node in _order(graph):
            fast = _ufunc_of(node)
            self._steps.append(_Step(node) if fast is None else _UfuncStep(node, *fast))
        self._outputs = [(id(node), port) for node, port in graph_outputs(graph)]
        descs = [node.output_desc(port) for node, port in graph_outputs(graph)]
        self._dtypes = [numpy_dtype(d._data_type) for d in descs]
        self._buffer_specs = self._assign_buffers()
        # the values a run makes in new buffers of their own: outputs returned as they are
        self._made = {s.key for s in self._steps if isinstance(s, _UfuncStep) and s.pooled < 0}
        self._spare: list[list[np.ndarray]] = []
        self._lock = threading.Lock()

    def _assign_buffers(self) -> list[tuple[tuple[int, ...], np.dtype[Any]]]:
        """Give each ufunc step whose value only ufunc steps read a reused buffer, free again
        after its last reader (so a step may write over an input it reads last: elementwise,
        same shape, which ufuncs allow)."""
        readers: dict[tuple[int, int], list[int]] = {}
        for i, step in enumerate(self._steps):
            keys = step.inputs if isinstance(step, _UfuncStep) else _input_keys(step)
            for key in keys:
                readers.setdefault(key, []).append(i)
        leaving = set(self._outputs)
        specs: list[tuple[tuple[int, ...], np.dtype[Any]]] = []
        free: list[int] = []
        slot_of: dict[tuple[int, int], int] = {}
        for i, step in enumerate(self._steps):
            if not isinstance(step, _UfuncStep):
                continue
            for key in dict.fromkeys(step.inputs):
                slot = slot_of.get(key)
                if slot is not None and max(readers[key]) == i:
                    free.append(slot)
            only_ufuncs = all(
                isinstance(self._steps[j], _UfuncStep) for j in readers.get(step.key, [])
            )
            if step.key in leaving or not only_ufuncs:
                continue
            spec = (step.shape, step.dtype)
            slot = next((s for s in free if specs[s] == spec), None)
            if slot is None:
                slot = len(specs)
                specs.append(spec)
            else:
                free.remove(slot)
            step.pooled = slot_of[step.key] = slot
        return specs

    def run(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The graph's outputs for ``feeds`` (``feeds[i]`` for the Data node with index i)."""
        buffers = self._take_buffers()
        try:
            env = self._evaluate(feeds, buffers)
        finally:
            with self._lock:
                self._spare.append(buffers)
        return self._owned_outputs(env)

    def _evaluate(self, feeds: Sequence[np.ndarray], buffers: list[np.ndarray]) -> Env:
        env: Env = {}
        with np.errstate(all="ignore"):  # as the references compute
            for step in self._steps:
                if isinstance(step, _UfuncStep):
                    out = (
                        buffers[step.pooled]
                        if step.pooled >= 0
                        else np.empty(step.shape, step.dtype)
                    )
                    env[step.key] = step.ufunc(*[env[k] for k in step.inputs], out=out)
                else:
                    step.run(env, feeds, 0)
        return env

    def _take_buffers(self) -> list[np.ndarray]:
        with self._lock:
            if self._spare:
                return self._spare.pop()
        return [np.empty(shape, dtype) for shape, dtype in self._buffer_specs]

    def _owned_outputs(self, env: Env) -> list[np.ndarray]:
        made = self._made
        results: list[np.ndarray] = []
        given: set[tuple[int, int]] = set()
        for key, dtype in zip(self._outputs, self._dtypes, strict=True):
            value = env[key]
            if key in made and key not in given and value.dtype == dtype:
                results.append(value)
            else:
                results.append(np.array(value, dtype=dtype, copy=True))
            given.add(key)
        return results


def _input_keys(step: _Step) -> list[tuple[int, int]]:
    return [(id(e[0]), e[1]) for e in step.node.inputs if e is not None]


def eval_tensors(
    graph: Graph, feeds: Sequence[np.ndarray], targets: Sequence[tuple[Node, int]], offset: int = 0
) -> list[np.ndarray]:
    """The values of just ``targets`` (``(node, port)`` pairs), evaluating only their
    ancestors — how the compiler learns the small tensors that decide shapes at run time."""
    needed: set[int] = set()
    stack = [node for node, _ in targets]
    while stack:
        node = stack.pop()
        if id(node) in needed:
            continue
        needed.add(id(node))
        stack += [e[0] for e in node.inputs if e is not None]
    order, _ = topological_order(graph)
    env: Env = {}
    for node in order:
        if id(node) in needed:
            _Step(node).run(env, feeds, offset)
    return [env[(id(node), port)] for node, port in targets]


def _run_subgraph(graph: Graph, feeds: Sequence[np.ndarray], offset: int) -> list[np.ndarray]:
    return _run(graph, [np.asarray(f) for f in feeds], offset)


def eval_graph(graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run ``graph`` on ``inputs`` (``inputs[i]`` feeds the Data node with ``index`` i; numpy
    arrays, scalars, lists or ``ge.graph.Tensor``) and return its outputs as numpy arrays."""
    if not isinstance(graph, Graph):
        raise GeTypeError(f"graph: expected a ge.graph.Graph, got {type(graph).__name__}")
    return _run(graph, [_as_array(v) for v in inputs], 0)
