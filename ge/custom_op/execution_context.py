"""The objects a running ``execute`` callback borrows: ``EagerOpExecutionContext`` and
``RuntimeAttrs`` (GE_REFERENCE.md §7.4, GE_ERRORS.md §10.4).

The engine lends a context to each run of a custom-op node (``ge.custom_op._eager``), hands it
to ``get_execute_ctx()`` (or, for a legacy ``execute(self, ctx)``, as the argument) and
invalidates it, its ``RuntimeAttrs`` and every ``ge.runtime.Tensor`` it lent the moment the
callback returns: any later use raises ``RuntimeError`` ("Borrowed native object has expired",
"Borrowed runtime attrs have expired", or the Tensor's own expiry message), never touches
memory. Query results (ints, lists, enum members) are plain copies and stay usable. The
context and its Tensors are built once per plan and re-pointed for each run, unless a callback
kept one of them: then they stay expired and the next run gets new ones
(``ge.custom_op._loan``).

Indexes follow GE's compute node: ``get_input_tensor(i)`` / ``get_input_num()`` count the
*present* input instances (an absent optional input takes no index; the instances of a dynamic
input are consecutive), ``get_required_input_tensor`` / ``get_optional_input_tensor`` /
``get_dynamic_input_*`` take IR input indexes, outputs are flattened output instances.

Decisions where GE-PY is silent (ours):

* **Outputs are the plan's own buffers.** The task plan has already placed every output of the
  node (the memory plan reuses arena space by liveness), so ``malloc_output_tensor(i, shape,
  format, dtype)`` returns a view of output ``i``'s buffer and copies nothing. It must ask for
  what ``infer_meta`` gave: the same data type and the same element count (the storage shape
  may differ, e.g. ``[8, 1024]`` for ``[8192]``); anything else raises "Failed to malloc output
  tensor: ..." saying what was expected. Calling it again for the same output returns the same
  Tensor.
* ``make_output_ref_input(o, i)`` returns input instance ``i``'s Tensor as output ``o``: the
  callback writes the input in place (``mutates_args``), and once it returned (and its
  launches ran) the input's bytes are copied into output ``o``'s buffer, so the built-ins after
  it read the result from the plan as usual. Data type and byte size must match.
* ``get_output_tensor(i)`` is the Tensor of output ``i`` once ``malloc_output_tensor`` or
  ``make_output_ref_input`` made it ("Failed to get output tensor" before, as GE's output is
  null until allocated). An ``execute`` that returns without making every output fails the
  node, naming the outputs it left out.
* ``malloc_workspace(size)`` returns the address of ``size`` bytes of device memory (at least
  one byte), freed after the callback's launches ran.
* ``get_stream()`` is the integer handle of a stream owned by the run: launches queued on it
  run in order with the rest of the task plan, and the plan goes on only once they finished
  (in ``run_graph`` on the caller's thread; in ``run_graph_with_stream_async`` as part of the
  user's stream's work, so they are ordered with everything else on that stream). Launches
  queued on any other stream are not waited for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ge.custom_op._borrowed import EXPIRED, Borrowed
from ge.error import GeError, GeTypeError
from ge.graph.types import AttrValueType, DataType
from ge.runtime._checks import _check_data_type
from ge.runtime.format import StorageFormat
from ge.runtime.shape import StorageShape
from ge.runtime.types import Tensor, TensorPlacement, _byte_size

__all__ = ["EagerOpExecutionContext", "RuntimeAttrs"]

VT = AttrValueType
_ON_DEVICE = TensorPlacement.ON_DEVICE_HBM

# attribute kinds GE's RuntimeAttrs getters read, with the message each gives on a miss
_SCALAR_GETTERS = {
    "get_int": (VT.VT_INT, "VT_INT"),
    "get_float": (VT.VT_FLOAT, "VT_FLOAT"),
    "get_bool": (VT.VT_BOOL, "VT_BOOL"),
    "get_str": (VT.VT_STRING, "VT_STRING"),
    "get_data_type": (VT.VT_DATA_TYPE, "VT_DATA_TYPE"),
    "get_tensor": (VT.VT_TENSOR, "VT_TENSOR"),
}


def _index(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeTypeError(f"{what} must be an int, got {type(value).__name__}")
    return value


class RuntimeAttrs(Borrowed):
    """The node's attributes by IR index, read with typed getters (``get_int(0)``, …,
    ``get_list_list_int(i)``); borrowed like the context that returned it.

    Values come back as plain copies: ``int``, ``float``, ``bool``, ``str``, ``DataType``,
    lists of those, ``list[list[int]]``; ``get_tensor(i)`` returns a borrowed
    ``ge.runtime.Tensor`` view of the attribute's value in device memory."""

    __slots__ = ("_kinds", "_values")
    _expired_message = "Borrowed runtime attrs have expired"

    def __init__(self, kinds: Sequence[AttrValueType], values: Sequence[Any]) -> None:
        super().__init__()
        self._kinds = list(kinds)
        self._values = list(values)

    def get_attr_num(self) -> int:
        """How many attributes the op declares."""
        self._check()
        return len(self._kinds)

    def _get(self, index: object, kind: AttrValueType, miss: str) -> Any:
        self._check()
        i = _index(index, "index")
        if not 0 <= i < len(self._kinds) or self._kinds[i] is not kind:
            raise GeError(miss.format(i=i))
        return self._values[i]

    def _scalar(self, getter: str, index: object) -> Any:
        kind, name = _SCALAR_GETTERS[getter]
        return self._get(index, kind, f"Failed to get runtime attr type[{name}] at index[{{i}}]")

    def get_int(self, index: int) -> int:
        return int(self._scalar("get_int", index))

    def get_float(self, index: int) -> float:
        return float(self._scalar("get_float", index))

    def get_bool(self, index: int) -> bool:
        return bool(self._scalar("get_bool", index))

    def get_str(self, index: int) -> str:
        return str(self._scalar("get_str", index))

    def get_data_type(self, index: int) -> DataType:
        return DataType(self._scalar("get_data_type", index))

    def get_tensor(self, index: int) -> Tensor:
        value: Tensor = self._scalar("get_tensor", index)
        return value

    def get_list_int(self, index: int) -> list[int]:
        return [int(v) for v in self._get(index, VT.VT_LIST_INT, "Runtime attr list is null")]

    def get_list_float(self, index: int) -> list[float]:
        values = self._get(index, VT.VT_LIST_FLOAT, "Runtime attr list is null")
        return [float(v) for v in values]

    def get_list_bool(self, index: int) -> list[bool]:
        miss = "Failed to get runtime attr type[VT_LIST_BOOL] at index[{i}]"
        return [bool(v) for v in self._get(index, VT.VT_LIST_BOOL, miss)]

    def get_list_str(self, index: int) -> list[str]:
        miss = "Failed to get runtime attr type[VT_LIST_STRING] at index[{i}]"
        return [str(v) for v in self._get(index, VT.VT_LIST_STRING, miss)]

    def get_list_data_type(self, index: int) -> list[DataType]:
        miss = "Failed to get runtime attr type[VT_LIST_DATA_TYPE] at index[{i}]"
        return [DataType(v) for v in self._get(index, VT.VT_LIST_DATA_TYPE, miss)]

    def get_list_list_int(self, index: int) -> list[list[int]]:
        values = self._get(index, VT.VT_LIST_LIST_INT, "Runtime attr nested int list is null")
        return [[int(v) for v in row] for row in values]


