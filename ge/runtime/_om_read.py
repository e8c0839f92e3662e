"""Reading offline models (``ge.runtime.om``): ``unpack`` checks every field of a model file
(type, range, and that buffers, argument slots and host ops fit the memory and types the
plan declares) before anything is used, and raises ``ModelFormatError`` saying what and where
for any file it cannot prove sound."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ge.error import GeError
from ge.options import Options
from ge.runtime._om_data import (
    ALIGN,
    DTYPES,
    FORMAT_VERSION,
    INT64,
    MAGIC,
    MAX_ARGS,
    MAX_BLOCK_DIM,
    MAX_BUFFER_BYTES,
    MAX_DEPTH,
    MAX_DIMS,
    MAX_HEADER_BYTES,
    PREFIX,
    BufferData,
    GraphEntry,
    HostTaskData,
    KernelTaskData,
    ModelData,
    ModelFormatError,
    PlanData,
    nbytes_of,
)
from ge.runtime.host_ops import HOST_OPS
from ge.runtime.plan import BufferKind

if TYPE_CHECKING:
    import mmap

__all__ = ["unpack"]


# --- reading ------------------------------------------------------------------------------------
def unpack(data: bytes | bytearray | memoryview | mmap.mmap) -> ModelData:
    """The model in ``data`` (the bytes of a file, or a map of one), checked whole: any
    flaw raises ``ModelFormatError`` saying what and where. Weights are read-only views of
    ``data`` (no copy)."""
    view = memoryview(data).cast("B")
    if len(view) < PREFIX.size:
        raise ModelFormatError(f"model file is {len(view)} bytes: too short for a model header")
    magic, version, length, digest = PREFIX.unpack_from(view, 0)
    if magic != MAGIC:
        raise ModelFormatError(f"not a ge model file: starts with {bytes(magic)!r}, not {MAGIC!r}")
    if version != FORMAT_VERSION:
        raise ModelFormatError(
            f"model format version {version}; this ge reads version {FORMAT_VERSION}"
        )
    if length > min(MAX_HEADER_BYTES, len(view) - PREFIX.size):
        raise ModelFormatError(
            f"model header claims {length} bytes; the file has {len(view) - PREFIX.size} "
            f"after the prefix"
        )
    if (PREFIX.size + length) % ALIGN:
        raise ModelFormatError(
            f"model data starts at {PREFIX.size + length}, not {ALIGN}-byte aligned"
        )
    text = bytes(view[PREFIX.size : PREFIX.size + length])
    if hashlib.sha256(text).digest() != digest:
        raise ModelFormatError("model header fails its SHA-256 check (the file was modified)")
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise ModelFormatError(f"model header is not UTF-8 JSON: {e}") from None
    return _Reader(header, view, PREFIX.size + length).model()


class _Reader:
    """Reads a parsed header, checking each field's type and range as it goes."""

    def __init__(self, header: Any, view: memoryview, data_start: int) -> None:
        self.header = _mapping(header, "header")
        self.view = view
        self.data_start = data_start

    def model(self) -> ModelData:
        sections = [self._section(s, i) for i, s in enumerate(self._list("sections"))]
        kernels = [
            bytes(sections[_index(k, len(sections), f"kernels[{i}]")])
            for i, k in enumerate(self._list("kernels"))
        ]
        weights = [self._weight(w, i, sections) for i, w in enumerate(self._list("weights"))]
        options = _mapping(self.header.get("options", {}), "options")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
            raise ModelFormatError("options must map strings to strings")
        graphs = [
            _graph(g, f"graphs[{i}]", len(kernels), weights)
            for i, g in enumerate(self._list("graphs"))
        ]
        if not graphs:
            raise ModelFormatError("model holds no graph")
        gears = [(g.name, _io_specs(g.plan, g.plan.inputs)) for g in graphs]
        if len(set(map(repr, gears))) != len(gears):  # a name repeats only for other shapes
            raise ModelFormatError(f"two graphs of one name take the same inputs: {gears}")
        for g in graphs:
            first = next(e for e in graphs if e.name == g.name)
            if (g.input_names, g.output_names) != (first.input_names, first.output_names):
                raise ModelFormatError(f"the gears of graph {g.name!r} differ in their names")
        version = _str(self.header.get("ge_version", ""), "ge_version")
        listed = _mapping(self.header.get("weight_names", {}), "weight_names")
        weight_names = {
            _str(k, "weight_names"): _index(v, len(weights), f"weight_names[{k!r}]")
            for k, v in listed.items()
        }
        return ModelData(
            graphs,
            kernels,
            weights,
            dict(options),
            version,
            weight_names,
            ge_options=self._ge_options(),
        )

    def _ge_options(self) -> Options | None:
        """The saved record; fields this ge does not know are left out (the model's kernels
        are built already: the record says how, it changes nothing at load)."""
        raw = self.header.get("ge_options")
        if raw is None:
            return None
        known = Options.variables()
        values = {k: v for k, v in _mapping(raw, "ge_options").items() if k in known}
        try:
            return Options.from_dict(values)
        except GeError as e:
            raise ModelFormatError(f"ge_options: {e}") from None

    def _list(self, key: str) -> list[Any]:
        return _list(self.header.get(key, []), key)

    def _section(self, raw: Any, i: int) -> memoryview:
        where = f"sections[{i}]"
        s = _mapping(raw, where)
        size = len(self.view) - self.data_start
        offset = _int(s.get("offset"), f"{where}.offset", 0, size)
        length = _int(s.get("length"), f"{where}.length", 0, size)
        if offset + length > size:
            raise ModelFormatError(
                f"{where} spans [{offset}, {offset + length}) of data, past the file's "
                f"{size} bytes of data"
            )
        if offset % ALIGN:
            raise ModelFormatError(f"{where} starts at {offset}, not {ALIGN}-byte aligned")
        body = self.view[self.data_start + offset : self.data_start + offset + length]
        if hashlib.sha256(body).hexdigest() != s.get("sha256"):
            raise ModelFormatError(f"{where} fails its SHA-256 check (the file was modified)")
        return body

    def _weight(self, raw: Any, i: int, sections: list[memoryview]) -> np.ndarray:
        where = f"weights[{i}]"
        w = _mapping(raw, where)
        body = sections[_index(w.get("section"), len(sections), f"{where}.section")]
        dtype = _dtype(w.get("dtype"), f"{where}.dtype")
        shape = _shape(w.get("shape"), f"{where}.shape")
        if nbytes_of(shape, dtype) != len(body):
            raise ModelFormatError(
                f"{where} is {dtype}{list(shape)} ({nbytes_of(shape, dtype)} bytes) but its "
                f"section holds {len(body)}"
            )
        array: np.ndarray = np.frombuffer(body, np.dtype(dtype)).reshape(shape)
        return array


