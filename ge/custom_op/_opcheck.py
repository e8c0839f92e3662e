"""``opcheck``: test a registered custom op against the promises its registration makes, as
``torch.library.opcheck`` does for torch custom ops.

For each sample (the op's inputs, numpy arrays), the op is compiled afresh (no eager-call
cache) and run through every path its implementation has, with every input in device memory
of its own so that writes to it are seen:

* ``test_infer_meta``: ``infer_meta`` accepts the sample, and what it gives is what the op
  really makes — each output an ``execute`` made (``malloc_output_tensor``) has the origin
  shape, storage shape and data type ``infer_meta`` gave (stricter than the runtime, which
  accepts any storage shape of the right element count), and every output array the plan
  returns has the inferred shape and dtype. For a ``declare_launch_args``-only op the
  callback makes no outputs, so only the second half can be checked.
* ``test_paths_agree``: an implementation with both ``execute`` and ``declare_launch_args``
  gives the same outputs, and the same new values of its mutated inputs, through both
  (``np.testing.assert_allclose``'s rule with ``rtol``/``atol``, by default torch's per-dtype
  tolerances; exact for integers and bools). ``SKIPPED`` with one path.
* ``test_declare_launch_args_once``: ``declare_launch_args`` (and ``compile``) run once per
  task plan: the plan is built, run twice, and each ran once; both runs give the same
  results, though each run's output memory starts with different bytes (so launches that
  read an output before writing it, or leave part of it unwritten, are caught). ``SKIPPED``
  without ``declare_launch_args``.
* ``test_mutates_args``: through every path, only inputs named in ``mutates_args`` change.

Like torch, ``opcheck`` raises on failure: an ``OpCheckError`` (a ``GeError`` and an
``AssertionError``) whose message lists every failed check of every sample and path; on
success it returns ``{check name: "SUCCESS" | "SKIPPED"}``. A run that fails (a callback that
raises, a kernel that fails) is reported as ``test_run`` (or as ``test_infer_meta`` when the
failure is ``malloc_output_tensor`` refusing the shape ``infer_meta`` gave). Bad arguments to
``opcheck`` itself (an unknown op, samples of the wrong form) raise ``GeTypeError`` /
``GeValueError`` at once.

    >>> import numpy as np
    >>> from ge.runtime import Tensor, TensorDesc
    >>> from ge.custom_op import get_execute_ctx, opcheck, register_op, register_op_impl
    >>> @register_op(op_type="DocCheckedIdentity")
    ... def identity(x: TensorDesc) -> TensorDesc:
    ...     return TensorDesc(x.shape, x.data_type)
    >>> @register_op_impl(op_type="DocCheckedIdentity")
    ... class Identity:
    ...     def execute(self, x: Tensor) -> None:
    ...         get_execute_ctx().make_output_ref_input(0, 0)
    >>> opcheck("DocCheckedIdentity", [np.ones(3, np.float32)])["test_infer_meta"]
    'SUCCESS'
    >>> from ge.custom_op import proto, registry
    >>> registry._unregister("DocCheckedIdentity"); proto._unregister("DocCheckedIdentity")
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ge.custom_op import _eager
from ge.custom_op.eager_call import PROBE, _Call, _Entry, compile_call, run_entry
from ge.error import GeError, GeTypeError, GeValueError, InferError
from ge.graph.tensor import Tensor
from ge.ops.schema import OpDef

__all__ = ["CHECKS", "OpCheckError", "opcheck"]

CHECKS = (
    "test_infer_meta",
    "test_paths_agree",
    "test_declare_launch_args_once",
    "test_mutates_args",
)
# the bytes outputs are filled with before each run: 0.0 and a large finite float32/float64
# (0x5A5A5A5A ~ 1.5e16), so a kernel reading an output before writing it is seen
_FILLS = (0x00, 0x5A)
_PATH_NAMES = {"eager_execute": "execute", "annotated_args": "declare_launch_args"}

# torch.testing.assert_close's defaults (rtol, atol) per dtype; integers and bools: exact
_TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}


class OpCheckError(GeError, AssertionError):
    """``opcheck`` found a broken promise. ``failures`` lists one line per failed check."""

    def __init__(self, op_type: str, failures: list[str]) -> None:
        self.op_type = op_type
        self.failures = list(failures)
        lines = "\n".join(f"  - {f}" for f in failures)
        super().__init__(f"opcheck({op_type!r}) failed {len(failures)} check(s):\n{lines}")


# --- one run of the op through one path -----------------------------------------------------------
@dataclass
class _Observed:
    """What a probe saw: the call, its compiled entry, the runs' outputs and inputs after
    each run, the watch, or the error that stopped it."""

    call: _Call | None = None
    entry: _Entry | None = None
    runs: list[tuple[list[np.ndarray], list[np.ndarray]]] = field(default_factory=list)
    watch: _eager.Watch = field(default_factory=_eager.Watch)
    error: Exception | None = None
    during: str = ""  # "infer_meta", "compile" or "run"


class _Probe:
    """Set in ``eager_call.PROBE`` around a call of the op's ``ge.es`` function: the call
    compiles afresh through ``path`` and runs ``runs`` times observing its inputs."""

    def __init__(self, op: OpDef, impl: Any, path: str, runs: int) -> None:
        self.op, self.impl, self.path, self.runs = op, impl, path, runs
        self.seen = _Observed()

    def run(self, call: _Call) -> None:
        seen = self.seen
        seen.call = call
        path_token = _eager.PATH.set(self.path)
        watch_token = _eager.WATCH.set(seen.watch)
        try:
            seen.during = "infer_meta"
            try:
                from ge.custom_op.eager_call import build_graph  # noqa: PLC0415

                build_graph(call)  # infer_meta on the sample (the compile builds it again)
            except InferError as e:
                seen.error = e
                return
            seen.during = "compile"
            seen.entry = compile_call(call, self.op, self.impl)
            seen.during = "run"
            for run in range(self.runs):  # outputs pre-filled differently per run
                outputs, after = run_entry(seen.entry, call, observe=True, fill=_FILLS[run])
                assert after is not None
                seen.runs.append((outputs, after))
        except Exception as e:  # reported as a failed check
            seen.error = e
        finally:
            _eager.WATCH.reset(watch_token)
            _eager.PATH.reset(path_token)


# --- samples --------------------------------------------------------------------------------------
def _is_value(v: Any) -> bool:
    return isinstance(v, (np.ndarray, np.generic, Tensor))


def _fits(op: OpDef, sample: Any) -> bool:
    if not isinstance(sample, (list, tuple)) or len(sample) != len(op.inputs):
        return False
    for spec, value in zip(op.inputs, sample, strict=True):
        if spec.dynamic:
            if not isinstance(value, (list, tuple)) or not all(_is_value(v) for v in value):
                return False
        elif not (_is_value(value) or (value is None and spec.optional)):
            return False
    return True


def _samples(op: OpDef, sample_inputs: Any) -> list[list[Any]]:
    if _fits(op, sample_inputs):
        return [list(sample_inputs)]
    if (
        isinstance(sample_inputs, (list, tuple))
        and sample_inputs
        and all(_fits(op, s) for s in sample_inputs)
    ):
        return [list(s) for s in sample_inputs]
    kinds = ", ".join(
        f"{s.name}: {'list of arrays' if s.dynamic else 'array or None' if s.optional else 'array'}"
        for s in op.inputs
    )
    raise GeTypeError(
        f"opcheck({op.type!r}): sample_inputs must be one sample — a list with one entry per "
        f"input of the op ({kinds}) — or a non-empty list of such samples"
    )


def _describe(sample: list[Any], op: OpDef) -> str:
    def one(v: Any) -> str:
        if v is None:
            return "None"
        if isinstance(v, Tensor):
            return f"{v.data_type.name}{list(v.shape)}"
        a = np.asarray(v)
        return f"{a.dtype}{list(a.shape)}"

    parts = []
    for spec, v in zip(op.inputs, sample, strict=True):
        text = f"[{', '.join(one(x) for x in v)}]" if spec.dynamic else one(v)
        parts.append(f"{spec.name}: {text}")
    return ", ".join(parts)


# --- the checks -----------------------------------------------------------------------------------
def _compare(a: np.ndarray, b: np.ndarray, rtol: float | None, atol: float | None) -> str | None:
    """``None`` when ``a`` and ``b`` agree (``np.testing.assert_allclose``'s rule for floats,
    NaNs equal; exact otherwise), else a one-line summary of what differs."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    default = _TOLERANCES.get(a.dtype)
    if default is None:
        bad = a != b
        rule = "exactly"
    else:
        r = default[0] if rtol is None else rtol
        t = default[1] if atol is None else atol
        bad = ~np.isclose(a, b, rtol=r, atol=t, equal_nan=True)
        rule = f"within rtol={r:g}, atol={t:g}"
    count = int(np.count_nonzero(bad))
    if not count:
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape)) if a.ndim else ()
    text = f"{count} of {a.size} elements differ {rule} (first at index {list(first)}: "
    text += f"{a[first]!r} vs {b[first]!r}"
    if default is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            worst = np.nanmax(np.abs(a[bad].astype(np.float64) - b[bad].astype(np.float64)))
        text += f"; max abs difference {worst:g}"
    return text + ")"


