"""Thread-local ``attr_scope`` and ``control_dependency_scope`` state (GE_REFERENCE.md §3.3)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ge.error import GeTypeError
from ge.graph._attr import check_attr_key, infer_attr_value

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
def attr_scope(attr_maps: dict[str, Any]) -> Iterator[None]:
    """Set attributes on every node created inside the block; nests, inner keys win.

    Values follow GE-PY's attribute rules and are checked on entry (a dict or a mixed list
    raises ``ValueError``).

        with attr_scope({"_stream_label": "s1"}):
            y = x + 1          # the Add node carries _stream_label
    """
    if not isinstance(attr_maps, dict):
        raise GeTypeError(f"attr_maps must be a dict, got {type(attr_maps).__name__}")
    for key, value in attr_maps.items():
        check_attr_key(key)
        infer_attr_value(value)
    saved = _STATE.attrs
    _STATE.attrs = {**saved, **attr_maps}
    try:
        yield
    finally:
        _STATE.attrs = saved


@contextmanager
def control_dependency_scope(tensors: list[TensorHolder]) -> Iterator[None]:
    """Every node created inside the block runs after the producers of ``tensors``."""
    from ge.es.tensor_holder import TensorHolder  # noqa: PLC0415  (cycle: holder uses scopes)

    if not isinstance(tensors, (list, tuple)) or not all(
        isinstance(t, TensorHolder) for t in tensors
    ):
        raise GeTypeError("tensors must be a list of TensorHolder")
    saved = _STATE.control
    _STATE.control = [*saved, *tensors]
    try:
        yield
    finally:
        _STATE.control = saved