def _graph(raw: Any, where: str, n_kernels: int, weights: list[np.ndarray]) -> GraphEntry:
    g = _mapping(raw, where)
    plan = _plan(g, where, n_kernels, weights, 0)
    names = [_str(s, f"{where}.input_names") for s in _list(g.get("input_names"), where)]
    out_names = [_str(s, f"{where}.output_names") for s in _list(g.get("output_names"), where)]
    if len(names) != len(plan.inputs) or len(out_names) != len(plan.outputs):
        raise ModelFormatError(f"{where}: input/output names do not match the inputs/outputs")
    return GraphEntry(_str(g.get("name"), f"{where}.name"), tuple(names), tuple(out_names), plan)


def _plan(
    g: dict[str, Any], where: str, n_kernels: int, weights: list[np.ndarray], depth: int
) -> PlanData:
    if depth > MAX_DEPTH:
        raise ModelFormatError(f"{where}: sub-plans nest deeper than {MAX_DEPTH}")
    subplans = tuple(
        _plan(
            _mapping(s, f"{where}.subplans[{i}]"),
            f"{where}.subplans[{i}]",
            n_kernels,
            weights,
            depth + 1,
        )
        for i, s in enumerate(_list(g.get("subplans", []), f"{where}.subplans"))
    )
    buffers = tuple(
        _buffer(b, f"{where}.buffers[{i}]")
        for i, b in enumerate(_list(g.get("buffers"), f"{where}.buffers"))
    )
    n = len(buffers)
    arena = _int(g.get("arena_size"), f"{where}.arena_size", 0, MAX_BUFFER_BYTES)
    views = dict(_pairs(g.get("views", []), f"{where}.views", n, n))
    consts = dict(_pairs(g.get("consts", []), f"{where}.consts", n, len(weights)))
    inputs = _indexes(g.get("inputs"), f"{where}.inputs", n)
    outputs = _indexes(g.get("outputs"), f"{where}.outputs", n)
    for b, spec in enumerate(buffers):
        _check_buffer(spec, b, where, arena, consts, views, buffers, weights)
    for k, b in enumerate(inputs):
        if buffers[b].kind is not BufferKind.INPUT or buffers[b].index != k:
            raise ModelFormatError(f"{where}.inputs[{k}] is buffer {b}, not input {k}")
    if len(set(inputs)) != len(inputs):
        raise ModelFormatError(f"{where}.inputs repeat a buffer: {list(inputs)}")
    for j, b in enumerate(outputs):  # each output is a buffer of its own (the caller's memory)
        if buffers[b].kind is not BufferKind.OUTPUT or buffers[b].index != j:
            raise ModelFormatError(f"{where}.outputs[{j}] is buffer {b}, not output {j}")
    for b, spec in enumerate(buffers):
        if spec.kind is BufferKind.INPUT and b not in inputs:
            raise ModelFormatError(f"{where}: input buffer {b} is not among the inputs")
        if spec.kind is BufferKind.OUTPUT and b not in outputs:
            raise ModelFormatError(f"{where}: output buffer {b} is not among the outputs")
    tasks = tuple(
        _task(t, f"{where}.tasks[{i}]", n_kernels, buffers, subplans)
        for i, t in enumerate(_list(g.get("tasks"), f"{where}.tasks"))
    )
    return PlanData(buffers, tasks, inputs, outputs, consts, views, arena, subplans)


