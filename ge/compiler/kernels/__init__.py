"""``ge.compiler.kernels``: how ops become kernel launches.

``LOWERINGS`` maps an op type to its lowering: a function from a ``LowerContext`` to the tasks
that compute the node (or ``None`` to fall back to the op's numpy reference for this node).
"""

from collections.abc import Callable

from ge.compiler.lower import LowerContext
from ge.compiler.plan import HostTask, KernelTask

__all__ = ["LOWERINGS"]

Lowering = Callable[[LowerContext], list[KernelTask | HostTask] | None]
LOWERINGS: dict[str, Lowering] = {}


def _register_builtin() -> None:
    from ge.compiler.kernels import (  # noqa: F401, PLC0415  (they fill LOWERINGS)
        control,
        elementwise,
        fused,
        matmul,
        movement,
        reduction,
        rows,
    )


_register_builtin()
