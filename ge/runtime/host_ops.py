"""The runtime's host ops: what a data ``HostTask`` names (``HostTask.op``), each a ``HostOp``
record of its parameters by kind and the maker of its function from them (``HOST_OPS``):
copies, BLAS matmuls, control flow over a plan's sub-plans, an op's numpy reference, a Python
custom op's ``execute``, a ``ge.jit.debug_print`` in a body. The makers of the last three live
in the layers above the runtime, named by string (imported only when a plan holds such a task).
``host_function`` resolves a data task to its function at bind (``ge.runtime.plan``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeValueError
from ge.runtime._record import FrozenRecord

if TYPE_CHECKING:
    from ge.runtime.plan import BufferSpec, HostTask

__all__ = ["HOST_OPS", "AddrFn", "HostFn", "HostOp", "SubRun", "host_function", "truthy"]

HostFn = Callable[[list[np.ndarray]], None]
AddrFn = Callable[[np.ndarray], None]  # a host function over the run's buffer addresses


def _copy(params: dict[str, Any]) -> HostFn:
    """The bytes of ``views[0]`` into ``views[1]`` (the same size; dtypes may differ)."""

    def run(views: list[np.ndarray]) -> None:
        views[1].reshape(-1).view(np.uint8)[...] = views[0].reshape(-1).view(np.uint8)

    return run


def _matmul(params: dict[str, Any]) -> HostFn:
    """``out = a @ b (+ bias)`` through numpy's BLAS, ``a``/``b`` transposed as ``params``
    say (``transpose_a``, ``transpose_b``, ``bias``: views are ``a, b[, bias], out``)."""
    ta, tb, bias = bool(params["transpose_a"]), bool(params["transpose_b"]), bool(params["bias"])

    def run(views: list[np.ndarray]) -> None:
        a, b, out = views[0], views[1], views[-1]
        np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b, out=out)
        if bias:
            out += views[2]

    return run


SubRun = Callable[[list[np.ndarray]], list[np.ndarray]]  # a sub-plan run on host arrays


def truthy(value: np.ndarray) -> bool:
    """A condition tensor's truth, as ``ge.ops.control`` decides it for If and While: the value
    of a one-element tensor of rank 0 or 1, else whether it has elements (so a [1, 1] tensor
    holding 0 is true)."""
    array = np.asarray(value)
    return bool(array.reshape(())) if array.size == 1 and array.ndim <= 1 else array.size > 0


def _outputs(views: list[np.ndarray], start: int, results: list[np.ndarray]) -> None:
    for out, result in zip(views[start:], results, strict=True):
        out[...] = result


def _branch(params: dict[str, Any]) -> HostFn:
    """If/Case: ``views`` are ``[cond or index, inputs..., outputs...]``; the chosen branch
    (a sub-plan) runs on the inputs it takes (a branch may take fewer, the last ones first
    dropped) and its results are the outputs. Case runs the last branch for an index out of
    range; If's branches are ``[then, else]``."""
    branches: list[SubRun] = params["branches"]
    takes: list[int] = params["branch_inputs"]
    count, case = int(params["inputs"]), bool(params["case"])

    def run(views: list[np.ndarray]) -> None:
        if case:
            index = int(np.asarray(views[0]).reshape(-1)[0])
            k = index if 0 <= index < len(branches) else len(branches) - 1
        else:
            k = 0 if truthy(views[0]) else 1
        inputs = [np.array(v) for v in views[1 : 1 + count][: takes[k]]]
        _outputs(views, 1 + count, branches[k](inputs))

    return run


def _loop(params: dict[str, Any]) -> HostFn:
    """While: ``views`` are ``[vars..., outputs...]``; while ``cond(vars)`` (a sub-plan with
    one result) is true, ``vars = body(vars)``."""
    cond: SubRun = params["cond"]
    body: SubRun = params["body"]
    count = int(params["inputs"])

    def run(views: list[np.ndarray]) -> None:
        values = [np.array(v) for v in views[:count]]
        while truthy(cond(values)[0]):
            values = body(values)
        _outputs(views, count, values)

    return run


class HostOp(FrozenRecord):
    """A host task that is data: its parameters by kind and the maker of its function from
    them (sub-plans given as ``SubRun``s). Kinds: ``bool``, ``int``, ``ints``, ``str``,
    ``strs`` (a list of strings), ``plan`` (a sub-plan's index in ``Plan.subplans``),
    ``plans`` (a list of them), ``attrs`` (an op's attributes: a mapping of names to values),
    ``groups`` (lists of buffer positions, -1 for none), and two that only a plan made in this
    process holds: ``live`` (objects of this process; a plan holding one cannot be written to
    a file) and ``hint`` (the same, but optional: dropped, as ``None``, when the plan is
    written).

    An op whose function works on the run's buffer addresses rather than numpy views of them
    (a custom op's ``execute``, which lends ``ge.runtime.Tensor`` objects over the buffers) has
    ``make_addressed`` instead of ``make``: it gets the parameters and the task's buffers as
    ``(buffer id, BufferSpec)`` pairs, and its function gets the run's address vector."""

    __match_args__ = ("params", "make", "make_addressed")
    __slots__ = ("make", "make_addressed", "params")
    params: dict[str, str]
    make: Callable[[dict[str, Any]], HostFn] | None
    make_addressed: Callable[[dict[str, Any], list[tuple[int, BufferSpec]]], AddrFn] | None

    def __init__(
        self,
        params: dict[str, str],
        make: Callable[[dict[str, Any]], HostFn] | None = None,
        make_addressed: Callable[[dict[str, Any], list[tuple[int, BufferSpec]]], AddrFn]
        | None = None,
    ) -> None:
        self._set("params", params)
        self._set("make", make)
        self._set("make_addressed", make_addressed)


