"""``ge.ge_global.GeApi``: classmethods returning 0, GE-PY's config checks and error texts
(GE_REFERENCE.md §5.1, §5.3, §10.2), option validation, and the lifecycle it gates."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ge.error import GeError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.ge_global.geapi import global_options, is_initialized
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}


@pytest.fixture(autouse=True)
def clean_state() -> Iterator[None]:
    """Every test starts and ends finalized, so no state leaks between tests."""
    GeApi.ge_finalize()
    yield
    GeApi.ge_finalize()


def small_graph():
    b = GraphBuilder("geapi_g")
    x = b.create_input(0, shape=[2])
    return b.build_and_reset([x + 1.0])


# --- classmethods, return values ----------------------------------------------------------------
def test_initialize_and_finalize_on_the_class_return_zero() -> None:
    assert GeApi.ge_initialize(CONFIG) == 0
    assert is_initialized()
    assert GeApi.ge_finalize() == 0
    assert not is_initialized()


def test_initialize_and_finalize_on_an_instance_return_zero() -> None:
    api = GeApi()
    assert api.ge_initialize(CONFIG) == 0
    assert is_initialized()
    assert api.ge_finalize() == 0
    assert not is_initialized()


def test_both_are_classmethods() -> None:
    assert isinstance(GeApi.__dict__["ge_initialize"], classmethod)
    assert isinstance(GeApi.__dict__["ge_finalize"], classmethod)


def test_finalize_without_initialize_returns_zero() -> None:
    assert not is_initialized()
    assert GeApi.ge_finalize() == 0
    assert GeApi().ge_finalize() == 0
    assert not is_initialized()


def test_result_is_an_int_zero_not_none_or_bool() -> None:
    ret = GeApi.ge_initialize(CONFIG)
    assert type(ret) is int and ret == 0
    ret = GeApi.ge_finalize()
    assert type(ret) is int and ret == 0


def test_initialize_keeps_a_copy_of_the_options() -> None:
    config = dict(CONFIG)
    GeApi.ge_initialize(config)
    config["ge.graphRunMode"] = "1"
    assert global_options() == CONFIG
    GeApi.ge_finalize()
    assert global_options() == {}


def test_initialize_again_replaces_options() -> None:
    GeApi.ge_initialize(CONFIG)
    assert GeApi.ge_initialize({"ge.graphRunMode": "1"}) == 0
    assert global_options() == {"ge.graphRunMode": "1"}
    assert is_initialized()


# --- config checks ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [None, [("a", "b")], "ge.exec.deviceId=0", 0, ("a", "b")])
def test_non_dict_config_is_type_error(bad: object) -> None:
    with pytest.raises(TypeError) as info:
        GeApi.ge_initialize(bad)  # type: ignore[arg-type]
    assert isinstance(info.value, GeError)
    assert not is_initialized()


def test_empty_config_is_type_error_with_ge_text() -> None:
    with pytest.raises(TypeError, match="Ge init config must not be empty"):
        GeApi.ge_initialize({})
    with pytest.raises(TypeError, match="Ge init config must not be empty"):
        GeApi().ge_initialize({})
    assert not is_initialized()


@pytest.mark.parametrize(
    "bad",
    [
        {1: "0"},
        {"ge.exec.deviceId": 0},
        {"ge.graphRunMode": None},
        {b"ge.exec.deviceId": "0"},
        {"ge.exec.deviceId": b"0"},
        {"ge.deterministic": True},
        {"ok": "1", "bad": 1.5},
    ],
)
def test_non_str_keys_and_values_are_type_errors(bad: dict) -> None:
    with pytest.raises(TypeError):
        GeApi.ge_initialize(bad)
    assert not is_initialized()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ge.graphRunMode", "2"),
        ("ge.graphRunMode", "train"),
        ("ge.graphRunMode", ""),
        ("ge.exec.deviceId", "-2"),
        ("ge.exec.deviceId", "zero"),
        ("ge.deterministic", "yes"),
        ("ge.exec.enableDump", "2"),
        ("ge.oo.level", "O4"),
        ("stream_sync_timeout", "-5"),
        ("event_sync_timeout", "soon"),
    ],
)
def test_known_option_values_are_validated(key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key.replace(".", r"\.")) as info:
        GeApi.ge_initialize({key: value})
    assert isinstance(info.value, GeError)
    assert not is_initialized()


def test_a_bad_value_does_not_replace_a_good_initialisation() -> None:
    GeApi.ge_initialize(CONFIG)
    with pytest.raises(ValueError):
        GeApi.ge_initialize({"ge.graphRunMode": "2"})
    assert is_initialized()
    assert global_options() == CONFIG


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ge.graphRunMode", "1"),
        ("ge.exec.deviceId", "-1"),
        ("ge.exec.deviceId", "7"),
        ("ge.deterministic", "1"),
        ("ge.oo.level", "O0"),
        ("stream_sync_timeout", "-1"),
        ("ge.socVersion", "Ascend910B1"),
    ],
)
def test_valid_known_values_are_accepted(key: str, value: str) -> None:
    assert GeApi.ge_initialize({key: value}) == 0
    assert global_options() == {key: value}


def test_unknown_keys_are_accepted() -> None:
    config = {"my.unknown.option": "anything", "ge.notAKey": "-42", "": ""}
    assert GeApi.ge_initialize(config) == 0
    assert global_options() == config


# --- lifecycle gate -----------------------------------------------------------------------------
def test_sessions_refuse_work_until_initialised_and_after_finalize() -> None:
    session = Session(CONFIG)  # constructing needs no initialisation
    graph = small_graph()
    with pytest.raises(GeError, match=r"AddGraph failed; graph_id=3") as info:
        session.add_graph(3, graph)
    assert isinstance(info.value, RuntimeError)
    assert "ge_initialize" in str(info.value)
    GeApi.ge_initialize(CONFIG)
    assert session.add_graph(3, graph) == 0
    GeApi.ge_finalize()
    with pytest.raises(GeError, match=r"RunGraph failed; graph_id=3"):
        session.run_graph(3, [])
    GeApi.ge_initialize(CONFIG)
    (out,) = session.run_graph(3, [_tensor([1.0, 2.0])])
    assert out.data == [2.0, 3.0]


def _tensor(values: list[float]):
    from ge.graph import Tensor

    return Tensor(values, None, shape=[len(values)])
