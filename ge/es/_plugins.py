"""``ge.es`` plugin modules: ``ge.es.math``, ``nn``, ``array``, ``control``, ``all``, ``custom``.

Each module serves the generated builder function of every registered op of its group (``all``
serves every op; ``custom`` the ops registered at run time, e.g. by ``ge.custom_op``), looked up
in the registry on first access, so an op registered later appears at once:
``from ge.es.custom import MyOp`` works right after ``MyOp`` is registered. Third-party plugins
declared under the entry-point group ``ge.es.plugins`` (as GE-PY's generated wheels do:
``'<name> = <package>:get_module'``) are loaded once, at ``import ge.es``, and are then
importable as ``ge.es.<name>``; a failing one prints ``[ERROR] [ge.es._plugin_loader] ...`` on
stdout and is absent (GE_ERRORS.md §3.6, §13.4).
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

__all__ = [
    "BUILTIN_PLUGINS",
    "get_plugin",
    "list_plugins",
    "load_all_plugins",
    "module_hooks",
    "op_function",
]

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


_GROUP = "ge.es.plugins"
_LOG = "[{level}] [ge.es._plugin_loader] {text}"


def _say(level: str, text: str) -> None:
    """GE-PY's plugin log line, on stdout (plugin failures are printed, never raised)."""
    print(_LOG.format(level=level, text=text), flush=True)


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points  # noqa: PLC0415  (only at load time)

    return list(entry_points(group=_GROUP))


def _as_module(name: str, loaded: Any, depth: int = 0) -> ModuleType:
    """What an entry point gave, as a module: a module; a ``str`` naming one; a callable
    returning one of these (GE_ERRORS.md §13.4)."""
    if isinstance(loaded, ModuleType):
        return loaded
    if isinstance(loaded, str):
        return importlib.import_module(loaded)
    if callable(loaded) and depth < 8:
        return _as_module(name, loaded(), depth + 1)
    raise TypeError(
        f"Plugin '{name}' returned unexpected type: {type(loaded)}. Expected ModuleType, str, "
        f"or callable returning module."
    )


def _register(name: str, module: ModuleType) -> None:
    """``ge.es.<name>``: in ``sys.modules`` unless that name is taken (``setdefault``, as
    GE-PY), as an attribute of ``ge.es`` and in its ``__all__``. Decision (ours): a plugin
    named like a built-in module (``math``, ``all``, ...) does not replace its attribute
    either, so ``ge.es.math`` and ``import ge.es.math`` never disagree."""
    package = sys.modules["ge.es"]
    if sys.modules.setdefault(f"ge.es.{name}", module) is module:
        setattr(package, name, module)
    names: list[str] = package.__dict__.setdefault("__all__", [])
    if name not in names:
        names.append(name)
    _EXTERNAL[name] = module


def _load_one(ep: Any) -> None:
    name, value = getattr(ep, "name", None), getattr(ep, "value", "?")
    if not name:
        _say("WARNING", f"Ignoring ES plugin entry point without name: {ep}")
        return
    try:
        module = _as_module(name, ep.load())
    except AttributeError as err:
        _say(
            "ERROR",
            f"Failed to load ES plugin '{name}': entry point '{value}' missing required "
            f"attribute. Ensure the plugin's __init__.py defines get_module(). Error: {err}",
        )
        return
    except ImportError as err:
        _say(
            "ERROR",
            f"Failed to import ES plugin '{name}': {err}. Check if all dependencies are installed.",
        )
        return
    except Exception as err:  # a plugin's own failure is printed, never raised (GE-PY)
        _say("ERROR", f"Unexpected error loading ES plugin '{name}' (entry point: {value}): {err}")
        return
    _register(name, module)
    _say("INFO", f"ES plugin '{name}' loaded: {module.__name__}")


def load_all_plugins() -> list[str]:
    """Load every entry point of the group ``ge.es.plugins`` (``import ge.es`` does this
    once, as GE-PY does); returns the names that loaded. A failing plugin prints one line
    and is absent; the entry point list itself failing to read prints one too."""
    try:
        eps = _entry_points()
    except Exception as err:  # a broken installed distribution must not break import ge.es
        _say("ERROR", f"Failed to read the entry points of {_GROUP}: {err}")
        return []
    for ep in eps:
        _load_one(ep)
    return sorted(_EXTERNAL)


def list_plugins() -> list[str]:
    """Names of the ``ge.es`` plugin modules: the built-in ones and the loaded entry points."""
    return sorted({*BUILTIN_PLUGINS, *_EXTERNAL})


def get_plugin(name: str) -> ModuleType | None:
    """The plugin module ``ge.es.<name>``, or ``None`` if no such plugin is loaded."""
    if name in BUILTIN_PLUGINS:
        return importlib.import_module(f"ge.es.{name}")
    return _EXTERNAL.get(name)
