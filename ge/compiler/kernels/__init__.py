"""``ge.compiler.kernels``: how ops become kernel launches.

One place per op: what an op *is* lives on its ``OpDef`` (``ge.ops``), including the scalar
body of an elementwise op (``OpDef.scalar``), from which its single-op kernel and its
fusibility (``OpDef.fusible``) follow. What only the compiler knows about an op — a kernel
lowering of its own, or the fold of a reduction that can head a fused epilogue — is an
``OpKernels`` record registered for the op's ``OpDef`` by an explicit ``register_kernels`` call
in the kernels module of its family (``elementwise``, ``rows``, ``matmul``, ...). ``kernels_of``
gives an op's record: the registered one, else one derived from the ``OpDef`` alone, so an op
registered at run time (a Python custom op) is lowered and fused like a built-in.

What a node is lowered by (``OpKernels.lower``): the op's own ``OpDef.lowering`` (a Python
custom op's implementation), then the registered lowering, else, for an op with a scalar body,
the single-op elementwise kernel; a lowering returning ``None`` passes to the next, and the last
resort is the op's numpy reference.

Decisions: the records are keyed by the ``OpDef`` object, not its type string, so a custom op
unregistered and registered again with another definition never sees the old record (records
of ops registered at run time are weakly held). ``register_kernels`` refuses a second record
for an op, and an op that carries its own ``OpDef.lowering`` (it would shadow the record).
``LOWERINGS`` (here), ``REDUCTIONS`` (``rows``) and ``FUSIBLE_OPS`` (``elementwise``) are
read-only views derived from the records and the ``OpDef``s, for readers of the old tables.

    >>> from ge.ops.registry import get_op
    >>> kernels_of(get_op("ReduceSum")).row_reduction
    'sum'
    >>> "Add" in LOWERINGS, get_op("Add").fusible, get_op("BiasAdd").fusible
    (True, True, False)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ge.compiler.lower import LowerContext
from ge.error import RegistryError
from ge.ops.registry import get_op, registry
from ge.ops.schema import OpDef
from ge.runtime.plan import HostTask, KernelTask

__all__ = [
    "LOWERINGS",
    "Lowering",
    "OpKernels",
    "first_lowering",
    "kernels_of",
    "register_kernels",
]

Lowering = Callable[[LowerContext], list[KernelTask | HostTask] | None]


def first_lowering(*lowerings: Lowering | None) -> Lowering | None:
    """The first of ``lowerings`` (``None`` ones left out) that gives tasks: a fast path,
    then a general one, say (the reference runs when none does)."""
    present = [f for f in lowerings if f is not None]
    if len(present) <= 1:
        return present[0] if present else None

    def lower(ctx: LowerContext) -> list[KernelTask | HostTask] | None:
        for f in present:
            tasks = f(ctx)
            if tasks is not None:
                return tasks
        return None

    return lower


@dataclass(frozen=True, slots=True)
class OpKernels:
    """The compiler's record of one op. ``lowering``: its kernel path (registered, or the
    elementwise kernel of its scalar body); ``row_reduction``: the fold (``"sum"``, ``"max"``,
    ...) of a trailing-axes reduction that can head a ``FusedReduce``; ``lower``: what a node
    of the op is lowered by (its ``OpDef.lowering``, then ``lowering``)."""

    lowering: Lowering | None = None
    row_reduction: str | None = None
    lower: Lowering | None = field(default=None, compare=False)


_KERNELS: dict[OpDef, OpKernels] = {}  # built-ins and registered records: a plain dict read
_RUNTIME: weakref.WeakKeyDictionary[OpDef, OpKernels] = weakref.WeakKeyDictionary()
_REGISTERED: weakref.WeakSet[OpDef] = weakref.WeakSet()  # by register_kernels (not derived)
_LOCK = threading.Lock()


def _scalar_lowering(op: OpDef) -> Lowering | None:
    if op.scalar is None:
        return None
    from ge.compiler.kernels.elementwise import lower_elementwise  # noqa: PLC0415  (imports us)

    return lower_elementwise


def _record(op: OpDef, lowering: Lowering | None, row_reduction: str | None) -> OpKernels:
    compiled = lowering if lowering is not None else _scalar_lowering(op)
    return OpKernels(compiled, row_reduction, first_lowering(op.lowering, compiled))


def register_kernels(
    op_type: str, *, lowering: Lowering | None = None, row_reduction: str | None = None
) -> OpKernels:
    """Register the compiler's record of ``op_type`` (a registered op); returns it.

    ``lowering`` turns a node into tasks (``None`` from it: the op's scalar kernel or numpy
    reference runs); ``row_reduction`` names the fold of a trailing-axes reduction that can
    head a fused epilogue. An op with a scalar body needs no call: its kernel is derived."""
    op = get_op(op_type)
    if op.lowering is not None:
        raise RegistryError(
            f"op type '{op_type}' carries its own OpDef.lowering; register its kernels there"
        )
    record = _record(op, lowering, row_reduction)
    with _LOCK:
        if op in _REGISTERED:
            raise RegistryError(f"kernels of op type '{op_type}' are already registered")
        _REGISTERED.add(op)
        (_KERNELS if op.source == "ge" else _RUNTIME)[op] = record
    return record


def kernels_of(op: OpDef) -> OpKernels:
    """The compiler's record of ``op``: the registered one, else the one its ``OpDef`` gives
    (its own ``lowering``, and the elementwise kernel of its scalar body)."""
    record = _KERNELS.get(op)
    if record is not None:
        return record
    record = _RUNTIME.get(op)
    if record is None:
        record = _record(op, None, None)
        with _LOCK:
            (_KERNELS if op.source == "ge" else _RUNTIME).setdefault(op, record)
    return record


class _Lowerings(Mapping[str, Lowering]):
    """Op type -> kernel lowering, for every registered op that has one (derived from the
    records; an op whose only path is its own ``OpDef.lowering`` is not listed)."""

    def __getitem__(self, op_type: str) -> Lowering:
        ops = registry()
        lowering = kernels_of(ops.get(op_type)).lowering if op_type in ops else None
        if lowering is None:
            raise KeyError(op_type)
        return lowering

    def __iter__(self) -> Iterator[str]:
        return iter([op.type for op in registry() if kernels_of(op).lowering is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


LOWERINGS: Mapping[str, Lowering] = _Lowerings()


def _register_builtin() -> None:
    from ge.compiler.kernels import (  # noqa: F401, PLC0415  (they call register_kernels)
        control,
        debug,
        elementwise,
        fused,
        indexing,
        linalg,
        matmul,
        movement,
        reduction,
        rows,
        sorting,
    )


_register_builtin()
