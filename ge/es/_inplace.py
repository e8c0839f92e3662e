"""In-place updates of traced values inside ``@ge.jit``, as numpy users write them (issue #16).

A graph has no mutable buffers, so an update builds the new value functionally and *rebinds*
the holder to it (``TensorHolder._rebind``): the same Python object now stands for the new
node, so every name bound to it (``y = x; x[0] = 1``: ``y`` sees the update, as in numpy) and
every later read sees the update. ``ge.jit`` writes the final value of a mutated argument
back into the caller's array (``ge.jit._entry``).

Decisions:

* ``x[key] = v``: shapes are known while tracing, so numpy itself works out which elements a
  key selects (``np.arange(x.size).reshape(x.shape)[key]``: basic keys — ints, slices with any
  step, ``...``, ``None`` — integer arrays and constant boolean masks, with numpy's rules and
  errors for out-of-range indices). ``v`` is cast to ``x``'s dtype as numpy's setitem casts
  (unsafe: a float into an int array truncates silently), broadcast to the selection's shape
  (numpy's ``could not broadcast`` error otherwise), gathered into place (``GatherV2`` with a
  constant index per element of ``x``) and merged with ``SelectV2`` over a constant mask. With
  repeated integer indices the last write wins, as numpy does. A *traced* boolean mask
  (``x[x > 0] = 0``) takes a scalar or size-1 ``v`` (its selection's size is only known at run
  time), built as one ``SelectV2``. A key holding a *traced* integer array (``x[idx] = v``,
  ``x[i, idx] = v``, mixed with ints, slices and ``...``, numpy's placement of the broadcast
  dims) becomes one ``TensorScatterUpdate`` at the coordinates ``ge.es._advanced_index``
  builds; with duplicate indices the last write wins, as numpy does, and ``x[idx] += v``
  (a gather, an add, a scatter) applies once per distinct index, as in numpy. An index out of
  range is a ``GeError`` from TensorScatterUpdate naming the value when the graph runs.
* Views: a holder made by basic slicing (a ``StridedSlice`` output) is a view in numpy, and a
  write into it changes its base there. Views recorded with ``note_view(view, base, key)``
  (``TensorHolder.__getitem__`` records every basic key's result inside ge.jit, but one int
  per dim, numpy's scalar; index arrays, masks and traced indices give copies) follow numpy:
  a write into
  the view (``y = x[0:2]; y += 1``, ``y[0] = 5``) is written through into its base (and its
  base's base), and a write into a base slices its live views again, so both see every
  update; ``x[a:b] += v`` writes once (Python's closing ``x[a:b] = y`` is recognised). A
  ``StridedSlice`` holder that was not recorded (a numpy function's view, ``np.split``'s
  parts) refuses writes (``y[:] = 1`` raises a ``GeTypeError``: copy first,
  ``np.copy(...)``) rather than silently diverging, and
  ``x[a:b] += v`` still works there (Python reads ``x[a:b]``, adds, and assigns back). Other
  numpy views (``x.T``, ``x.reshape``) are values of their own here.
* Augmented assignment (``+= -= *= /= //= %= **= @=``) computes with numpy's rules
  (``ge.es._numpy_rules``) and casts back to ``x``'s dtype under numpy's ``same_kind`` rule,
  raising ``GeTypeError`` with numpy's ``UFuncTypeError`` wording otherwise (``int_arr += 1.5``);
  a result that broadcasts ``x`` to a bigger shape raises numpy's ``non-broadcastable output``
  error as a ``GeValueError``.
* ``np.copyto(dst, src, casting="same_kind", where=True)`` and ``x.fill(v)`` rebind ``dst`` /
  ``x``; ``np.copy(x)`` is an ``Identity`` (a value of its own, safe to write into).
* An update inside a ``cond``/``while_loop`` body of a value of the enclosing graph raises
  ``GeTypeError`` (return the new value from the body instead).
* Outside ``ge.jit`` (GE-PY holders) nothing changes: ``t[0] = 1`` raises ``TypeError`` and
  ``t += 1`` rebinds the name to ``t + 1``, as before.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeTypeError, GeValueError

if TYPE_CHECKING:
    from ge.es.tensor_holder import TensorHolder

__all__ = ["augmented", "copyto", "fill", "note_view", "setitem"]

_VIEW_OPS = frozenset({"StridedSlice"})


def _static_shape(x: TensorHolder, what: str) -> tuple[int, ...]:
    shape = x.shape
    if any(d < 0 for d in shape):
        raise GeTypeError(f"{what} of {x!r} needs a known shape, got {list(shape)}")
    return shape


class _ByIdentity:
    """A map from live holders to values, by identity (a holder's ``==`` is elementwise, so a
    ``WeakKeyDictionary`` cannot hold them); an entry goes when its holder does."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[TensorHolder], Any]] = {}

    def __setitem__(self, holder: TensorHolder, value: Any) -> None:
        key = id(holder)
        items = self._items
        items[key] = (weakref.ref(holder, lambda _: items.pop(key, None)), value)

    def get(self, holder: TensorHolder) -> Any:
        entry = self._items.get(id(holder))
        return None if entry is None or entry[0]() is not holder else entry[1]

    def __contains__(self, holder: TensorHolder) -> bool:
        return self.get(holder) is not None

    def items(self) -> list[tuple[TensorHolder, Any]]:
        live = [(ref(), value) for ref, value in list(self._items.values())]
        return [(h, value) for h, value in live if h is not None]


