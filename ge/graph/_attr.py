"""Attribute values: the Python value -> GE attribute kind rules, and the stored form.

``infer_attr_value`` follows GE-PY's ``_AttrValue.set_value`` exactly (GE_ERRORS.md §2.5):
str, float, bool, DataType, Tensor, int, then lists of all-float, all-bool, all-int, all-str,
first match wins. Its quirks are kept: a list of ``DataType`` members is a list of ints
(``DataType`` is an ``IntEnum``), an empty list is refused (``"Empty list is not
supported"``), an int outside int64 wraps silently as GE's C ``int64`` does, and every other
value (``None``, a dict, a tuple, a list mixing ints and floats, a list of lists, ...) is
``ValueError("Unsupported attribute type: <type> for value: <value>")``. Floats are stored
rounded to float32, as GE's C++ side stores them, so an AIR round trip returns exactly what
``get_attr`` returned before. ``ge_attr_python`` is GE's ``get_value``: only those kinds read
back (``"Unsupported attribute type: <int>"`` for the others), and an empty stored list is
``"Failed to get list value"``.

Ours, under names of ours (GE's API refuses these values): ``set_attr(key, value,
value_type)`` stores any kind explicitly (a list of int lists: ``VT_LIST_LIST_INT``; descs,
graphs, bytes, named attrs, lists of tensors...); ``infer_attr_value(value, extended=True)``
(``NamedAttrs.of``) also takes tuples like lists, ``bytes``, ``TensorDesc``, ``Graph`` and
lists of int lists; an ``AttrValue`` and a ``NamedAttrs`` (types of ours) are stored; and
``Node.attr_value(name).value`` reads every kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError, GraphError
from ge.graph.tensor_desc import TensorDesc
from ge.graph.types import AttrValueType, DataType

if TYPE_CHECKING:
    from ge.graph.graph import Graph
    from ge.graph.tensor import Tensor

__all__ = ["AttrValue", "NamedAttrs", "check_attr_key", "infer_attr_value", "make_attr_value"]

VT = AttrValueType
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def check_attr_key(key: object, text: str = "Attribute key must be a string") -> str:
    """``key`` if it is a ``str``; else ``TypeError(text)`` (GE's text for the argument)."""
    if not isinstance(key, str):
        raise GeTypeError(f"{text}, got {type(key).__name__}")
    return key


_CLASSES: dict[str, type[Any]] = {}
"""``Tensor`` and ``Graph``, imported on first use (both modules import this one) and kept:
an import statement costs about a microsecond, and these run per attribute set."""


def _tensor_cls() -> type[Tensor]:
    cls = _CLASSES.get("Tensor")
    if cls is None:
        from ge.graph.tensor import Tensor  # noqa: PLC0415  (tensor.py imports us; no cycle at use)

        cls = _CLASSES["Tensor"] = Tensor
    return cls


def _graph_cls() -> type[Graph]:
    cls = _CLASSES.get("Graph")
    if cls is None:
        from ge.graph.graph import Graph  # noqa: PLC0415  (graph.py imports this module)

        cls = _CLASSES["Graph"] = Graph
    return cls


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _to_int(v: object) -> int:
    if not _is_int(v):
        raise GeTypeError(f"expected int, got {v!r} ({type(v).__name__})")
    i: int = int(v)  # type: ignore[call-overload]
    if not _INT64_MIN <= i <= _INT64_MAX:
        raise GeValueError(f"int attribute {i} does not fit in int64")
    return i


def _to_float(v: object) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise GeTypeError(f"expected float, got {v!r} ({type(v).__name__})")
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _to_bool(v: object) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise GeTypeError(f"expected bool, got {v!r} ({type(v).__name__})")
    return bool(v)


def _to_str(v: object) -> str:
    if not isinstance(v, str):
        raise GeTypeError(f"expected str, got {v!r} ({type(v).__name__})")
    return v


def _to_bytes(v: object) -> bytes:
    if not isinstance(v, (bytes, bytearray, memoryview)):
        raise GeTypeError(f"expected bytes, got {type(v).__name__}")
    return bytes(v)


def _to_data_type(v: object) -> DataType:
    if not isinstance(v, DataType):
        raise GeTypeError(f"expected DataType, got {v!r}")
    return v


def _to_tensor(v: object) -> Tensor:
    if not isinstance(v, _tensor_cls()):
        raise GeTypeError(f"expected ge.graph.Tensor, got {type(v).__name__}")
    return v._clone()


def _to_tensor_desc(v: object) -> TensorDesc:
    if not isinstance(v, TensorDesc):
        raise GeTypeError(f"expected ge.graph.TensorDesc, got {type(v).__name__}")
    return v._clone()


def _to_graph(v: object) -> Graph:
    if not isinstance(v, _graph_cls()):
        raise GeTypeError(f"expected ge.graph.Graph, got {type(v).__name__}")
    return v


def _to_named_attrs(v: object) -> NamedAttrs:
    if not isinstance(v, NamedAttrs):
        raise GeTypeError(f"expected NamedAttrs, got {type(v).__name__}")
    return v


def _list_of(convert: Callable[[object], Any]) -> Callable[[object], tuple[Any, ...]]:
    def convert_list(v: object) -> tuple[Any, ...]:
        if not isinstance(v, (list, tuple)):
            raise GeTypeError(f"expected a list, got {type(v).__name__}")
        return tuple(convert(x) for x in v)

    return convert_list


_SCALAR_CONVERT: dict[AttrValueType, Callable[[object], Any]] = {
    VT.VT_STRING: _to_str,
    VT.VT_FLOAT: _to_float,
    VT.VT_BOOL: _to_bool,
    VT.VT_INT: _to_int,
    VT.VT_TENSOR_DESC: _to_tensor_desc,
    VT.VT_TENSOR: _to_tensor,
    VT.VT_BYTES: _to_bytes,
    VT.VT_GRAPH: _to_graph,
    VT.VT_NAMED_ATTRS: _to_named_attrs,
    VT.VT_DATA_TYPE: _to_data_type,
}
_CONVERT: dict[AttrValueType, Callable[[object], Any]] = {
    **_SCALAR_CONVERT,
    **{VT(VT.VT_LIST_BASE + k): _list_of(f) for k, f in _SCALAR_CONVERT.items()},
    VT.VT_LIST_LIST_INT: _list_of(_list_of(_to_int)),
    VT.VT_LIST_LIST_FLOAT: _list_of(_list_of(_to_float)),
    VT.VT_NONE: lambda v: None,
}


@dataclass(frozen=True, slots=True, eq=False)
class AttrValue:
    """A typed attribute value as the IR stores it: ``type`` plus an immutable ``value``
    (lists as tuples, tensors and descs as private copies)."""

    type: AttrValueType
    value: Any

    def to_python(self) -> Any:
        """The value as ``get_attr`` returns it: lists as fresh lists, private objects copied."""
        return _thaw(self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttrValue):
            return NotImplemented
        return self.type == other.type and _same(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class NamedAttrs:
    """GE's ``NamedAttrs``: a name and a map of attributes (used by function-valued attrs)."""

    name: str
    attrs: Mapping[str, AttrValue]

    @classmethod
    def of(cls, name: str, attrs: Mapping[str, object]) -> NamedAttrs:
        """Build from plain Python values, inferring each kind as ``set_attr`` does."""
        return cls(
            _to_str(name),
            {check_attr_key(k): infer_attr_value(v, extended=True) for k, v in attrs.items()},
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamedAttrs):
            return NotImplemented
        return self.name == other.name and dict(self.attrs) == dict(other.attrs)

    __hash__ = None  # type: ignore[assignment]


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, (TensorDesc, _tensor_cls())):
        return value._clone()
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, _tensor_cls()) and isinstance(b, _tensor_cls()):
        return a._same_as(b)
    if isinstance(a, _graph_cls()) and isinstance(b, _graph_cls()):
        return a is b or a.as_text() == b.as_text()
    return type(a) is type(b) and bool(a == b)


