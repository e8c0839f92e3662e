"""``ge.es``: build GE graphs eagerly, one op call at a time (GE-PY's ES module).

``GraphBuilder`` creates inputs and constants; ``TensorHolder`` values combine with Python and
numpy operators; every registered op has a generated function (``ge.es.Add``, ``ge.es.If``),
also grouped in plugin modules (``ge.es.math``, ``ge.es.nn``, ``ge.es.array``,
``ge.es.control``, ``ge.es.all``, ``ge.es.custom``). Shapes and dtypes are inferred as each op
is created, so errors point at the line that caused them. Installed plugins (entry points
of the group ``ge.es.plugins``) load once, when ``ge.es`` is imported, and are importable as
``ge.es.<name>``; one that fails prints a line and is absent (see ``ge.es._plugins``).

    >>> import numpy as np
    >>> from ge.es import GraphBuilder
    >>> import ge.es
    >>> b = GraphBuilder("demo")
    >>> x = b.create_input(0, shape=[2, 3])
    >>> y = ge.es.Relu(np.exp(x) - 1.0)
    >>> y.shape
    (2, 3)
"""

from typing import Any

from ge.es import all, array, control, custom, math, nn
from ge.es._plugins import get_plugin, list_plugins, load_all_plugins, op_function
from ge.es.graph_builder import GraphBuilder, InputType, attr_scope, control_dependency_scope
from ge.es.tensor_holder import TensorHolder
from ge.ops.registry import find_op, list_ops

__all__ = [  # noqa: RUF022  (GE-PY's names first, then the plugin modules)
    "GraphBuilder",
    "TensorHolder",
    "list_plugins",
    "get_plugin",
    "InputType",
    "attr_scope",
    "control_dependency_scope",
    "all",
    "array",
    "control",
    "custom",
    "math",
    "nn",
]


load_all_plugins()  # entry points of ge.es.plugins, once, after the names above (as GE-PY)


def __getattr__(name: str) -> Any:
    op = find_op(name)
    if op is None:
        raise AttributeError(f"module 'ge.es' has no attribute or op {name!r}")
    return op_function(op)


def __dir__() -> list[str]:
    return sorted({*globals(), *list_ops()})
