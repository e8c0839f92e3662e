"""Discovery: load the Python passes named by ``ASCEND_GE_PY_PASS_PATH``, all or nothing.

The variable is an ``os.pathsep`` list of ``.py`` files, plain directories (their ``*.py`` files
and packages, sorted by name, ``_``-names skipped) and packages (GE_REFERENCE.md §6,
GE_ERRORS.md §9.6; the loader is ``ge._internal.plugin_loader``, file modules are named
``_ge_py_pass_<stem>_<hash>``). Loading a plugin runs its ``register_fusion_pass`` /
``register_decompose_pass`` decorators.

When (decision, ours; GE's docs do not say): the compile pipeline calls
``ensure_plugins_loaded()`` before it reads the registry (each ``Session`` graph compile,
``ge.jit`` trace compile, offline ``build_model``). It re-reads the variable each time and
returns at once when the value is the one already loaded, so entries added later are picked
up by the next compile. ``load_pass_plugins()`` loads on demand.

Each load takes only the entries not loaded before (a resolved entry loads once per process:
loading a path twice registers nothing twice) and runs them as **one batch**: if an entry is
missing (``FileNotFoundError``), is not a ``.py`` file (``ValueError``), cannot be imported
(``ImportError``) or its plugin raises (that exception), every pass the batch registered is
removed again (the registry is exactly as before; its ``generation()`` grows if passes had
been registered), the batch's modules leave ``sys.modules``, and the error propagates
unchanged. The entries are tried again at the next load. A loaded directory is not
rescanned (a file added to it later is reached by naming it), and clearing the registry does
not make loaded plugins load again.

A compile started by a plugin while it loads does not start a nested discovery.

    >>> load_pass_plugins("")  # nothing to load
    []
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ge._internal.plugin_loader import forget_modules, load_paths, split_path_list
from ge.passes import registry
from ge.passes.registry import LOCK

__all__ = [
    "ENV_NAME",
    "KIND",
    "MODULE_PREFIX",
    "ensure_plugins_loaded",
    "load_pass_plugins",
    "loaded_paths",
    "transaction",
]

ENV_NAME = "ASCEND_GE_PY_PASS_PATH"
MODULE_PREFIX = "_ge_py_pass_"
KIND = "python pass"

_LOADED: list[str] = []  # resolved entries loaded, in order


class _State:
    """Guarded by ``LOCK``: the module records of the open batches (outermost first; any
    open means a batch is loading on the thread holding the lock), and the variable's value
    last loaded in full."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.env_loaded = ""


_STATE = _State()


def loaded_paths() -> list[str]:
    """The resolved entries loaded so far, in load order."""
    with LOCK:
        return list(_LOADED)


@contextmanager
def transaction() -> Iterator[list[str]]:
    """Run the block as one batch: on any exception the pass registry, the list of loaded
    entries and the modules recorded in the yielded list are put back as before, and the
    exception propagates. A batch opened inside another (a plugin loading plugins) is undone
    with it if the outer one fails later."""
    with LOCK:
        passes = registry._snapshot()
        loaded = len(_LOADED)
        modules: list[str] = []
        _STATE.batches.append(modules)
        try:
            yield modules
        except BaseException:
            registry._restore(passes)
            del _LOADED[loaded:]
            forget_modules(reversed(modules))
            raise
        finally:
            _STATE.batches.pop()
        if _STATE.batches:  # a batch opened inside another: its modules are the outer's too
            _STATE.batches[-1].extend(modules)


def _new_entries(entries: Iterable[str | Path]) -> list[str]:
    fresh: list[str] = []
    for entry in entries:
        resolved = str(Path(entry).expanduser().resolve())
        if resolved not in _LOADED and resolved not in fresh:
            fresh.append(resolved)
    return fresh


def _entries(paths: str | Iterable[str | Path] | None) -> list[str | Path]:
    if paths is None:
        return list(split_path_list(os.environ.get(ENV_NAME, "")))
    if isinstance(paths, str):
        return list(split_path_list(paths))
    return list(paths)


def load_pass_plugins(paths: str | Iterable[str | Path] | None = None) -> list[str]:
    """Load the entries of ``paths`` (an ``os.pathsep`` list or an iterable of paths; default
    ``$ASCEND_GE_PY_PASS_PATH``) not loaded yet, as one all-or-nothing batch; returns the
    names of the modules it ran."""
    with LOCK:
        fresh = _new_entries(_entries(paths))
        if not fresh:
            return []
        with transaction() as modules:
            load_paths(fresh, kind=KIND, prefix=MODULE_PREFIX, record=modules)
            _LOADED.extend(fresh)
        return list(modules)


def ensure_plugins_loaded() -> list[str]:
    """Load what ``$ASCEND_GE_PY_PASS_PATH`` names and is not loaded yet (the compile
    pipeline calls this before reading the registry); returns the names of the modules run.
    Cheap when the variable has not changed since it last loaded; does nothing while a plugin
    batch is loading on this thread."""
    value = os.environ.get(ENV_NAME, "")
    with LOCK:
        if _STATE.batches or value == _STATE.env_loaded:
            return []
        modules = load_pass_plugins(value)
        _STATE.env_loaded = value
        return modules
