"""``ge.custom_op``: operators written in Python — prototypes, implementations, discovery.

Where it sits: a prototype registered here is an op of the one ``ge.ops`` registry, built by
``ge.es.custom.<OpType>``, inferred by its Python ``infer_meta`` at build time and whenever
shapes become known, and compiled like any other node. This package owns

* ``register_op`` (``proto``): the annotated infer-meta function is the prototype;
* ``register_op_impl`` (``registry``): the implementation class, its capabilities
  (``execute`` / ``compile`` / ``declare_launch_args``) and their IR-bound signatures, and the
  registry queries;
* ``bootstrap``: ``ASCEND_CUSTOM_OPP_PATH`` discovery, all or nothing per batch;
* ``context``: the callback context accessors.

A node whose implementation has ``execute`` runs it on every run of its task plan
(``Session.run_graph``, ``run_graph_with_stream_async``, ``@ge.jit``) with an
``EagerOpExecutionContext`` (``_eager``, ``execution_context``). A node whose implementation
has ``declare_launch_args`` (preferred when it has both) declares its kernel launches once,
when the plan is built (``AnnotatedArgsContext``, ``AnnotatedKernelArgs``,
``AnnotatedKernelLaunchInfo``; ``annotated_args``): they run as kernel tasks of the plan with
their addresses refreshed per run, and no Python runs per execution.

Called on numpy arrays or ``ge.graph.Tensor``s outside any graph, a custom op's ``ge.es``
function runs it at once through a cached one-node compiled graph (``eager_call``); the
reference interpreter (``ge.ops.eval_graph``) runs a custom-op node the same way, through the
``OpDef.reference`` the registration gives it (``_reference``), and constant folding never
runs one (``OpDef.foldable`` is false).
``opcheck`` tests an op against its registration (``infer_meta`` against what it makes, its
``execute`` and ``declare_launch_args`` against each other, ``mutates_args``), as
``torch.library.opcheck`` does.

Names load lazily on first use; an unknown one raises ``AttributeError`` "module
'ge.custom_op' has no attribute '<name>'".

    >>> from ge.runtime import TensorDesc
    >>> from ge.custom_op import register_op
    >>> @register_op(op_type="DocIdentityCustom")
    ... def identity(x: TensorDesc) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> from ge.es import GraphBuilder
    >>> from ge.es.custom import DocIdentityCustom
    >>> b = GraphBuilder("g")
    >>> DocIdentityCustom(b.create_input(0, shape=[2, 3])).shape
    (2, 3)
    >>> from ge.custom_op import proto; proto._unregister("DocIdentityCustom")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ge.ops.registry import registry as _ops_registry

if TYPE_CHECKING:
    from ge.custom_op._opcheck import OpCheckError, opcheck
    from ge.custom_op.annotated_args import (
        AnnotatedArgsContext,
        AnnotatedKernelArgs,
        AnnotatedKernelLaunchInfo,
        WorkspaceAddr,
    )
    from ge.custom_op.base import EagerExecuteOp
    from ge.custom_op.compile_context import CompilePlatformInfo, OpCompileContext
    from ge.custom_op.context import (
        get_compile_ctx,
        get_compile_platform_info,
        get_declare_launch_args_ctx,
        get_execute_ctx,
    )
    from ge.custom_op.execution_context import EagerOpExecutionContext, RuntimeAttrs
    from ge.custom_op.proto import OpProtoDescriptor, register_op
    from ge.custom_op.registry import (
        OpImplDescriptor,
        clear_registered_op_impls,
        get_registered_op_impl_by_descriptor_key,
        get_registered_op_impl_dicts,
        get_registered_op_impls,
        register_op_impl,
    )

__all__ = [
    "AnnotatedArgsContext",
    "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo",
    "CompilePlatformInfo",
    "EagerExecuteOp",
    "EagerOpExecutionContext",
    "OpCheckError",
    "OpCompileContext",
    "OpImplDescriptor",
    "OpProtoDescriptor",
    "RuntimeAttrs",
    "WorkspaceAddr",
    "clear_registered_op_impls",
    "get_compile_ctx",
    "get_compile_platform_info",
    "get_declare_launch_args_ctx",
    "get_execute_ctx",
    "get_registered_op_impl_by_descriptor_key",
    "get_registered_op_impl_dicts",
    "get_registered_op_impls",
    "opcheck",
    "register_op",
    "register_op_impl",
]

_HOME = {
    "AnnotatedArgsContext": "annotated_args",
    "AnnotatedKernelArgs": "annotated_args",
    "AnnotatedKernelLaunchInfo": "annotated_args",
    "WorkspaceAddr": "annotated_args",
    "CompilePlatformInfo": "compile_context",
    "OpCompileContext": "compile_context",
    "EagerExecuteOp": "base",
    "EagerOpExecutionContext": "execution_context",
    "RuntimeAttrs": "execution_context",
    "OpCheckError": "_opcheck",
    "OpImplDescriptor": "registry",
    "OpProtoDescriptor": "proto",
    "clear_registered_op_impls": "registry",
    "get_compile_ctx": "context",
    "get_compile_platform_info": "context",
    "get_declare_launch_args_ctx": "context",
    "get_execute_ctx": "context",
    "get_registered_op_impl_by_descriptor_key": "registry",
    "get_registered_op_impl_dicts": "registry",
    "get_registered_op_impls": "registry",
    "opcheck": "_opcheck",
    "register_op": "proto",
    "register_op_impl": "registry",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'ge.custom_op' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"ge.custom_op.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _resolve_unknown_op(op_type: str) -> bool:
    """Registry resolver: discover newly listed plugins when an unknown op type is looked up
    (``bootstrap`` is imported only once the variable names something)."""
    import os  # noqa: PLC0415

    if not os.environ.get("ASCEND_CUSTOM_OPP_PATH"):
        return False
    from ge.custom_op.bootstrap import resolve_unknown_op  # noqa: PLC0415

    return resolve_unknown_op(op_type)


_ops_registry().add_resolver(_resolve_unknown_op)
