"""``TensorHolder``: one output of a node under construction, with Python and numpy operators.

GE-PY gives ``+ - * /`` (and the reflected forms, ``/`` building ``Div``). Ours on top: unary
minus, ``@``, ``**``, comparisons, indexing and slicing (``StridedSlice``; one integer-array
index becomes ``GatherV2``), ``.T``, ``reshape``, ``astype``, ``sum/mean/max/min/prod/argmax``,
and the numpy protocols, so ``np.exp(t)``, ``np.sum(t, axis=1)``, ``np.where(c, a, b)`` and
``np.concatenate([...])`` build graph nodes. Decisions: numpy's ``np.divide`` of two integer
tensors casts to float32 first (numpy's true division), while the ``/`` operator keeps GE-PY's
``Div``; a TensorHolder has no truth value (``bool(t)`` raises ``TypeError``), as a traced
value's truth is only known at run time. A numpy ufunc that is one op is found through that
op's ``OpDef.ufunc`` (its row in ``ge.ops``), so an op registered at run time with a ``ufunc``
name is reached by ``np.<name>(holder)`` too; only composite ufuncs are listed here.

Inside ``ge.jit`` (a builder with ``_numpy_semantics``, set by the tracer and inherited by
``cond``/``while_loop`` bodies) the operators, ufuncs and numpy functions follow numpy's rules
instead (``ge.es._numpy_rules``): NEP 50 promotion, ``/`` true division in float64 for ints,
``//``/``%``/``divmod`` (which ES holders do not have), numpy's reduction dtypes. The numpy
rule tables come in families merged here: ``_numpy_api`` (functions), ``_numpy_sorting`` (scans
and sorts) and ``_numpy_ufuncs`` (composite ufuncs, ``np.<ufunc>.outer/.reduce/.accumulate``
inside ge.jit, ``select``/``argmin``/``nan*``/``round``, ``np.linalg.cholesky/solve``).
ndarray methods such as ``argmin``, ``cumsum``, ``clip``, ``var`` or ``squeeze`` forward to
the numpy function of their name (one without a rule raises ``GeTypeError`` naming it);
``sort`` sorts in place inside ge.jit; ``item()``/``tolist()`` need values and raise.

The class lives here; its indexing (``_holder_indexing``, ``_advanced_index``; views and
in-place updates in ``_inplace``), its operators and ufuncs (``_holder_operators``: GE-PY's
``+ - * /`` keep GE's error texts and check order, GE_ERRORS.md §3.3) and the numpy functions
it builds itself (``_holder_functions``) are modules of their own, bound here by name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from typing_extensions import Self

from ge.error import GeError, GeTypeError, GeValueError, GraphError
from ge.es import _holder_indexing
from ge.es.tensor_like import to_const  # (not in _operand: a function-level import is ~1 µs)
from ge.graph._dtypes import data_type_from_numpy, numpy_dtype
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import DataType, Format

if TYPE_CHECKING:
    from ge.es.graph_builder import GraphBuilder

__all__ = ["TensorHolder"]

# indexing (``ge.es._holder_indexing``); ``_index`` is also the numpy rule families' slicer
_as_int = _holder_indexing._as_int
_index = _holder_indexing._index
_is_view_key = _holder_indexing._is_view_key


_SAME = "same"  # ``_operator``'s default: GE-PY builds the numpy op's GE op too


def _operator(
    ufunc: str, numpy_op: str, ge_op: str | None = _SAME, reflected: bool = False
) -> Callable[[TensorHolder, Any], Any]:
    """A binary operator: numpy's ``np.<ufunc>`` rules built with ``numpy_op`` inside ge.jit,
    else GE-PY's ``ge_op`` (``None``: not an ES operator, so Python raises ``TypeError``)."""
    ge_type = numpy_op if ge_op == _SAME else ge_op

    def method(self: TensorHolder, other: Any) -> Any:
        kind = type(other)  # a number or a holder of self's builder: innermost is self
        if (
            kind is float
            or kind is int
            or (kind is TensorHolder and other._builder is self._builder)
        ):
            anchor = self
        else:
            anchor = innermost(self, other)
        if anchor._builder._numpy_semantics:
            a, b = (other, self) if reflected else (self, other)
            return _numpy_rules.binary(anchor, ufunc, numpy_op, a, b)
        if ge_type is None:
            return NotImplemented
        if ge_type in _GE_VERBS:
            return _ge_arithmetic(self, ge_type, other, reflected)
        if reflected:
            return self._op(ge_type, self._operand(other), self)
        return self._op(ge_type, self, other)

    return method


