"""``ge.es.all``: builder functions for every registered op.

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.all import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("all")
