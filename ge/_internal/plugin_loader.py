"""Load Python plugin files, plain directories and packages named by a path list.

GE-PY loads its Python passes (``ASCEND_GE_PY_PASS_PATH``) and Python custom ops
(``ASCEND_CUSTOM_OPP_PATH``) with one loader (GE_ERRORS.md §9.6, §10.6); this is ours. Each
entry of the ``os.pathsep`` list is

* a ``.py`` file, executed as the module ``<prefix><stem>_<hash>`` (the hash is of its resolved
  path, so two ``ops.py`` in different folders never share a module);
* a package (a directory holding ``__init__.py``), imported by name with its parent directory
  on ``sys.path`` for the duration of the import;
* a plain directory: its ``*.py`` files and sub-packages, sorted by name, loaded as above;
  names starting with ``_`` are skipped.

Errors name the path: ``FileNotFoundError`` ``"<kind> path does not exist: <path>"``,
``ValueError`` ``"<kind> file must end with .py: <path>"``, ``ImportError`` ``"cannot load
<kind> file: <path>"``; an exception raised by the plugin itself propagates unchanged. A module
that fails is removed from ``sys.modules`` again (its submodules too), so a later attempt runs
it afresh.

Decision (ours; GE's loader only reads directories): an entry that is itself a package
directory is imported as that package rather than scanned, so ``PATH=/opt/my_ops_pkg`` works
like ``PATH=/opt`` restricted to that one package.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "hello.py")
    >>> _ = open(p, "w").write("VALUE = 42\\n")
    >>> [m.VALUE for m in load_paths([p], kind="demo plugin", prefix="_demo_")]
    [42]
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType

__all__ = ["forget_modules", "load_paths", "module_name_for", "split_path_list"]


def split_path_list(value: str | None) -> list[str]:
    """The non-empty entries of an ``os.pathsep``-separated list (``None`` gives none)."""
    import os  # noqa: PLC0415  (pathsep only)

    if not value:
        return []
    return [entry for entry in value.split(os.pathsep) if entry.strip()]


def module_name_for(path: Path, prefix: str) -> str:
    """``<prefix><stem>_<hash of the resolved path>`` for a plugin file."""
    digest = hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:12]
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem)
    return f"{prefix}{stem}_{digest}"


def _forget(name: str) -> None:
    """Drop ``name`` and its submodules from ``sys.modules``."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


@contextmanager
def _on_sys_path(directory: Path) -> Iterator[None]:
    entry = str(directory)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with suppress(ValueError):  # the plugin removed it itself
            sys.path.remove(entry)


def _load_file(path: Path, kind: str, prefix: str, record: list[str]) -> ModuleType:
    if path.suffix != ".py":
        raise ValueError(f"{kind} file must end with .py: {path}")
    name = module_name_for(path, prefix)
    loaded = sys.modules.get(name)
    if loaded is not None:  # this very file was loaded before: do not run it twice
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {kind} file: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, pickling and relative look-ups need it there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        _forget(name)
        raise
    record.append(name)
    return module


def _load_package(directory: Path, kind: str, record: list[str]) -> ModuleType:
    name = directory.name
    if not name.isidentifier():
        raise ImportError(f"cannot load {kind} file: {directory} (not an importable name)")
    fresh = name not in sys.modules
    with _on_sys_path(directory.parent):
        try:
            module = importlib.import_module(name)
        except BaseException:
            if fresh:
                _forget(name)
            raise
    if fresh:
        record.append(name)
    return module


def _is_package(path: Path) -> bool:
    return path.is_dir() and (path / "__init__.py").is_file()


def _load_entry(path: Path, kind: str, prefix: str, record: list[str]) -> list[ModuleType]:
    if not path.exists():
        raise FileNotFoundError(f"{kind} path does not exist: {path}")
    if _is_package(path):
        return [_load_package(path, kind, record)]
    if path.is_dir():
        modules: list[ModuleType] = []
        for child in sorted(path.iterdir(), key=lambda p: p.name):
            if child.name.startswith("_"):
                continue
            if _is_package(child):
                modules.append(_load_package(child, kind, record))
            elif child.is_file() and child.suffix == ".py":
                modules.append(_load_file(child, kind, prefix, record))
        return modules
    return [_load_file(path, kind, prefix, record)]


def load_paths(
    paths: Iterable[str | Path], *, kind: str, prefix: str, record: list[str] | None = None
) -> list[ModuleType]:
    """Load every entry of ``paths`` in order; returns the modules loaded (or found loaded).

    ``record`` (if given) receives the names of the modules this call executed, as it goes.
    Stops at the first failure, which propagates; modules loaded before it stay loaded: callers
    wanting all-or-nothing drop the recorded ones (``forget_modules``; see
    ``ge.custom_op.bootstrap``)."""
    names: list[str] = [] if record is None else record
    modules: list[ModuleType] = []
    for entry in paths:
        modules += _load_entry(Path(entry).expanduser().resolve(), kind, prefix, names)
    return modules


def forget_modules(names: Iterable[str]) -> None:
    """Drop the named plugin modules and their submodules from ``sys.modules``."""
    for name in names:
        _forget(name)
