"""Custom ops in offline models: a declared launch (declare_launch_args) goes into the model
as a kernel task and runs with no Python; a custom op whose only path is its Python
``execute`` cannot go into a model, and build_model says which node."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from ge import offline_compile as oc
from ge.error import GeError
from ge.es import GraphBuilder
from ge.runtime import load_model
from tests.custom_op._ops import CALLS, rand, register_add


@pytest.fixture(autouse=True)
def _build_session() -> Iterator[None]:
    oc.build_initialize({})
    yield
    oc.build_finalize()


def _graph(op) -> object:  # type: ignore[no-untyped-def]
    b = GraphBuilder("custom")
    x = b.create_input(0, name="x", shape=[4, 8])
    y = b.create_input(1, name="y", shape=[4, 8])
    return b.build_and_reset([op(x, y) * 2.0])


def test_a_declared_custom_op_runs_from_the_model_without_its_callbacks() -> None:
    op = register_add("OfflineDeclaredAdd", declared=True)
    model = load_model(oc.build_model(_graph(op)).get_bytes())
    assert [c[0] for c in CALLS] == ["declare"]  # at build time, once
    x, y = rand(4, 8), rand(4, 8, seed=1)
    for _ in range(3):
        (out,) = model.execute([x, y])
        np.testing.assert_allclose(out, (x + y) * 2.0, rtol=1e-6)
    assert [c[0] for c in CALLS] == ["declare"]  # running calls no Python of the op


def test_an_execute_only_custom_op_is_refused_naming_the_node() -> None:
    op = register_add("OfflineExecutedAdd")
    refused = r"^BuildModel failed; node OfflineExecutedAdd\S* runs Python"
    with pytest.raises(GeError, match=refused):
        oc.build_model(_graph(op))
