"""``ge.es.control``: builder functions for GE's control-flow ops (If, Case, While).

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.control import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("control")
