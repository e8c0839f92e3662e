"""``ge``: GraphEngine's Python API on a CPU device made of Numba kernels.

Graphs are built with ``ge.es`` (or traced with ``@ge.jit``), stored in the ``ge.graph`` IR,
compiled by ``ge.compiler`` and run by ``ge.runtime``. This top level re-exports the names users
reach for most.

    >>> import ge
    >>> ge.Graph("g").name, ge.DataType.DT_FLOAT.name
    ('g', 'DT_FLOAT')
"""

import importlib

from ge.error import GeError

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

# imported on first use, so that ``import ge.runtime`` (loading and running offline models)
# pulls in neither the IR, the op registry nor the compiler
_LAZY_NAMES = {name: "ge.graph" for name in ("DataType", "Format", "Graph", "Placement", "Tensor")}
_LAZY_MODULES = frozenset({"custom_op", "jit", "ops"})


def __getattr__(name: str) -> object:
    module = _LAZY_NAMES.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f"ge.{name}")
    raise AttributeError(f"module 'ge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
