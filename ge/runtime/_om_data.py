"""The data an offline model file holds (``ge.runtime.om``): its constants, limits and
records, shared by the writer (``ge.runtime._om_write``) and the reader
(``ge.runtime._om_read``)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeError
from ge.runtime._record import FrozenRecord, Record
from ge.runtime.plan import BufferKind, HostTask

if TYPE_CHECKING:
    from ge.options import Options

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "MAGIC",
    "BufferData",
    "GraphEntry",
    "HostTaskData",
    "KernelTaskData",
    "ModelData",
    "ModelFormatError",
    "PlanData",
    "Translate",
    "nbytes_of",
]

MAGIC = b"GEOM"
FORMAT_VERSION = 1
PREFIX = struct.Struct("<4sIQ32s")
ALIGN = 64

# limits a sound model stays far inside; a file past them is refused before allocating
MAX_HEADER_BYTES = 1 << 30
MAX_BUFFER_BYTES = 1 << 40
MAX_DIMS = 32
MAX_BLOCK_DIM = 1 << 16
MAX_ARGS = 1 << 20
MAX_DEPTH = 16  # control flow inside control flow, this deep at most
INT64 = (-(1 << 63), (1 << 63) - 1)

DTYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    }
)


class ModelFormatError(GeError):
    """A model file that is not a sound model of this format (truncated, mutated, hostile)."""


# --- the data a model file holds ---------------------------------------------------------------
# The records are frozen plain records (``ge.runtime._record``: immutable, compared and printed
# by value, as frozen dataclasses and named tuples are): creating their classes costs a
# fraction of a dataclass's or a named tuple's (which compiles each string annotation), paid by
# every fresh process that loads a model. They are not tuples: read them by field.
class KernelTaskData(FrozenRecord):
    """``kernel``: index into ModelData.kernels; ``patches``: (argument position, buffer, byte
    offset)."""

    __match_args__ = (
        "name",
        "kernel",
        "function",
        "block_dim",
        "template",
        "patches",
        "same_index_inputs",
    )
    __slots__ = (
        "block_dim",
        "function",
        "kernel",
        "name",
        "patches",
        "same_index_inputs",
        "template",
    )
    name: str
    kernel: int
    function: str
    block_dim: int
    template: tuple[int, ...]
    patches: tuple[tuple[int, int, int], ...]
    same_index_inputs: tuple[int, ...]

    def __init__(
        self,
        name: str,
        kernel: int,
        function: str,
        block_dim: int,
        template: tuple[int, ...],
        patches: tuple[tuple[int, int, int], ...],
        same_index_inputs: tuple[int, ...] = (),
    ) -> None:
        self._set("name", name)
        self._set("kernel", kernel)
        self._set("function", function)
        self._set("block_dim", block_dim)
        self._set("template", template)
        self._set("patches", patches)
        self._set("same_index_inputs", same_index_inputs)


_NO_PARAMS: Mapping[str, Any] = MappingProxyType({})


class HostTaskData(FrozenRecord):
    """``op``: a HOST_OPS name."""

    __match_args__ = ("name", "op", "buffers", "params")
    __slots__ = ("buffers", "name", "op", "params")
    name: str
    op: str
    buffers: tuple[int, ...]
    params: Mapping[str, Any]

    def __init__(
        self, name: str, op: str, buffers: tuple[int, ...], params: Mapping[str, Any] = _NO_PARAMS
    ) -> None:
        self._set("name", name)
        self._set("op", op)
        self._set("buffers", buffers)
        self._set("params", params)


class BufferData(FrozenRecord):  # a record: a named tuple's field cannot be called index
    __match_args__ = ("kind", "index", "shape", "dtype")
    __slots__ = ("dtype", "index", "kind", "shape")
    kind: BufferKind
    index: int
    shape: tuple[int, ...]
    dtype: str

    def __init__(self, kind: BufferKind, index: int, shape: tuple[int, ...], dtype: str) -> None:
        self._set("kind", kind)
        self._set("index", index)
        self._set("shape", shape)
        self._set("dtype", dtype)

    @property
    def nbytes(self) -> int:
        return nbytes_of(self.shape, self.dtype)


class PlanData(FrozenRecord):
    """A ``Plan`` as data: kernels by index, host tasks by name, constants by weight index.
    ``consts``: buffer -> weight index; ``views``: buffer -> the intermediate, input or output
    whose bytes it is; ``subplans``: what control-flow host tasks run, by index."""

    __match_args__ = (
        "buffers",
        "tasks",
        "inputs",
        "outputs",
        "consts",
        "views",
        "arena_size",
        "subplans",
    )
    __slots__ = (
        "arena_size",
        "buffers",
        "consts",
        "inputs",
        "outputs",
        "subplans",
        "tasks",
        "views",
    )
    buffers: tuple[BufferData, ...]
    tasks: tuple[KernelTaskData | HostTaskData, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    consts: Mapping[int, int]
    views: Mapping[int, int]
    arena_size: int
    subplans: tuple[PlanData, ...]

    def __init__(
        self,
        buffers: tuple[BufferData, ...],
        tasks: tuple[KernelTaskData | HostTaskData, ...],
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        consts: Mapping[int, int],
        views: Mapping[int, int],
        arena_size: int,
        subplans: tuple[PlanData, ...] = (),
    ) -> None:
        self._set("buffers", buffers)
        self._set("tasks", tasks)
        self._set("inputs", inputs)
        self._set("outputs", outputs)
        self._set("consts", consts)
        self._set("views", views)
        self._set("arena_size", arena_size)
        self._set("subplans", subplans)


class GraphEntry(FrozenRecord):
    __match_args__ = ("name", "input_names", "output_names", "plan")
    __slots__ = ("input_names", "name", "output_names", "plan")
    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    plan: PlanData

    def __init__(
        self,
        name: str,
        input_names: tuple[str, ...],
        output_names: tuple[str, ...],
        plan: PlanData,
    ) -> None:
        self._set("name", name)
        self._set("input_names", input_names)
        self._set("output_names", output_names)
        self._set("plan", plan)


class ModelData(Record):
    """Everything a model file holds. ``weights`` are arrays (or read-only views of the file).
    ``weight_names``: see plan_data; ``ambiguous_names``: Const names of several values (both
    a new empty one when not given); ``ge_options``: the record it was compiled with (None:
    not saved)."""

    __match_args__ = (
        "graphs",
        "kernels",
        "weights",
        "options",
        "ge_version",
        "weight_names",
        "ambiguous_names",
        "ge_options",
    )
    __slots__ = (
        "ambiguous_names",
        "ge_options",
        "ge_version",
        "graphs",
        "kernels",
        "options",
        "weight_names",
        "weights",
    )

    def __init__(
        self,
        graphs: list[GraphEntry],
        kernels: list[bytes],
        weights: list[np.ndarray],
        options: dict[str, str],
        ge_version: str = "",
        weight_names: dict[str, int] | None = None,
        ambiguous_names: set[str] | None = None,
        ge_options: Options | None = None,
    ) -> None:
        self.graphs = graphs
        self.kernels = kernels
        self.weights = weights
        self.options = options
        self.ge_version = ge_version
        self.weight_names: dict[str, int] = {} if weight_names is None else weight_names
        self.ambiguous_names: set[str] = set() if ambiguous_names is None else ambiguous_names
        self.ge_options = ge_options


# makes a Python host task data, or says it cannot (None): given the task and the list to
# append the sub-plans it runs to (ge.offline_compile translates control flow this way)
Translate = Callable[[HostTask, list["PlanData"]], "HostTaskData | None"]


def nbytes_of(shape: tuple[int, ...], dtype: str) -> int:
    count = 1
    for d in shape:
        count *= d
    return count * np.dtype(dtype).itemsize