# The maker of ``reference`` tasks (an op without a kernel, run by its numpy reference on the
# host) needs ge's op library, which the runtime does not import: binding a plan that holds
# such a task imports it from the module named here (plans and models without one never do).
REFERENCE_PROVIDER = ("ge.ops.host_reference", "make_reference")


def _reference(params: dict[str, Any]) -> HostFn:
    """``reference``: ``views`` are the op's connected inputs then its ``outputs`` outputs;
    ``inputs`` lists, per IR input of op type ``op_type``, the view of each of its ports (-1:
    an unconnected optional input), and ``attrs`` are its attributes (``node``: the node, for
    messages). ``descs`` (a hint) are the node's output descs, ``subgraphs`` (live) a
    control-flow op's graphs and their runner."""
    make: Callable[[dict[str, Any]], HostFn] = _provided(REFERENCE_PROVIDER)
    return make(params)


def _provided(provider: tuple[str, str]) -> Any:
    """The function ``(module, name)`` names, importing its module (a layer above the
    runtime, named by string: the runtime never imports it unless a plan needs it)."""
    import importlib  # noqa: PLC0415

    module, name = provider
    return getattr(importlib.import_module(module), name)


# The maker of ``debug_print`` tasks (``ge.jit.debug_print`` in a body) finds the print's sink,
# a Python function of the process that traced it, by the task's ``print_id``.
DEBUG_PRINT_PROVIDER = ("ge.ops.debug", "make_print")


def _debug_print(params: dict[str, Any]) -> HostFn:
    """``debug_print``: the sink of print ``print_id`` (node ``node``) on the printed views."""
    make: Callable[[dict[str, Any]], HostFn] = _provided(DEBUG_PRINT_PROVIDER)
    return make(params)


# The maker of ``custom_op`` tasks (a Python custom op run by its ``execute``) needs the
# custom-op registry, which sits above the runtime: binding a plan that holds such a task
# imports it from the module named here (plans and models without one never do).
CUSTOM_OP_PROVIDER = ("ge.custom_op._eager", "make_execute")


def _custom_op(params: dict[str, Any], buffers: list[tuple[int, BufferSpec]]) -> AddrFn:
    """``custom_op``: the Python custom op ``op_type`` (node ``node``) run by the ``execute``
    of the implementation registered for it, on ``buffers``: its present input instances,
    then its output instances, then the constants of its ``Tensor`` attributes. ``inputs`` /
    ``outputs`` list, per IR input / output, the positions of its instances in ``buffers``;
    ``attrs`` are its attributes by name (a ``Tensor`` attribute: its constant's position;
    a data type: its ``DataType`` value); ``dtypes`` and ``formats`` give each position's
    ``DataType`` and ``Format`` values, ``output_names`` the output instances' names.
    ``instance`` (a hint) is the implementation object lowering made for the node (its
    ``compile`` ran on it); without it, bind makes one."""
    make: Callable[[dict[str, Any], list[tuple[int, BufferSpec]]], AddrFn] = _provided(
        CUSTOM_OP_PROVIDER
    )
    return make(params, buffers)


HOST_OPS: dict[str, HostOp] = {
    "copy": HostOp({}, _copy),
    "matmul": HostOp({"transpose_a": "bool", "transpose_b": "bool", "bias": "bool"}, _matmul),
    "branch": HostOp(
        {"case": "bool", "inputs": "int", "branches": "plans", "branch_inputs": "ints"}, _branch
    ),
    "while": HostOp({"inputs": "int", "cond": "plan", "body": "plan"}, _loop),
    "reference": HostOp(
        {
            "op_type": "str",
            "node": "str",
            "attrs": "attrs",
            "inputs": "groups",
            "outputs": "int",
            "descs": "hint",
            "subgraphs": "live",
        },
        _reference,
    ),
    "debug_print": HostOp({"node": "str", "print_id": "int"}, _debug_print),
    "custom_op": HostOp(
        {
            "op_type": "str",
            "node": "str",
            "attrs": "attrs",
            "inputs": "groups",
            "outputs": "groups",
            "dtypes": "ints",
            "formats": "ints",
            "output_names": "strs",
            "instance": "hint",
        },
        make_addressed=_custom_op,
    ),
}


def host_function(task: HostTask, subruns: Sequence[SubRun] = ()) -> HostFn:
    """The function of data task ``task``, its sub-plan parameters resolved to ``subruns``
    (the runners of the plan's ``subplans``, by index)."""
    spec = HOST_OPS[task.op]
    if spec.make is None:
        raise GeValueError(
            f"host op {task.op!r} runs on buffer addresses, not views: bind its plan "
            f"(Plan.bind()) to run task {task.name}"
        )
    params = {key: _resolve(value, spec.params[key], subruns) for key, value in task.params.items()}
    return spec.make(params)


def _resolve(value: Any, kind: str, subruns: Sequence[SubRun]) -> Any:
    if kind == "plan":
        return subruns[value]
    if kind == "plans":
        return [subruns[v] for v in value]
    return value