def _changed_elements(old: np.ndarray, new: np.ndarray) -> int:
    """How many elements differ bit for bit (a NaN written over a NaN does not count)."""
    a = old.reshape(-1).view(np.uint8).reshape(old.size, -1)
    b = new.reshape(-1).view(np.uint8).reshape(new.size, -1)
    return int(np.count_nonzero((a != b).any(axis=1))) if old.size else 0


def _mutated_instances(op: OpDef, call: _Call) -> set[int]:
    from ge.custom_op.proto import get_registered_op_proto  # noqa: PLC0415

    proto = get_registered_op_proto(op.type)
    names = {name for name, _ in proto.mutates_args} if proto is not None else set()
    ir = {i for i, s in enumerate(op.inputs) if s.name in names}
    return {k for k, inst in enumerate(call.instances) if inst.ir_index in ir}


def _before(call: _Call) -> list[np.ndarray]:
    from ge.custom_op.eager_call import _device_bytes  # noqa: PLC0415

    return [
        (inst.host if inst.host is not None else _device_bytes(inst))
        .view(inst.dtype)
        .reshape(inst.shape)
        for inst in call.instances
    ]


def _infer_meta_failures(seen: _Observed) -> list[str]:
    entry = seen.entry
    assert entry is not None
    failures = []
    descs = entry.output_descs
    for port, (desc, (_, shape)) in enumerate(zip(descs, entry.out_specs, strict=True)):
        if list(desc.get_shape()) != list(shape):
            failures.append(
                f"output {port}: the plan returned shape {list(shape)}, infer_meta gave "
                f"{list(desc.get_shape())}"
            )
    made = seen.watch.executes[0] if seen.watch.executes else []  # the first run's outputs
    for port, (origin, storage, data_type) in enumerate(made):
        desc = descs[port]
        dims = [int(d) for d in desc.get_shape()]
        # an origin shape is recorded only where infer_meta's differs from its storage one
        inferred_origin = [int(d) for d in desc.get_origin_shape()] or dims
        inferred_type = desc.get_data_type()
        if (origin, storage, data_type) != (inferred_origin, dims, inferred_type):
            failures.append(
                f"output {port}: execute made {data_type.name} origin shape {origin}, "
                f"storage shape {storage}; infer_meta gave {inferred_type.name} origin shape "
                f"{inferred_origin}, storage shape {dims}"
            )
    return failures


