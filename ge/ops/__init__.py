"""``ge.ops``: the operator registry, every op's rules, inference and the reference interpreter.

Importing this package registers the built-in GE ops (GE's names, inputs, outputs and
attributes, from OPS_REFERENCE.md). ``registry()`` lists them; ``register_op_def`` adds new ones
with the same power; ``infer_graph`` / ``infer_node`` run shape and dtype inference;
``eval_graph`` runs a graph on numpy references.

    >>> from ge.ops import get_op
    >>> [s.name for s in get_op("ConcatV2").inputs], get_op("ConcatV2").attrs[0].default
    (['x', 'concat_dim'], 1)
"""

from ge.ops import (  # noqa: F401  (register)
    checks,
    control,
    debug,
    elementwise,
    fused,
    indexing,
    io,
    linalg,
    nn,
    reduce,
    shape,
    sorting,
)
from ge.ops.construct import add_op_node
from ge.ops.infer import graph_output_descs, graph_outputs, infer_graph, infer_node
from ge.ops.interpreter import eval_graph
from ge.ops.registry import OpRegistry, find_op, get_op, list_ops, register_op_def, registry
from ge.ops.schema import (
    REQUIRED,
    AttrSpec,
    ExecContext,
    InferContext,
    OpDef,
    PortKind,
    SubgraphSpec,
    TensorSpec,
)

__all__ = [
    "REQUIRED",
    "AttrSpec",
    "ExecContext",
    "InferContext",
    "OpDef",
    "OpRegistry",
    "PortKind",
    "SubgraphSpec",
    "TensorSpec",
    "add_op_node",
    "eval_graph",
    "find_op",
    "get_op",
    "graph_output_descs",
    "graph_outputs",
    "infer_graph",
    "infer_node",
    "list_ops",
    "register_op_def",
    "registry",
]
