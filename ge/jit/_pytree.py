"""Pytrees: nested tuples, lists, dicts, namedtuples, dataclasses and ``None`` around leaves.

``flatten(tree)`` gives the leaves in a fixed order (dict keys sorted, dataclass fields in
declaration order) and a hashable ``TreeDef`` that ``unflatten`` turns back into the same
structure. ``None`` is a node with no leaves, as in JAX. Anything else is a leaf.

    >>> leaves, tree = flatten({"b": (1, 2), "a": [3, None]})
    >>> leaves
    [3, 1, 2]
    >>> unflatten(tree, ["x", "y", "z"])
    {'a': ['x', None], 'b': ('y', 'z')}
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ge.error import GeValueError

__all__ = ["TreeDef", "data_names", "flatten", "paths", "unflatten"]


class TreeDef(NamedTuple):
    """A node: its kind, what rebuilding it needs (type, keys) and its children."""

    kind: str  # "leaf", "none", "tuple", "list", "dict", "namedtuple", "dataclass"
    meta: Any
    children: tuple[TreeDef, ...]

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(str(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c}" for k, c in zip(self.meta, self.children, strict=True))
            return "{" + inner + "}"
        if self.kind in ("namedtuple", "dataclass"):
            return f"{self.meta[0].__name__}({inner})"
        return f"[{inner}]" if self.kind == "list" else f"({inner})"


LEAF = TreeDef("leaf", None, ())


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    leaves: list[Any] = []
    try:
        return leaves, _flatten(tree, leaves)
    except RecursionError:
        raise GeValueError(
            "a pytree argument or result contains itself (a list, tuple, dict or dataclass "
            "that refers back to itself) or nests too deeply to flatten"
        ) from None


def _flatten(tree: Any, leaves: list[Any]) -> TreeDef:
    if tree is None:
        return TreeDef("none", None, ())
    if _is_namedtuple(tree):
        kids = tuple(_flatten(v, leaves) for v in tree)
        return TreeDef("namedtuple", (type(tree),), kids)
    if isinstance(tree, (tuple, list)):
        kids = tuple(_flatten(v, leaves) for v in tree)
        return TreeDef("tuple" if isinstance(tree, tuple) else "list", None, kids)
    if isinstance(tree, dict):
        keys = tuple(sorted(tree, key=_key_order))
        return TreeDef("dict", keys, tuple(_flatten(tree[k], leaves) for k in keys))
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        names = tuple(f.name for f in dataclasses.fields(tree))
        kids = tuple(_flatten(getattr(tree, n), leaves) for n in names)
        return TreeDef("dataclass", (type(tree), names), kids)
    leaves.append(tree)
    return LEAF


def _key_order(key: Any) -> tuple[str, str]:
    return (type(key).__name__, repr(key))


def unflatten(tree: TreeDef, leaves: Sequence[Any]) -> Any:
    it = iter(leaves)
    value = _build(tree, it)
    if next(it, _END) is not _END:
        raise ValueError("unflatten: more leaves than the tree has")
    return value


_END = object()


def _build(tree: TreeDef, it: Iterator[Any]) -> Any:
    kind = tree.kind
    if kind == "leaf":
        value = next(it, _END)
        if value is _END:
            raise ValueError("unflatten: fewer leaves than the tree has")
        return value
    if kind == "none":
        return None
    kids = [_build(c, it) for c in tree.children]
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return kids
    if kind == "dict":
        return dict(zip(tree.meta, kids, strict=True))
    if kind == "namedtuple":
        return tree.meta[0](*kids)
    cls, names = tree.meta
    obj = object.__new__(cls)
    for name, kid in zip(names, kids, strict=True):
        object.__setattr__(obj, name, kid)
    return obj


def paths(tree: TreeDef, prefix: str = "") -> list[str]:
    """A readable path per leaf, in leaf order: ``x``, ``params['w']``, ``batch[0].image``."""
    if tree.kind == "leaf":
        return [prefix]
    out: list[str] = []
    for k, child in enumerate(tree.children):
        if tree.kind == "dict":
            step = f"[{tree.meta[k]!r}]"
        elif tree.kind == "dataclass":
            step = f".{tree.meta[1][k]}"
        elif tree.kind == "namedtuple":
            step = f".{tree.meta[0]._fields[k]}"
        else:
            step = f"[{k}]"
        out += paths(child, prefix + step)
    return out


_GENERATED = re.compile(r"[A-Z][A-Za-z0-9]*_[0-9]+")  # how GraphBuilder names op nodes


def data_names(leaf_paths: Sequence[str]) -> list[str]:
    """Node names for the ``Data`` nodes of leaves at ``leaf_paths``: each path with every
    run of other characters than letters, digits and ``_`` made one ``_`` (``x``,
    ``params['w']`` -> ``params_w``, ``batch[0].image`` -> ``batch_0_image``, ``args[2]`` ->
    ``args_2``). Decisions: a name that would be empty or start with a digit, or that looks
    like a node name the builder generates (``Add_0``), gets an ``arg_`` prefix; a name
    already taken gets ``_1``, ``_2``... (the first unused).

        >>> data_names(["x", "params['w']", "params_w", "Add_0"])
        ['x', 'params_w', 'params_w_1', 'arg_Add_0']
    """
    taken: set[str] = set()
    names = []
    for path in leaf_paths:
        base = re.sub(r"[^A-Za-z0-9_]+", "_", path).strip("_")
        if not base or base[0].isdigit() or _GENERATED.fullmatch(base):
            base = f"arg_{base}"
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        names.append(name)
    return names
