"""Code outside ``ge/graph/`` reads and edits nodes only through public accessors.

An AST scan of every ``ge/**/*.py`` outside ``ge/graph/`` finds attribute accesses (reads,
writes, deletes) named after a ``Node`` slot (``Node.__slots__``: ``_in_edges``,
``_output_descs``, ...). The fast, non-copying public accessors (``node.inputs``,
``node.users(port)``, ``node.output_desc(i)``, ``node.attr_value(name)``, ``node.op``, ...;
see ``ge/graph/node.py``) and ``Graph`` methods (``Graph.set_output_desc``) replace them.

Decisions:
- A scan cannot know a receiver's type. Slot names only ``Node`` has (``_in_edges``,
  ``_out_edges``, ``_in_ctrl``, ``_out_ctrl``, ``_input_descs``, ``_output_descs``,
  ``_input_names``, ``_output_names``, ``_subgraph_names``) count on any receiver. Names other
  classes use too (``AMBIGUOUS``: ``TensorDesc._attrs``, ``Graph._name``, ``Pattern._graph``,
  ...) do not count on ``self``/``cls`` (a class's own field: no ``Node`` is defined outside
  ``ge/graph``), and the other sites where the receiver is not a node are listed one by one in
  ``NOT_A_NODE`` with what the receiver is.
- ``ALLOWLIST`` names the modules (or package prefixes) not migrated yet, each with why. It may
  only shrink: an entry that no longer covers any access fails the test, so it is removed when
  its module is migrated; a ``NOT_A_NODE`` site that is gone fails likewise.
- ``getattr(node, "_in_edges")`` and other dynamic access are not seen; review catches those.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ge.graph import Node

ROOT = Path(__file__).resolve().parents[2]
GE = ROOT / "ge"

NODE_SLOTS = frozenset(s for s in Node.__slots__ if s != "__weakref__")

# Node slot names that other ge classes use for fields of their own.
AMBIGUOUS = frozenset({"_attrs", "_graph", "_name", "_op", "_source", "_type"})

# Modules (a path, or a package prefix ending in "/") that may still read Node slots: why.
ALLOWLIST: dict[str, str] = {
    "ge/ops/construct.py": "IR core: add_op_node makes nodes and fills their ports, descs "
    "and op (the builder's side of the IR)",
    "ge/ops/infer.py": "IR core: inference writes every node's descs in place",
    "ge/ops/io.py": "IR core (not migrated yet, read-only): graph-input and Const checks read "
    "type, name and attributes",
    "ge/ops/layout.py": "IR core (not migrated yet, read-only): port grouping reads port names "
    "on every call (hot: bind node.input_names once when migrating)",
    "ge/es/": "IR core: the ge.es builder creates nodes and records their descs and op",
}

# Accesses of an AMBIGUOUS name whose receiver is not a node: (module, "receiver.field"): what
# the receiver is.
NOT_A_NODE: dict[tuple[str, str], str] = {
    ("ge/compiler/cse.py", "desc._attrs"): "a TensorDesc",
    ("ge/jit/_control.py", "builder._graph"): "a GraphBuilder (the graph a body is built in)",
    ("ge/jit/_debug.py", "scope.builder._graph"): "a GraphBuilder (the graph a print is in)",
    ("ge/jit/_plan_cache.py", "graph._attrs"): "a Graph (its attributes, part of the key)",
    ("ge/jit/_plan_cache.py", "desc._attrs"): "a TensorDesc (its attributes, part of the key)",
}


@dataclass(frozen=True)
class Access:
    module: str
    line: int
    text: str  # "receiver.field"


def _accesses(path: Path, root: Path = ROOT) -> list[Access]:
    module = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=module)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in NODE_SLOTS:
            continue
        text = f"{ast.unparse(node.value)}.{node.attr}"
        if node.attr in AMBIGUOUS:
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if own or (module, text) in NOT_A_NODE:
                continue
        found.append(Access(module, node.lineno, text))
    return found


@cache
def _scan() -> tuple[Access, ...]:
    paths = sorted(p for p in GE.rglob("*.py") if GE / "graph" not in p.parents)
    return tuple(a for p in paths for a in _accesses(p))


def _allowed_by(module: str) -> str | None:
    for entry in ALLOWLIST:
        if module == entry or (entry.endswith("/") and module.startswith(entry)):
            return entry
    return None


def test_no_private_node_fields_outside_the_allowlist() -> None:
    bad = [a for a in _scan() if _allowed_by(a.module) is None]
    assert not bad, (
        "private Node fields read or written outside ge/graph; use the public accessors "
        "(node.inputs, node.input(i), node.users(port), node.users_by_port, node.output_desc(i), "
        "node.attr_value(name), node.op, ... in ge/graph/node.py) or Graph methods "
        "(Graph.set_output_desc):\n" + "\n".join(f"  {a.module}:{a.line}: {a.text}" for a in bad)
    )


def test_the_allowlist_only_shrinks() -> None:
    used = {_allowed_by(a.module) for a in _scan()}
    stale = [entry for entry in ALLOWLIST if entry not in used]
    assert not stale, (
        f"these modules read no private Node field now; remove them from ALLOWLIST: {stale}"
    )


def test_every_not_a_node_site_still_exists() -> None:
    for module, text in NOT_A_NODE:
        path = ROOT / module
        field = text.rsplit(".", 1)[1]
        assert field in AMBIGUOUS, (module, text)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sites = {
            f"{ast.unparse(n.value)}.{n.attr}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
        }
        assert text in sites, f"{module} no longer has {text}; remove it from NOT_A_NODE"


def test_the_scan_sees_reads_writes_and_ambiguous_names(tmp_path: Path) -> None:
    """The scanner itself: a read, a write, a delete, an ambiguous name on a node-like
    receiver count; a class's own ``self._name`` does not."""
    source = tmp_path / "ge" / "sample.py"
    source.parent.mkdir()
    source.write_text(
        "class C:\n"
        "    def f(self, node):\n"
        "        x = node._in_edges\n"
        "        node._output_descs[0] = x\n"
        "        del node._attrs\n"
        "        return self._name, node._type\n"
    )
    texts = [a.text for a in _accesses(source, tmp_path)]
    assert sorted(texts) == ["node._attrs", "node._in_edges", "node._output_descs", "node._type"]
