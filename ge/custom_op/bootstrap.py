"""Discovery: load the Python custom ops named by ``ASCEND_CUSTOM_OPP_PATH``, all or nothing.

The variable is an ``os.pathsep`` list of ``.py`` files, plain directories (their ``*.py`` files
and packages, sorted by name, ``_``-names skipped) and packages (GE_ERRORS.md §10.6, §9.6; the
loader is ``ge._internal.plugin_loader``, modules are named ``_ge_py_custom_op_<stem>_<hash>``).
It is read

* by ``GeApi.ge_initialize``;
* whenever something looks up an op type that is not registered (building a node of it,
  ``ge.es.custom.<OpType>``, adding or verifying a graph that holds one): ``ge.custom_op``
  installs ``resolve_unknown_op`` as a ``ge.ops`` registry resolver, so paths added to the
  variable since the last load are discovered then;
* by ``load_custom_op_plugins()`` directly.

Each load takes only the entries not loaded before (an entry loads once per process) and runs
them as **one batch**: if any entry is missing, not a ``.py`` file, fails to import, raises, or
leaves an implementation whose op type has no IR, the batch's prototypes, ``ge.ops`` entries,
implementations and modules are all removed again, the registries are exactly as before, and
the error propagates (``FileNotFoundError``, ``ValueError``, ``ImportError``, the plugin's own
exception, ``RuntimeError`` "canonical IR not found …"). The entries are tried again at the next
load.

    >>> load_custom_op_plugins("")  # nothing to load
    []
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ge._internal.plugin_loader import forget_modules, load_paths, split_path_list
from ge.custom_op import proto, registry
from ge.custom_op._state import LOCK, discovering, set_discovering
from ge.ops.registry import registry as ops_registry

__all__ = [
    "ENV_NAME",
    "KIND",
    "MODULE_PREFIX",
    "load_custom_op_plugins",
    "loaded_paths",
    "resolve_unknown_op",
    "transaction",
]

ENV_NAME = "ASCEND_CUSTOM_OPP_PATH"
MODULE_PREFIX = "_ge_py_custom_op_"
KIND = "python custom op"

_LOADED: list[str] = []  # resolved entries loaded, in order


def loaded_paths() -> list[str]:
    """The resolved ``ASCEND_CUSTOM_OPP_PATH`` entries loaded so far, in load order."""
    with LOCK:
        return list(_LOADED)


@contextmanager
def transaction() -> Iterator[list[str]]:
    """Run the block as one batch: on any exception the prototype and implementation
    registries, their ``ge.ops`` entries and the modules recorded in the yielded list are put
    back as before, and the exception propagates."""
    with LOCK:
        protos = proto._snapshot()
        impls = registry._snapshot()
        modules: list[str] = []
        try:
            yield modules
        except BaseException:
            registry._restore(impls)
            proto._restore(protos)
            forget_modules(reversed(modules))
            raise


def _check_ir_of_new_impls(before: set[str]) -> None:
    ops = ops_registry()
    for desc in registry.get_registered_op_impls():
        if desc.descriptor_key not in before and desc.op_type not in ops:
            raise registry.missing_ir_error(desc)


def _new_entries(entries: Sequence[str]) -> list[str]:
    fresh: list[str] = []
    for entry in entries:
        resolved = str(Path(entry).expanduser().resolve())
        if resolved not in _LOADED and resolved not in fresh:
            fresh.append(resolved)
    return fresh


def load_custom_op_plugins(paths: str | None = None) -> list[str]:
    """Load the entries of ``paths`` (default: ``$ASCEND_CUSTOM_OPP_PATH``) not loaded yet, as
    one all-or-nothing batch; returns the names of the modules it ran."""
    value = os.environ.get(ENV_NAME, "") if paths is None else paths
    with LOCK:
        fresh = _new_entries(split_path_list(value))
        if not fresh:
            return []
        previous = set_discovering(True)
        try:
            with transaction() as modules:
                before = {d.descriptor_key for d in registry.get_registered_op_impls()}
                load_paths(fresh, kind=KIND, prefix=MODULE_PREFIX, record=modules)
                _check_ir_of_new_impls(before)
        finally:
            set_discovering(previous)
        _LOADED.extend(fresh)
        return list(modules)


def resolve_unknown_op(op_type: str) -> bool:
    """The ``ge.ops`` resolver: on a look-up of an unregistered op type, load the entries of
    ``$ASCEND_CUSTOM_OPP_PATH`` added since the last load. Returns whether it loaded any."""
    if discovering() or not op_type.isidentifier() or op_type.startswith("_"):
        return False  # a plugin asking for an op mid-batch, or a dunder probe (__path__ ...)
    value = os.environ.get(ENV_NAME)
    if not value:
        return False
    return bool(load_custom_op_plugins(value))
