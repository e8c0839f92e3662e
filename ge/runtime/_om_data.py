"""The data an offline model file holds (``ge.runtime.om``): its constants, limits and
records, shared by the writer (``ge.runtime._om_write``) and the reader
(``ge.runtime._om_read``)."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ge.error import GeError
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
# The records are named tuples (immutable, compared and printed by value, as frozen dataclasses
# are): creating their classes costs a fifth of a dataclass's, paid by every fresh process that
# loads a model.
class KernelTaskData(NamedTuple):
    name: str
    kernel: int  # index into ModelData.kernels
    function: str
    block_dim: int
    template: tuple[int, ...]
    patches: tuple[tuple[int, int, int], ...]  # (argument position, buffer, byte offset)
    same_index_inputs: tuple[int, ...] = ()


class HostTaskData(NamedTuple):
    name: str
    op: str  # a HOST_OPS name
    buffers: tuple[int, ...]
    params: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class BufferData:  # a dataclass: a named tuple's field cannot be called index
    kind: BufferKind
    index: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return nbytes_of(self.shape, self.dtype)


class PlanData(NamedTuple):
    """A ``Plan`` as data: kernels by index, host tasks by name, constants by weight index."""

    buffers: tuple[BufferData, ...]
    tasks: tuple[KernelTaskData | HostTaskData, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    consts: Mapping[int, int]  # buffer -> weight index
    views: Mapping[int, int]  # buffer -> the intermediate, input or output whose bytes it is
    arena_size: int
    subplans: tuple[PlanData, ...] = ()  # what control-flow host tasks run, by index


class GraphEntry(NamedTuple):
    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    plan: PlanData


@dataclass
class ModelData:
    """Everything a model file holds. ``weights`` are arrays (or read-only views of the file)."""

    graphs: list[GraphEntry]
    kernels: list[bytes]
    weights: list[np.ndarray]
    options: dict[str, str]
    ge_version: str = ""
    weight_names: dict[str, int] = field(default_factory=dict)  # see plan_data
    ambiguous_names: set[str] = field(default_factory=set)  # Const names of several values
    ge_options: Options | None = None  # the record it was compiled with (None: not saved)


# makes a Python host task data, or says it cannot (None): given the task and the list to
# append the sub-plans it runs to (ge.offline_compile translates control flow this way)
Translate = Callable[[HostTask, list["PlanData"]], "HostTaskData | None"]


def nbytes_of(shape: tuple[int, ...], dtype: str) -> int:
    count = 1
    for d in shape:
        count *= d
    return count * np.dtype(dtype).itemsize
