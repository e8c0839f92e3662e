"""``GraphBuilder``: build GE graphs functionally, one op call at a time (GE-PY's ES API).

Every op call creates its node at once and infers its output shape and dtype, so a mistake is
raised at the line that made it (``InferError`` naming the op, its input descs and
``file:line``), and a failed call leaves the builder exactly as it was. Node names follow GE-PY:
``<OpType>_<k>`` from one counter per builder (``create_input`` does not use it), Data nodes
``input_<index>`` unless named, and ``NetOutput_<graph>`` added by ``build_and_reset``.

    >>> from ge.es.graph_builder import GraphBuilder
    >>> b = GraphBuilder("mlp")
    >>> x = b.create_input(0, shape=[2, 3])
    >>> y = (x * 2.0 + 1).set_shape([2, 3])
    >>> g = b.build_and_reset([y])
    >>> [n.name for n in g.get_direct_nodes()]
    ['input_0', 'Const_0', 'Mul_1', 'Const_2', 'Add_3', 'NetOutput_mlp']
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from types import FrameType
from typing import Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError, GraphError, InferError
from ge.es._errors import AttributeTypeError, no_attribute
from ge.es._scopes import _STATE as _SCOPES
from ge.es._scopes import (
    attr_scope,
    control_dependency_scope,
)
from ge.es.tensor_holder import TensorHolder
from ge.graph._attr import make_attr_value
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType, Format
from ge.ops.construct import add_op_node, add_plain_node
from ge.ops.registry import get_op

__all__ = ["GraphBuilder", "InputType", "attr_scope", "control_dependency_scope"]

_GE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UINT32_MAX = 2**32 - 1


class InputType(Enum):
    """Op type of a graph input node (GE-PY: ``ge.es.graph_builder.InputType``)."""

    DATA = "Data"
    REF_DATA = "RefData"
    AIPP_DATA = "AippData"
    ANY_DATA = "AnyData"


@functools.cache
def _outside_ge(filename: str) -> bool:
    return not os.path.abspath(filename).startswith(_GE_DIR)  # abspath: ~2 µs, once per file


@functools.cache
def _user_file(filename: str) -> str | None:
    """The base name of ``filename`` when it is outside ge, else ``None`` (once per file)."""
    return os.path.basename(filename) if _outside_ge(filename) else None


def user_source() -> str | None:
    """``file:line`` of the nearest caller outside the ``ge`` package."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = _user_file(frame.f_code.co_filename)
        if name is not None:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _is_int(value: object) -> bool:
    """GE-PY's ``isinstance(value, int)``: ``bool`` passes (GE_ERRORS.md §3.1)."""
    return isinstance(value, int)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float))


def _newest(entries: dict[Any, Any], count: int) -> list[Any]:
    """The keys added to ``entries`` after it held ``count``, newest first."""
    return list(itertools.islice(reversed(entries), max(len(entries) - count, 0)))


def _wrap(bits: int, signed: bool) -> Callable[[Any], int]:
    """A C integer conversion: ``value`` modulo ``2**bits`` (as ctypes' ``c_int32`` etc.)."""
    span, half = 1 << bits, 1 << (bits - 1)
    if signed:
        return lambda v: ((int(v) + half) % span) - half
    return lambda v: int(v) % span


def _no_range(value: Any) -> None:
    return None


def _uint64_range(value: Any) -> None:
    if value < 0:  # the only check GE-PY makes: larger values wrap, as c_uint64 wraps them
        raise GeValueError(f"Value must be non-negative for uint64, got {value}")


def _uint32_range(value: Any) -> None:
    if not 0 <= value <= _UINT32_MAX:
        raise GeValueError(f"Value must be in range [0, 2^32-1] for uint32, got {value}")


def _const_dims(shape: Any) -> list[int]:
    """The dims of a ``create_const_*`` shape: GE-PY hands any sequence to a ctypes int64 array,
    so only what such an array cannot take (a non-sequence, a non-int dim) is refused."""
    try:
        dims = list(shape)
    except TypeError:
        raise GeTypeError(f"shape must be a sequence of integers, got {shape!r}") from None
    if not all(map(_is_int, dims)):
        raise GeTypeError(f"shape must be a sequence of integers, got {shape!r}")
    return [int(d) for d in dims]


