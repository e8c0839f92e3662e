"""Numba side of kernel compilation (imported only when a kernel is compiled).

Registers the compiled form of ``kernel_array`` (the range checked against live device memory
by a call of ``ge_check_view``, then the address turned into a pointer and wrapped as a 1-D
array without copying; a refused range raises, so the kernel returns a nonzero status at once)
and turns a Python kernel into standalone LLVM IR: Numba's
internal function, a plain C entry point ``name(block_idx, block_dim, args)``, and a
``name__ge_status`` twin that also returns Numba's status code so ge can report kernel errors.
Everything else Numba generated (its Python-facing wrapper, reference counting helpers) is
dropped, and the result must not depend on Numba's or Python's runtime symbols.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import llvmlite.binding as llvm
import numba
from llvmlite import ir as llvm_ir
from numba import types as nt
from numba.core import cgutils, errors
from numba.core.compiler_lock import global_compiler_lock
from numba.core.imputils import impl_ret_untracked, lower_builtin
from numba.core.registry import cpu_target
from numba.extending import intrinsic, type_callable
from numba.np.arrayobj import make_array, populate_array

from ge._device._guard import CHECK_SYMBOL
from ge.error import GeError
from ge.runtime.kernel import kernel_array, tuning_features

__all__ = ["kernel_ir"]

_SIGNATURE = nt.void(nt.int64, nt.int64, nt.CPointer(nt.int64))
_FORBIDDEN = ("numba_", "NRT_", "Py", "_Py", "_ZN08NumbaEnv")


@intrinsic  # type: ignore[untyped-decorator]
def _address_as_pointer(typingctx: Any, addr: Any, dtype: Any) -> Any:
    element = dtype.dtype if isinstance(dtype, nt.NumberClass) else dtype
    signature = nt.CPointer(element)(addr, dtype)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


def _view_is_live(context: Any, builder: Any, at: Any, count: Any, itemsize: int) -> Any:
    """An i1: whether ``[at, at + count * itemsize)`` is live device memory. At once if it
    lies in the range this call site was last answered with (two compares, no call), else
    one lookup by ``ge_check_view``, which also hands back the range that holds it."""
    i64 = llvm_ir.IntType(64)
    check = cgutils.get_or_insert_function(
        builder.module,
        llvm_ir.FunctionType(
            llvm_ir.IntType(32), [i64, i64, i64, i64.as_pointer(), i64.as_pointer()]
        ),
        CHECK_SYMBOL,
    )
    # the call site's cache, in the kernel's own frame (this lowering runs inline in the
    # kernel): zeroed once per kernel call, in its entry block, where alloca_once stores
    lo = cgutils.alloca_once(builder, i64)
    hi = cgutils.alloca_once(builder, i64)
    size = i64(itemsize)
    product = builder.smul_with_overflow(count, size)
    end = builder.add(at, builder.extract_value(product, 0))
    sound = builder.and_(
        builder.not_(builder.extract_value(product, 1)),
        builder.and_(
            builder.icmp_signed(">=", count, i64(0)), builder.icmp_unsigned(">=", end, at)
        ),
    )
    cached = builder.and_(
        sound,
        builder.and_(
            builder.icmp_unsigned(">=", at, builder.load(lo)),
            builder.icmp_unsigned("<=", end, builder.load(hi)),
        ),
    )
    result = cgutils.alloca_once(builder, llvm_ir.IntType(1))
    builder.store(cached, result)
    with builder.if_then(builder.not_(cached), likely=False):
        answer = builder.call(check, [at, count, size, lo, hi])
        builder.store(builder.icmp_unsigned("!=", answer, answer.type(0)), result)
    return builder.load(result)


@type_callable(kernel_array)  # type: ignore[untyped-decorator]
def _type_kernel_array(context: Any) -> Any:
    def typer(addr: Any, count: Any, dtype: Any) -> Any:
        if not isinstance(dtype, nt.NumberClass):
            raise errors.TypingError(
                f"kernel_array: dtype must be a numpy scalar type such as np.float32, got {dtype}"
            )
        if isinstance(addr, nt.Integer) and isinstance(count, nt.Integer):
            return nt.Array(dtype.dtype, 1, "C")
        return None

    return typer


@lower_builtin(kernel_array, nt.Integer, nt.Integer, nt.NumberClass)  # type: ignore[untyped-decorator]
def _lower_kernel_array(context: Any, builder: Any, sig: Any, args: Any) -> Any:
    """The view, built in the kernel's own code (no call): the range check, then a 1-D
    C-contiguous array over the address, with no owner (device memory is not Numba's)."""
    addr, count = (
        context.cast(builder, value, ty, nt.int64)
        for value, ty in zip(args[:2], sig.args[:2], strict=True)
    )
    array_type = sig.return_type
    itemsize = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
    live = _view_is_live(context, builder, addr, count, itemsize)
    with builder.if_then(builder.not_(live), likely=False):
        # the launcher reads which view it was from the guard's records
        context.call_conv.return_user_exc(builder, IndexError, ())
    view = make_array(array_type)(context, builder)
    data = builder.inttoptr(addr, context.get_data_type(array_type.dtype).as_pointer())
    populate_array(
        view,
        data=data,
        shape=[count],
        strides=[context.get_constant(nt.intp, itemsize)],
        itemsize=context.get_constant(nt.intp, itemsize),
        meminfo=None,
    )
    return impl_ret_untracked(context, builder, array_type, view._getvalue())


def _entry_points(inner: str, name: str, suffix: str) -> str:
    return f"""
declare i32 @"{inner}"(ptr, ptr, i64, i64, ptr)

define i32 @"{name}{suffix}"(i64 %block_idx, i64 %block_dim, ptr %args) {{
  %ret = alloca [16 x i8], align 16
  %exc = alloca ptr, align 8
  store ptr null, ptr %exc, align 8
  %status = call i32 @"{inner}"(ptr %ret, ptr %exc, i64 %block_idx, i64 %block_dim, ptr %args)
  ret i32 %status
}}

define void @"{name}"(i64 %block_idx, i64 %block_dim, ptr %args) {{
  %status = call i32 @"{name}{suffix}"(i64 %block_idx, i64 %block_dim, ptr %args)
  ret void
}}
"""


def _strip(module: Any, keep: set[str]) -> None:
    for function in module.functions:
        if not function.is_declaration and function.name not in keep:
            function.linkage = "internal"
    machine = llvm.Target.from_default_triple().create_target_machine()
    tuning = llvm.create_pipeline_tuning_options(speed_level=0)
    builder = llvm.create_pass_builder(machine, tuning)
    manager = llvm.create_new_module_pass_manager()
    manager.add_global_dead_code_eliminate_pass()
    manager.add_strip_dead_prototype_pass()
    manager.run(module, builder)


def _external_symbols(module: Any) -> list[str]:
    names = [f.name for f in module.functions if f.is_declaration]
    names += [g.name for g in module.global_variables if g.is_declaration]
    return [n for n in names if not n.startswith("llvm.")]


@contextlib.contextmanager
def _tuned_codegen() -> Iterator[None]:
    """Numba optimises (and so vectorises) with its codegen's target machine, made for the
    host's features alone; while this is active, and only for the kernel compiled in it, that
    machine also has ``tuning_features()``. Numba's compiler lock keeps other threads' Numba
    compiles from seeing it."""
    tuning = tuning_features()
    if not tuning:
        yield
        return
    codegen = cpu_target.target_context.codegen()
    with global_compiler_lock:
        host = codegen._tm
        codegen._tm = _tuned_machine(codegen._tm_features, tuning)
        try:
            yield
        finally:
            codegen._tm = host


@functools.cache
def _tuned_machine(features: str, tuning: str) -> Any:
    # the options Numba's JIT codegen makes its own machine with, plus the tuning
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=f"{features},{tuning}",
        opt=3,
        reloc="static",
        codemodel="jitdefault",
        jit=True,
    )


