"""Every custom-op test starts and ends with the registries, the loaded plugin paths and
``ASCEND_CUSTOM_OPP_PATH`` as they were: what a test registers never leaks into another test
(or into the op tables other test files iterate). It starts with an empty eager-call cache and
empty ``_ops.CALLS`` / ``_ops.SHAPES``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from ge.custom_op import bootstrap, eager_call, proto, registry
from ge.ge_global import GeApi
from ge.session import Session
from tests.custom_op import _ops

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    protos = proto._snapshot()
    impls = registry._snapshot()
    loaded = list(bootstrap._LOADED)
    env = os.environ.get(bootstrap.ENV_NAME)
    os.environ.pop(bootstrap.ENV_NAME, None)
    eager_call.cache_clear()
    _ops.CALLS.clear()
    _ops.SHAPES.clear()
    try:
        yield
    finally:
        eager_call.cache_clear()  # compiled graphs of eager calls hold the test's classes
        registry._restore(impls)
        proto._restore(protos)
        bootstrap._LOADED[:] = loaded
        if env is None:
            os.environ.pop(bootstrap.ENV_NAME, None)
        else:
            os.environ[bootstrap.ENV_NAME] = env


@pytest.fixture
def op_type() -> str:
    """A fresh op type name for one test."""
    return f"TestCustom{next(_counter)}"


@pytest.fixture
def session() -> Iterator[Session]:
    """A Session with GE initialized around it."""
    GeApi.ge_initialize({"ge.exec.deviceId": "0"})
    try:
        yield Session({})
    finally:
        GeApi.ge_finalize()
