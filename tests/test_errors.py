"""The ``ge.error`` family: builtin bases (GE_REFERENCE.md §10.2, STYLE.md "Errors") and texts."""

from __future__ import annotations

import pytest

import ge.error
from ge.error import AirFormatError, GeError, GeTypeError, GeValueError, GraphError


def test_ge_error_is_a_runtime_error() -> None:
    assert issubclass(GeError, RuntimeError)
    assert issubclass(GeError, Exception)


def test_ge_type_error_is_type_error_and_ge_error() -> None:
    assert issubclass(GeTypeError, TypeError)
    assert issubclass(GeTypeError, GeError)
    with pytest.raises(TypeError):
        raise GeTypeError("x")
    with pytest.raises(GeError):
        raise GeTypeError("x")


def test_ge_value_error_is_value_error_and_ge_error() -> None:
    assert issubclass(GeValueError, ValueError)
    assert issubclass(GeValueError, GeError)
    with pytest.raises(ValueError):
        raise GeValueError("x")


@pytest.mark.parametrize("cls", [GraphError, AirFormatError])
def test_other_errors_are_runtime_ge_errors(cls: type[GeError]) -> None:
    assert issubclass(cls, GeError)
    assert issubclass(cls, RuntimeError)
    assert not issubclass(cls, (TypeError, ValueError))


def test_public_names() -> None:
    assert set(ge.error.__all__) >= {"GeError", "GeTypeError", "GeValueError"}


def test_api_style_message() -> None:
    e = GeError("RunGraph", "msg", graph_id=2)
    assert str(e) == "RunGraph failed; graph_id=2; msg"
    assert e.api_name == "RunGraph"
    assert e.error_message == "msg"
    assert e.context == {"graph_id": 2}


def test_api_style_message_in_add_graph_form() -> None:
    e = GeError("AddGraph", "session is not initialized", graph_id=7)
    assert str(e).startswith("AddGraph failed; graph_id=7; ")
    assert str(e).endswith("session is not initialized")


def test_api_style_message_without_context() -> None:
    e = GeError("RunGraph", "boom")
    assert str(e) == "RunGraph failed; boom"
    assert e.context == {}


def test_api_style_message_keeps_context_order() -> None:
    e = GeError("RunGraph", "m", graph_id=1, stream=5)
    assert str(e) == "RunGraph failed; graph_id=1, stream=5; m"
    assert e.context == {"graph_id": 1, "stream": 5}


def test_plain_message() -> None:
    e = GeError("just text")
    assert str(e) == "just text"
    assert e.error_message == "just text"
    assert e.api_name == ""
    assert e.context == {}


def test_subclasses_take_the_same_arguments() -> None:
    e = GeTypeError("AddGraph", "Add_graph must be a Graph", graph_id=3)
    assert str(e) == "AddGraph failed; graph_id=3; Add_graph must be a Graph"
    assert isinstance(e, TypeError)
    assert e.api_name == "AddGraph"


def test_context_is_a_copy() -> None:
    ctx = {"graph_id": 1}
    e = GeError("RunGraph", "m", **ctx)
    ctx["graph_id"] = 9
    assert e.context == {"graph_id": 1}