def _mutation_failures(op: OpDef, seen: _Observed, where: str) -> list[str]:
    call = seen.call
    assert call is not None
    mutated = _mutated_instances(op, call)
    failures = []
    for k, (old, new) in enumerate(zip(_before(call), seen.runs[0][1], strict=True)):
        changed = 0 if k in mutated else _changed_elements(old, new)
        if changed:
            failures.append(
                f"{where}: input '{call.instances[k].name}' was written ({changed} of "
                f"{old.size} elements changed) but is not in mutates_args: add it there or "
                f"leave it alone"
            )
    return failures


def _once_failures(
    seen: _Observed, interfaces: list[str], rtol: float | None, atol: float | None
) -> list[str]:
    watch, failures = seen.watch, []
    if watch.declares != 1:
        failures.append(
            f"declare_launch_args ran {watch.declares} times for one task plan run twice "
            f"(expected once)"
        )
    if "compilable" in interfaces and watch.compiles != 1:
        failures.append(f"compile ran {watch.compiles} times for one task plan (expected once)")
    (out1, _), (out2, _) = seen.runs
    for port, (a, b) in enumerate(zip(out1, out2, strict=True)):
        diff = _compare(a, b, rtol, atol)
        if diff is not None:
            failures.append(
                f"output {port} differs between two runs of the same plan on the same inputs: "
                f"{diff}"
            )
    return failures


def _check_sample(
    op: OpDef,
    interfaces: list[str],
    observed: dict[str, _Observed],
    rtol: float | None,
    atol: float | None,
) -> dict[str, list[str]]:
    """Failures per check for one sample (every path's observations)."""
    failed: dict[str, list[str]] = {c: [] for c in (*CHECKS, "test_run")}
    ran: dict[str, _Observed] = {}
    for path, seen in observed.items():
        where = f"{_PATH_NAMES[path]} path"
        if seen.error is not None:
            text = f"{type(seen.error).__name__}: {seen.error}"
            if seen.during == "infer_meta":
                failed["test_infer_meta"].append(f"infer_meta refused the sample: {text}")
            elif "Failed to malloc output tensor" in str(seen.error):
                failed["test_infer_meta"].append(f"{where}: {text}")
            else:
                failed["test_run"].append(f"{where}: {seen.during} raised {text}")
            continue
        ran[path] = seen
        failed["test_infer_meta"] += [f"{where}: {f}" for f in _infer_meta_failures(seen)]
        failed["test_mutates_args"] += _mutation_failures(op, seen, where)
        if path == "annotated_args":
            failed["test_declare_launch_args_once"] += _once_failures(seen, interfaces, rtol, atol)
    if len(ran) == 2:
        failed["test_paths_agree"] += _paths_disagree(op, ran, rtol, atol)
    return failed