def _check_view(
    spec: BufferData,
    at: str,
    source: int,
    views: Mapping[int, int],
    buffers: Sequence[BufferData],
) -> None:
    """A view (an intermediate; at run time it is where its source is) names an intermediate,
    an input or an output of the same ``nbytes`` and ``index``, which is not a view itself (no
    chains, no cycles)."""
    src = buffers[source]
    if src.kind is BufferKind.CONST or source in views:
        what = "a view" if source in views else f"a {src.kind.value} buffer"
        raise ModelFormatError(
            f"{at} is a view of buffer {source}, which is {what}; a view's source is an "
            f"intermediate, an input or an output that is not a view"
        )
    if src.nbytes != spec.nbytes or src.index != spec.index:
        raise ModelFormatError(
            f"{at} is a view of buffer {source}, which differs in size or index "
            f"({spec.nbytes} bytes at {spec.index}; the source {src.nbytes} at {src.index})"
        )


def _check_buffer(
    spec: BufferData,
    b: int,
    where: str,
    arena: int,
    consts: Mapping[int, int],
    views: Mapping[int, int],
    buffers: Sequence[BufferData],
    weights: list[np.ndarray],
) -> None:
    at = f"{where}.buffers[{b}]"
    source = views.get(b)
    if spec.kind is BufferKind.INTERMEDIATE:
        if source is not None:
            _check_view(spec, at, source, views, buffers)
        if (source is None or buffers[source].kind is BufferKind.INTERMEDIATE) and (
            spec.index + spec.nbytes > arena
        ):
            raise ModelFormatError(
                f"{at} spans [{spec.index}, {spec.index + spec.nbytes}) of an arena of "
                f"{arena} bytes"
            )
    elif source is not None:
        raise ModelFormatError(f"{at} is a {spec.kind.value} buffer; only intermediates are views")
    if spec.kind is BufferKind.CONST:
        w = consts.get(b)
        if w is None:
            raise ModelFormatError(f"{at} is a constant without a weight")
        weight = weights[w]
        if weight.dtype.name != spec.dtype or weight.shape != spec.shape:
            raise ModelFormatError(
                f"{at} is {spec.dtype}{list(spec.shape)}; its weight {w} is "
                f"{weight.dtype.name}{list(weight.shape)}"
            )
    elif b in consts:
        raise ModelFormatError(f"{at} is a {spec.kind.value} buffer with a weight")


def _buffer(raw: Any, where: str) -> BufferData:
    item = _list(raw, where)
    if len(item) != 4:
        raise ModelFormatError(f"{where} must be [kind, index, shape, dtype]")
    try:
        kind = BufferKind(item[0])
    except ValueError:
        raise ModelFormatError(f"{where}: unknown buffer kind {item[0]!r}") from None
    spec = BufferData(
        kind,
        _int(item[1], f"{where}.index", 0, MAX_BUFFER_BYTES),
        _shape(item[2], f"{where}.shape"),
        _dtype(item[3], f"{where}.dtype"),
    )
    if spec.nbytes > MAX_BUFFER_BYTES:
        raise ModelFormatError(f"{where} holds {spec.nbytes} bytes, past {MAX_BUFFER_BYTES}")
    return spec


