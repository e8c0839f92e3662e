"""``ge.es.math``: builder functions for math ops: elementwise arithmetic, comparisons, reductions.

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.math import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("math")
