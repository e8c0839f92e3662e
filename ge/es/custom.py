"""``ge.es.custom``: builder functions for the ops registered at run time (Python custom ops).

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.custom import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("custom")