_power = _operator("power", "Pow")


class TensorHolder:
    """Output ``port`` of ``node`` in the graph a ``GraphBuilder`` is building."""

    __slots__ = ("__weakref__", "_builder", "_node", "_port")
    __array_priority__ = 1000  # numpy defers mixed operations to us

    def __init__(self) -> None:
        raise GeError(
            "TensorHolder objects should not be created directly; use GraphBuilder methods "
            "or ge.es op functions"
        )

    @classmethod
    def _make(cls, builder: GraphBuilder, node: Node, port: int) -> TensorHolder:
        holder = cls.__new__(cls)
        holder._builder = builder
        holder._node = node
        holder._port = port
        return holder

    _builder: GraphBuilder
    _node: Node
    _port: int

    # --- GE-PY surface ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._node.name

    def get_owner_builder(self) -> GraphBuilder:
        return self._builder

    def _desc(self) -> TensorDesc:
        try:
            return self._node._output_descs[self._port]
        except IndexError:
            # GE's holder of an op with no outputs "cannot be used to connect edges"
            raise GraphError(
                f"{self._node.name} has no output {self._port}: an op that produces no "
                f"output returns a holder that cannot be used as an input or read as a tensor"
            ) from None

    def _own_desc(self) -> TensorDesc:
        """The output desc to edit: a copy put in its place first, as a node's descs are
        shared with its consumers' input descs and never changed in place (``ge.graph.node``)."""
        descs = self._node._output_descs
        twin = descs[self._port] = descs[self._port]._clone()
        return twin

    # GE's order (GE_ERRORS.md §3.3): the builder's state first, then the argument's type
    def set_data_type(self, data_type: DataType) -> Self:
        self._builder._check_live("set data type")
        if not isinstance(data_type, DataType):
            raise GeTypeError(f"Data type must be a DataType enum, got {data_type!r}")
        self._own_desc().set_data_type(data_type)
        return self

    def set_format(self, format: Format) -> Self:
        self._builder._check_live("set format")
        if not isinstance(format, Format):
            raise GeTypeError(f"Format must be a Format enum, got {format!r}")
        self._own_desc().set_format(format)
        return self

    def set_shape(self, shape: list[int]) -> Self:
        """GE's checks: a list, of ints (a ``bool`` is an int, as in GE: ``True`` is 1)."""
        self._builder._check_live("set shape")
        if not isinstance(shape, list):
            raise GeTypeError(f"Shape must be a list of integers, got {type(shape).__name__}")
        for d in shape:
            if not isinstance(d, int):
                raise GeTypeError(f"All shape dimensions must be integers, got {d!r}")
        self._own_desc().set_shape([int(d) for d in shape])
        return self

    # --- ours: what the tensor looks like --------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Dims as inferred (``-1`` unknown; ``(-2,)`` unknown rank)."""
        return tuple(self._desc()._shape)

    @property
    def ndim(self) -> int:
        return len(self._desc()._shape)

    @property
    def data_type(self) -> DataType:
        return self._desc()._data_type

    @property
    def dtype(self) -> np.dtype[Any]:
        return numpy_dtype(self._desc()._data_type)

    @property
    def desc(self) -> TensorDesc:
        return self._desc()._clone()

    def __repr__(self) -> str:
        from ge.graph._printer import format_desc  # noqa: PLC0415

        return f"<TensorHolder {self._node.name}:{self._port} {format_desc(self._desc())}>"

    def __str__(self) -> str:
        """``print(x)`` of a traced value (inside ge.jit) says what it is and how to see its
        values: ``Traced<f32[3]> (use ge.jit.debug_print to see values)``. An ES holder
        prints as GE-PY's, which has no ``__str__`` (``<ge.es.tensor_holder.TensorHolder
        object at 0x...>``); ``repr`` stays ours."""
        if self._builder._trace_note is None:
            return object.__repr__(self)
        from ge.graph._printer import format_desc  # noqa: PLC0415

        return f"Traced<{format_desc(self._desc())}> (use ge.jit.debug_print to see values)"

    def __format__(self, spec: str) -> str:
        """``f"{x}"`` is ``str(x)``; a format spec (``f"{x:.3f}"``) needs values: inside
        ge.jit a ``GeTypeError`` naming ``ge.jit.debug_print``, else Python's ``TypeError``."""
        if not spec:
            return str(self)
        note = self._builder._trace_note
        if note is not None:
            from ge.es.graph_builder import user_source  # noqa: PLC0415

            raise GeTypeError(
                f"format() with spec {spec!r} of a traced value at {user_source() or '?'} in "
                f"{note}: its values are only known when the compiled graph runs; print them "
                f"with ge.jit.debug_print('{{:{spec}}}', x)"
            )
        return object.__format__(self, spec)

    # --- building --------------------------------------------------------------------------------
    def _operand(self, value: Any) -> TensorHolder:
        if isinstance(value, TensorHolder):
            if value._builder is not self._builder:
                captured = self._builder._capture(value)  # a value of an enclosing graph
                if captured is not None:
                    return captured
                for builder in (value._builder, self._builder):
                    if builder._trace_note is not None:
                        builder._check_live("combine tensors")  # a leaked traced value says so
                raise GeValueError(
                    f"Cannot combine tensors from different GraphBuilders "
                    f"('{self._builder.name}' vs '{value._builder.name}'); build each graph "
                    f"with one GraphBuilder"
                )
            return value
        return to_const(self._builder, value, like=self.data_type)

    def _op(self, op_type: str, *inputs: Any, attrs: dict[str, Any] | None = None) -> TensorHolder:
        builder = self._builder
        ports = []
        for x in inputs:  # all holders of self's builder (most ops): innermost is self
            if type(x) is not TensorHolder or x._builder is not builder:
                break
            ports.append((x._node, x._port))  # what _port_of gives them
        else:
            return TensorHolder._make(builder, builder._add(op_type, ports, attrs), 0)
        inner = innermost(self, *inputs)
        if inner is not self:  # an operand lives in a nested graph: build there
            return inner._op(op_type, *inputs, attrs=attrs)
        node = self._builder._add(op_type, [self._port_of(x) for x in inputs], attrs)
        return TensorHolder._make(self._builder, node, 0)

    def _port_of(self, value: Any) -> Any:
        if type(value) is TensorHolder and value._builder is self._builder:
            return (value._node, value._port)  # most operands: no call to check anything
        if value is None:
            return None
        if isinstance(value, list) and value and all(isinstance(v, TensorHolder) for v in value):
            return [self._port_of(v) for v in value]  # a dynamic input
        holder = self._operand(value)
        return (holder._node, holder._port)

    def _ints(self, values: Sequence[int], what: str = "shape, axes or indexes") -> TensorHolder:
        return self._operand(np.asarray([_as_int(v, what) for v in values], dtype=np.int64))

    # GE-PY's four, plus the reflected forms (the left operand is converted first); inside
    # ge.jit (a builder with numpy semantics) numpy's rules instead: see ge.es._numpy_rules.
    __add__ = _operator("add", "Add")
    __radd__ = _operator("add", "Add", reflected=True)
    __sub__ = _operator("subtract", "Sub")
    __rsub__ = _operator("subtract", "Sub", reflected=True)
    __mul__ = _operator("multiply", "Mul")
    __rmul__ = _operator("multiply", "Mul", reflected=True)
    __truediv__ = _operator("divide", "Div", "Div")
    __rtruediv__ = _operator("divide", "Div", "Div", reflected=True)

    def add(self, other: Any) -> TensorHolder:
        return self.__add__(other)  # type: ignore[no-any-return]

    def sub(self, other: Any) -> TensorHolder:
        return self.__sub__(other)  # type: ignore[no-any-return]

    def mul(self, other: Any) -> TensorHolder:
        return self.__mul__(other)  # type: ignore[no-any-return]

    def div(self, other: Any) -> TensorHolder:
        return self.__truediv__(other)  # type: ignore[no-any-return]

    # Ours. ``//``, ``%`` and ``divmod`` are numpy's, inside ge.jit only (GE-PY has none).
    __floordiv__ = _operator("floor_divide", "", None)
    __rfloordiv__ = _operator("floor_divide", "", None, reflected=True)
    __mod__ = _operator("remainder", "", None)
    __rmod__ = _operator("remainder", "", None, reflected=True)

    def __divmod__(self, other: Any) -> Any:
        return _divmod(self, self, other)

    def __rdivmod__(self, other: Any) -> Any:
        return _divmod(self, other, self)

    def __neg__(self) -> TensorHolder:
        if self._builder._numpy_semantics:
            return _numpy_rules.unary(self, "negative", "Neg", self)
        return self._op("Neg", self)

    def __pos__(self) -> TensorHolder:
        return self

    def __abs__(self) -> TensorHolder:
        if self._builder._numpy_semantics:
            return _numpy_rules.unary(self, "absolute", "Abs", self)
        return self._op("Abs", self)

    def __pow__(self, other: Any) -> TensorHolder:
        if (
            self._builder._numpy_semantics
            and self.dtype == np.bool_
            and type(other) is int
            and other == 2
        ):
            return _numpy_rules.unary(self, "square", "Square", self)  # numpy's x**2 is square
        return _power(self, other)  # type: ignore[no-any-return]

    __rpow__ = _operator("power", "Pow", reflected=True)

    def __matmul__(self, other: Any) -> TensorHolder:
        return _matmul(self, self._operand(other))

    def __rmatmul__(self, other: Any) -> TensorHolder:
        return _matmul(self._operand(other), self)

    __lt__ = _operator("less", "Less")
    __le__ = _operator("less_equal", "LessEqual")

    __gt__ = _operator("greater", "Greater")
    __ge__ = _operator("greater_equal", "GreaterEqual")

    __eq__ = _operator("equal", "Equal")
    __ne__ = _operator("not_equal", "NotEqual")

    # Inside ge.jit ``& | ^ ~ << >>`` are numpy's bitwise ufuncs (ints and bools); GE-PY
    # holders keep ``&``/``|``/``~`` as the logical ops and have no ``^``, ``<<`` or ``>>``.
    def __and__(self, other: Any) -> TensorHolder:
        if self._builder._numpy_semantics:
            return _bitwise(self, "bitwise_and", self, other)
        return self._op("LogicalAnd", self, other)

    def __or__(self, other: Any) -> TensorHolder:
        if self._builder._numpy_semantics:
            return _bitwise(self, "bitwise_or", self, other)
        return self._op("LogicalOr", self, other)

    def __invert__(self) -> TensorHolder:
        if self._builder._numpy_semantics:
            return _numpy_rules.unary(self, "invert", "Invert", self)
        return self._op("LogicalNot", self)

    def __xor__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "bitwise_xor", self, other)

    def __lshift__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "left_shift", self, other)

    def __rshift__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "right_shift", self, other)

    def __rand__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "bitwise_and", other, self)

    def __ror__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "bitwise_or", other, self)

    def __rxor__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "bitwise_xor", other, self)

    def __rlshift__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "left_shift", other, self)

    def __rrshift__(self, other: Any) -> TensorHolder:
        return _bitwise(self, "right_shift", other, self)

    __hash__ = object.__hash__

    def __bool__(self) -> NoReturn:  # noqa: PLE0304  (always raises)
        self._concrete("bool() (an if, while, and, or, not)")

    def __int__(self) -> NoReturn:
        self._concrete("int()")

    def __float__(self) -> NoReturn:
        self._concrete("float()")

    def __index__(self) -> NoReturn:  # noqa: PLE0305  (always raises)
        self._concrete("use as a Python index or size")

    def _concrete(self, what: str) -> NoReturn:
        note = self._builder._trace_note
        if note is None:
            raise GeTypeError(
                f"{what} of {self!r}: its value is only known when the graph runs; use "
                f"an If/While op (ge.es.If, ge.es.While) instead of Python control flow"
            )
        from ge.es.graph_builder import user_source  # noqa: PLC0415

        raise GeTypeError(
            f"{what} of a traced value at {user_source() or '?'} in {note}: its value is "
            f"only known when the compiled graph runs. Use ge.jit.cond(pred, true_fn, "
            f"false_fn, *operands) or ge.jit.while_loop(cond_fn, body_fn, init) for "
            f"data-dependent control flow, or make the argument static (static_argnums / "
            f"static_argnames) if its value decides the graph"
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> NoReturn:
        raise GeTypeError(
            f"{self!r} is a symbolic tensor of a graph under construction; it "
            f"has no values to convert to numpy"
        )

    def __iter__(self) -> NoReturn:
        raise GeTypeError(f"cannot iterate over {self!r}; index it or use SplitV")

    def __len__(self) -> int:
        if not self.shape or self.shape[0] < 0:
            raise GeTypeError(f"len() of {self!r}: the first dim is not known")
        return self.shape[0]

    @property
    def T(self) -> TensorHolder:
        return self.transpose()

    def transpose(self, *axes: Any) -> TensorHolder:
        perm = (
            list(axes[0]) if len(axes) == 1 and isinstance(axes[0], (list, tuple)) else list(axes)
        )
        perm = perm or list(reversed(range(self.ndim)))
        return self._op("Transpose", self, self._ints(perm, "transpose axes"))

    def reshape(self, *shape: Any) -> TensorHolder:
        dims = (
            list(shape[0])
            if len(shape) == 1 and isinstance(shape[0], (list, tuple))
            else list(shape)
        )
        return self._op("Reshape", self, self._ints(dims, "reshape dims"))

    def astype(self, dtype: Any) -> TensorHolder:
        target = dtype if isinstance(dtype, DataType) else data_type_from_numpy(dtype)
        if target == self.data_type:
            return self
        return self._op("Cast", self, attrs={"dst_type": int(target)})

    def _reduce(self, op_type: str, axis: Any, keepdims: bool) -> TensorHolder:
        axes = (
            list(range(self.ndim))
            if axis is None
            else (list(axis) if isinstance(axis, (list, tuple)) else [axis])
        )
        return self._op(
            op_type,
            self,
            self._ints(axes, f"{op_type} axis"),
            attrs={"keep_dims": bool(keepdims), "noop_with_empty_axes": False},
        )

    def _numpy_reduce(self, method: str, axis: Any, keepdims: bool, dtype: Any) -> TensorHolder:
        """numpy's reduction: in ``dtype`` if given, else in numpy's accumulator type."""
        if dtype is not None:
            return self.astype(dtype)._reduce(_REDUCE_OPS[method], axis, keepdims)
        source = _numpy_rules.reduction_source(self, method)
        reduced = source._reduce(_REDUCE_OPS[method], axis, keepdims)
        return _numpy_rules.reduction_result(reduced, method, self.dtype)

    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> TensorHolder:
        """numpy's rule: booleans are counted (as int64); inside ge.jit integers accumulate
        in int64 (uint64 for unsigned) as numpy's do."""
        if self._builder._numpy_semantics:
            return self._numpy_reduce("sum", axis, keepdims, dtype)
        source = self.astype(dtype) if dtype is not None else self
        source = source.astype(np.int64) if source.dtype == np.bool_ else source
        return source._reduce("ReduceSum", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> TensorHolder:
        """numpy's rule: the mean of integers or booleans is float64."""
        if self._builder._numpy_semantics:
            return self._numpy_reduce("mean", axis, keepdims, dtype)
        source = self.astype(dtype) if dtype is not None else self
        source = source.astype(np.float64) if source.dtype.kind in "biu" else source
        return source._reduce("ReduceMean", axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> TensorHolder:
        if self._builder._numpy_semantics:
            return self._numpy_reduce("max", axis, keepdims, None)
        return self._reduce("ReduceMax", axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> TensorHolder:
        if self._builder._numpy_semantics:
            return self._numpy_reduce("min", axis, keepdims, None)
        return self._reduce("ReduceMin", axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> TensorHolder:
        """Inside ge.jit integers and booleans multiply in int64 (uint64), as numpy's do."""
        if self._builder._numpy_semantics:
            return self._numpy_reduce("prod", axis, keepdims, dtype)
        source = self.astype(dtype) if dtype is not None else self
        return source._reduce("ReduceProd", axis, keepdims)

    def argmax(self, axis: int | None = None) -> TensorHolder:
        source = self if axis is not None else self.reshape(-1)
        return source._op("ArgMaxV2", source, source._ints([0 if axis is None else axis]))

    def __getitem__(self, key: Any) -> TensorHolder:
        """numpy's indexing. Inside ge.jit a basic key's result is recorded as a view of
        this holder (``ge.es._inplace.note_view``), so writes into either reach the other."""
        items = key if isinstance(key, tuple) else (key,)
        result = _index(self, items)
        if self._builder._numpy_semantics and _is_view_key(self, items):
            _inplace.note_view(result, self, items)
        return result

    def item(self, *args: Any) -> NoReturn:
        self._concrete("item()")

    def tolist(self) -> NoReturn:
        self._concrete("tolist()")

    # --- in-place updates, inside ge.jit only (ge.es._inplace) -----------------------------------
    def _rebind(self, value: TensorHolder) -> None:
        """Make this holder stand for ``value`` (an in-place update, built functionally)."""
        if value._builder is not self._builder:
            raise GeTypeError(
                f"in-place update of {self!r} inside a cond/while_loop body: it is a value "
                f"of the enclosing graph; return the new value from the body instead"
            )
        self._node, self._port = value._node, value._port

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self._builder._numpy_semantics:
            raise TypeError("'TensorHolder' object does not support item assignment")
        self._builder._atomically(_inplace.setitem, self, key, value)

    def fill(self, value: Any) -> None:
        """numpy's ``ndarray.fill``, inside ge.jit (it rebinds this holder)."""
        if not self._builder._numpy_semantics:
            raise GeTypeError(f"fill of {self!r}: in-place updates work inside @ge.jit only")
        self._builder._atomically(_inplace.fill, self, value)

    def sort(self, axis: Any = -1, kind: Any = None, order: Any = None) -> None:
        """numpy's ``ndarray.sort`` inside ge.jit: sorts in place (``x[...] = np.sort(x)``),
        returns ``None``."""
        if not self._builder._numpy_semantics:
            raise GeTypeError(f"sort of {self!r}: in-place updates work inside @ge.jit only")
        if "sort" not in _FUNCTIONS:
            raise GeTypeError(
                f"sort() of {self!r}: np.sort has no rule for traced values (not supported yet)"
            )
        self._builder._atomically(_sort_in_place, self, axis, kind, order)

    def _augmented(self, ufunc: str, method: str, other: Any) -> Any:
        if not self._builder._numpy_semantics:
            return NotImplemented  # Python falls back to the binary operator and rebinds
        return self._builder._atomically(_inplace.augmented, self, ufunc, method, other)

    def __iadd__(self, other: Any) -> Any:
        return self._augmented("add", "__add__", other)

    def __isub__(self, other: Any) -> Any:
        return self._augmented("subtract", "__sub__", other)

    def __imul__(self, other: Any) -> Any:
        return self._augmented("multiply", "__mul__", other)

    def __itruediv__(self, other: Any) -> Any:
        return self._augmented("divide", "__truediv__", other)

    def __ifloordiv__(self, other: Any) -> Any:
        return self._augmented("floor_divide", "__floordiv__", other)

    def __imod__(self, other: Any) -> Any:
        return self._augmented("remainder", "__mod__", other)

    def __ipow__(self, other: Any) -> Any:
        return self._augmented("power", "__pow__", other)

    def __imatmul__(self, other: Any) -> Any:
        return self._augmented("matmul", "__matmul__", other)

    # --- numpy protocols -------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__":  # .outer/.reduce/.accumulate, inside ge.jit
            if not innermost(self, *inputs)._builder._numpy_semantics:
                return NotImplemented
            return _numpy_ufuncs.ufunc_method(self, ufunc, method, inputs, kwargs)
        rule = _ufunc_rule(ufunc.__name__)
        if rule is None or kwargs:
            return NotImplemented
        return rule(self, *inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        rule = _FUNCTIONS.get(func.__name__)
        if rule is None:
            return NotImplemented
        return rule(self, *args, **kwargs)


def _forward(name: str, function: str | None = None) -> Callable[..., Any]:
    """ndarray's method ``name``: ``np.<function>(self, ...)`` through the numpy tables (a
    function with no rule yet raises ``GeTypeError`` naming it)."""
    target = function or name

    def method(self: TensorHolder, *args: Any, **kwargs: Any) -> Any:
        func = getattr(np, target)
        if not isinstance(func, np.ufunc) and target not in _FUNCTIONS:
            raise GeTypeError(
                f"{name}() of {self!r}: np.{target} has no rule for traced values (not "
                f"supported yet)"
            )
        return func(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"numpy's ``ndarray.{name}``: ``np.{target}(self, ...)``."
    return method


# ndarray methods a numpy user expects, each the numpy function of that name on the holder
for _name in (
    "argmin",
    "cumsum",
    "cumprod",
    "argsort",
    "argpartition",
    "copy",
    "nonzero",
    "ptp",
    "round",
    "clip",
    "conj",
    "conjugate",
    "dot",
    "trace",
    "diagonal",
    "repeat",
    "squeeze",
    "swapaxes",
    "take",
    "var",
    "std",
    "all",
    "any",
    "ravel",
):
    setattr(TensorHolder, _name, _forward(_name))
TensorHolder.flatten = _forward("flatten", "ravel")  # type: ignore[attr-defined]


def _sort_in_place(x: TensorHolder, axis: Any, kind: Any, order: Any) -> None:
    _inplace.setitem(x, Ellipsis, np.sort(x, axis=axis, kind=kind, order=order))


def _atomic(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a building method as one builder transaction (all its nodes, or none)."""

    @functools.wraps(method)
    def run(self: TensorHolder, *args: Any, **kwargs: Any) -> Any:
        return self._builder._atomically(method, self, *args, **kwargs)

    return run


for _name in (
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__divmod__",
    "__rdivmod__",
    "__neg__",
    "__abs__",
    "__pow__",
    "__rpow__",
    "__matmul__",
    "__rmatmul__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__eq__",
    "__ne__",
    "__and__",
    "__or__",
    "__invert__",
    "__xor__",
    "__lshift__",
    "__rshift__",
    "__rand__",
    "__ror__",
    "__rxor__",
    "__rlshift__",
    "__rrshift__",
    "transpose",
    "reshape",
    "astype",
    "_reduce",
    "argmax",
    "__getitem__",
    "__array_ufunc__",
    "__array_function__",
):
    setattr(TensorHolder, _name, _atomic(getattr(TensorHolder, _name)))


def innermost(first: TensorHolder, *values: Any) -> TensorHolder:
    """Of the holders among ``first`` and ``values`` (lists included), one whose builder is
    nested in all the others' (where the op must be built), as a holder of that builder."""
    chosen = first
    for value in values:
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if (
                isinstance(item, TensorHolder)
                and item._builder is not chosen._builder  # (no builder encloses itself)
                and chosen._builder._encloses(item._builder)
            ):
                chosen = item
    return chosen


# they build on TensorHolder, above
from ge.es import (  # noqa: E402
    _holder_functions,
    _holder_operators,
    _inplace,
    _numpy_api,
    _numpy_rules,
    _numpy_sorting,
    _numpy_ufuncs,
)

_FUNCTIONS = _holder_functions._FUNCTIONS
_REDUCE_OPS: dict[str, str] = _holder_functions._REDUCE_OPS
_GE_VERBS: dict[str, str] = _holder_operators._GE_VERBS
_UFUNC_OPS = _holder_operators._UFUNC_OPS
_UFUNCS = _holder_operators._UFUNCS
_bitwise = _holder_operators._bitwise
_divmod = _holder_operators._divmod
_ge_arithmetic = _holder_operators._ge_arithmetic
_matmul = _holder_operators._matmul
_ufunc_rule = _holder_operators._ufunc_rule

for _family in (_numpy_api, _numpy_sorting, _numpy_ufuncs):
    for _fname, _frule in _family.FUNCTIONS.items():
        _FUNCTIONS.setdefault(_fname, _frule)
for _uname, _urule in _numpy_ufuncs.UFUNCS.items():
    _UFUNCS.setdefault(_uname, _urule)

_inplace.install(_FUNCTIONS)
