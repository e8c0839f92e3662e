"""``ge.es.array``: builder functions for array ops: graph I/O, constants, shape and data movement.

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.array import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("array")
