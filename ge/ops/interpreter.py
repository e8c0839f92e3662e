"""``eval_graph``: the reference interpreter, the oracle every kernel and rewrite is tested
against.

It walks the graph in topological order with an environment of numpy arrays, calling each op's
numpy ``reference``; control-flow ops run their subgraphs through the same walk. (A Python
custom op's reference runs its own implementation: ``ge.custom_op`` gives its ``OpDef`` one, so
this module needs no knowledge of custom ops.) It is short on
purpose and makes no attempt to be fast.

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

__all__ = ["eval_graph", "eval_tensors", "run_reference"]

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


def _run_node(node: Node, env: Env, feeds: Sequence[np.ndarray], offset: int) -> None:
    op = get_op(node.type)
    if op.io == "input":
        env[(id(node), 0)] = _feed(node, feeds, offset)
        return
    if op.io == "output":
        return
    if op.reference is None:
        raise GeError(f"op {op.type} has no reference implementation")
    groups = input_groups(op, node)
    inputs = _gather(
        node, groups, env, [s.optional for s in op.inputs], [s.dynamic for s in op.inputs]
    )
    outputs = list(node.output_descs)
    if not op.subgraphs and _decided_at_run_time(node, op):
        outputs = infer_on_values(node, op, inputs)
    for desc in outputs:
        problem = too_big(desc._shape, desc._data_type)
        if problem is not None:  # before numpy tries (and fails some other way)
            raise GeValueError(f"node {node.name} ({op.type}): {problem}")
    out_groups = output_groups(op, node)
    ctx = ExecContext(
        op,
        inputs,
        node_attrs(op, node),
        outputs=outputs,
        subgraphs=_subgraphs_of(node),
        run_subgraph=_run_subgraph,
        output_counts=[len(g) for g in out_groups],
        node=node.name,
    )
    results = run_reference(op, ctx, node.name)
    port = 0
    for spec, result, group in zip(op.outputs, results, out_groups, strict=True):
        items: list[Any] = list(result) if spec.dynamic else [result]
        if len(items) != len(group):
            raise GeError(
                f"{op.type} reference returned {len(items)} values for output "
                f"'{spec.name}' ({len(group)} ports)"
            )
        for item in items:
            env[(id(node), port)] = np.asarray(item)
            port += 1


def _run(graph: Graph, feeds: Sequence[np.ndarray], offset: int) -> list[np.ndarray]:
    order, cyclic = topological_order(graph)
    if cyclic:
        raise GraphError(describe_cycle(graph, cyclic))
    env: Env = {}
    for node in order:
        _run_node(node, env, feeds, offset)
    return [env[(id(node), port)] for node, port in graph_outputs(graph)]


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
            _run_node(node, env, feeds, offset)
    return [env[(id(node), port)] for node, port in targets]


def _run_subgraph(graph: Graph, feeds: Sequence[np.ndarray], offset: int) -> list[np.ndarray]:
    return _run(graph, [np.asarray(f) for f in feeds], offset)


def eval_graph(graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run ``graph`` on ``inputs`` (``inputs[i]`` feeds the Data node with ``index`` i; numpy
    arrays, scalars, lists or ``ge.graph.Tensor``) and return its outputs as numpy arrays."""
    if not isinstance(graph, Graph):
        raise GeTypeError(f"graph: expected a ge.graph.Graph, got {type(graph).__name__}")
    return _run(graph, [_as_array(v) for v in inputs], 0)
