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
from enum import Enum
from types import FrameType
from typing import Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError
from ge.es._scopes import (
    attr_scope,
    control_dependency_scope,
    current_attrs,
    current_control_deps,
)
from ge.es.tensor_holder import TensorHolder
from ge.graph._attr import make_attr_value
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType, Format
from ge.ops.construct import add_op_node

__all__ = ["GraphBuilder", "InputType", "attr_scope", "control_dependency_scope"]

_GE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


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
    return isinstance(value, int) and not isinstance(value, bool)


def _check_list_of(values: object, check: Any, what: str) -> list[Any]:
    if not isinstance(values, list) or not all(check(v) for v in values):
        raise GeTypeError(f"{what}")
    return values


def _newest(entries: dict[str, Any], count: int) -> list[str]:
    """The keys added to ``entries`` after it held ``count``, newest first."""
    return list(itertools.islice(reversed(entries), max(len(entries) - count, 0)))


class GraphBuilder:
    """Builds one graph; ``build_and_reset`` returns it and retires the builder."""

    def __init__(self, name: str | None = None) -> None:
        if name is not None and not isinstance(name, str):
            raise GeTypeError(f"Graph name must be a string, got {type(name).__name__}")
        self._graph = Graph(name or "graph")
        self._counter = 0
        self._built = False
        self._outputs: dict[int, TensorHolder] = {}
        self._txn_depth = 0
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
        nodes, subgraphs, counter = (
            len(self._graph._nodes),
            len(self._graph._subgraphs),
            self._counter,
        )
        self._txn_depth = 1
        try:
            return fn(*args, **kwargs)
        except BaseException:
            for name in _newest(self._graph._nodes, nodes):
                self._graph.remove_node(self._graph._nodes[name])
            for name in reversed(_newest(self._graph._subgraphs, subgraphs)):
                self._graph.remove_subgraph(name)
            self._counter = counter
            raise
        finally:
            self._txn_depth = 0

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
        if self._built:
            self._check_live(f"add {op_type}")
        scoped = current_attrs()
        merged = {**scoped, **attrs} if scoped and attrs else attrs or scoped
        node_name = name if name is not None else f"{op_type}_{self._counter}"
        node = add_op_node(
            self._graph,
            op_type,
            inputs,
            merged,
            name=node_name,
            output_counts=output_counts,
            subgraphs=subgraphs,
            declared=declared,
            source=user_source(),
        )
        for dep in current_control_deps():
            if dep.get_owner_builder() is self:
                self._graph.add_control_edge(dep._node, node)
        if counted and name is None:
            self._counter += 1
        return node

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
        """Graph input ``index`` (a ``Data`` node named ``input_<index>`` unless named)."""
        self._check_live("create input")
        if not _is_int(index):
            raise GeTypeError(f"Input index must be an integer, got {type(index).__name__}")
        if index < 0:
            raise GeValueError(f"index must be >= 0, got {index}")
        if name is not None and not isinstance(name, str):
            raise GeTypeError(f"name must be a str, got {type(name).__name__}")
        type_str = InputType.DATA if type_str is None else type_str
        if not isinstance(type_str, InputType):
            raise GeTypeError(f"type_str must be an InputType, got {type_str!r}")
        desc = TensorDesc(
            shape,
            Format.FORMAT_ND if format is None else format,
            DataType.DT_FLOAT if data_type is None else data_type,
        )
        node = self._add(
            type_str.value,
            [None],
            {"index": index},
            name=name or f"input_{index}",
            declared=[desc],
            counted=False,
        )
        return self._holder(node)

    def create_inputs(self, num: int, start_index: int = 0) -> list[TensorHolder]:
        """``num`` inputs with indexes ``start_index ...`` (GE-PY raises ``TypeError`` for a
        non-positive ``num`` or a negative ``start_index``)."""
        self._check_live("create inputs")
        if not _is_int(num) or num <= 0:
            raise GeTypeError("Number of inputs must be a positive integer")
        if not _is_int(start_index) or start_index < 0:
            raise GeTypeError("Start index must be a non-negative integer")
        inputs: list[TensorHolder] = self._atomically(
            lambda: [self.create_input(i) for i in range(start_index, start_index + num)]
        )
        return inputs

    def create_variable(self, index: int, name: str) -> TensorHolder:
        """A ``Variable`` node (fed from the inputs by ``index`` in ge)."""
        self._check_live("create variable")
        if not _is_int(index):
            raise GeTypeError(f"Index must be an integer, got {type(index).__name__}")
        if not isinstance(name, str) or not name:
            raise GeTypeError("Name must be a string (non-empty)")
        node = self._add(
            "Variable", [None], {"index": index}, name=name, declared=[TensorDesc()], counted=False
        )
        return self._holder(node)

    # --- constants ---------------------------------------------------------------------------
    def _const(self, values: list[Any], shape: list[int], data_type: DataType) -> TensorHolder:
        tensor = Tensor(values, None, data_type, Format.FORMAT_ND, shape)
        return self._holder(self._add("Const", [], {"value": tensor}))

    def _const_of(
        self, value: Any, shape: list[int] | None, data_type: DataType, check: Any, what: str
    ) -> TensorHolder:
        self._check_live("create constant")
        values = value if isinstance(value, list) else [value]
        for v in values:
            check(v, what)
        if shape is None:
            dims = [] if not isinstance(value, list) else [len(values)]
        else:
            if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
                raise GeTypeError("shape must be a list of non-negative ints")
            dims = shape
            count = 1
            for d in dims:
                count *= d
            if count != len(values):
                raise GeValueError(
                    f"Value count ({len(values)}) doesn't match shape {dims} "
                    f"(expected {count} elements)"
                )
        return self._const(values, dims, data_type)

    @staticmethod
    def _int_in(low: int, high: int, message: str) -> Any:
        def check(v: Any, what: str) -> None:
            if not _is_int(v):
                raise GeTypeError(f"{what} must be int, got {v!r}")
            if not low <= v <= high:
                raise GeValueError(message)

        return check

    @staticmethod
    def _float_check(v: Any, what: str) -> None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise GeTypeError(f"{what} must be int or float, got {v!r}")

    def create_const_int64(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(
            value,
            shape,
            DataType.DT_INT64,
            self._int_in(*_INT64, "Value must be in range"),
            "value",
        )

    def create_const_int32(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(
            value,
            shape,
            DataType.DT_INT32,
            self._int_in(*_INT32, "Value must be in range"),
            "value",
        )

    def create_const_uint64(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(
            value,
            shape,
            DataType.DT_UINT64,
            self._int_in(0, _UINT64_MAX, "Value must be non-negative"),
            "value",
        )

    def create_const_uint32(
        self, value: int | list[int], shape: list[int] | None = None
    ) -> TensorHolder:
        return self._const_of(
            value,
            shape,
            DataType.DT_UINT32,
            self._int_in(0, _UINT32_MAX, "Value must be in range"),
            "value",
        )

    def create_const_float(
        self, value: float | list[float], shape: list[int] | None = None
    ) -> TensorHolder:
        values = (
            [float(v) for v in value]
            if isinstance(value, list)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            else value
        )
        return self._const_of(values, shape, DataType.DT_FLOAT, self._float_check, "value")

    def create_vector_int64(self, value: list[int]) -> TensorHolder:
        if not isinstance(value, list):
            raise GeTypeError("value must be a list of int")
        return self.create_const_int64(value, [len(value)])

    def create_scalar_int64(self, value: int) -> TensorHolder:
        return self._scalar(value, self.create_const_int64)

    def create_scalar_int32(self, value: int) -> TensorHolder:
        return self._scalar(value, self.create_const_int32)

    def create_scalar_uint64(self, value: int) -> TensorHolder:
        return self._scalar(value, self.create_const_uint64)

    def create_scalar_uint32(self, value: int) -> TensorHolder:
        return self._scalar(value, self.create_const_uint32)

    def create_scalar_float(self, value: float) -> TensorHolder:
        return self._scalar(value, self.create_const_float)

    @staticmethod
    def _scalar(value: Any, make: Any) -> TensorHolder:
        if isinstance(value, list):
            raise GeTypeError("value must be a scalar, not a list")
        holder: TensorHolder = make(value)
        return holder

    # --- outputs and building ----------------------------------------------------------------
    def _own(self, tensor: object, what: str) -> TensorHolder:
        if not isinstance(tensor, TensorHolder):
            raise GeTypeError(f"{what} must be a TensorHolder, got {type(tensor).__name__}")
        if tensor.get_owner_builder() is not self:
            raise GeValueError(f"{what} belongs to another GraphBuilder")
        return tensor

    def set_graph_output(self, tensor: TensorHolder, output_index: int) -> None:
        """Make ``tensor`` graph output ``output_index`` (each index once, >= 0)."""
        self._check_live("set graph output")
        self._own(tensor, "Tensor")
        if not _is_int(output_index):
            raise GeTypeError(f"Output index must be an integer, got {type(output_index).__name__}")
        if output_index < 0 or output_index in self._outputs:
            raise GeError(
                f"Failed to set graph output {output_index}: the index is "
                f"{'negative' if output_index < 0 else 'already used'}"
            )
        self._outputs[output_index] = tensor

    def _validate_indexes(self) -> None:
        inputs = sorted(
            n._attrs["index"].value
            for n in self._graph._nodes.values()
            if n._op is not None and n._op.io == "input" and "index" in n._attrs
        )
        if inputs != list(range(len(inputs))):
            raise GeError(
                f"Cannot build graph '{self.name}': input indexes {inputs} must be "
                f"0..{len(inputs) - 1} without gaps or repeats"
            )
        outputs = sorted(self._outputs)
        if outputs != list(range(len(outputs))):
            raise GeError(
                f"Cannot build graph '{self.name}': output indexes {outputs} must be "
                f"0..{len(outputs) - 1} without gaps"
            )

    def build_and_reset(self, outputs: list[TensorHolder] | None = None) -> Graph:
        """Finish the graph: add ``NetOutput_<name>`` fed by the outputs in index order."""
        self._check_live("build_and_reset")
        if outputs is not None:
            if not isinstance(outputs, list):
                raise GeTypeError("Outputs must be a list")
            if not all(isinstance(t, TensorHolder) for t in outputs):
                raise GeTypeError("All outputs must be TensorHolder objects")
            for t in outputs:
                self._own(t, "output")
        saved = dict(self._outputs)
        try:
            for i, t in enumerate(outputs or []):
                self.set_graph_output(t, i)
            self._validate_indexes()
            ordered = [self._outputs[i] for i in sorted(self._outputs)]
            ports = [(t._node, t._port) for t in ordered]
            self._add("NetOutput", [ports], name=f"NetOutput_{self.name}", counted=False)
        except BaseException:  # any failure leaves the builder as it was, to be fixed and rebuilt
            self._outputs = saved
            raise
        self._graph.set_outputs(ports)
        self._built = True
        return self._graph

    # --- attributes ----------------------------------------------------------------------------
    @staticmethod
    def _typed(value: Any, kind: AttrValueType) -> Any:
        checks: dict[AttrValueType, Callable[[Any], bool]] = {
            AttrValueType.VT_INT: _is_int,
            AttrValueType.VT_STRING: lambda v: isinstance(v, str),
            AttrValueType.VT_BOOL: lambda v: isinstance(v, bool),
        }
        if not checks[kind](value):
            raise GeTypeError(
                f"value must be {kind.name.removeprefix('VT_').lower()}, got {value!r}"
            )
        return make_attr_value(value, kind)

    def _set_graph_attr(self, attr_name: str, value: Any, kind: AttrValueType) -> None:
        self._check_live("set graph attribute")
        if not isinstance(attr_name, str):
            raise GeTypeError("Attribute name must be a string")
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
        self._check_live("set attr")
        self._own(tensor, "Tensor")
        if not isinstance(attr_name, str):
            raise GeTypeError("Attribute name must be a string")
        stored = self._typed(value, kind)
        if on_node:
            tensor._node._attrs[attr_name] = stored
        else:
            tensor._node._output_descs[tensor._port]._attrs[attr_name] = stored

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
        """The producer of ``dst_tensor`` runs after the producers of ``src_tensors``."""
        self._check_live("add control dependency")
        self._own(dst_tensor, "dst_tensor")
        if not isinstance(src_tensors, list):
            raise GeTypeError("src_tensors must be a list")
        sources = [self._own(t, "src_tensors item") for t in src_tensors]
        for src in sources:
            self._graph.add_control_edge(src._node, dst_tensor._node)

    def __copy__(self) -> NoReturn:
        raise GeError("GraphBuilder does not support copy")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise GeError("GraphBuilder does not support deepcopy")

    def __repr__(self) -> str:
        state = "built" if self._built else f"{len(self._graph._nodes)} nodes"
        return f"<GraphBuilder {self.name!r}: {state}>"