def _paths_disagree(
    op: OpDef, ran: dict[str, _Observed], rtol: float | None, atol: float | None
) -> list[str]:
    ex, dl = ran["eager_execute"], ran["annotated_args"]
    assert ex.entry is not None and ex.call is not None
    failures = []
    refs = ex.entry.refs
    for port, (a, b) in enumerate(zip(ex.runs[0][0], dl.runs[0][0], strict=True)):
        if port in refs:  # its value is the mutated input's, compared below
            continue
        diff = _compare(a, b, rtol, atol)
        if diff is not None:
            failures.append(f"output {port}: execute and declare_launch_args differ: {diff}")
    for k in sorted(_mutated_instances(op, ex.call)):
        diff = _compare(ex.runs[0][1][k], dl.runs[0][1][k], rtol, atol)
        if diff is not None:
            failures.append(
                f"mutated input '{ex.call.instances[k].name}': execute and "
                f"declare_launch_args leave different values: {diff}"
            )
    return failures


# --- the entry point ------------------------------------------------------------------------------
def opcheck(
    op_type: str,
    sample_inputs: Sequence[Any],
    attrs: dict[str, Any] | None = None,
    *,
    checks: Sequence[str] = CHECKS,
    rtol: float | None = None,
    atol: float | None = None,
) -> dict[str, str]:
    """Check custom op ``op_type`` on ``sample_inputs`` (see the module docstring).

    ``sample_inputs`` is one sample — a list with one entry per IR input of the op (a numpy
    array; ``None`` for an absent optional input; a list of arrays for a dynamic one) — or a
    list of such samples. ``attrs`` are the keyword arguments of the op's ``ge.es`` function:
    its attributes and its ``<output>_num`` counts. ``checks`` selects among ``CHECKS``.
    Returns ``{check: "SUCCESS" | "SKIPPED"}``; raises ``OpCheckError`` listing every failure.
    """
    import ge.es.custom  # noqa: PLC0415
    from ge.custom_op._execution import missing_execution  # noqa: PLC0415
    from ge.custom_op.registry import get_registered_op_impl_for_type  # noqa: PLC0415
    from ge.ops.registry import registry  # noqa: PLC0415

    if not isinstance(op_type, str):
        raise GeTypeError(f"opcheck: op_type must be a str, got {type(op_type).__name__}")
    unknown = [c for c in checks if c not in CHECKS]
    if unknown:
        near = difflib.get_close_matches(unknown[0], CHECKS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise GeValueError(f"opcheck: unknown check {unknown[0]!r}{hint}; choose from {CHECKS}")
    ops = registry()
    op = ops.get(op_type)  # raises naming close matches; may discover plugins
    if op.source == "ge":
        raise GeValueError(f"opcheck: {op_type} is a built-in ge op, not a custom op")
    impl = get_registered_op_impl_for_type(op_type)
    if impl is None:
        raise missing_execution(op_type)
    fn = getattr(ge.es.custom, op_type)
    kwargs = dict(attrs or {})
    paths = [p for p in ("eager_execute", "annotated_args") if p in impl.interfaces]
    failures: list[str] = []
    applicable = {c: False for c in CHECKS}
    for i, sample in enumerate(_samples(op, sample_inputs)):
        label = f"sample {i} ({_describe(sample, op)})"
        observed: dict[str, _Observed] = {}
        for path in paths:
            probe = _Probe(op, impl, path, runs=2 if path == "annotated_args" else 1)
            token = PROBE.set(probe)
            try:
                fn(*sample, **kwargs)  # binding and input errors raise here, unchecked
            finally:
                PROBE.reset(token)
            observed[path] = probe.seen
        applicable["test_infer_meta"] = applicable["test_mutates_args"] = True
        applicable["test_paths_agree"] |= len(paths) == 2
        applicable["test_declare_launch_args_once"] |= "annotated_args" in paths
        for check, found in _check_sample(op, impl.interfaces, observed, rtol, atol).items():
            if check in checks or check == "test_run":
                failures += [f"{label}: {check}: {f}" for f in found]
    if failures:
        raise OpCheckError(op_type, failures)
    return {c: ("SUCCESS" if applicable[c] else "SKIPPED") for c in checks}