def _task(
    raw: Any,
    where: str,
    n_kernels: int,
    buffers: Sequence[BufferData],
    subplans: Sequence[PlanData],
) -> KernelTaskData | HostTaskData:
    t = _mapping(raw, where)
    name = _str(t.get("name"), f"{where}.name")
    n = len(buffers)
    if "host" in t:
        op = t["host"]
        if not isinstance(op, str) or op not in HOST_OPS:
            raise ModelFormatError(f"{where}: unknown host op {op!r}; known: {sorted(HOST_OPS)}")
        if op == "custom_op":  # before its parameters: none of them is checked
            _refuse_custom_op(t.get("params"), [], (), where)
        kinds = HOST_OPS[op].params
        params = _mapping(t.get("params", {}), f"{where}.params")
        if set(params) != set(kinds):
            raise ModelFormatError(f"{where}: host op {op} takes parameters {sorted(kinds)}")
        for key, kind in kinds.items():
            _param(params[key], kind, f"{where}.params.{key}", n, len(subplans))
        bufs = _indexes(t.get("buffers"), f"{where}.buffers", n)
        specs = [buffers[b] for b in bufs]
        _HOST_CHECKS[op](params, specs, subplans, where)
        return HostTaskData(name, op, bufs, dict(params))
    kernel = _index(t.get("kernel"), n_kernels, f"{where}.kernel")
    template = _ints(_list(t.get("template"), f"{where}.template"), f"{where}.template", *INT64)
    if not 0 < len(template) <= MAX_ARGS:
        raise ModelFormatError(f"{where}.template has {len(template)} arguments")
    patches = []
    for i, raw_patch in enumerate(_list(t.get("patches"), f"{where}.patches")):
        at = f"{where}.patches[{i}]"
        patch = _list(raw_patch, at)
        if len(patch) != 3:
            raise ModelFormatError(f"{at} must be [position, buffer, offset]")
        pos = _index(patch[0], len(template), f"{at}.position")
        buf = _index(patch[1], n, f"{at}.buffer")
        off = _int(patch[2], f"{at}.offset", 0, buffers[buf].nbytes)
        patches.append((pos, buf, off))
    if len({p for p, _, _ in patches}) != len(patches):
        raise ModelFormatError(f"{where}.patches write one argument twice")
    same = _indexes(t.get("same_index_inputs", []), f"{where}.same_index_inputs", n)
    return KernelTaskData(
        name,
        kernel,
        _str(t.get("function"), f"{where}.function"),
        _int(t.get("block_dim"), f"{where}.block_dim", 1, MAX_BLOCK_DIM),
        template,
        tuple(patches),
        same,
    )


def _param(value: Any, kind: str, where: str, n_buffers: int, n_subplans: int) -> None:
    if kind == "bool":
        if not isinstance(value, bool):
            raise ModelFormatError(f"{where} must be true or false, got {value!r}")
    elif kind == "int":
        _int(value, where, 0, n_buffers)
    elif kind == "ints":
        for v in _list(value, where):
            _int(v, where, 0, n_buffers)
    elif kind == "plan":
        _index(value, n_subplans, where)
    elif kind == "plans":
        if not _list(value, where):
            raise ModelFormatError(f"{where} lists no sub-plan")
        for v in value:
            _index(v, n_subplans, where)
    else:
        _OTHER_PARAMS[kind](value, where, n_buffers)


def _str_param(value: Any, where: str, n_buffers: int) -> None:
    _str(value, where)


def _strs_param(value: Any, where: str, n_buffers: int) -> None:
    for item in _list(value, where):
        _str(item, where)


def _attrs_param(value: Any, where: str, n_buffers: int) -> None:
    """An op's attributes: JSON's numbers, strings, booleans, nulls and lists of them."""
    for name, item in _mapping(value, where).items():
        _json_value(item, f"{where}.{name}", 0)


