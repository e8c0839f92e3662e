"""``JitDebugPrint``: a ``ge.jit.debug_print`` traced inside a ``ge.jit.cond`` /
``while_loop`` / ``fori_loop`` body, as a node of the body's graph.

GE has no print op (OPS_REFERENCE.md), so this one is ours, named for its one producer. Its
``x`` inputs are the traced values printed; it has no outputs. Running it hands the values,
as numpy arrays, to a *sink*: a Python function of this process (``ge.jit._debug`` makes
one per traced print; it formats ``fmt`` with them and the print's constants and prints),
found by the node's ``print_id`` in this module's table. The reference interpreter runs the
node through its ``reference``; a compiled plan runs it as the ``debug_print`` host task
(``ge.runtime.host_ops.HOST_OPS``, made by ``ge.compiler.kernels.debug``), on the same sink, so
both print the same text.

Decisions (ours):

- The op is impure (``pure=False``) and not ``foldable``: dead-node elimination, common
  subexpressions and constant folding keep every node, as they keep control flow.
- ``fmt`` is an attribute for dumps and ``.trace()``; the pytree structure and the constants
  live with the sink (they are Python objects: dataclasses, dicts of arrays), so the node
  runs only in the process that traced it. A ``print_id`` this process does not know (a graph
  read back from a file) raises ``GeError`` naming the node when it runs, and an offline model
  refuses the node when it is built (its host task names a sink of this process).
- Sinks are kept for the life of the process (one small closure per traced print).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.error import GeError
from ge.graph.types import AttrValueType
from ge.ops._define import attr, dyn
from ge.ops.registry import register_op_def
from ge.ops.schema import ExecContext, InferContext, OpDef

__all__ = ["PRINT_OP", "Sink", "make_print", "register_sink", "sink_of"]

PRINT_OP = "JitDebugPrint"

Sink = Callable[[Sequence[np.ndarray]], None]

_SINKS: dict[int, Sink] = {}
_IDS = itertools.count(1)
_LOCK = threading.Lock()


def register_sink(sink: Sink) -> int:
    """A new ``print_id`` for ``sink``."""
    with _LOCK:
        print_id = next(_IDS)
        _SINKS[print_id] = sink
    return print_id


def sink_of(print_id: int, node: str) -> Sink:
    """The sink of ``print_id``; ``GeError`` naming ``node`` if this process has none."""
    sink = _SINKS.get(print_id)
    if sink is None:
        raise GeError(
            f"node {node} ({PRINT_OP}): print_id {print_id} is not a debug_print traced in this "
            f"process; a {PRINT_OP} node runs only in the process whose ge.jit trace made it"
        )
    return sink


def make_print(params: dict[str, Any]) -> Sink:
    """The function of a ``debug_print`` host task (``ge.runtime.host_ops.HOST_OPS``, bound by
    name): the sink of its ``print_id``; ``GeError`` naming its ``node`` if this process has
    none."""
    return sink_of(int(params["print_id"]), str(params["node"]))


def _infer(ctx: InferContext) -> list[Any]:
    return []


def _reference(ctx: ExecContext) -> list[Any]:
    sink = sink_of(int(ctx.attrs["print_id"]), ctx.node or PRINT_OP)
    sink([np.asarray(v) for v in ctx.inputs[0]])
    return []


register_op_def(
    OpDef(
        PRINT_OP,
        inputs=(dyn("x"),),
        attrs=(attr("fmt", AttrValueType.VT_STRING), attr("print_id", AttrValueType.VT_INT)),
        infer=_infer,
        reference=_reference,
        group="jit",
        pure=False,
        foldable=False,
        doc="Print x (ge.jit.debug_print inside a ge.jit.cond / while_loop / fori_loop body).",
    )
)