def kernel_ir(
    py_kernel: Callable[..., None], name: str, suffix: str, boundscheck: bool = False
) -> tuple[str, str, str]:
    """``(llvm_ir, cpu_name, cpu_features)`` of ``py_kernel`` exported as ``name``, with
    Numba's index bounds checks compiled in if ``boundscheck``."""
    try:
        with _tuned_codegen():
            dispatcher = numba.njit(
                _SIGNATURE, error_model="numpy", boundscheck=boundscheck, nogil=True
            )(py_kernel)
    except errors.NumbaError as e:
        raise GeError(f"kernel {name!r} does not compile with Numba: {e}") from None
    result: Any = dispatcher.overloads[_SIGNATURE.args]
    inner = result.fndesc.llvm_func_name
    module = llvm.parse_assembly(result.library.get_llvm_str())
    entry = llvm.parse_assembly(_entry_points(inner, name, suffix))
    entry.triple, entry.data_layout = module.triple, module.data_layout
    module.link_in(entry)
    _strip(module, {name, name + suffix})
    needed = [s for s in _external_symbols(module) if s.startswith(_FORBIDDEN)]
    if needed:
        raise GeError(
            f"kernel {name!r} needs Numba/Python runtime support ({', '.join(needed)}) "
            f"that a standalone binary cannot carry; avoid allocating arrays, Python "
            f"objects and exceptions with messages inside kernels"
        )
    ir = str(module)
    if re.search(r"@\"?" + re.escape(name) + r"\"?\(", ir) is None:
        raise GeError(f"kernel {name!r}: entry point missing after linking")
    return ir, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