# view -> (its base, the basic key it was sliced with), for views ``note_view`` recorded
_VIEWS = _ByIdentity()
# a view written through to its base -> the base's value right after (so Python's own
# ``base[key] = view`` that ends ``base[key] += v`` is not written twice)
_WRITTEN = _ByIdentity()


# base -> its recorded views (id -> weak reference), so a write into a base re-slices only
# its own views (a scan of every live view made each write O(views), and a write into a base
# with many live views O(views**2): 64 rows and 64 writes took 50 s to trace)
_CHILDREN = _ByIdentity()


def note_view(view: TensorHolder, base: TensorHolder, key: Any) -> None:
    """Record that ``view`` is ``base[key]`` with a basic key (ints, slices, ``...``, None), a
    view in numpy: updates of either are then seen by the other (``_commit``)."""
    _VIEWS[view] = (base, key)
    children: dict[int, weakref.ref[TensorHolder]] | None = _CHILDREN.get(base)
    if children is None:
        children = {}
        _CHILDREN[base] = children
    at, into = id(view), children
    children[at] = weakref.ref(view, lambda _: into.pop(at, None))


def _commit(x: TensorHolder, value: TensorHolder, skip: TensorHolder | None = None) -> None:
    """Rebind ``x`` to its updated ``value`` keeping numpy's aliasing: a recorded view writes
    its new value through into its base, and the live views of ``x`` are sliced again from
    it (``skip``: the view whose write-through this is, already up to date)."""
    x._rebind(value)
    link = _VIEWS.get(x)
    if link is not None:
        base, key = link
        _commit(base, _assigned(base, key, x), skip=x)
        _WRITTEN[x] = (base._node, base._port)
    _refresh(x, skip)


def _refresh(x: TensorHolder, skip: TensorHolder | None) -> None:
    """Slice every live recorded view of ``x`` (but ``skip``) again from its new value."""
    from ge.es._holder_indexing import reslice  # noqa: PLC0415  (it imports us, indirectly)

    children = _CHILDREN.get(x)
    for ref in list(children.values()) if children else ():
        view = ref()
        link = _VIEWS.get(view) if view is not None and view is not skip else None
        if link is not None and link[0] is x:
            view._rebind(reslice(x, view, _key_tuple(link[1])))
            _refresh(view, None)