def make_attr_value(value: object, value_type: AttrValueType) -> AttrValue:
    """Store ``value`` as the explicitly given kind (``GeTypeError`` if it does not fit)."""
    if type(value_type) is not AttrValueType:
        try:
            value_type = AttrValueType(value_type)
        except ValueError:
            raise GeTypeError(
                f"value_type: expected an AttrValueType, got {value_type!r}"
            ) from None
    convert = _CONVERT.get(value_type)
    if convert is None:
        raise GeTypeError(f"value_type: expected an AttrValueType, got {value_type!r}")
    try:
        return AttrValue(value_type, convert(value))
    except GeTypeError as e:
        ours = f"attribute value {value!r} is not a {AttrValueType(value_type).name}: {e}"
        ge_text = _typed_setter_text(value_type, value)
        raise GeTypeError(ours if ge_text is None else f"{ge_text}: {ours}") from None


# GE-PY's typed setters' texts (GE_ERRORS.md §2.5), for the kinds it has setters of
_SETTER_TEXT = {
    VT.VT_STRING: ("Value must be a string", "strings"),
    VT.VT_FLOAT: ("Value must be a number", "numbers"),
    VT.VT_BOOL: ("Value must be a boolean", "booleans"),
    VT.VT_INT: ("Value must be an integer", "integers"),
    VT.VT_DATA_TYPE: ("Value must be a DataType", "DataTypes"),
    VT.VT_TENSOR: ("Value must be a Tensor", None),
}


def _typed_setter_text(value_type: AttrValueType, value: object) -> str | None:
    """What GE-PY's typed setter of ``value_type`` says of a ``value`` it refuses, ``None``
    for kinds it has no setter of (ours then stands alone)."""
    scalar = _SETTER_TEXT.get(value_type)
    if scalar is not None:
        return scalar[0]
    element = (
        _SETTER_TEXT.get(VT(value_type - VT.VT_LIST_BASE)) if value_type > VT.VT_LIST_BASE else None
    )
    if element is None or element[1] is None:
        return None
    return (
        "Values must be a list"
        if not isinstance(value, (list, tuple))
        else f"All values must be {element[1]}"
    )


