"""The offline model file (``.om``): task plans, kernel binaries and weights, as pure data.

``pack`` writes a model from plans (``ge.offline_compile`` calls it); ``unpack`` reads one
back, checking everything before anything is used: it never executes code, never trusts a
length or an offset, and raises ``ModelFormatError`` for any file it cannot prove sound. What
a loaded model may then do is bounded by the plan it declared: every buffer lies inside the
model's own memory (the workspace it allocates and its weights), and every kernel argument
slot names one of those buffers at an offset inside it. The kernels themselves are the one
piece of code a model carries (as a shared library does); each is integrity-checked whole by
``ge.runtime.load_kernel_binary``, and every view a kernel makes is checked against live
device memory inside the kernel.

Layout (little-endian; the full description is ``docs/om_format.md``)::

    0   4   magic b"GEOM"
    4   4   u32 format version (FORMAT_VERSION)
    8   8   u64 header length H
    16  32  SHA-256 of the header
    48  H   header: UTF-8 JSON (graphs with their plans and descs, options, the
            ``ge.options`` record the model was compiled with, sections)
    48+H    data: sections at 64-byte aligned offsets (from the start of the data; 48 + H is
            itself a multiple of 64), kernel binaries and weights, each with its own SHA-256
            in the header

Weights are sections too, so a model read from a file can map them instead of copying.

The records, constants and limits are in ``ge.runtime._om_data``, writing (``plan_data``,
``pack``) in ``ge.runtime._om_write``, reading and every check on it (``unpack``) in
``ge.runtime._om_read``; this module is their one public face.
"""

from ge.runtime._om_data import (
    DTYPES,
    FORMAT_VERSION,
    MAGIC,
    MAX_ARGS,
    MAX_BLOCK_DIM,
    MAX_BUFFER_BYTES,
    MAX_DEPTH,
    MAX_DIMS,
    MAX_HEADER_BYTES,
    BufferData,
    GraphEntry,
    HostTaskData,
    KernelTaskData,
    ModelData,
    ModelFormatError,
    PlanData,
    Translate,
)
from ge.runtime._om_read import unpack
from ge.runtime._om_write import pack, plan_data

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_ARGS",
    "MAX_BLOCK_DIM",
    "MAX_BUFFER_BYTES",
    "MAX_DEPTH",
    "MAX_DIMS",
    "MAX_HEADER_BYTES",
    "BufferData",
    "GraphEntry",
    "HostTaskData",
    "KernelTaskData",
    "ModelData",
    "ModelFormatError",
    "PlanData",
    "Translate",
    "pack",
    "plan_data",
    "unpack",
]
