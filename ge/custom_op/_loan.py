"""What one run of an execute-path node lends, built once and re-pointed for every run.

A ``Loan`` is the whole set of borrowed objects an ``execute`` callback receives: the
``EagerOpExecutionContext``, its ``RuntimeAttrs``, a ``ge.runtime.Tensor`` per input
instance, per output (what ``malloc_output_tensor`` returns when asked for the shape and
format ``infer_meta`` gave) and per ``Tensor`` attribute, with the views each Tensor holds
(``StorageShape``, its two ``Shape``\\ s, ``StorageFormat``, ``ExpandDimsType``). Building them
costs a few dozen Python calls; a run of the execute path must cost as few as it can, so a
plan builds a loan once and every run re-points it:

* ``open(addrs, stream)`` writes this run's buffer addresses into the Tensors, puts back the
  shapes and formats the plan fixed when a callback edited a live view (every mutator of a
  view marks the loan's lease ``edited``, ``ge.runtime._checks._edit``: edits never leak into
  the next run, and a run that edited nothing restores nothing), clears the context's
  per-run state and makes every object usable;
* ``close()`` expires them all at once (one flag per lease, no object is made), frees the
  run's workspaces and says whether the loan can be lent again.

**Expiry still holds for objects a callback kept.** Reusing an object is sound only if
nothing outside the loan refers to it: a Tensor kept from run 1 must not come back to life
in run 2. ``close()`` compares every object's reference count with the count it had when
the loan was built (``sys.getrefcount``, one C call each); a single extra reference — a
callback that stored ``ctx``, ``x`` or ``x.shape`` somewhere, a traceback that holds the
callback's frame — retires the loan for good (its objects stay expired) and the next run
builds a new one. A loan is taken from and given back to its plan's free list
(``list.pop``/``append``, atomic), so concurrent runs of one plan never share one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.custom_op.execution_context import EagerOpExecutionContext, OutputSlot, RuntimeAttrs
from ge.graph.types import AttrValueType, DataType
from ge.runtime import memory
from ge.runtime._checks import _Lease
from ge.runtime.format import StorageFormat
from ge.runtime.types import Tensor, TensorPlacement

__all__ = ["LentTensor", "Loan", "LoanSpec"]

_ON_DEVICE = TensorPlacement.ON_DEVICE_HBM
_refcount = sys.getrefcount

# per lent Tensor, fixed by the plan: (buffer, dims, data type, format template, bytes)
LentTensor = tuple[int, list[int], DataType, StorageFormat, int]


class LoanSpec:
    """What a loan is built from (fixed when the plan was built)."""

    __slots__ = (
        "attr_kinds",
        "attr_names",
        "attr_values",
        "inputs",
        "ir_inputs",
        "output_slots",
        "outputs",
        "tensor_attrs",
    )

    def __init__(
        self,
        inputs: Sequence[LentTensor],
        ir_inputs: Sequence[tuple[str, list[int]]],
        outputs: Sequence[LentTensor],
        output_slots: Sequence[tuple[str, int, int]],
        attr_names: Sequence[str],
        attr_kinds: Sequence[AttrValueType],
        attr_values: Sequence[Any],
        tensor_attrs: dict[int, LentTensor],
    ) -> None:
        self.inputs = list(inputs)
        self.ir_inputs = list(ir_inputs)
        self.outputs = list(outputs)  # the Tensor malloc_output_tensor returns by default
        self.output_slots = list(output_slots)  # per output: (name, elements, bytes)
        self.attr_names = list(attr_names)
        self.attr_kinds = list(attr_kinds)
        self.attr_values = list(attr_values)  # immutable values; a Tensor attr's is replaced
        self.tensor_attrs = dict(tensor_attrs)  # attr index -> its constant's view


def _lend(lent: LentTensor, lease: _Lease) -> Tensor:
    """A Tensor of ``lent``'s shape and format (address 0 until a run opens the loan) whose
    views all hold ``lease``."""
    _, dims, dtype, fmt, nbytes = lent
    tensor = Tensor._lend(0, dims, dims, dtype, fmt, _ON_DEVICE, nbytes)
    for view in _family(tensor):
        view._lease = lease
    return tensor


def _family(tensor: Tensor) -> tuple[Any, ...]:
    """The Tensor and every view it hands out."""
    shape, form = tensor._shape, tensor._format
    return (tensor, shape, shape._origin, shape._storage, form, form._expand)


# what open() writes back into one Tensor after a run that edited a view: (origin Shape,
# storage Shape, dims, their element count, StorageFormat, origin format, storage format,
# ExpandDimsType, rule size, rule mask)
_Record = tuple[Any, Any, list[int], int, StorageFormat, Any, Any, Any, int, int]


def _record(tensor: Tensor, lent: LentTensor) -> _Record:
    _, dims, _, fmt, _ = lent
    shape, form = tensor._shape, tensor._format
    rule = fmt._expand
    return (
        shape._origin,
        shape._storage,
        list(dims),
        shape._storage._count,  # the plan's dims, as the loan is built
        form,
        fmt._origin,
        fmt._storage,
        form._expand,
        rule._size,
        rule._mask,
    )


class Loan:
    """The borrowed objects of one run of an execute-path node (see the module doc).

    ``args`` are the callback's positional arguments (``None`` when they must be made per run:
    a dynamic input's list is the callback's to mutate), ``kwargs`` its attributes (used as
    they are only when none is a list, for the same reason)."""

    __slots__ = (
        "_attrs",
        "_blocks",
        "_counts",
        "_family",
        "_nones",
        "_records",
        "_slots",
        "_tensors",
        "args",
        "ctx",
        "inputs",
        "kwargs",
        "lease",
    )

    def __init__(self, spec: LoanSpec) -> None:
        self.lease = lease = _Lease()
        lease.alive = False
        self.inputs = [_lend(t, lease) for t in spec.inputs]
        views = [_lend(t, lease) for t in spec.outputs]
        tensors = {k: _lend(t, lease) for k, t in spec.tensor_attrs.items()}
        values = list(spec.attr_values)
        for k, tensor in tensors.items():
            values[k] = tensor
        self._attrs = RuntimeAttrs(spec.attr_kinds, values)
        slots = [
            OutputSlot(name, 0, lent[2], elements, nbytes)
            for (name, elements, nbytes), lent in zip(spec.output_slots, spec.outputs, strict=True)
        ]
        self._blocks: list[Any] = []
        self.ctx = EagerOpExecutionContext(
            self.inputs, spec.ir_inputs, slots, self._attrs, 0, self._malloc, views
        )
        self.ctx._invalidate()
        self._nones: list[None] = [None] * len(slots)
        lent = [*self.inputs, *views, *tensors.values()]
        templates = [*spec.inputs, *spec.outputs, *spec.tensor_attrs.values()]
        self._records = [_record(t, s) for t, s in zip(lent, templates, strict=True)]
        self._tensors = [(t, s[0]) for t, s in zip(lent, templates, strict=True)]
        self._slots = list(zip(slots, views, strict=True))
        self._family = [self.ctx, self._attrs, *(v for t in lent for v in _family(t))]
        self.args: tuple[Any, ...] | None = None
        self.kwargs: dict[str, Any] = dict(zip(spec.attr_names, values, strict=True))
        self._counts: tuple[int, ...] = ()

    @classmethod
    def new(cls, spec: LoanSpec, args: Callable[[list[Tensor]], tuple[Any, ...]] | None) -> Loan:
        """A loan with the reference counts ``close`` compares against taken now, when nothing
        but the loan refers to its objects. ``args`` makes the callback's positional
        arguments from the input Tensors once (``None``: per run)."""
        loan = cls(spec)
        if args is not None:
            loan.args = args(loan.inputs)
        loan._counts = loan._refcounts()
        return loan

    def _refcounts(self) -> tuple[int, ...]:
        return tuple(map(_refcount, self._family))

    def set_attr_values(self, values: list[Any]) -> None:
        """What ``RuntimeAttrs`` reads in this run (the copies the callback received)."""
        self._attrs._values = values

    def _malloc(self, nbytes: int) -> int:
        block = memory.malloc(max(nbytes, 1))
        self._blocks.append(block)
        return int(block.addr)

    def open(self, addrs: np.ndarray, stream: int) -> None:
        """Point the loan at this run's buffers and stream and make it usable (the shapes
        and formats put back only if the last run edited a view)."""
        item = addrs.item
        for tensor, buf in self._tensors:
            tensor._addr = item(buf)
        for slot, view in self._slots:
            slot.addr = view._addr
        lease, ctx = self.lease, self.ctx
        if lease.edited:
            self._restore()
        ctx._stream = stream
        lease.alive = ctx._alive = self._attrs._alive = True

    def _restore(self) -> None:
        """Put back every shape and format the plan fixed (a callback edited a view)."""
        for origin, storage, dims, count, form, fo, fs, rule, size, mask in self._records:
            origin._dims[:] = dims
            storage._dims[:] = dims
            origin._count = storage._count = count
            form._origin, form._storage, rule._size, rule._mask = fo, fs, size, mask
        self.lease.edited = False

    def close(self) -> bool:
        """Expire everything lent, free the run's workspaces; whether the loan may be lent
        again (nothing outside it refers to its objects). Ending the lease expires every
        view; a Tensor's own accessors read its fields with no lease test
        (``ge.runtime.types``), so the Tensors of a loan something kept are invalidated
        (their fields cleared) before it is retired: those of a loan lent again are reachable
        by no one until the next ``open``."""
        ctx = self.ctx
        self.lease.alive = ctx._alive = self._attrs._alive = False
        lent = ctx._lent
        if lent:  # Tensors made during the run (an output asked for in another layout)
            for tensor in lent:
                tensor._invalidate()
            lent.clear()
        blocks = self._blocks
        while blocks:
            memory.free(blocks.pop())
        ctx._produced[:] = self._nones
        if ctx._refs:
            ctx._refs.clear()
        del ctx
        if tuple(map(_refcount, self._family)) == self._counts:
            return True
        for tensor, _ in self._tensors:  # kept: retired, its Tensors' fields cleared too
            tensor._invalidate()
        return False