def _wrap_int64(v: object) -> int:
    """``int(v)`` as GE's C ``int64`` stores it: wrapped silently outside the range."""
    i: int = int(v)  # type: ignore[call-overload]
    if _INT64_MIN <= i <= _INT64_MAX:
        return i
    return (i - _INT64_MIN) % (1 << 64) + _INT64_MIN


def _list_kind(items: list[Any] | tuple[Any, ...], extended: bool) -> AttrValueType | None:
    if not items:
        raise GeValueError("Empty list is not supported")
    for kind, test in _LIST_RULES if not extended else _LIST_RULES + _EXTENDED_LIST_RULES:
        if all(test(x) for x in items):
            return kind
    return None


# A list mixing bools and ints is an int list by GE-PY's rules (bool is an int): store ints.
_INFER_CONVERT: dict[AttrValueType, Callable[[object], Any]] = {
    VT.VT_INT: _wrap_int64,
    VT.VT_LIST_INT: _list_of(_wrap_int64),
}

_LIST_RULES: tuple[tuple[AttrValueType, Callable[[Any], bool]], ...] = (
    (VT.VT_LIST_FLOAT, lambda x: isinstance(x, float)),
    (VT.VT_LIST_BOOL, lambda x: isinstance(x, bool)),
    (VT.VT_LIST_INT, lambda x: isinstance(x, int)),  # DataType members land here, as in GE-PY
    (VT.VT_LIST_STRING, lambda x: isinstance(x, str)),
)
_EXTENDED_LIST_RULES: tuple[tuple[AttrValueType, Callable[[Any], bool]], ...] = (
    (
        VT.VT_LIST_LIST_INT,
        lambda x: (
            isinstance(x, (list, tuple))
            and all(isinstance(y, int) and not isinstance(y, bool) for y in x)
        ),
    ),
)


def _scalar_kind(value: object, extended: bool) -> AttrValueType | None:
    # Order matters and is GE-PY's: float before bool, bool and DataType before int.
    checks: tuple[tuple[AttrValueType, type | tuple[type, ...]], ...] = (
        (VT.VT_STRING, str),
        (VT.VT_FLOAT, float),
        (VT.VT_BOOL, bool),
        (VT.VT_DATA_TYPE, DataType),
        (VT.VT_TENSOR, _tensor_cls()),
        (VT.VT_INT, int),
        (VT.VT_NAMED_ATTRS, NamedAttrs),  # a type of ours (GE-PY has none): nothing to refuse
    )
    if extended:
        checks += (
            (VT.VT_BYTES, (bytes, bytearray)),
            (VT.VT_TENSOR_DESC, TensorDesc),
            (VT.VT_GRAPH, _graph_cls()),
        )
    for kind, cls in checks:
        if isinstance(value, cls):
            return kind
    return None


def infer_attr_value(value: object, *, extended: bool = False) -> AttrValue:
    """Store a Python value under the kind GE-PY's rules give it (``extended``, ours: also
    tuples, bytes, descs, graphs, named attrs and lists of int lists; see the module doc).

    >>> infer_attr_value([1, 2]).type.name, infer_attr_value(True).type.name
    ('VT_LIST_INT', 'VT_BOOL')
    """
    if isinstance(value, AttrValue):
        return value
    if isinstance(value, list) or (extended and isinstance(value, tuple)):
        kind = _list_kind(value, extended)
    else:
        kind = _scalar_kind(value, extended)
    if kind is None:
        raise GeValueError(f"Unsupported attribute type: {type(value)} for value: {value}")
    return AttrValue(kind, _INFER_CONVERT.get(kind, _CONVERT[kind])(value))


def ge_attr_python(stored: AttrValue) -> Any:
    """``get_attr``'s value: GE-PY's ``_AttrValue.get_value`` (GE_ERRORS.md §2.5). The kinds
    GE-PY reads come back as Python values; any other kind is ``RuntimeError("Unsupported
    attribute type: <int>")``, and an empty list ``"Failed to get list value"`` (GE's C getter
    returns NULL for one). ``AttrValue.to_python`` (ours) reads every kind."""
    kind = stored.type
    if kind not in _GE_READABLE:
        raise GraphError(
            f"Unsupported attribute type: {int(kind)} ({kind.name}; ours: read it with "
            f"attr_value(name).value)"
        )
    if kind > VT.VT_LIST_BASE and not stored.value:
        which = "list_string" if kind == VT.VT_LIST_STRING else "list"
        raise GraphError(f"Failed to get {which} value: the stored list is empty")
    return stored.to_python()


_GE_READABLE = frozenset(
    {
        VT.VT_STRING,
        VT.VT_FLOAT,
        VT.VT_BOOL,
        VT.VT_INT,
        VT.VT_DATA_TYPE,
        VT.VT_TENSOR,
        VT.VT_LIST_FLOAT,
        VT.VT_LIST_BOOL,
        VT.VT_LIST_INT,
        VT.VT_LIST_DATA_TYPE,
        VT.VT_LIST_STRING,
    }
)
