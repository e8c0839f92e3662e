"""``ge.jit``'s plan cache: compiled plans on disk, so that a fresh process's first call of a
traced function loads its plan instead of compiling it (and never imports ``ge.compiler``).

An entry is one traced graph's task plan with its kernel binaries and constants, written in
the offline-model format (``ge.runtime.om``: the reader checks every byte of it) inside the
disk caches' frame (``ge._device._code_cache.write_entry``: ``GEJP`` + SHA-256 + payload,
written to a temporary file and renamed into place). It is named by ``plan_key``, a SHA-256
over:

- the traced graph (``_GraphText``): its name, every node's name, type, inputs, control
  inputs, port names, attributes (constant tensors by their bytes' SHA-256), input and
  output descs and subgraphs, the graph's outputs, attributes and subgraphs (node source
  locations are left out: they change no plan);
- the ``Options`` fields that change what is compiled (all but the cache, worker and logging
  switches);
- the code that compiles it (``_source()``: the size and modification time of every ``.py``
  file of the installed ``ge`` package, read once per process, as Python's own bytecode
  cache does; ge's, Python's and numpy's versions) and the toolchain and machine
  (``ge.runtime._toolchain.machine``: Numba, llvmlite, the CPU and its features) plus the
  CPU count (kernels' block counts follow it).

Decisions (ours):

- Nothing is cached (neither read nor written) for a graph holding an op that is not ge's
  own (a custom op: its Python is not in the fingerprint), while ``ge.passes`` or compiler
  stage hooks are registered, or when ``GE_DUMP_GRAPH``/``GE_KERNEL_SOURCE`` ask to see the
  compile. ``GE_KERNEL_CACHE=0`` and ``GE_JIT_PLAN_CACHE=0`` turn it off; it lives in the
  kernel cache's directory (``GE_KERNEL_CACHE_DIR``), as ``<key>.geplan``.
- A plan the offline-model writer refuses (Python host tasks, control flow over live
  subgraphs) is not stored; nor is one whose inputs or outputs do not match the traced
  graph's. Any failure to write only costs the next process a compile.
- A loaded entry must name its own key (in the model's options) and take and give exactly
  the traced graph's input and output dtypes and shapes; anything else — a damaged,
  truncated or foreign file, one that does not load — is removed and read as a miss. The
  entry is read whole into memory (not mapped: another process may replace it).
- The entries are never evicted (as the kernel cache's are not): deleting ``*.geplan`` files
  is always safe. The cost of a hit is the key (~10 us a node, plus ~3 ms once per process
  to stat ge's files) and the load (the runtime's and llvmlite's imports, the kernels).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from enum import Enum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ge._device._code_cache import cache_directory, read_entry, write_entry
from ge.graph._attr import AttrValue, NamedAttrs
from ge.graph._dtypes import numpy_dtype
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.options import Options
from ge.passes.registry import get_registered_passes

if TYPE_CHECKING:
    from ge.runtime.model import ModelGraph
    from ge.runtime.plan import Plan

__all__ = ["load_plan", "plan_key", "store_plan"]

logger = logging.getLogger("ge.jit")

_MAGIC = b"GEJP"
_SUFFIX = ".geplan"
_KEY_OPTION = "ge.jit plan"  # the model option naming the entry's own key
# Options fields that change nothing a plan holds (where it is cached, how it is compiled)
_NOT_IN_KEY = frozenset(
    {"jit_background", "jit_explain", "jit_plan_cache", "kernel_cache", "kernel_cache_dir"}
)


class _UncacheableError(Exception):
    """The graph holds something the fingerprint cannot describe exactly."""


# --- the key -----------------------------------------------------------------------------------
def plan_key(graph: Graph, options: Options) -> str | None:
    """The entry name of ``graph``'s plan compiled with ``options``; ``None`` when it is not
    cached (see the module docstring)."""
    if not options.jit_plan_cache or options.dump_graph or options.kernel_source:
        return None
    if cache_directory(options) is None or get_registered_passes() or _stage_hooks():
        return None
    digest = hashlib.sha256()
    digest.update(_environment().encode())
    settings = {k: v for k, v in options.as_dict().items() if k not in _NOT_IN_KEY}
    digest.update(repr(sorted(settings.items())).encode())
    try:
        text = _GraphText()
        text.graph(graph)
        digest.update(text.digest())
    except _UncacheableError:
        return None
    except Exception as e:  # a value that cannot be read (a freed tensor): just not cached
        logger.debug("ge.jit: graph %s has no plan cache key: %s", graph.name, e)
        return None
    return digest.hexdigest()


def _stage_hooks() -> bool:
    """Whether compiler stage hooks are registered (they could change any compile; without
    ``ge.compiler`` imported there are none)."""
    pipeline = sys.modules.get("ge.compiler.pipeline")
    hooks = getattr(pipeline, "_HOOKS", None)
    return bool(hooks) and any(hooks.values())  # type: ignore[union-attr]


@cache
def _environment() -> str:
    """What the compiled code depends on besides the graph and the options (once per
    process)."""
    from ge import __version__  # noqa: PLC0415
    from ge.runtime._toolchain import machine  # noqa: PLC0415

    python = ".".join(map(str, sys.version_info[:3]))
    parts = (__version__, _source(), python, np.__version__, machine(), str(os.cpu_count()))
    return "|".join(parts)


def _source(root: Path | None = None) -> str:
    """A fingerprint of ge's code: every ``.py`` file of the package (or of ``root``), by
    relative path, size and modification time (``os.stat``; no file is read)."""
    top = str(Path(__file__).resolve().parent.parent if root is None else root)
    cut = len(top)
    entries: list[str] = []
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as scan:
                for item in scan:
                    name = item.name
                    if name.endswith(".py"):
                        st = item.stat()
                        entries.append(f"{item.path[cut:]}:{st.st_size}:{st.st_mtime_ns}")
                    elif name != "__pycache__" and item.is_dir(follow_symlinks=False):
                        stack.append(item.path)
        except OSError:
            entries.append(f"{directory[cut:]}:unreadable")
    entries.sort()
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


_PLAIN = (type(None), bool, int, float, str)


class _GraphText:
    """An exact, unambiguous text of a graph, as parts: each the ``repr`` of a tuple of
    plain values (which escapes the separator ``\x1e``), a constant's bytes by their SHA-256.
    Descs are written once per object (ports share their producer's)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._descs: dict[int, str] = {}

    def digest(self) -> bytes:
        return "\x1e".join(self.parts).encode()

    def graph(self, graph: Graph) -> None:
        parts = self.parts
        parts.append(repr(("graph", graph.name)))
        for node in graph._nodes.values():
            self.node(node)
        parts.append(repr(("outputs", tuple((n.name, p) for n, p in graph._outputs))))
        self.attrs(graph._attrs)
        for name, sub in graph._subgraphs.items():
            parts.append(repr(("subgraph", name)))
            self.graph(sub)
        parts.append(repr(("end", graph.name)))

    def node(self, node: Node) -> None:
        op = node.op
        if op is None or op.source != "ge":
            raise _UncacheableError(node.type)
        inputs = tuple(None if e is None else (e[0].name, e[1]) for e in node.inputs)
        self.parts.append(
            repr(
                (
                    node.name,
                    node.type,
                    inputs,
                    tuple(n.name for n in node.control_inputs),
                    tuple(node.input_names),
                    tuple(node.output_names),
                    tuple(node.subgraph_names),
                    tuple(self.desc(d) for d in node.input_descs),
                    tuple(self.desc(d) for d in node.output_descs),
                )
            )
        )
        self.attrs(node.attr_values)

    def attrs(self, attrs: Any) -> None:
        for name in sorted(attrs):
            self.parts.append(repr(("attr", name)))
            self.value(attrs[name])

    def desc(self, desc: TensorDesc) -> str:
        """The desc's text (its index among the parts written: a desc is written once)."""
        known = self._descs.get(id(desc))
        if known is not None:
            return known
        self.parts.append(
            repr(
                (
                    "desc",
                    tuple(desc._shape),
                    int(desc._data_type),
                    int(desc._format),
                    tuple(desc._origin_shape or ()),
                    int(desc._origin_format),
                )
            )
        )
        self.attrs(desc._attrs or {})
        text = self._descs[id(desc)] = f"d{len(self.parts)}"
        return text

    def value(self, value: Any) -> None:
        parts = self.parts
        if isinstance(value, AttrValue):
            parts.append(repr(("av", int(value.type))))
            self.value(value.value)
        elif type(value) in _PLAIN or isinstance(value, Enum):
            parts.append(repr((type(value).__name__, value)))
        elif isinstance(value, bytes):
            parts.append(repr(("bytes", len(value), hashlib.sha256(value).hexdigest())))
        elif isinstance(value, (tuple, list)):
            if all(type(v) in _PLAIN for v in value):
                parts.append(repr(("plain", tuple(value))))
                return
            parts.append(repr(("seq", len(value))))
            for item in value:
                self.value(item)
        elif isinstance(value, TensorDesc):
            parts.append(repr(("tensor desc", self.desc(value))))
        elif isinstance(value, Tensor):
            raw = value._host_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            parts.append(repr(("tensor", value._placement.name, self.desc(value._desc), digest)))
        elif isinstance(value, Graph):
            self.graph(value)
        elif isinstance(value, NamedAttrs):
            parts.append(repr(("named", value.name)))
            self.attrs(value.attrs)
        else:
            raise _UncacheableError(type(value).__name__)


# --- entries -----------------------------------------------------------------------------------
def _path(key: str, options: Options) -> Path | None:
    directory = cache_directory(options)
    return None if directory is None else directory / f"{key}{_SUFFIX}"


def load_plan(key: str, graph: Graph, options: Options) -> ModelGraph | None:
    """The plan stored under ``key`` as a loaded model graph (its ``runner`` runs it; it
    holds the plan's constants), or ``None``: no entry, or one that is not sound for
    ``graph`` (removed)."""
    path = _path(key, options)
    payload = None if path is None else read_entry(path, _MAGIC)
    if path is None or payload is None:
        return None
    try:
        from ge.runtime.model import load_model  # noqa: PLC0415  (no compiler needed)

        model = load_model(payload)
        loaded = model.graph(model.graph_names[0])
        if model.options.get(_KEY_OPTION) != key or len(model.graph_names) != 1:
            raise ValueError("the entry is another plan's")
        if not _matches(loaded.runner.plan, graph):
            raise ValueError("the entry's inputs or outputs are not the graph's")
    except Exception as e:  # a bad entry is a miss, never a failed call
        logger.debug("ge.jit: plan cache entry %s not used: %s", path.name, e)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return loaded


def store_plan(key: str, graph: Graph, plan: Plan, options: Options) -> bool:
    """Write ``plan`` (``graph``'s, compiled with ``options``) under ``key``; ``False`` when it
    is not written (the writer refuses it, or the directory cannot take it)."""
    path = _path(key, options)
    if path is None:
        return False
    try:
        if not _matches(plan, graph):
            return False
        from ge import __version__  # noqa: PLC0415
        from ge.ops.infer import graph_outputs  # noqa: PLC0415
        from ge.runtime.om import GraphEntry, ModelData, pack, plan_data  # noqa: PLC0415

        model = ModelData([], [], [], {_KEY_OPTION: key}, __version__, ge_options=options)
        data = plan_data(plan, model, graph.name)
        inputs = tuple(n.name for n in sorted(_data_nodes(graph), key=_index))
        outputs = tuple(f"{n.name}:{p}" for n, p in graph_outputs(graph))
        model.graphs.append(GraphEntry(graph.name, inputs, outputs, data))
        payload = pack(model)
    except Exception as e:  # never fail the call: the next one compiles
        logger.debug("ge.jit: plan of %s not cached: %s", graph.name, e)
        return False
    return write_entry(path.parent, path.name, _MAGIC, payload)


def _data_nodes(graph: Graph) -> list[Node]:
    return [n for n in graph._nodes.values() if n.type == "Data"]


def _index(node: Node) -> int:
    value = node.attr_values.get("index")
    return int(value.value) if value is not None else -1


def _matches(plan: Plan, graph: Graph) -> bool:
    """Whether ``plan`` takes the traced graph's inputs (by ``index``) and gives its
    outputs, each of exactly the traced dtype and shape."""
    from ge.ops.infer import graph_outputs  # noqa: PLC0415

    inputs = [n.output_desc(0) for n in sorted(_data_nodes(graph), key=_index)]
    outputs = [n.output_desc(p) for n, p in graph_outputs(graph)]
    want = [*inputs, *outputs]
    have = [plan.buffers[b] for b in (*plan.inputs, *plan.outputs)]
    if len(plan.inputs) != len(inputs) or len(have) != len(want):
        return False
    for desc, spec in zip(want, have, strict=True):
        if numpy_dtype(desc._data_type) != spec.dtype or tuple(desc._shape) != spec.shape:
            return False
    return True
