"""What a ``declare_launch_args`` callback borrows and builds: ``AnnotatedArgsContext``,
``AnnotatedKernelArgs``, ``WorkspaceAddr`` and ``AnnotatedKernelLaunchInfo`` (GE_REFERENCE.md
§7.5, GE_ERRORS.md §10.4 and §10.5).

``declare_launch_args(self, <inputs…>, <outputs…>, *, <attrs…>) -> None`` runs **once per task
plan**, when the plan is built (``ge.custom_op._eager``): it declares kernel launches whose
argument slots name the node's input and output instances, workspaces and scalars. Each
declared launch becomes a ``KernelTask`` of the plan — the same kind of task a built-in op's
kernel is — whose address slots are patched with the buffers' addresses on every run (graph
inputs and outputs where the caller put them, intermediates and workspaces in the plan's
arena). No Python runs per execution.

Decisions where GE-PY is silent (ours):

* The Tensors the callback receives carry shapes, formats and data types; ``addr`` is 0 (no
  memory exists when the plan is built; addresses are filled in per run), as in ``compile``.
  ``WorkspaceAddr.addr`` is 0 for the same reason; ``WorkspaceAddr.index`` counts the node's
  workspaces from 0.
* ``append_input`` / ``append_output`` take the Tensor for GE's signature; the slot is the
  instance index (the Tensor must be a live ``ge.runtime.Tensor``).
* A workspace is a buffer of the plan's arena, live only across the node's launches (the memory
  plan reuses its space elsewhere), at least 64-byte aligned like every arena buffer.
* ``get_stream_id()`` is 0: a plan runs on one stream.
* ``add_launch`` loads ``kernel_bin`` (a ``ge.runtime.compile_kernel`` binary) at once, once per
  distinct content per process, and looks ``kernel_name`` up in it: a corrupt binary, one built
  for CPU features this machine lacks, or a missing name raises ``RuntimeError`` "Failed to add
  annotated kernel launch: …" there, and ``args`` is consumed even so (as GE's text says).
* A ``declare_launch_args`` that declares no launch fails the compile (its outputs would never
  be written).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ge.custom_op._borrowed import EXPIRED as _EXPIRED
from ge.custom_op._borrowed import Borrowed as _Borrowed
from ge.error import GeError, GeTypeError, GeValueError
from ge.runtime.kernel import KernelBinary, KernelFunction, load_kernel_binary
from ge.runtime.types import Tensor

__all__ = [
    "AnnotatedArgsContext",
    "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo",
    "WorkspaceAddr",
    "loaded_function",
]

_CONSUMED = "AnnotatedKernelArgs has been consumed"
_U32 = 2**32
_U64 = 2**64


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _incompatible(api: str, detail: str) -> GeTypeError:
    return GeTypeError(f"{api}: incompatible function arguments: {detail}")


# --- launch info ------------------------------------------------------------------------------
class AnnotatedKernelLaunchInfo:
    """``AnnotatedKernelLaunchInfo(*, kernel_name, kernel_bin, block_dim, stream_id)``: which
    kernel of which binary a declared launch runs, with how many parallel blocks, on which
    stream. All arguments are keyword-only; values are checked as GE checks them."""

    __slots__ = ("_block_dim", "_kernel_bin", "_kernel_name", "_stream_id")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ("kernel_name", "kernel_bin", "block_dim", "stream_id")
        if args or set(kwargs) != set(names):
            raise GeTypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                "are supported: AnnotatedKernelLaunchInfo(*, kernel_name: str, kernel_bin: "
                "bytes, block_dim: int, stream_id: int)"
            )
        name, binary = kwargs["kernel_name"], kwargs["kernel_bin"]
        block_dim, stream_id = kwargs["block_dim"], kwargs["stream_id"]
        ok = (
            isinstance(name, str)
            and isinstance(binary, bytes)
            and _is_int(block_dim)
            and 0 <= block_dim < _U32
            and _is_int(stream_id)
            and 0 <= stream_id < _U32
        )
        if not ok:
            raise GeTypeError(
                "__init__(): incompatible constructor arguments: kernel_name must be a str, "
                "kernel_bin bytes, block_dim and stream_id ints in [0, 2**32 - 1]; got "
                f"{type(name).__name__}, {type(binary).__name__}, {block_dim!r}, {stream_id!r}"
            )
        if name == "":
            raise GeValueError("kernel_name must not be empty")
        if binary == b"":
            raise GeValueError("kernel_bin must not be empty")
        if block_dim == 0:
            raise GeValueError("block_dim must be greater than zero")
        self._kernel_name: str = name
        self._kernel_bin: bytes = binary
        self._block_dim: int = block_dim
        self._stream_id: int = stream_id

    @property
    def kernel_name(self) -> str:
        return self._kernel_name

    @property
    def kernel_bin(self) -> bytes:
        return self._kernel_bin

    @property
    def block_dim(self) -> int:
        return self._block_dim

    @property
    def stream_id(self) -> int:
        return self._stream_id

    def __repr__(self) -> str:
        return (
            f"AnnotatedKernelLaunchInfo(kernel_name={self._kernel_name!r}, kernel_bin=<"
            f"{len(self._kernel_bin)} bytes>, block_dim={self._block_dim}, "
            f"stream_id={self._stream_id})"
        )


# --- loaded binaries, once per content --------------------------------------------------------
_BINARIES: dict[bytes, KernelBinary] = {}
_BINARIES_LOCK = threading.Lock()


def loaded_function(binary: bytes, name: str) -> KernelFunction:
    """Kernel ``name`` of ``binary``, loading each distinct binary once per process (a JIT
    load costs milliseconds; plans of the same op share the loaded code)."""
    with _BINARIES_LOCK:
        loaded = _BINARIES.get(binary)
        if loaded is None:
            loaded = _BINARIES[binary] = load_kernel_binary(binary)
    return loaded.get_function(name)


# --- the borrowed objects ---------------------------------------------------------------------
class WorkspaceAddr(_Borrowed):
    """A workspace of the declared launches (``AnnotatedArgsContext.malloc_workspace``)."""

    __slots__ = ("_buffer", "_index")

    def __init__(self, index: int, buffer: int) -> None:
        super().__init__()
        self._index = index
        self._buffer = buffer  # the plan buffer it is

    @property
    def index(self) -> int:
        self._check()
        return self._index

    @property
    def addr(self) -> int:
        """0: the workspace gets its address per run (see the module docstring)."""
        self._check()
        return 0


# one argument slot: ("buffer", plan buffer id) or ("scalar", int64 value)
Slot = tuple[str, int]


class AnnotatedKernelArgs(_Borrowed):
    """The argument list of one launch, built in call order (``create_kernel_args()``);
    ``add_launch`` consumes it."""

    __slots__ = ("_consumed", "_ctx", "_slots")

    def __init__(self, ctx: AnnotatedArgsContext) -> None:
        super().__init__()
        self._ctx = ctx
        self._slots: list[Slot] = []
        self._consumed = False

    def _usable(self) -> None:
        if not self._alive or not self._ctx._alive:
            raise GeError(_EXPIRED)
        if self._consumed:
            raise GeError(_CONSUMED)

    def _tensor_slot(self, api: str, index: object, tensor: object, buffers: list[int]) -> int:
        if not (isinstance(index, int) and _is_int(index) and 0 <= index < _U64) or not (
            isinstance(tensor, Tensor)
        ):
            raise _incompatible(
                f"{api}()",
                f"expected (instance_index: int >= 0, tensor: ge.runtime.Tensor), got "
                f"({index!r}, {type(tensor).__name__})",
            )
        self._usable()
        tensor._check()  # a Tensor lent by an expired callback raises "handle has expired"
        kind = "input" if api == "append_input" else "output"
        if index >= len(buffers):
            raise IndexError(
                f"{kind} instance index {index} is out of range for {kind} count {len(buffers)}"
            )
        return buffers[index]

    def append_input(self, instance_index: int, tensor: Tensor) -> None:
        """Append the address of input instance ``instance_index`` (flattened: an absent
        optional input takes no index, a dynamic input's instances are consecutive)."""
        buf = self._tensor_slot("append_input", instance_index, tensor, self._ctx._inputs)
        self._slots.append(("buffer", buf))

    def append_output(self, instance_index: int, tensor: Tensor) -> None:
        """Append the address of output instance ``instance_index`` (flattened)."""
        buf = self._tensor_slot("append_output", instance_index, tensor, self._ctx._outputs)
        self._slots.append(("buffer", buf))

    def append_workspace(self, workspace: WorkspaceAddr) -> None:
        """Append the address of a workspace from ``malloc_workspace``."""
        if not isinstance(workspace, WorkspaceAddr):
            raise _incompatible(
                "append_workspace()", f"expected a WorkspaceAddr, got {type(workspace).__name__}"
            )
        self._usable()
        workspace._check()
        self._slots.append(("buffer", workspace._buffer))

    def append_scalar(self, value: int) -> None:
        """Append an unsigned 64-bit value (``0 .. 2**64 - 1``), passed to the kernel as is."""
        if not _is_int(value) or not 0 <= value < _U64:
            raise _incompatible(
                "append_scalar()", f"value must be an int in [0, 2**64 - 1], got {value!r}"
            )
        self._usable()
        self._slots.append(("scalar", value - _U64 if value >= 2**63 else value))


@dataclass(frozen=True)
class DeclaredLaunch:
    """One launch ``add_launch`` recorded (what lowering turns into a ``KernelTask``)."""

    kernel_name: str
    function: KernelFunction
    block_dim: int
    slots: tuple[Slot, ...]


class AnnotatedArgsContext(_Borrowed):
    """The context of one ``declare_launch_args`` (``get_declare_launch_args_ctx()``).

    ``inputs`` / ``outputs`` are the plan buffers of the node's input and output instances;
    ``new_workspace(size)`` adds a workspace buffer to the plan and returns its id."""

    __slots__ = (
        "_inputs",
        "_ir_outputs",
        "_lent",
        "_new_workspace",
        "_output_tensors",
        "_outputs",
        "_workspaces",
        "launches",
    )

    def __init__(
        self,
        inputs: list[int],
        outputs: list[int],
        output_tensors: list[Tensor],
        ir_outputs: list[tuple[str, list[int]]],
        new_workspace: Any,
    ) -> None:
        super().__init__()
        self._inputs = inputs
        self._outputs = outputs
        self._output_tensors = output_tensors
        self._ir_outputs = ir_outputs
        self._new_workspace = new_workspace
        self._workspaces: list[WorkspaceAddr] = []
        self._lent: list[_Borrowed] = []
        self.launches: list[DeclaredLaunch] = []

    def _invalidate(self) -> None:
        self._alive = False
        for item in self._lent:
            item._invalidate()
        for ws in self._workspaces:
            ws._invalidate()

    def malloc_workspace(self, size: int) -> WorkspaceAddr:
        """A workspace of ``size`` bytes (> 0) for the declared launches."""
        if not _is_int(size) or size < 0:
            raise _incompatible("malloc_workspace()", f"size must be an int >= 0, got {size!r}")
        if size == 0:
            raise GeValueError("workspace size must be greater than zero")
        self._check()
        try:
            buffer = self._new_workspace(size)
        except GeError as e:
            raise GeError(f"Failed to malloc workspace: {e}") from e
        workspace = WorkspaceAddr(len(self._workspaces), buffer)
        self._workspaces.append(workspace)
        return workspace

    def get_stream_id(self) -> int:
        """The id of the stream the plan runs on (0)."""
        self._check()
        return 0

    def create_kernel_args(self) -> AnnotatedKernelArgs:
        """A new, empty argument list."""
        self._check()
        args = AnnotatedKernelArgs(self)
        self._lent.append(args)
        return args

    def add_launch(self, launch_info: AnnotatedKernelLaunchInfo, args: AnnotatedKernelArgs) -> None:
        """Record a launch of ``launch_info``'s kernel with ``args`` (which it consumes)."""
        if not isinstance(launch_info, AnnotatedKernelLaunchInfo) or not isinstance(
            args, AnnotatedKernelArgs
        ):
            raise _incompatible(
                "add_launch()",
                f"expected (AnnotatedKernelLaunchInfo, AnnotatedKernelArgs), got "
                f"({type(launch_info).__name__}, {type(args).__name__})",
            )
        self._check()
        if launch_info.stream_id != self.get_stream_id():
            raise GeValueError("launch stream_id does not match current context stream_id")
        if not args._alive or args._ctx is not self:
            raise GeError(_EXPIRED)
        if args._consumed:
            raise GeError(_CONSUMED)
        args._consumed = True
        try:
            function = loaded_function(launch_info.kernel_bin, launch_info.kernel_name)
        except GeError as e:
            raise GeError(f"Failed to add annotated kernel launch: {e}") from e
        self.launches.append(
            DeclaredLaunch(
                launch_info.kernel_name, function, launch_info.block_dim, tuple(args._slots)
            )
        )

    # GE's private accessors of the output side
    def _get_required_output_tensor(self, ir_index: int) -> Tensor:
        self._check()
        if not _is_int(ir_index) or not 0 <= ir_index < len(self._ir_outputs):
            raise GeError("Failed to get required output tensor")
        kind, instances = self._ir_outputs[ir_index]
        if kind == "dynamic" or not instances:
            raise GeError("Failed to get required output tensor")
        return self._output_tensors[instances[0]]

    def _get_dynamic_output_num(self, ir_index: int) -> int:
        self._check()
        if not _is_int(ir_index) or not 0 <= ir_index < len(self._ir_outputs):
            raise GeError("Failed to get dynamic output instance info")
        kind, instances = self._ir_outputs[ir_index]
        if kind != "dynamic":
            raise GeError("Failed to get dynamic output instance info")
        return len(instances)

    def _get_dynamic_output_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        self._check()
        if not _is_int(ir_index) or not 0 <= ir_index < len(self._ir_outputs):
            raise GeError("Failed to get dynamic output tensor")
        kind, instances = self._ir_outputs[ir_index]
        if (
            kind != "dynamic"
            or not _is_int(relative_index)
            or not 0 <= relative_index < len(instances)
        ):
            raise GeError("Failed to get dynamic output tensor")
        return self._output_tensors[instances[relative_index]]
