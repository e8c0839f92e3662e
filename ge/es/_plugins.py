"""``ge.es`` plugin modules: ``ge.es.math``, ``nn``, ``array``, ``control``, ``all``, ``custom``.

Each module serves the generated builder function of every registered op of its group (``all``
serves every op; ``custom`` the ops registered at run time, e.g. by ``ge.custom_op``), looked up
in the registry on first access, so an op registered later appears at once:
``from ge.es.custom import MyOp`` works right after ``MyOp`` is registered. Third-party plugins
declared under the entry-point group ``ge.es.plugins`` (as GE-PY's generated wheels do) are
loaded by ``list_plugins``/``get_plugin``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ge.es._generator import make_op_function
from ge.ops.registry import find_op, registry
from ge.ops.schema import OpDef

__all__ = ["BUILTIN_PLUGINS", "get_plugin", "list_plugins", "module_hooks", "op_function"]

BUILTIN_PLUGINS = ("all", "array", "control", "custom", "math", "nn")
_FUNCTIONS: dict[int, tuple[OpDef, Callable[..., Any]]] = {}
_EXTERNAL: dict[str, ModuleType] = {}


def _serves(group: str, op: OpDef) -> bool:
    if group == "all":
        return True
    if group == "custom":
        return op.source != "ge"
    return op.group == group and op.source == "ge"


def op_function(op: OpDef) -> Callable[..., Any]:
    """The (cached) generated function of ``op``."""
    cached = _FUNCTIONS.get(id(op))
    if cached is None or cached[0] is not op:
        cached = (op, make_op_function(op))
        _FUNCTIONS[id(op)] = cached
    return cached[1]


def module_hooks(group: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the plugin module of ``group``."""

    def __getattr__(name: str) -> Any:  # noqa: N807
        op = find_op(name)
        if op is None or not _serves(group, op):
            raise AttributeError(f"module 'ge.es.{group}' has no op {name!r}")
        return op_function(op)

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(op.type for op in registry() if _serves(group, op))

    return __getattr__, __dir__


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points  # noqa: PLC0415  (only when asked)

    return {ep.name: ep for ep in entry_points(group="ge.es.plugins")}


def list_plugins() -> list[str]:
    """Names of the ``ge.es`` plugin modules: the built-in ones and installed entry points."""
    return sorted({*BUILTIN_PLUGINS, *_entry_points()})


def get_plugin(name: str) -> ModuleType | None:
    """The plugin module ``ge.es.<name>``, or ``None`` if there is no such plugin."""
    if name in BUILTIN_PLUGINS:
        return importlib.import_module(f"ge.es.{name}")
    if name in _EXTERNAL:
        return _EXTERNAL[name]
    ep = _entry_points().get(name)
    if ep is None:
        return None
    loaded = ep.load()
    module = loaded() if callable(loaded) and not isinstance(loaded, ModuleType) else loaded
    _EXTERNAL[name] = module
    sys.modules[f"ge.es.{name}"] = module
    setattr(sys.modules["ge.es"], name, module)
    return module  # type: ignore[no-any-return]
