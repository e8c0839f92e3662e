"""``ge.runtime``: the device runtime — memory, streams, kernel binaries and launches.

The device is the CPU: device memory has real integer addresses that compiled kernels use
directly, a ``Stream`` is an ordered asynchronous queue of work, and a kernel is machine code
compiled from a Python function by Numba, carried as a standalone binary that loads without the
Python that produced it. Task plans (``plan``) and their executor (``executor``) run compiled
graphs; ``load_model`` loads and runs offline models (``.om`` files, format in ``om``) with
neither the compiler, the op registry nor Numba imported.

    >>> from ge import runtime
    >>> block = runtime.malloc(1024); runtime.live_bytes() >= 1024
    True
    >>> runtime.free(block)
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ge.allocator import MemBlock
    from ge.runtime.kernel import (
        DeviceRange,
        KernelBinary,
        KernelFunction,
        compile_kernel,
        kernel_array,
        launch_kernel,
        load_kernel_binary,
    )
    from ge.runtime.memory import (
        device_view,
        free,
        live_allocations,
        live_bytes,
        malloc,
        memcpy_d2d,
        memcpy_d2h,
        memcpy_h2d,
    )
    from ge.runtime.model import Model, ModelFormatError, ModelGraph, load_model
    from ge.runtime.stream import Event, Stream, resolve_stream
    from ge.runtime.types import (
        ExpandDimsType,
        Shape,
        StorageFormat,
        StorageShape,
        Tensor,
        TensorDesc,
        TensorPlacement,
    )

# Each name is imported from its module on first use, so that loading and running a model
# (``load_model``) imports neither the IR (``ge.graph``, which the runtime tensor views use)
# nor anything else a model does not need: a fresh process that only runs models starts faster.
_WHERE = {
    "MemBlock": "ge.allocator",
    **dict.fromkeys(
        (
            "DeviceRange",
            "KernelBinary",
            "KernelFunction",
            "compile_kernel",
            "kernel_array",
            "launch_kernel",
            "load_kernel_binary",
        ),
        "ge.runtime.kernel",
    ),
    **dict.fromkeys(
        (
            "device_view",
            "free",
            "live_allocations",
            "live_bytes",
            "malloc",
            "memcpy_d2d",
            "memcpy_d2h",
            "memcpy_h2d",
        ),
        "ge.runtime.memory",
    ),
    **dict.fromkeys(("Model", "ModelFormatError", "ModelGraph", "load_model"), "ge.runtime.model"),
    **dict.fromkeys(("Event", "Stream", "resolve_stream"), "ge.runtime.stream"),
    **dict.fromkeys(
        (
            "ExpandDimsType",
            "Shape",
            "StorageFormat",
            "StorageShape",
            "Tensor",
            "TensorDesc",
            "TensorPlacement",
        ),
        "ge.runtime.types",
    ),
}


# submodules, imported on first use as attributes too (``ge.runtime.memory.contains``)
_SUBMODULES = frozenset(
    {"executor", "format", "kernel", "memory", "model", "om", "plan", "shape", "stream", "types"}
)


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        return importlib.import_module(f"ge.runtime.{name}")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ge.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "DeviceRange",
    "Event",
    "ExpandDimsType",
    "KernelBinary",
    "KernelFunction",
    "MemBlock",
    "Model",
    "ModelFormatError",
    "ModelGraph",
    "Shape",
    "StorageFormat",
    "StorageShape",
    "Stream",
    "Tensor",
    "TensorDesc",
    "TensorPlacement",
    "compile_kernel",
    "device_view",
    "free",
    "kernel_array",
    "launch_kernel",
    "live_allocations",
    "live_bytes",
    "load_kernel_binary",
    "load_model",
    "malloc",
    "memcpy_d2d",
    "memcpy_d2h",
    "memcpy_h2d",
    "resolve_stream",
]
