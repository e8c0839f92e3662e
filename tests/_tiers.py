"""Which dtypes of an op's dtype sweep the default test tier runs (the rest run under -m slow).

A cold kernel cache compiles every distinct kernel the default tier needs (~0.5 s each on 2
cores), and most of them come from sweeps of every op over every dtype it claims. The default
tier keeps, per op, one representative dtype per kind: a float (float32, else float64, else the
first float claimed), an integer (int32, else int64, else the first integer claimed, signed or
not) and bool; the half floats and the other integer widths run in the slow tier. So that no
dtype goes untested by default, each claimed dtype that is nobody's representative is also run
for the first op (in table order) that claims it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["default_pairs", "main_dtype", "representatives"]

_PREFERRED = {"float": ("float32", "float64"), "int": ("int32", "int64"), "bool": ("bool",)}


def _kind(dtype: str) -> str:
    if "float" in dtype:  # float16/32/64, bfloat16
        return "float"
    if dtype == "bool":
        return "bool"
    return "int"


def representatives(claimed: Iterable[str]) -> frozenset[str]:
    """The default-tier dtypes of an op that claims ``claimed`` (one per kind, see above)."""
    ordered = list(dict.fromkeys(claimed))
    chosen = set()
    for kind, preferred in _PREFERRED.items():
        of_kind = [d for d in ordered if _kind(d) == kind]
        if of_kind:
            chosen.add(next((d for d in preferred if d in of_kind), of_kind[0]))
    return frozenset(chosen)


def main_dtype(claimed: Iterable[str]) -> str:
    """The dtype an op's every shape variant runs in by default: its float representative,
    else its integer one, else bool."""
    chosen = representatives(claimed)
    ordered = [d for d in dict.fromkeys(claimed) if d in chosen]
    if not ordered:
        raise ValueError("claimed: expected at least one dtype, got none")
    return min(ordered, key=lambda d: list(_PREFERRED).index(_kind(d)))


def default_pairs(pairs: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The ``(op, dtype)`` pairs of a sweep (given in table order) that the default tier runs:
    each op's ``representatives``, plus the first op of every dtype no representative covers."""
    ordered = list(dict.fromkeys(pairs))
    claimed: dict[str, list[str]] = {}
    for op, dtype in ordered:
        claimed.setdefault(op, []).append(dtype)
    chosen = {(op, d) for op, dtypes in claimed.items() for d in representatives(dtypes)}
    covered = {d for _, d in chosen}
    for op, dtype in ordered:
        if dtype not in covered:
            chosen.add((op, dtype))
            covered.add(dtype)
    return frozenset(chosen)
