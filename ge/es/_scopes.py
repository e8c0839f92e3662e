"""Thread-local ``attr_scope`` and ``control_dependency_scope`` state (GE_REFERENCE.md §3.3,
GE_ERRORS.md §3.2)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ge.error import GeTypeError

if TYPE_CHECKING:
    from ge.es.tensor_holder import TensorHolder

__all__ = ["attr_scope", "control_dependency_scope", "current_attrs", "current_control_deps"]


class _State(threading.local):
    def __init__(self) -> None:
        self.attrs: dict[str, Any] = {}
        self.control: list[TensorHolder] = []


_STATE = _State()


def current_attrs() -> dict[str, Any]:
    return _STATE.attrs


def current_control_deps() -> list[TensorHolder]:
    return _STATE.control


@contextmanager
def attr_scope(attr_maps: Mapping[str, Any]) -> Iterator[None]:
    """Set attributes on every node created inside the block; nests, inner keys win.

    As GE-PY (GE_ERRORS.md §3.2): any mapping is accepted, anything else is a ``TypeError``
    when the ``with`` is entered; the values are converted when a node is created inside the
    block (a dict or a mixed list then raises ``ValueError`` naming the value), so a scope
    with no node in it never fails.

        with attr_scope({"_stream_label": "s1"}):
            y = x + 1          # the Add node carries _stream_label
    """
    if not isinstance(attr_maps, Mapping):
        raise GeTypeError(
            f"'{type(attr_maps).__name__}' object is not a mapping (attr_maps must be a dict "
            f"of attribute names to values)"
        )
    saved = _STATE.attrs
    _STATE.attrs = {**saved, **attr_maps}
    try:
        yield
    finally:
        _STATE.attrs = saved


@contextmanager
def control_dependency_scope(tensors: list[TensorHolder]) -> Iterator[None]:
    """Every node created inside the block runs after the producers of ``tensors``.

    As GE-PY (GE_ERRORS.md §3.2): ``tensors`` must be a ``list`` (a tuple fails too) when the
    ``with`` is entered; its elements are checked when a node is created inside the block
    ("src_tensors must be a list of TensorHolder")."""
    if not isinstance(tensors, list):
        raise GeTypeError(
            f'can only concatenate list (not "{type(tensors).__name__}") to list (tensors '
            f"must be a list of TensorHolder)"
        )
    saved = _STATE.control
    _STATE.control = saved + tensors
    try:
        yield
    finally:
        _STATE.control = saved
