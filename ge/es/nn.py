"""``ge.es.nn``: builder functions for neural-network ops: activations, softmax, layer norm, matmul.

Generated from the op registry on first access (see ``ge.es._plugins``)::

    from ge.es.nn import <OpType>
"""

from ge.es._plugins import module_hooks

__getattr__, __dir__ = module_hooks("nn")
