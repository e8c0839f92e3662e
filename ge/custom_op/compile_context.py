"""What a ``compile`` callback borrows: ``OpCompileContext`` (``get_compile_ctx()``) and
``CompilePlatformInfo`` (``get_compile_platform_info()``), GE_REFERENCE.md §7.4.

``compile(self, <inputs…>, <outputs…>, *, <attrs…>) -> None`` runs once per task plan built
for the graph (once per compile for static shapes; with ``-1`` dims once per distinct set of
input shapes, since that is when shapes become known), before ``declare_launch_args`` and
before any run, on the implementation instance the plan's other callbacks use. Its Tensors
carry shapes, formats and data types; ``addr`` is 0 (no memory exists at compile time). Both
objects expire when the callback returns ("Borrowed native object has expired").

Decisions (ours) — the CPU device as a platform:

* ``get_option(key)`` reads the options the graph compiles with: ``GeApi.ge_initialize``'s,
  then the ``Session``'s, then ``add_graph``'s, a later one winning (a ``@ge.jit`` function
  sees the global options). A key set nowhere raises ``RuntimeError`` "Failed to get option
  '<key>': it is set in none of the global, session or graph options".
* ``get_soc_version()`` is ``"GeCpu"``; ``get_ai_core_num()`` and ``get_core_num(t)`` for
  every core type (``None``, ``"AiCore"``, ``"VectorCore"``, ``"CubeCore"``) are the number of
  CPU cores kernel blocks run on in parallel (``os.cpu_count()``): a CPU core does every kind
  of work. Another core type raises ``ValueError``.
* ``get_platform_resource(group, key)`` / ``get_platform_resource_group(group)``: groups
  ``"version"`` (``SoC_version`` = ``"GeCpu"``, ``Short_SoC_version`` = ``"GeCpu"``,
  ``NpuArch`` = the LLVM name of this CPU kernels are compiled for, e.g. ``"skylake-avx512"``
  — what seed 004 passes to its kernel compiler, with no ``"dav-"`` prefix), ``"SoCInfo"``
  (``ai_core_cnt``, ``vector_core_cnt``, ``cube_core_cnt``: the core count as text) and
  ``"CPU"`` (``name``, ``features``: the LLVM feature string, ``machine``). An unknown group or
  key raises ``RuntimeError`` "Failed to get platform resource …".
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Mapping

from ge.custom_op._borrowed import Borrowed as _Borrowed
from ge.error import GeError, GeValueError

__all__ = ["CompilePlatformInfo", "OpCompileContext"]

SOC_VERSION = "GeCpu"
_CORE_TYPES = (None, "AiCore", "VectorCore", "CubeCore")


class OpCompileContext(_Borrowed):
    """The context of one ``compile`` callback: the options the graph compiles with."""

    __slots__ = ("_options",)

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__()
        self._options = dict(options)

    def get_option(self, option_key: str) -> str:
        """The value of ``option_key`` (graph over session over global options)."""
        self._check()
        if not isinstance(option_key, str):
            raise GeError(f"option_key must be a str, got {type(option_key).__name__}")
        value = self._options.get(option_key)
        if value is None:
            raise GeError(
                f"Failed to get option '{option_key}': it is set in none of the global, "
                f"session or graph options"
            )
        return value


def _cores() -> int:
    return os.cpu_count() or 1


@functools.cache
def _cpu() -> tuple[str, str]:
    from ge.runtime.kernel import _llvm, target_features  # noqa: PLC0415

    return str(_llvm().get_host_cpu_name()), target_features()


def platform_resources() -> dict[str, dict[str, str]]:
    """Every group of platform resources of this CPU (see the module docstring)."""
    name, features = _cpu()
    cores = str(_cores())
    return {
        "version": {"SoC_version": SOC_VERSION, "Short_SoC_version": SOC_VERSION, "NpuArch": name},
        "SoCInfo": {"ai_core_cnt": cores, "vector_core_cnt": cores, "cube_core_cnt": cores},
        "CPU": {"name": name, "features": features, "machine": platform.machine()},
    }


class CompilePlatformInfo(_Borrowed):
    """The platform a ``compile`` callback compiles for: this CPU."""

    __slots__ = ()

    def get_soc_version(self) -> str:
        self._check()
        return SOC_VERSION

    def get_ai_core_num(self) -> int:
        self._check()
        return _cores()

    def get_core_num(self, core_type: str | None = None) -> int:
        self._check()
        if core_type not in _CORE_TYPES:
            raise GeValueError(
                f"core_type must be None, 'AiCore', 'VectorCore' or 'CubeCore', got {core_type!r}"
            )
        return _cores()

    def get_platform_resource(self, group: str, key: str) -> str:
        self._check()
        values = platform_resources().get(group)
        if values is None or key not in values:
            raise GeError(
                f"Failed to get platform resource [{group}] {key}: groups and keys are "
                f"{ {g: sorted(v) for g, v in platform_resources().items()} }"
            )
        return values[key]

    def get_platform_resource_group(self, group: str) -> dict[str, str]:
        self._check()
        values = platform_resources().get(group)
        if values is None:
            raise GeError(
                f"Failed to get platform resource group [{group}]: groups are "
                f"{sorted(platform_resources())}"
            )
        return dict(values)