class OutputSlot:
    """What the engine knows about one output instance of the node for one run."""

    __slots__ = ("addr", "data_type", "elements", "name", "nbytes")

    def __init__(self, name: str, addr: int, data_type: DataType, elements: int, nbytes: int):
        self.name = name
        self.addr = addr
        self.data_type = data_type
        self.elements = elements
        self.nbytes = nbytes


class EagerOpExecutionContext(Borrowed):
    """The context of one run of a schema-bound ``execute`` (``get_execute_ctx()``), or the
    argument of a legacy ``execute(self, ctx)``. Borrowed: every method raises
    ``RuntimeError("Borrowed native object has expired")`` once the callback returned."""

    __slots__ = (
        "_attrs",
        "_dynamic",
        "_inputs",
        "_ir_inputs",
        "_lent",
        "_malloc",
        "_outputs",
        "_produced",
        "_refs",
        "_stream",
        "_views",
        "_workspaces",
    )

    def __init__(
        self,
        inputs: Sequence[Tensor],
        ir_inputs: Sequence[tuple[str, list[int]]],
        outputs: Sequence[OutputSlot],
        attrs: RuntimeAttrs,
        stream: int,
        malloc: Callable[[int], int],
        views: Sequence[Tensor | None] = (),
    ) -> None:
        super().__init__()
        self._inputs = list(inputs)
        self._ir_inputs = list(ir_inputs)  # per IR input: (kind, its instance indexes)
        self._outputs = list(outputs)
        self._attrs = attrs
        self._stream = stream
        self._malloc = malloc
        # per output, the Tensor malloc_output_tensor returns when asked for exactly its
        # shape and format (re-pointed each run by the owner, ge.custom_op._loan), or None
        self._views: list[Tensor | None] = list(views) or [None] * len(outputs)
        self._produced: list[Tensor | None] = [None] * len(outputs)
        self._refs: dict[int, int] = {}  # output index -> input instance it refers to
        self._lent: list[Tensor] = []  # Tensors made during the run, to invalidate afterwards
        self._workspaces = 0
        self._dynamic = 0

    def _invalidate(self) -> None:
        """Expire the context, its attributes and the Tensors made during the run. The
        Tensors it was given (inputs, ``views``) are its owner's to expire."""
        self._alive = False
        self._attrs._alive = False
        for tensor in self._lent:
            tensor._invalidate()

    # --- inputs -----------------------------------------------------------------------------
    def get_input_num(self) -> int:
        """How many input instances are present (absent optional inputs do not count)."""
        self._check()
        return len(self._inputs)

    def get_input_tensor(self, index: int) -> Tensor:
        """Input instance ``index`` (``RuntimeError`` "Failed to get input tensor" if none)."""
        self._check()
        i = _index(index, "index")
        if not 0 <= i < len(self._inputs):
            raise GeError("Failed to get input tensor")
        return self._inputs[i]

    def _ir(self, ir_index: object, message: str) -> tuple[str, list[int]]:
        i = _index(ir_index, "ir_index")
        if not 0 <= i < len(self._ir_inputs):
            raise GeError(message)
        return self._ir_inputs[i]

    def get_required_input_tensor(self, ir_index: int) -> Tensor:
        """The tensor of IR input ``ir_index`` (a required one, or an optional one present)."""
        self._check()
        kind, instances = self._ir(ir_index, "Failed to get required input tensor")
        if kind == "dynamic" or not instances:
            raise GeError("Failed to get required input tensor")
        return self._inputs[instances[0]]

    def get_optional_input_tensor(self, ir_index: int) -> Tensor | None:
        """The tensor of optional IR input ``ir_index``, or ``None`` when it is absent."""
        self._check()
        kind, instances = self._ir(ir_index, "Failed to get optional input tensor")
        if kind == "dynamic":
            raise GeError("Failed to get optional input tensor")
        return self._inputs[instances[0]] if instances else None

    def get_dynamic_input_num(self, ir_index: int) -> int:
        """How many instances dynamic IR input ``ir_index`` has."""
        self._check()
        kind, instances = self._ir(ir_index, "Failed to get dynamic input instance info")
        if kind != "dynamic":
            raise GeError("Failed to get dynamic input instance info")
        return len(instances)

    def get_dynamic_input_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        """Instance ``relative_index`` of dynamic IR input ``ir_index``."""
        self._check()
        kind, instances = self._ir(ir_index, "Failed to get dynamic input tensor")
        k = _index(relative_index, "relative_index")
        if kind != "dynamic" or not 0 <= k < len(instances):
            raise GeError("Failed to get dynamic input tensor")
        return self._inputs[instances[k]]

    def get_attrs(self) -> RuntimeAttrs:
        """The node's attributes (``RuntimeAttrs``, borrowed like this context)."""
        self._check()
        return self._attrs

    # --- outputs, workspaces, stream ------------------------------------------------------
    def _output(self, index: object, failure: str) -> tuple[int, OutputSlot]:
        i = _index(index, "index")
        if not 0 <= i < len(self._outputs):
            raise GeError(
                f"{failure}: output index {i} is out of range for output count {len(self._outputs)}"
            )
        return i, self._outputs[i]

    def malloc_output_tensor(
        self, index: int, shape: StorageShape, format: StorageFormat, dtype: DataType
    ) -> Tensor:
        """Output ``index`` as a Tensor of ``shape``/``format``/``dtype``: a view of the
        output's buffer in the task plan (see the module docstring for what must match).

        The checks are written out inline (no helper calls on the way): this runs once per
        output on every run of the execute path."""
        if not self._alive:
            raise GeError(EXPIRED)
        if type(shape) is not StorageShape or type(format) is not StorageFormat:
            _check_layout_types(shape, format)
        if type(dtype) is not DataType or dtype is DataType.DT_MAX:
            dtype = _check_data_type(dtype)
        outputs = self._outputs
        if type(index) is int and 0 <= index < len(outputs):
            i, slot = index, outputs[index]
        else:
            i, slot = self._output(index, "Failed to malloc output tensor")
        lease = shape._lease
        if lease is not None and not lease.alive:
            shape._check()  # raises: the shape is a view that expired
        lease = format._lease
        if lease is not None and not lease.alive:
            format._check()  # the same for the format
        origin, storage = shape._origin._dims, shape._storage._dims
        elements = shape._storage._count  # storage.size (the count Shape keeps)
        if dtype is not slot.data_type or elements != slot.elements:
            raise GeError(
                f"Failed to malloc output tensor: output {i} ('{slot.name}') is "
                f"{slot.elements} elements of {slot.data_type.name} (what infer_meta gave), "
                f"asked for {elements} of {dtype.name} (storage shape {list(storage)})"
            )
        existing = self._produced[i]
        refs = self._refs
        if existing is not None and i not in refs:
            return existing
        if refs:
            refs.pop(i, None)
        tensor = self._views[i]
        if tensor is None or not (  # exactly the shapes and the format the view has
            tensor._shape._storage._dims == storage
            and tensor._shape._origin._dims == origin
            and tensor._format._origin is format._origin
            and tensor._format._storage is format._storage
            and tensor._format._expand._size == format._expand._size
            and tensor._format._expand._mask == format._expand._mask
        ):
            nbytes = slot.nbytes
            tensor = Tensor._lend(slot.addr, origin, storage, dtype, format, _ON_DEVICE, nbytes)
            self._lent.append(tensor)
        self._produced[i] = tensor
        return tensor

    def make_output_ref_input(self, output_index: int, input_index: int) -> Tensor:
        """Output ``output_index`` is input instance ``input_index``, written in place; its
        bytes are copied into the output once the callback's launches ran."""
        self._check()
        failure = "Failed to make output reference input"
        i, slot = self._output(output_index, failure)
        k = _index(input_index, "input_index")
        if not 0 <= k < len(self._inputs):
            raise GeError(
                f"{failure}: input index {k} is out of range for input count {len(self._inputs)}"
            )
        source = self._inputs[k]
        if source.data_type is not slot.data_type or source.size != slot.nbytes:
            raise GeError(
                f"{failure}: input {k} ({source.size} bytes of {source.data_type.name}) does "
                f"not fit output {i} ('{slot.name}': {slot.nbytes} bytes of "
                f"{slot.data_type.name})"
            )
        self._refs[i] = k
        self._produced[i] = source
        return source

    def get_output_tensor(self, index: int) -> Tensor:
        """Output ``index`` once made (``RuntimeError`` "Failed to get output tensor" before)."""
        self._check()
        i = _index(index, "index")
        tensor = self._produced[i] if 0 <= i < len(self._produced) else None
        if tensor is None:
            raise GeError("Failed to get output tensor")
        return tensor

    def malloc_workspace(self, size: int) -> int:
        """The address of ``size`` bytes of device memory for this run's launches."""
        self._check()
        nbytes = _index(size, "size")
        if nbytes < 0:
            raise GeError(f"Failed to malloc workspace: size must be >= 0, got {nbytes}")
        try:
            return self._malloc(nbytes)
        except GeError as e:
            raise GeError(f"Failed to malloc workspace: {e}") from e

    def get_stream(self) -> int:
        """The handle of the stream this run's launches must be queued on."""
        if self._alive:
            return self._stream
        raise GeError(EXPIRED)


def _check_layout_types(shape: object, format: object) -> None:
    if not isinstance(shape, StorageShape):
        raise GeError(
            f"Unable to cast Python instance of type {type(shape).__name__} to C++ type "
            f"'gert::StorageShape'"
        )
    if not isinstance(format, StorageFormat):
        raise GeError(
            f"Unable to cast Python instance of type {type(format).__name__} to C++ type "
            f"'gert::StorageFormat'"
        )


def output_slot(name: str, addr: int, data_type: DataType, elements: int) -> OutputSlot:
    """The slot of an output of ``elements`` elements of ``data_type`` at ``addr``."""
    nbytes = _byte_size(elements, data_type)
    return OutputSlot(name, addr, data_type, elements, 0 if nbytes is None else nbytes)
