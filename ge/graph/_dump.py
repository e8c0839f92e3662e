"""``Graph.dump_to_stream`` / ``dump_to_file``: the graph as text for people and tools.

- ``DumpFormat.kReadable``: GE's readable dump, ``str(graph)`` (``ge.graph._readable``).
- ``DumpFormat.kTxt``: the AIR ``ModelDef`` in protobuf text format.
- ``DumpFormat.kOnnx``: an ONNX-style ``graph { node { ... } }`` text (op types, names, edges),
  written as ``ge_onnx_<n>_graph_<n>_<suffix>.pbtxt`` like GE; it carries structure only.

Files are numbered by a process-wide counter and go where GE's ``graph_utils.cc`` puts them
(GE_ERRORS.md §12.1.6): ``$NPU_COLLECT_PATH/extra-info/graph/<pid>_<device>/`` when that is
set, else ``$DUMP_GRAPH_PATH/pid_<pid>_deviceid_<device>/``, else the current directory; the
device is 0 (the CPU device) and the directory is created. Decision: GE's third choice, the
Ascend work path, has no counterpart here and is skipped. Checks as GE's
(GE_ERRORS.md §2.1): ``suffix`` before ``format``; a file that cannot be written is
``RuntimeError("Failed to dump graph: <name> to file format DumpFormat.<f> with suffix <s>")``.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING

from ge.error import GeError, GeTypeError
from ge.graph.types import DumpFormat

if TYPE_CHECKING:
    from ge.graph.graph import Graph

__all__ = ["dump_file", "dump_text"]

_COUNTER = itertools.count()
_FILE_PATTERNS = {
    DumpFormat.kOnnx: "ge_onnx_{n:08d}_graph_{g}_{suffix}.pbtxt",
    DumpFormat.kTxt: "ge_proto_{n:08d}_graph_{g}_{suffix}.txt",
    DumpFormat.kReadable: "ge_readable_{n:08d}_graph_{g}_{suffix}.txt",
}


def _onnx_text(graph: Graph) -> str:
    lines = ["graph {", f'  name: "{graph.name}"']
    for node in graph.get_direct_nodes():
        lines.append("  node {")
        for edge in node._in_edges:
            lines.append(f'    input: "{"" if edge is None else f"{edge[0].name}:{edge[1]}"}"')
        lines += [f'    output: "{node.name}:{i}"' for i in range(node.get_outputs_size())]
        lines += [f'    name: "{node.name}"', f'    op_type: "{node.type}"', "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


_FORMAT_TEXT = "Format must be in [DumpFormat.kOnnx, DumpFormat.kTxt, DumpFormat.kReadable]"


def _check_format(format: object) -> DumpFormat:
    if not isinstance(format, DumpFormat):
        raise GeTypeError(f"{_FORMAT_TEXT}, got {format!r}")
    return format


def dump_text(graph: Graph, format: DumpFormat) -> str:
    _check_format(format)
    if format == DumpFormat.kReadable:
        from ge.graph._readable import readable_dump  # noqa: PLC0415

        return readable_dump(graph)
    if format == DumpFormat.kOnnx:
        return _onnx_text(graph)
    from google.protobuf import text_format  # noqa: PLC0415

    from ge.graph._air import model_to_bytes, schema  # noqa: PLC0415

    model = schema().ModelDef.FromString(model_to_bytes(graph))
    return str(text_format.MessageToString(model))


_DEVICE_ID = 0  # the CPU device


def _dump_dir() -> str:
    """The directory GE writes dump files to, from the environment ("" = the current one)."""
    pid = os.getpid()
    collect = os.environ.get("NPU_COLLECT_PATH")
    if collect:
        return os.path.join(collect, "extra-info", "graph", f"{pid}_{_DEVICE_ID}")
    dump = os.environ.get("DUMP_GRAPH_PATH")
    if dump:
        return os.path.join(dump, f"pid_{pid}_deviceid_{_DEVICE_ID}")
    return ""


def dump_file(graph: Graph, format: DumpFormat, suffix: str) -> str:
    if not isinstance(suffix, str):
        raise GeTypeError(f"Suffix must be a string, got {type(suffix).__name__}")
    _check_format(format)
    text = dump_text(graph, format)
    directory = _dump_dir()
    path = os.path.join(
        directory, _FILE_PATTERNS[format].format(n=next(_COUNTER), g=0, suffix=suffix)
    )
    try:
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise GeError(
            f"Failed to dump graph: {graph.name} to file format {format} with suffix "
            f"{suffix}: cannot write {path!r} ({e.strerror})"
        ) from None
    return path
