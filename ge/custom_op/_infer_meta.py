"""A Python prototype's ``infer_meta`` as a ``ge.ops`` infer rule.

The rule hands the function ``ge.runtime.TensorDesc``s (``None`` for an absent optional input,
a list for a dynamic one) and the attributes as keyword arguments, checks what it returns
against the prototype's outputs (GE_REFERENCE.md §7.2: one ``TensorDesc``, a list for a single
dynamic output, or a list/tuple with one entry per output) and gives ``ge.graph.TensorDesc``s
back. It runs wherever ge infers: when the builder records the node (so a bad shape is reported
at the user's line), in ``GeUtils.infer_shape`` and when a graph with ``-1`` dims meets real
input shapes. Anything the function raises becomes an ``InferError`` (a ``ValueError``) naming
the function, which the inference driver prefixes with the call and the user's ``file:line``.

Decision (ours): every inference writes shape *and* data type. GE's runtime (RT2) updates only
shapes when it re-infers; here a recorded graph is re-inferred as a whole, and a data type that
changed with the shapes is reported by ``Graph.verify`` rather than silently kept.
Attribute values arrive as plain Python values of their kind (lists as lists, ``DataType``
members); a ``Tensor`` attribute arrives as the ``ge.graph.Tensor`` stored on the node, since
``ge.runtime.Tensor`` views of device memory exist only inside execute callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ge.error import InferError
from ge.graph.tensor_desc import TensorDesc as GraphDesc
from ge.graph.types import Format
from ge.ops.schema import InferContext, PortKind
from ge.runtime.types import TensorDesc

if TYPE_CHECKING:
    from ge.custom_op.proto import OpProtoDescriptor

__all__ = ["make_infer"]


def _runtime_desc(desc: GraphDesc) -> TensorDesc:
    return TensorDesc(list(desc._shape), desc._data_type)


def _runtime_input(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_runtime_desc(d) for d in value]
    return _runtime_desc(value)


def _graph_desc(value: Any, what: str) -> GraphDesc:
    if not isinstance(value, TensorDesc):
        hint = "; build it with ge.runtime.TensorDesc" if isinstance(value, GraphDesc) else ""
        raise InferError(
            f"{what} must be a ge.runtime.TensorDesc, got {type(value).__module__}."
            f"{type(value).__qualname__}{hint}"
        )
    storage = value.shape.storage_shape.dims
    origin = value.shape.origin_shape.dims
    desc = GraphDesc(storage, Format.FORMAT_ND, value.data_type)
    if origin != storage:
        desc.set_origin_shape(origin)
    return desc


def _entries(desc: OpProtoDescriptor, result: Any, where: str) -> list[Any]:
    """One entry per IR output from what ``infer_meta`` returned."""
    outputs = desc.outputs
    if not outputs:
        if result is None or (isinstance(result, (list, tuple)) and not result):
            return []
        raise InferError(f"{where} declares no outputs, so it must return None, got {result!r}")
    if len(outputs) == 1:
        if isinstance(result, (TensorDesc, GraphDesc)):
            return [result]
        if outputs[0].kind is PortKind.DYNAMIC and isinstance(result, (list, tuple)):
            nested = len(result) == 1 and isinstance(result[0], (list, tuple))
            return [list(result[0])] if nested else [list(result)]
    if not isinstance(result, (list, tuple)):
        raise InferError(
            f"{where} must return a ge.runtime.TensorDesc or a list/tuple with one entry per "
            f"output {[o.name for o in outputs]}, got {type(result).__name__}"
        )
    if len(result) != len(outputs):
        raise InferError(
            f"{where} returned {len(result)} entries for {len(outputs)} outputs "
            f"{[o.name for o in outputs]}"
        )
    return list(result)


def _outputs(desc: OpProtoDescriptor, result: Any, counts: Sequence[int], where: str) -> list[Any]:
    converted: list[Any] = []
    for spec, entry, count in zip(desc.outputs, _entries(desc, result, where), counts, strict=True):
        what = f"{where}: output '{spec.name}'"
        if spec.kind is PortKind.DYNAMIC:
            if not isinstance(entry, (list, tuple)):
                raise InferError(f"{what} is dynamic: return a list of {count} TensorDescs")
            if len(entry) != count:
                raise InferError(
                    f"{what} is dynamic with {count} instances, but infer_meta returned "
                    f"{len(entry)} TensorDescs"
                )
            converted.append([_graph_desc(d, f"{what}[{k}]") for k, d in enumerate(entry)])
        else:
            converted.append(_graph_desc(entry, what))
    return converted


def make_infer(desc: OpProtoDescriptor) -> Callable[[InferContext], list[Any]]:
    """The ``OpDef.infer`` rule calling ``desc.infer_meta``."""
    fn = desc.infer_meta
    where = f"infer_meta {desc.module_name}.{desc.func_name}"
    names = [a.name for a in desc.attrs]

    def infer(ctx: InferContext) -> list[Any]:
        try:
            args = [_runtime_input(v) for v in ctx.inputs]
        except (TypeError, ValueError) as e:  # e.g. more dims than ge.runtime allows
            raise InferError(
                f"{where}: the inputs cannot be given as ge.runtime.TensorDescs: {e}"
            ) from None
        kwargs = {name: ctx.attrs[name] for name in names}
        try:
            result = fn(*args, **kwargs)
        except InferError:
            raise
        except Exception as e:
            raise InferError(f"{where} raised {type(e).__name__}: {e}") from e
        return _outputs(desc, result, ctx.output_counts, where)

    infer.__qualname__ = f"infer_meta[{desc.op_type}]"
    return infer