def _json_value(value: Any, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ModelFormatError(f"{where} nests lists deeper than {MAX_DEPTH}")
    if isinstance(value, list):
        for item in value:
            _json_value(item, where, depth + 1)
    elif isinstance(value, dict):
        raise ModelFormatError(f"{where} must be a number, string, boolean or list, not an object")


def _groups_param(value: Any, where: str, n_buffers: int) -> None:
    """Lists of buffer positions (-1: none)."""
    for group in _list(value, where):
        for v in _list(group, where):
            _int(v, where, -1, n_buffers - 1)


def _absent_param(value: Any, where: str, n_buffers: int) -> None:
    """What only a plan of the process that made it holds: a file holds null."""
    if value is not None:
        raise ModelFormatError(f"{where} must be null in a model file, got {value!r}")


_OTHER_PARAMS = {
    "str": _str_param,
    "strs": _strs_param,
    "attrs": _attrs_param,
    "groups": _groups_param,
    "hint": _absent_param,
    "live": _absent_param,
}


def _io_specs(plan: PlanData, which: tuple[int, ...]) -> list[tuple[tuple[int, ...], str]]:
    return [(plan.buffers[b].shape, plan.buffers[b].dtype) for b in which]


def _specs(buffers: Sequence[BufferData]) -> list[tuple[tuple[int, ...], str]]:
    return [(b.shape, b.dtype) for b in buffers]


def _check_branch(
    params: Mapping[str, Any], specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """If/Case: buffers are [cond, inputs..., outputs...]; every branch reads a prefix of the
    inputs, exactly as typed, and writes exactly the outputs' types."""
    count, branches, takes = params["inputs"], params["branches"], params["branch_inputs"]
    if len(specs) < 1 + count or len(takes) != len(branches):
        raise ModelFormatError(f"{where}: branch buffers and parameters do not agree")
    if not params["case"] and len(branches) != 2:
        raise ModelFormatError(f"{where}: If has two branches, got {len(branches)}")
    if params["case"] and (specs[0].dtype != "int32" or specs[0].nbytes < 4):
        raise ModelFormatError(f"{where}: Case's branch index must be a non-empty int32")
    inputs, outputs = _specs(specs[1 : 1 + count]), _specs(specs[1 + count :])
    for k, (b, take) in enumerate(zip(branches, takes, strict=True)):
        sub = subplans[b]
        if take > count or _io_specs(sub, sub.inputs) != inputs[:take]:
            raise ModelFormatError(f"{where}: branch {k} does not read the task's inputs")
        if _io_specs(sub, sub.outputs) != outputs:
            raise ModelFormatError(f"{where}: branch {k} does not write the task's outputs")


def _check_while(
    params: Mapping[str, Any], specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """While: buffers are [vars..., outputs...] of one type each; cond reads the vars and
    returns one value, body reads and returns the vars."""
    count = params["inputs"]
    carried = _specs(specs[:count])
    cond, body = subplans[params["cond"]], subplans[params["body"]]
    if len(specs) != 2 * count or _specs(specs[count:]) != carried:
        raise ModelFormatError(f"{where}: While's outputs must be its loop vars' types")
    if _io_specs(cond, cond.inputs) != carried or len(cond.outputs) != 1:
        raise ModelFormatError(f"{where}: While's cond must read the loop vars, return one value")
    if _io_specs(body, body.inputs) != carried or _io_specs(body, body.outputs) != carried:
        raise ModelFormatError(f"{where}: While's body must read and return the loop vars")


def _check_copy(
    params: Mapping[str, Any], specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    if len(specs) != 2 or specs[0].nbytes != specs[1].nbytes:
        raise ModelFormatError(f"{where}: copy takes two buffers of one byte size")


def _check_matmul(
    params: Mapping[str, Any], specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """[a, b(, bias), out]: one dtype, operands >= 2-D whose product (plus bias) is out's
    shape exactly, so running it cannot fail on shapes."""
    count = 4 if params["bias"] else 3
    if len(specs) != count:
        raise ModelFormatError(f"{where}: matmul takes {count} buffers, got {len(specs)}")
    shapes = [s.shape for s in specs]
    if len({s.dtype for s in specs}) != 1 or any(len(s) < 2 for s in shapes[:2]):
        raise ModelFormatError(f"{where}: matmul buffers must share a dtype, operands >= 2-D")
    try:
        m = _matmul_shape(
            shapes[0], shapes[1], bool(params["transpose_a"]), bool(params["transpose_b"])
        )
        if params["bias"]:
            m = np.broadcast_shapes(m, shapes[2])
    except ValueError as e:
        raise ModelFormatError(f"{where}: matmul operand shapes do not fit: {e}") from None
    if tuple(m) != shapes[-1]:
        raise ModelFormatError(f"{where}: matmul writes {list(m)} into a {list(shapes[-1])} buffer")


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...], ta: bool, tb: bool) -> tuple[int, ...]:
    a = (*a[:-2], a[-1], a[-2]) if ta else a
    b = (*b[:-2], b[-1], b[-2]) if tb else b
    if a[-1] != b[-2]:
        raise ValueError(f"contracted dims {a[-1]} and {b[-2]} differ")
    return (*tuple(np.broadcast_shapes(a[:-2], b[:-2])), a[-2], b[-1])


def _check_reference(
    params: Mapping[str, Any], specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """[inputs..., outputs...]: ``outputs`` outputs, at least one, after the inputs, each
    input read through ``inputs`` exactly once. (That the op exists, takes these inputs and
    writes these shapes is checked when the plan is bound, at load, and when it runs.)"""
    count = params["outputs"]
    n_in = len(specs) - count
    if not 0 < count <= len(specs):
        raise ModelFormatError(f"{where}: reference writes {count} of {len(specs)} buffers")
    read = sorted(p for group in params["inputs"] for p in group if p >= 0)
    if read != list(range(n_in)):
        raise ModelFormatError(
            f"{where}: reference's inputs {params['inputs']} do not read each of its "
            f"{n_in} input buffers once"
        )


def _refuse_custom_op(
    params: Any, specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """A custom op's Python ``execute``: never in a model (a model runs no Python callback;
    ``ge.runtime._om_write`` does not write one)."""
    raise ModelFormatError(
        f"{where}: host op custom_op runs a custom op's Python execute; a model runs no "
        f"Python callback and never holds one"
    )


def _refuse_debug_print(
    params: Any, specs: list[BufferData], subplans: Sequence[PlanData], where: str
) -> None:
    """``ge.jit.debug_print`` in a body: its sink is Python of the process that traced it;
    never in a model (``ge.runtime._om_write`` refuses its live sink)."""
    raise ModelFormatError(
        f"{where}: host op debug_print prints through Python of the process that traced it; "
        f"a model never holds one"
    )


# each host op's check that its buffers (and sub-plans) fit it, so running it cannot fail on
# types or shapes: every HOST_OPS entry has one
_HOST_CHECKS = {
    "copy": _check_copy,
    "matmul": _check_matmul,
    "branch": _check_branch,
    "while": _check_while,
    "reference": _check_reference,
    "custom_op": _refuse_custom_op,
    "debug_print": _refuse_debug_print,
}


# --- field checks --------------------------------------------------------------------------------
def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [k for k, _ in pairs]
        raise ValueError(f"key {next(k for k in keys if keys.count(k) > 1)!r} appears twice")
    return found


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelFormatError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ModelFormatError(f"{where} must be a list, got {type(value).__name__}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ModelFormatError(f"{where} must be a string, got {type(value).__name__}")
    return value


def _int(value: Any, where: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ModelFormatError(f"{where} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _ints(values: list[Any], where: str, low: int, high: int) -> tuple[int, ...]:
    """``values`` as a tuple of integers in ``[low, high]`` (``_int`` of each, the message
    made only for a bad one: argument vectors are long)."""
    if all(type(v) is int and low <= v <= high for v in values):
        return tuple(values)
    bad = next(v for v in values if type(v) is not int or not low <= v <= high)
    return (_int(bad, where, low, high),)  # raises


def _index(value: Any, count: int, where: str) -> int:
    if type(value) is not int or not 0 <= value < count:
        raise ModelFormatError(f"{where} must be an index in [0, {count}), got {value!r}")
    return value


def _indexes(value: Any, where: str, count: int) -> tuple[int, ...]:
    return tuple(_index(v, count, where) for v in _list(value, where))


def _pairs(value: Any, where: str, keys: int, values: int) -> list[tuple[int, int]]:
    pairs = []
    for i, item in enumerate(_list(value, where)):
        pair = _list(item, f"{where}[{i}]")
        if len(pair) != 2:
            raise ModelFormatError(f"{where}[{i}] must be a pair")
        pairs.append((_index(pair[0], keys, where), _index(pair[1], values, where)))
    if len({k for k, _ in pairs}) != len(pairs):
        raise ModelFormatError(f"{where} lists a buffer twice")
    return pairs


def _shape(value: Any, where: str) -> tuple[int, ...]:
    dims = _list(value, where)
    if len(dims) > MAX_DIMS:
        raise ModelFormatError(f"{where} has {len(dims)} dims, past {MAX_DIMS}")
    return tuple(_int(d, where, 0, MAX_BUFFER_BYTES) for d in dims)


def _dtype(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in DTYPES:
        raise ModelFormatError(f"{where} must be one of {sorted(DTYPES)}, got {value!r}")
    return str(value)