@dataclass(frozen=True)
class _Kind:
    """One constant dtype of ``create_const_*``/``create_scalar_*``: its checks and texts."""

    data_type: DataType
    name: str  # "int64", as in "Failed to create int64 constant"
    is_value: Callable[[object], bool]
    const_text: str  # TypeError of create_const_<name>
    scalar_text: str  # TypeError of create_scalar_<name>
    check_range: Callable[[Any], None]  # ValueError of create_scalar_<name>
    convert: Callable[[Any], Any]  # what the C call stores (ints wrap as ctypes wraps them)


_INT_CONST = "Value must be an integer or list of integers"
_KINDS = {
    kind.name: kind
    for kind in (
        _Kind(
            DataType.DT_INT64,
            "int64",
            _is_int,
            _INT_CONST,
            "Value must be an integer",
            _no_range,
            _wrap(64, True),
        ),
        _Kind(
            DataType.DT_INT32,
            "int32",
            _is_int,
            _INT_CONST,
            "Value must be an integer",
            _no_range,
            _wrap(32, True),
        ),
        _Kind(
            DataType.DT_UINT64,
            "uint64",
            _is_int,
            _INT_CONST,
            "Value must be an integer",
            _uint64_range,
            _wrap(64, False),
        ),
        _Kind(
            DataType.DT_UINT32,
            "uint32",
            _is_int,
            _INT_CONST,
            "Value must be an integer",
            _uint32_range,
            _wrap(32, False),
        ),
        _Kind(
            DataType.DT_FLOAT,
            "float",
            _is_number,
            "Value must be a float or list of floats",
            "Value must be a number",
            _no_range,
            float,
        ),
    )
}
# what an op output is when eager inference cannot decide it (GE's default dtype, any shape)
_UNKNOWN_RANK = [-2]


def _unknown_desc() -> TensorDesc:
    return TensorDesc(_UNKNOWN_RANK, Format.FORMAT_ND, DataType.DT_FLOAT)


def _type_name(value: object) -> str:
    return type(value).__name__


_ATTR_CHECKS: dict[AttrValueType, tuple[Callable[[Any], bool], str]] = {
    AttrValueType.VT_INT: (_is_int, "Value must be an integer"),
    AttrValueType.VT_STRING: (lambda v: isinstance(v, str), "Value must be a string"),
    AttrValueType.VT_BOOL: (lambda v: isinstance(v, bool), "Value must be a boolean"),
}


