"""``ge``: GraphEngine's Python API on a CPU device made of Numba kernels.

Graphs are built with ``ge.es`` (or traced with ``@ge.jit``), stored in the ``ge.graph`` IR,
compiled by ``ge.compiler`` and run by ``ge.runtime``. This top level re-exports the names users
reach for most.

    >>> import ge
    >>> ge.Graph("g").name, ge.DataType.DT_FLOAT.name
    ('g', 'DT_FLOAT')
"""

from ge import (
    custom_op,  # noqa: F401  (looks up unknown op types on ASCEND_CUSTOM_OPP_PATH)
    ops,  # the op registry is always present (Graph.verify checks ops against it)
)
from ge.error import GeError
from ge.graph import DataType, Format, Graph, Placement, Tensor

__version__ = "0.1.0"

__all__ = [
    "DataType",
    "Format",
    "GeError",
    "Graph",
    "Placement",
    "Tensor",
    "__version__",
    "jit",
    "ops",
]


def __getattr__(name: str) -> object:
    if name == "jit":  # imported on first use: tracing pulls in the builder and the compiler
        import importlib  # noqa: PLC0415

        return importlib.import_module("ge.jit")
    raise AttributeError(f"module 'ge' has no attribute {name!r}")