def _assigned(x: TensorHolder, key: Any, v: Any) -> TensorHolder:
    """The value of ``x`` after ``x[key] = v``, leaving the holder ``x`` as it is."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    probe = TensorHolder._make(x._builder, x._node, x._port)
    _set(probe, key, v)
    return probe


def _check_not_view(x: TensorHolder) -> None:
    if x in _VIEWS:
        return  # a recorded view: its writes go through to its base
    if x._node.type in _VIEW_OPS:
        raise GeTypeError(
            f"in-place update of {x!r}, a slice of another traced value: in numpy it is a "
            f"view and the write would change its base, which ge.jit does not propagate; "
            f"assign into the base (x[a:b] = v) or copy the slice first (np.copy(x[a:b]))"
        )


def _value(x: TensorHolder, v: Any) -> TensorHolder:
    """``v`` as a holder of ``x``'s graph in ``x``'s dtype (numpy's setitem casts unsafely)."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (it imports us)

    if isinstance(v, TensorHolder):
        return x._operand(v).astype(x.dtype)
    try:
        array = np.asarray(v)
    except (TypeError, ValueError) as e:
        raise GeTypeError(f"cannot assign {v!r} into {x!r}: {e}") from None
    if array.dtype.kind not in "biufc":
        raise GeTypeError(f"cannot assign {v!r} ({array.dtype}) into {x!r} ({x.dtype})")
    with np.errstate(all="ignore"):
        try:
            cast = array.astype(x.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise GeTypeError(f"cannot assign {v!r} into {x!r}: {e}") from None
    return x._operand(np.asarray(cast))


def _key_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def setitem(x: TensorHolder, key: Any, v: Any) -> None:
    """``x[key] = v`` inside ge.jit: rebinds ``x`` to the updated value."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    _check_not_view(x)
    if isinstance(v, TensorHolder) and _WRITTEN.get(v) == (x._node, x._port):
        return  # the end of ``x[key] += v`` through a recorded view: already written
    _set(x, key, v)


def _set(x: TensorHolder, key: Any, v: Any) -> None:
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    items = _key_tuple(key)
    traced = [k for k in items if isinstance(k, TensorHolder)]
    if traced:
        if len(items) == 1 and traced[0].dtype == np.bool_:
            _masked(x, traced[0], v)
            return
        if any(t.dtype == np.bool_ for t in traced):
            raise GeTypeError(
                "assignment with a traced boolean mask takes the mask alone (x[mask] = v), "
                f"got {key!r}"
            )
        _scattered(x, key, v)
        return
    shape = _static_shape(x, "assignment into")
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    try:
        selected = positions[key]
    except IndexError as e:
        raise GeValueError(f"x[{key!r}] = ... of {x!r}: {e}") from None
    except (TypeError, ValueError) as e:
        raise GeTypeError(f"unsupported index {key!r} for assignment into {x!r}: {e}") from None
    selected = np.asarray(selected)
    fitted = _fit(_value(x, v), selected.shape)
    if fitted is None:
        return
    flat = fitted.reshape(-1) if fitted.ndim != 1 else fitted
    source = np.full(positions.size, -1, dtype=np.int64)
    source[selected.reshape(-1)] = np.arange(selected.size, dtype=np.int64)  # last write wins
    gathered = x._op(
        "GatherV2", flat, x._operand(np.maximum(source, 0)), x._ints([0]), attrs={}
    ).reshape(list(shape))
    if bool((source >= 0).all()):
        result = gathered
    else:
        mask = x._operand((source >= 0).reshape(shape))
        result = x._op("SelectV2", mask, gathered, x)
    _commit(x, result)


def _fit(value: TensorHolder, shape: tuple[int, ...]) -> TensorHolder | None:
    """``value`` broadcast to ``shape`` as numpy's setitem does (leading 1-dims of ``value``
    dropped; numpy's ``could not broadcast`` error otherwise); ``None`` for an empty
    ``shape`` (nothing to write)."""
    vshape = _static_shape(value, "the assigned value")
    while len(vshape) > len(shape) and vshape[0] == 1:  # numpy drops leading 1-dims
        vshape = vshape[1:]
        value = value.reshape(list(vshape))
    try:
        np.broadcast_to(np.empty(vshape, dtype=np.bool_), shape)
    except ValueError:
        raise GeValueError(
            f"could not broadcast input array from shape {vshape} into shape {shape}"
        ) from None
    if 0 in shape:
        return None
    if vshape != shape:
        value = value._op("BroadcastTo", value, value._ints(list(shape)))
    return value


def _scattered(x: TensorHolder, key: Any, v: Any) -> None:
    """``x[key] = v`` with a traced integer index array in ``key``: ``TensorScatterUpdate`` at
    the coordinates it selects (``ge.es._advanced_index``; duplicates: the last write wins)."""
    from ge.es._advanced_index import coordinates  # noqa: PLC0415

    _static_shape(x, "assignment into")
    coords = coordinates(x, key)
    value = _fit(_value(x, v), tuple(coords.shape[:-1]))
    if value is not None:
        _commit(x, x._op("TensorScatterUpdate", x, coords, value))


def _masked(x: TensorHolder, mask: TensorHolder, v: Any) -> None:
    """``x[mask] = v`` with a traced boolean mask: ``v`` must be a scalar or of size 1."""
    value = _value(x, v)
    vshape = _static_shape(value, "the assigned value")
    if int(np.prod(vshape, dtype=np.int64)) != 1:
        raise GeTypeError(
            f"x[mask] = v with a traced mask takes a scalar or size-1 v (the number of "
            f"selected elements is only known at run time), got shape {vshape}"
        )
    if tuple(mask.shape) != tuple(x.shape):
        raise GeValueError(
            f"boolean index of shape {list(mask.shape)} does not match {x!r} of shape "
            f"{list(x.shape)}"
        )
    scalar = value.reshape([]) if value.ndim else value
    _commit(x, x._op("SelectV2", x._operand(mask), scalar, x))


def fill(x: TensorHolder, v: Any) -> None:
    """``x.fill(v)``: every element becomes ``v`` (a scalar), cast to ``x``'s dtype."""
    if np.ndim(v) != 0 and not (hasattr(v, "shape") and int(np.prod(v.shape)) == 1):
        raise GeValueError(f"fill of {x!r} takes a scalar, got {v!r}")
    setitem(x, Ellipsis, v)


def _casting_error(ufunc: str, got: np.dtype[Any], to: np.dtype[Any]) -> GeTypeError:
    return GeTypeError(
        f"Cannot cast ufunc '{ufunc}' output from dtype('{got}') to dtype('{to}') with "
        f"casting rule 'same_kind'"
    )


def augmented(x: TensorHolder, ufunc: str, method: str, other: Any) -> TensorHolder:
    """``x <op>= other`` inside ge.jit: numpy's ``np.<ufunc>(x, other, out=x)``."""
    result: TensorHolder = getattr(x, method)(other)
    if result is NotImplemented:
        raise GeTypeError(
            f"unsupported operand type(s) for {ufunc}=: {x!r} and {type(other).__name__}"
        )
    if tuple(result.shape) != tuple(x.shape):
        raise GeValueError(
            f"non-broadcastable output operand with shape {x.shape} doesn't match the "
            f"broadcast shape {result.shape}"
        )
    if result.dtype != x.dtype:
        if not np.can_cast(result.dtype, x.dtype, "same_kind"):
            raise _casting_error(ufunc, result.dtype, x.dtype)
        result = result.astype(x.dtype)
    if x not in _VIEWS and x._node.type in _VIEW_OPS:
        return result  # a slice read for x[a:b] += v: Python assigns the result back
    _commit(x, result)
    return x


def copyto(
    anchor: TensorHolder, dst: Any, src: Any, casting: str = "same_kind", where: Any = True
) -> None:
    """``np.copyto(dst, src, casting, where)`` with a traced ``dst``: rebinds ``dst``."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415

    if not anchor._builder._numpy_semantics:
        raise GeTypeError("np.copyto into a traced value works inside @ge.jit only")
    if not isinstance(dst, TensorHolder):
        raise GeTypeError(
            f"np.copyto into a {type(dst).__name__} from a traced value: the destination "
            f"must be a traced value (its values are only known when the graph runs)"
        )
    _check_not_view(dst)
    src_dtype = src.dtype if isinstance(src, TensorHolder) else np.asarray(src).dtype
    if isinstance(src, (int, float, complex)) and not isinstance(src, bool):
        src_dtype = np.result_type(dst.dtype, src) if casting == "same_kind" else src_dtype
    if not np.can_cast(src_dtype, dst.dtype, casting):  # type: ignore[arg-type]
        raise GeTypeError(
            f"Cannot cast array data from dtype('{src_dtype}') to dtype('{dst.dtype}') "
            f"according to the rule '{casting}'"
        )
    if isinstance(where, bool) and where:
        setitem(dst, Ellipsis, src)
        return
    value = _value(dst, src)
    full = value._op("BroadcastTo", value, value._ints(list(_static_shape(dst, "np.copyto"))))
    condition = dst._operand(where if isinstance(where, TensorHolder) else np.asarray(where))
    if condition.dtype != np.bool_:
        raise GeTypeError(f"np.copyto's where must be boolean, got {condition.dtype}")
    _commit(dst, dst._op("SelectV2", condition, full, dst))


def _copyto_rule(anchor: TensorHolder, dst: Any, src: Any, **kwargs: Any) -> None:
    copyto(anchor, dst, src, **kwargs)


def install(functions: dict[str, Any]) -> None:
    """Add ``np.copyto`` to ``TensorHolder.__array_function__``'s table (``np.copy`` is a
    rule of ``_numpy_api``)."""
    functions.setdefault("copyto", _copyto_rule)
