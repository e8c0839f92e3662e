"""The callback context accessors: RuntimeError with GE-PY's texts outside their callback,
the bound object inside ``_bound`` (what the execution paths will use), per thread."""

import threading
from typing import Any

import pytest

import ge.custom_op
from ge.custom_op import context
from ge.custom_op.context import (
    get_compile_ctx,
    get_compile_platform_info,
    get_declare_launch_args_ctx,
    get_execute_ctx,
)
from ge.error import GeError

ACCESSORS = [
    (get_execute_ctx, "get_execute_ctx() is only available inside schema-bound execute"),
    (get_compile_ctx, "get_compile_ctx() is only available inside schema-bound compile"),
    (
        get_compile_platform_info,
        "get_compile_platform_info() is only available inside schema-bound compile",
    ),
    (
        get_declare_launch_args_ctx,
        "get_declare_launch_args_ctx() is only available inside declare_launch_args",
    ),
]


@pytest.mark.parametrize(("accessor", "message"), ACCESSORS)
def test_outside_a_callback(accessor: Any, message: str) -> None:
    with pytest.raises(RuntimeError) as info:
        accessor()
    assert str(info.value) == message and isinstance(info.value, GeError)


def test_inside_and_after_a_callback() -> None:
    ctx, platform = object(), object()
    with context._bound("compile", ctx, platform):
        assert get_compile_ctx() is ctx and get_compile_platform_info() is platform
        with pytest.raises(RuntimeError):
            get_execute_ctx()
    with pytest.raises(RuntimeError):
        get_compile_ctx()
    with context._bound("execute", ctx):
        assert get_execute_ctx() is ctx
    with context._bound("declare_launch_args", ctx):
        assert get_declare_launch_args_ctx() is ctx
    with pytest.raises(RuntimeError):
        get_declare_launch_args_ctx()


def test_a_callback_that_raises_still_unbinds() -> None:
    with pytest.raises(KeyError), context._bound("execute", object()):
        raise KeyError("inside")
    with pytest.raises(RuntimeError):
        get_execute_ctx()


def test_contexts_are_per_thread() -> None:
    seen: list[str] = []

    def other() -> None:
        try:
            get_execute_ctx()
        except RuntimeError:
            seen.append("unbound")

    with context._bound("execute", object()):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == ["unbound"]


def test_bind_checks_its_arguments() -> None:
    with pytest.raises(GeError), context._bound("compile", object()):
        pass


def test_package_exports() -> None:
    for name in ge.custom_op.__all__:
        assert getattr(ge.custom_op, name) is not None
    assert set(ge.custom_op.__all__) <= set(dir(ge.custom_op))
    for name in ("AnnotatedArgsContext", "AnnotatedKernelArgs", "AnnotatedKernelLaunchInfo"):
        assert name in ge.custom_op.__all__
    with pytest.raises(AttributeError) as info:
        ge.custom_op.NoSuchThing  # noqa: B018
    assert str(info.value) == "module 'ge.custom_op' has no attribute 'NoSuchThing'"