def _check_scope_tensors(tensors: list[Any]) -> None:
    """GE-PY's element check of ``src_tensors`` (also run on a ``control_dependency_scope``
    list when a node is created inside it)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorHolder):
            raise GeTypeError(
                f"src_tensors must be a list of TensorHolder, got {_type_name(t)} at [{i}]"
            )


_ENUM_ARGUMENTS: dict[str, tuple[type[Enum], str]] = {
    "type_str": (InputType, "an InputType"),
    "data_type": (DataType, "a DataType"),
    "format": (Format, "a Format"),
}


def _check_enum_arguments(**values: object) -> None:
    """``create_input``'s ``type_str``/``data_type``/``format``, in that order: GE-PY reads
    ``.value`` of each (``None`` is the default here, ours), so a value without one is
    Python's ``AttributeError`` there. Ours: a value with a ``.value`` that is still not the
    enum (another enum's member) is a ``TypeError`` (GE-PY would pass its number on)."""
    for what, value in values.items():
        enum, kind = _ENUM_ARGUMENTS[what]
        if value is None or isinstance(value, enum):
            continue
        expected = f"{what} must be {kind}, got {value!r}"
        if not hasattr(value, "value"):
            raise AttributeTypeError(f"{no_attribute(value, 'value')} ({expected})")
        if what == "type_str":  # a data_type or format: TensorDesc refuses it in GE's words
            raise GeTypeError(expected)


class GraphBuilder:
    """Builds one graph; ``build_and_reset`` returns it and retires the builder."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None and not isinstance(name, str):
            raise GeTypeError(f"Graph name must be a string, got {type(name).__name__}")
        self._graph = Graph(name or "graph")
        self._counter = 0
        self._built = False
        self._outputs: dict[int, TensorHolder] = {}
        self._inputs: dict[int, Node] = {}  # Data-like inputs by index (not Variables, as GE)
        self._txn_depth = 0
        # user_source() of the running transaction, once a node of it asked (_call_source)
        self._txn_source: str | None = None
        self._txn_source_known = False
        # set by a tracer (ge.jit): what is being traced, for errors about traced values
        self._trace_note: str | None = None
        # set by a tracer (ge.jit): operators and numpy functions follow numpy's dtype rules
        # (ge.es._numpy_rules) instead of GE-PY's
        self._numpy_semantics = False
        # a builder of a subgraph may use values of the builder it is nested in: each such
        # value becomes an extra graph input (index _capture_at, _capture_at + 1, ...)
        self._outer: GraphBuilder | None = None
        self._capture_at = 0
        self._captures: list[tuple[TensorHolder, TensorHolder]] = []  # (outer value, input)

    @property
    def name(self) -> str:
        return self._graph.name

    def _encloses(self, other: GraphBuilder) -> bool:
        """Whether ``other`` is nested (at any depth) in this builder."""
        outer = other._outer
        while outer is not None:
            if outer is self:
                return True
            outer = outer._outer
        return False

    def _capture(self, value: TensorHolder) -> TensorHolder | None:
        """``value`` of an enclosing builder as a value of this one (a graph input standing
        for it, made on first use); ``None`` if ``value`` is not from an enclosing builder."""
        if self._outer is None or not value._builder._encloses(self):
            return None
        for outer, inner in self._captures:
            if outer is value:
                return inner
        reached = value if value._builder is self._outer else self._outer._capture(value)
        assert reached is not None
        inner = self.create_input(
            self._capture_at + len(self._captures),
            name=f"captured_{len(self._captures)}",
            shape=list(value.shape),
            data_type=value.data_type,
        )
        self._captures.append((reached, inner))
        return inner

    def _check_live(self, what: str) -> None:
        if self._built and self._trace_note is not None:
            raise GeError(
                f"a value traced in {self._trace_note} is used after that trace ended: it "
                f"leaked out (kept on a global, a closure or an object?). Pass it to the "
                f"function as an argument, or return it, instead"
            )
        if self._built:
            raise GeError(
                f"Cannot {what}: GraphBuilder has already been built. Create a new "
                f"GraphBuilder to build another graph."
            )

    def _atomically(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as one all-or-nothing call: on any exception (a
        ``GeError``, a bug's ``KeyError``, a ``KeyboardInterrupt``) the nodes and subgraphs it
        added are removed and the name counter is restored, then the exception goes on. A call
        made inside another joins it. (A plain method, not a context manager: it wraps every
        operator call, and a generator-based ``with`` costs more than the rest of it.)"""
        if self._txn_depth:
            return fn(*args, **kwargs)
        # Counts, not copies of the name sets: a call only adds nodes and subgraphs, and dicts
        # keep insertion order, so what it added is the last ``len - count`` entries. (Copying
        # the sets made every op call O(graph) and building quadratic: 20k ops took 22 s.)
        nodes, subgraphs, counter, inputs = (
            len(self._graph._nodes),
            len(self._graph._subgraphs),
            self._counter,
            len(self._inputs),
        )
        self._txn_depth = 1
        try:
            return fn(*args, **kwargs)
        except BaseException:
            for name in _newest(self._graph._nodes, nodes):
                self._graph.remove_node(self._graph._nodes[name])
            for name in reversed(_newest(self._graph._subgraphs, subgraphs)):
                self._graph.remove_subgraph(name)
            for index in _newest(self._inputs, inputs):
                del self._inputs[index]
            self._counter = counter
            raise
        finally:
            self._txn_depth = 0
            self._txn_source_known = False

    # --- the one way nodes are made ---------------------------------------------------------
    def _add(
        self,
        op_type: str,
        inputs: Sequence[Any],
        attrs: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        output_counts: Sequence[int] | None = None,
        subgraphs: Sequence[Any] | None = None,
        declared: Sequence[TensorDesc] | None = None,
        counted: bool = True,
    ) -> Node:
        """Create a node, apply the scopes (GE_ERRORS.md §3.2) and infer its outputs.

        ``control_dependency_scope`` tensors of any builder give control edges, as GE's do,
        except those of a builder this one is nested in (a ``ge.jit`` branch or loop body):
        such an edge would leave the subgraph. When the infer rule of an op with subgraphs
        cannot decide (a ``While`` body returning other types than its inputs, ...), GE still
        builds the node (it infers nothing eagerly, §13.2), so its outputs are left unknown
        (``[-2]``, GE's default ``DT_FLOAT``) and the compile step reports the problem."""
        if self._built:
            self._check_live(f"add {op_type}")
        state = _SCOPES  # (read here, not through current_*(): two calls a node)
        deps = state.control
        scoped = state.attrs
        plain = name is None and output_counts is None and declared is None
        if plain and not (deps or scoped or subgraphs):
            # most nodes: no scope, name, output counts, subgraphs or declared descs
            node = add_plain_node(
                self._graph,
                op_type,
                inputs,
                attrs,
                f"{op_type}_{self._counter}",
                self._txn_source if self._txn_source_known else self._call_source(),
            )
            if counted:
                self._counter += 1
            return node
        if deps:
            _check_scope_tensors(deps)
        merged = {**scoped, **attrs} if scoped and attrs else attrs or scoped
        node_name = name if name is not None else f"{op_type}_{self._counter}"
        source = self._call_source()
        try:
            node = add_op_node(
                self._graph,
                op_type,
                inputs,
                merged,
                name=node_name,
                output_counts=output_counts,
                subgraphs=subgraphs,
                declared=declared,
                source=source,
            )
        except (InferError, GraphError):
            if not subgraphs or not get_op(op_type).subgraphs:
                raise
            node = add_op_node(
                self._graph,
                op_type,
                inputs,
                merged,
                name=node_name,
                output_counts=output_counts,
                subgraphs=subgraphs,
                source=source,
                infer=False,
            )
            node._output_descs = [_unknown_desc() for _ in node._output_descs]
        for dep in deps:
            if not dep._builder._encloses(self):
                self._graph.add_control_edge(dep._node, node)
        if counted and name is None:
            self._counter += 1
        return node

    def _call_source(self) -> str | None:
        """``user_source()`` of the call being built, worked out once per transaction: the
        nodes of one operator call (an op and the constants it makes of Python numbers) all
        come from the user's line that made it, and the frame walk is a visible part of the
        cost of a node."""
        if self._txn_source_known:
            return self._txn_source
        source = user_source()
        if self._txn_depth:
            self._txn_source, self._txn_source_known = source, True
        return source

    def _holder(self, node: Node, port: int = 0) -> TensorHolder:
        return TensorHolder._make(self, node, port)

    # --- inputs ------------------------------------------------------------------------------
    def create_input(
        self,
        index: int,
        *,
        name: str | None = None,
        type_str: InputType | None = InputType.DATA,
        data_type: DataType | None = DataType.DT_FLOAT,
        format: Format | None = Format.FORMAT_ND,
        shape: list[int] | None = None,
    ) -> TensorHolder:
        """Graph input ``index`` (a ``Data`` node named ``input_<index>`` unless named).

        As GE-PY: a negative or already used ``index`` is a ``RuntimeError`` ("Failed to
        create input"); ``None`` for ``type_str``, ``data_type`` or ``format`` means the
        default (ours: GE-PY reads ``.value`` of it and fails)."""
        self._check_live("create input")
        if not _is_int(index):
            raise GeTypeError(f"Input index must be an integer, got {_type_name(index)}")
        if shape is not None and (not isinstance(shape, list) or not all(map(_is_int, shape))):
            raise GeTypeError(f"Shape must be a list of integers, got {shape!r}")
        if name is not None and not isinstance(name, str):
            raise GeTypeError(f"name must be a str, got {_type_name(name)}")
        type_str = InputType.DATA if type_str is None else type_str
        _check_enum_arguments(type_str=type_str, data_type=data_type, format=format)
        if index < 0 or index in self._inputs:
            reason = "it is negative" if index < 0 else "this builder already has that input"
            raise GeError(f"Failed to create input: index {index}: {reason}")
        desc = TensorDesc(
            shape,
            Format.FORMAT_ND if format is None else format,
            DataType.DT_FLOAT if data_type is None else data_type,
        )
        index = int(index)
        node = self._add(
            type_str.value,
            [None],
            {"index": index},
            name=name or f"input_{index}",
            declared=[desc],
            counted=False,
        )
        self._inputs[index] = node
        return self._holder(node)

    def create_inputs(self, num: int, start_index: int = 0) -> list[TensorHolder]:
        """``num`` inputs with indexes ``start_index ...`` (GE-PY raises ``TypeError`` for a
        non-positive ``num`` or a negative ``start_index``); all or none are made."""
        self._check_live("create inputs")
        if not _is_int(num) or num <= 0:
            raise GeTypeError(f"Number of inputs must be a positive integer, got {num!r}")
        if not _is_int(start_index) or start_index < 0:
            raise GeTypeError(f"Start index must be a non-negative integer, got {start_index!r}")
        inputs: list[TensorHolder] = self._atomically(
            lambda: [self.create_input(i) for i in range(start_index, start_index + num)]
        )
        return inputs

    def create_variable(self, index: int, name: str) -> TensorHolder:
        """A ``Variable`` node with attr ``index``. As GE, its index is not a graph input
        index: it may repeat or clash with a ``create_input`` index."""
        self._check_live("create variable")
        if not _is_int(index):
            raise GeTypeError(f"Index must be an integer, got {_type_name(index)}")
        if not isinstance(name, str) or not name:
            raise GeTypeError(f"Name must be a string (non-empty), got {name!r}")
        node = self._add(
            "Variable",
            [None],
            {"index": int(index)},
            name=name,
            declared=[TensorDesc()],
            counted=False,
        )
        return self._holder(node)

    # --- constants ---------------------------------------------------------------------------
    def _const(self, values: list[Any], shape: list[int], kind: _Kind) -> TensorHolder:
        stored = [kind.convert(v) for v in values]
        tensor = Tensor(stored, None, kind.data_type, Format.FORMAT_ND, shape)
        return self._holder(self._add("Const", [], {"value": tensor}))

    def _scalar(self, value: Any, kind: _Kind) -> TensorHolder:
        self._check_live("create scalar")
        if not kind.is_value(value):
            raise GeTypeError(f"{kind.scalar_text}, got {_type_name(value)}")
        kind.check_range(value)
        return self._const([value], [], kind)

    def _const_of(self, value: Any, shape: list[int] | None, kind: _Kind) -> TensorHolder:
        """GE-PY's ``create_const_<kind>``: a scalar shape with one value is
        ``create_scalar_<kind>`` (and gets its range check). Other values wrap as GE-PY's
        ctypes arrays wrap them, unsigned ones included. ``shape`` is any sequence of ints, as
        GE-PY does not check its type; a negative dim fails the count check."""
        self._check_live("create constant")
        values = value if isinstance(value, list) else [value]
        if not (isinstance(value, list) or kind.is_value(value)) or not all(
            map(kind.is_value, values)
        ):
            raise GeTypeError(f"{kind.const_text}, got {value!r}")
        if shape is None:
            dims = [len(values)] if isinstance(value, list) else []
        else:
            dims = _const_dims(shape)
        count = 1
        for d in dims:
            count *= d
        if count != len(values):
            raise GeValueError(
                f"Value count ({len(values)}) doesn't match shape {dims} "
                f"(expected {count} elements)"
            )
        if not dims:
            return self._scalar(values[0], kind)
        if min(dims) < 0:  # GE-PY's C call refuses it (two negative dims pass the count check)
            raise GeError(f"Failed to create {kind.name} constant: shape {dims} has a negative dim")
        return self._const(values, dims, kind)

    def create_const_int64(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(value, shape, _KINDS["int64"])

    def create_const_int32(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(value, shape, _KINDS["int32"])

    def create_const_uint64(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(value, shape, _KINDS["uint64"])

    def create_const_uint32(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(value, shape, _KINDS["uint32"])

    def create_const_float(
        self, value: float | list[float], shape: list[int] | None = None
    ) -> TensorHolder:
        """Ints are stored as floats, as GE-PY does."""
        return self._const_of(value, shape, _KINDS["float"])

    def create_vector_int64(self, value: list[int]) -> TensorHolder:
        """An int64 constant of shape ``[len(value)]`` (``[1]`` for one value, not a scalar)."""
        self._check_live("create vector")
        if not isinstance(value, list) or not all(map(_is_int, value)):
            raise GeTypeError(f"Value must be a list of integers, got {value!r}")
        return self._const(value, [len(value)], _KINDS["int64"])

    def create_scalar_int64(self, value: int) -> TensorHolder:
        """An int64 scalar; an int outside int64 wraps, as GE-PY's ``c_int64`` does."""
        return self._scalar(value, _KINDS["int64"])

    def create_scalar_int32(self, value: int) -> TensorHolder:
        """An int32 scalar; an int outside int32 wraps, as GE-PY's ``c_int32`` does."""
        return self._scalar(value, _KINDS["int32"])

    def create_scalar_uint64(self, value: int) -> TensorHolder:
        return self._scalar(value, _KINDS["uint64"])

    def create_scalar_uint32(self, value: int) -> TensorHolder:
        return self._scalar(value, _KINDS["uint32"])

    def create_scalar_float(self, value: float) -> TensorHolder:
        return self._scalar(value, _KINDS["float"])

    # --- outputs and building ----------------------------------------------------------------
    def _output_owner(self, tensor: TensorHolder) -> tuple[GraphBuilder, TensorHolder]:
        """Where GE registers ``tensor`` as an output: its own builder (§13.2). Ours: a value
        of a builder this one is nested in becomes an input of this one first."""
        captured = self._capture(tensor) if tensor._builder is not self else None
        if captured is not None:
            return self, captured
        return tensor._builder, tensor

    def set_graph_output(self, tensor: TensorHolder, output_index: int) -> None:
        """Make ``tensor`` output ``output_index`` of its builder (GE-PY registers it on the
        tensor's own builder, not on ``self``); each index once, >= 0."""
        self._check_live("set graph output")
        if not isinstance(tensor, TensorHolder):
            raise GeTypeError(f"Tensor must be a TensorHolder, got {_type_name(tensor)}")
        if not _is_int(output_index):
            raise GeTypeError(f"Output index must be an integer, got {_type_name(output_index)}")
        owner, tensor = self._output_owner(tensor)
        if output_index < 0 or output_index in owner._outputs or owner._built:
            reason = (
                "the index is negative"
                if output_index < 0
                else "that builder has already been built"
                if owner._built
                else "the index is already set"
            )
            raise GeError(
                f"Failed to set graph output for graph {owner.name} output index "
                f"{output_index}: {reason}"
            )
        owner._outputs[int(output_index)] = tensor

    def _validate_indexes(self) -> None:
        """GE's build-time check: Data-like input indexes (Variables not counted) and output
        indexes each start at 0 and are contiguous."""
        for what, indexes in (("input", self._inputs), ("output", self._outputs)):
            if indexes and (min(indexes) != 0 or max(indexes) != len(indexes) - 1):
                raise GeError(
                    f"Failed to build graph: graph '{self.name}' has {what} indexes "
                    f"{sorted(indexes)}; they must be 0..{len(indexes) - 1} without gaps"
                )

    def build_and_reset(self, outputs: list[TensorHolder] | None = None) -> Graph:
        """Finish the graph: add ``NetOutput_<name>`` fed by the outputs in index order.

        As GE, NetOutput's input descs stay GE's defaults (they are not copied from the
        producers; compilation infers them). Ours: a failed build leaves every output index
        it set (on this builder or, for another builder's tensor, on that one) unset again."""
        self._check_live("build_and_reset")
        if outputs is not None:
            if not isinstance(outputs, list):
                raise GeTypeError(f"Outputs must be a list, got {_type_name(outputs)}")
            if not all(isinstance(t, TensorHolder) for t in outputs):
                raise GeTypeError("All outputs must be TensorHolder objects")
        saved: dict[GraphBuilder, dict[int, TensorHolder]] = {self: dict(self._outputs)}
        try:
            for i, t in enumerate(outputs or []):
                owner = t._builder
                saved.setdefault(owner, dict(owner._outputs))
                self.set_graph_output(t, i)
            self._validate_indexes()
            ordered = [self._outputs[i] for i in sorted(self._outputs)]
            ports = [(t._node, t._port) for t in ordered]
            node = self._add("NetOutput", [ports], name=f"NetOutput_{self.name}", counted=False)
        except BaseException:  # any failure leaves the builders as they were
            for builder, before in saved.items():
                builder._outputs = before
            raise
        node._input_descs = [TensorDesc._scalar() for _ in node._input_descs]
        self._graph.set_outputs(ports)
        self._built = True
        return self._graph

    # --- attributes ----------------------------------------------------------------------------
    @staticmethod
    def _typed(value: Any, kind: AttrValueType) -> Any:
        check, text = _ATTR_CHECKS[kind]
        if not check(value):
            raise GeTypeError(f"{text}, got {value!r}")
        if kind is AttrValueType.VT_INT:  # a bool passes GE-PY's int check and is stored as one
            value = int(value)
        return make_attr_value(value, kind)

    def _set_graph_attr(self, attr_name: str, value: Any, kind: AttrValueType) -> None:
        self._check_live("set graph attribute")
        if not isinstance(attr_name, str):
            raise GeTypeError(f"Attribute name must be a string, got {_type_name(attr_name)}")
        self._graph._attrs[attr_name] = self._typed(value, kind)

    def set_graph_attr_int64(self, attr_name: str, value: int) -> None:
        self._set_graph_attr(attr_name, value, AttrValueType.VT_INT)

    def set_graph_attr_string(self, attr_name: str, value: str) -> None:
        self._set_graph_attr(attr_name, value, AttrValueType.VT_STRING)

    def set_graph_attr_bool(self, attr_name: str, value: bool) -> None:
        self._set_graph_attr(attr_name, value, AttrValueType.VT_BOOL)

    def _set_tensor_attr(
        self, tensor: TensorHolder, attr_name: str, value: Any, kind: AttrValueType, on_node: bool
    ) -> None:
        """As GE-PY: acts on ``tensor``'s producer, whichever builder made it."""
        self._check_live("set node attribute" if on_node else "set tensor attribute")
        if not isinstance(tensor, TensorHolder):
            raise GeTypeError(f"Tensor must be a TensorHolder, got {_type_name(tensor)}")
        if not isinstance(attr_name, str):
            raise GeTypeError(f"Attribute name must be a string, got {_type_name(attr_name)}")
        stored = self._typed(value, kind)
        if on_node:
            tensor._node._attrs[attr_name] = stored
        else:
            descs = tensor._node._output_descs  # a new desc: the old one may be shared
            twin = descs[tensor._port]._clone()
            twin._attrs[attr_name] = stored
            descs[tensor._port] = twin

    def set_tensor_attr_int64(self, tensor: TensorHolder, attr_name: str, value: int) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_INT, False)

    def set_tensor_attr_string(self, tensor: TensorHolder, attr_name: str, value: str) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_STRING, False)

    def set_tensor_attr_bool(self, tensor: TensorHolder, attr_name: str, value: bool) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_BOOL, False)

    def set_node_attr_int64(self, tensor: TensorHolder, attr_name: str, value: int) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_INT, True)

    def set_node_attr_string(self, tensor: TensorHolder, attr_name: str, value: str) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_STRING, True)

    def set_node_attr_bool(self, tensor: TensorHolder, attr_name: str, value: bool) -> None:
        self._set_tensor_attr(tensor, attr_name, value, AttrValueType.VT_BOOL, True)

    def add_control_dependency(
        self, dst_tensor: TensorHolder, src_tensors: list[TensorHolder]
    ) -> None:
        """The producer of ``dst_tensor`` runs after the producers of ``src_tensors``. As GE,
        the edges go into ``dst_tensor``'s graph, and sources of any builder are accepted."""
        self._check_live("add control dependency")
        if not isinstance(dst_tensor, TensorHolder):
            raise GeTypeError(f"dst_tensor must be a TensorHolder, got {_type_name(dst_tensor)}")
        if not isinstance(src_tensors, list):
            raise GeTypeError(f"src_tensors must be a list, got {_type_name(src_tensors)}")
        _check_scope_tensors(src_tensors)
        if dst_tensor._builder._built:
            raise GeError(
                f"Failed to add control dependency for nodes in graph {self.name}: the graph "
                f"of dst_tensor ('{dst_tensor._builder.name}') has already been built"
            )
        graph = dst_tensor._builder._graph
        for src in src_tensors:
            graph.add_control_edge(src._node, dst_tensor._node)

    def __copy__(self) -> NoReturn:
        raise GeError("GraphBuilder does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("GraphBuilder does not support deepcopy")

    def __repr__(self) -> str:
        state = "built" if self._built else f"{len(self._graph._nodes)} nodes"
        return f"<GraphBuilder {self.name!r}: {state}>"
