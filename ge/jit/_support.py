"""What numpy ``ge.jit`` supports on traced values: ``numpy_support()`` and the one error for
everything else.

``numpy_support()`` is a ``SupportTable``: a tuple of ``SupportRow(name, kind, status,
notes)``, one per numpy function, ufunc, ufunc method, ``ndarray`` method or attribute and
Python operator, built each call from the live rule tables of ``ge.es`` (so rules added there,
or ops registered with a ``ufunc`` name, appear without touching this module):

- ``name``: ``numpy.cumsum``, ``numpy.linalg.norm``, ``numpy.exp``, ``numpy.add.reduce``,
  ``numpy.ndarray.reshape``, or an operator as written (``x + y``, ``x[k] = v``);
- ``kind``: ``"function"`` (dispatched through ``__array_function__``), ``"ufunc"``,
  ``"ufunc method"``, ``"method"``, ``"attribute"`` or ``"operator"``;
- ``status``: ``"supported"``; ``"refused"`` (a rule exists but always raises, saying why:
  output sizes that depend on values, Python truth of a traced value); or ``"unsupported"``
  (no rule: using it raises ``NotSupportedError``);
- ``notes``: for a function, the keywords numpy takes that the rule does not (each raises
  ``GeTypeError`` naming it); for a ufunc, the ``ge.ops`` op it builds and the dtypes that op
  takes; for a refused entry, why.

The rows come from ``ge.es.numpy_rules``' public records (``RuleInfo`` of each function rule,
filled by the rule registrar; ``UfuncInfo``, ufunc method keywords, ``MethodInfo`` of each
``ndarray`` method), never from private names of the rule modules.

``SupportTable.as_markdown()`` renders it (the table of ``docs/jit_numpy_support.md``);
``select(kind=..., status=...)`` filters it, ``row(name)`` finds one entry.

``rewrite(error)`` turns numpy's generic ``TypeError`` for a call no rule handles (``no
implementation found for 'numpy.cumsum'``, ``operand type(s) all returned NotImplemented
from __array_ufunc__``) and the ``AttributeError`` of a missing ``ndarray`` method into one
``NotSupportedError``: ``ge.jit does not support numpy.<name> (<why>; called at <file:line>);
supported: see `ge.jit.numpy_support()```. ``ge.jit`` applies it where a trace calls the
user's function, so numpy's own texts never reach a ``ge.jit`` user. ``NotSupportedError``
lives in ``ge.error`` (``ge.jit.NotSupportedError`` is the same class).

Decisions (ours): functions are those numpy dispatches in ``numpy``, ``numpy.linalg`` and
``numpy.fft`` (not ``numpy.lib.recfunctions`` and the like); functions numpy does not
dispatch (``np.zeros``, ``np.arange``) run on their concrete arguments and become constants,
so they are not listed. A ufunc method row is listed for each supported binary ufunc; an
``ndarray`` method that forwards to a numpy function (``x.cumsum()``) is supported when that
function is. ``NotSupportedError`` is a ``GeTypeError`` (numpy raised a ``TypeError``); for a
missing method it is also an ``AttributeError``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ge.error import GeTypeError, NotSupportedError
from ge.es import numpy_rules
from ge.es.numpy_rules import RuleInfo
from ge.es.tensor_holder import TensorHolder
from ge.ops.registry import find_op

__all__ = [
    "NotSupportedError",
    "SupportRow",
    "SupportTable",
    "numpy_support",
    "render_page",
    "rewrite",
]

HINT = "supported: see `ge.jit.numpy_support()`"


class _NotSupportedAttributeError(NotSupportedError, AttributeError):
    """A missing ``ndarray`` method or attribute of a traced value."""


class SupportRow(NamedTuple):
    name: str
    kind: str
    status: str
    notes: str


class SupportTable(tuple[SupportRow, ...]):
    """``numpy_support()``'s rows; a tuple, with filters and a Markdown rendering."""

    __slots__ = ()

    def select(self, kind: str | None = None, status: str | None = None) -> SupportTable:
        """The rows of this ``kind`` and ``status`` (``None``: any)."""
        return SupportTable(
            r
            for r in self
            if (kind is None or r.kind == kind) and (status is None or r.status == status)
        )

    def row(self, name: str) -> SupportRow | None:
        """The row named ``name`` (``numpy.cumsum``, ``x + y``), or ``None``."""
        return next((r for r in self if r.name == name), None)

    def as_markdown(self) -> str:
        lines = ["| name | kind | status | notes |", "|---|---|---|---|"]
        for r in self:
            notes = r.notes.replace("|", "\\|")
            lines.append(f"| `{r.name}` | {r.kind} | {r.status} | {notes} |")
        return "\n".join(lines) + "\n"

    def _repr_markdown_(self) -> str:  # Jupyter
        return self.as_markdown()


# --- the table -----------------------------------------------------------------------------------
def numpy_support() -> SupportTable:
    """Every numpy function, ufunc, ufunc method, ``ndarray`` method/attribute and operator,
    with whether ``ge.jit`` supports it on traced values (see this module's docstring)."""
    rows = [*_function_rows(), *_ufunc_rows(), *_method_rows(), *_operator_rows()]
    return SupportTable(rows)


# the numpy namespaces listed: numpy registers a module's functions when it is imported, so
# the list is fixed (not "whatever this process imported") by importing these and only these
_MODULES = ("numpy", "numpy.linalg", "numpy.fft")


def _overridable() -> list[Callable[..., Any]]:
    for module in _MODULES:
        importlib.import_module(module)
    from numpy.testing.overrides import get_overridable_numpy_array_functions  # noqa: PLC0415

    listed = [f for f in get_overridable_numpy_array_functions() if f.__module__ in _MODULES]
    return sorted(listed, key=_qualified)


def _qualified(function: Any) -> str:
    module = getattr(function, "__module__", None) or "numpy"
    return f"{module}.{function.__name__}"


def _function_rows() -> list[SupportRow]:
    rules = numpy_rules.function_rules()
    rows, seen = [], set()
    named = set()
    for function in _overridable():
        name = _qualified(function)
        if name in named:  # numpy lists some ``like=`` creators twice
            continue
        named.add(name)
        seen.add(function.__name__)
        rows.append(_function_row(name, function, rules.get(function.__name__)))
    for name in sorted(set(rules) - seen):  # a rule for a name numpy does not dispatch here
        rows.append(_function_row(f"numpy.{name}", getattr(np, name, None), rules[name]))
    return rows


def _function_row(name: str, function: Any, info: RuleInfo | None) -> SupportRow:
    if info is None:
        params = _parameters(function) or {}
        like = "like" in params and not name.endswith("_like")
        note = "only like= dispatches; without it, the result is a numpy constant" if like else ""
        return SupportRow(name, "function", "unsupported", note)
    if info.status == "refused":
        return SupportRow(name, "function", "refused", info.why)
    return SupportRow(name, "function", "supported", _missing_keywords(function, info))


def _parameters(function: Any) -> dict[str, inspect.Parameter] | None:
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def _missing_keywords(function: Any, info: RuleInfo) -> str:
    numpy_params = _parameters(function) if function is not None else None
    if numpy_params is None or info.keywords is None:
        return ""
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    missing = [n for n, p in numpy_params.items() if p.kind in keyword and n not in info.keywords]
    return f"not taken: {', '.join(missing)}" if missing else ""


def _ufuncs() -> list[np.ufunc]:
    found = {u.__name__: u for u in vars(np).values() if isinstance(u, np.ufunc)}
    return [found[n] for n in sorted(found)]


def _ufunc_rows() -> list[SupportRow]:
    rows = []
    for ufunc in _ufuncs():
        name = f"numpy.{ufunc.__name__}"
        if numpy_rules.ufunc_rule(ufunc.__name__) is None:
            rows.append(SupportRow(name, "ufunc", "unsupported", ""))
            continue
        rows.append(SupportRow(name, "ufunc", "supported", _ufunc_notes(ufunc.__name__)))
        if ufunc.nin == 2 and ufunc.nout == 1:
            rows += [_method_row(ufunc, method) for method in _UFUNC_METHODS]
    return rows


def _ufunc_notes(name: str) -> str:
    info = numpy_rules.ufunc_rule(name)
    op = find_op(info.op_type) if info is not None and info.op_type is not None else None
    if op is None:
        return "composite rule (several ops)"
    dtypes = op.inputs[0].dtypes if op.inputs else None
    if not dtypes:
        return f"op {op.type}"
    names = sorted(str(np.dtype(_numpy_dtype(d))) for d in dtypes if _numpy_dtype(d) is not None)
    return f"op {op.type}; dtypes: {', '.join(names)}"


def _numpy_dtype(data_type: Any) -> Any:
    from ge.graph._dtypes import numpy_dtype  # noqa: PLC0415

    try:
        return numpy_dtype(data_type)
    except Exception:  # a GE type numpy has no dtype for (qint8, ...)
        return None


_UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")

# what to write instead of a ufunc method with no rule
_METHOD_HINTS = {
    "add.reduce": "np.sum",
    "multiply.reduce": "np.prod",
    "maximum.reduce": "np.max",
    "minimum.reduce": "np.min",
    "logical_and.reduce": "np.all",
    "logical_or.reduce": "np.any",
    "add.accumulate": "np.cumsum",
    "multiply.accumulate": "np.cumprod",
}


def _method_row(ufunc: np.ufunc, method: str) -> SupportRow:
    """A ufunc method's row: ``.accumulate`` needs the ufunc's scan (``np.cumsum``...) to
    have a rule; the others need only the method to have one."""
    name = f"numpy.{ufunc.__name__}.{method}"
    if ufunc.signature is not None:  # numpy itself refuses methods of a generalized ufunc
        return SupportRow(name, "ufunc method", "unsupported", "numpy has none (a gufunc)")
    keywords = numpy_rules.ufunc_method_keywords(method)
    supported = keywords is not None
    if supported and method == "accumulate":
        scan = numpy_rules.ufunc_accumulator(ufunc.__name__)
        supported = scan is not None and numpy_rules.has_rule(scan)
    if not supported:
        hint = _METHOD_HINTS.get(f"{ufunc.__name__}.{method}")
        return SupportRow(name, "ufunc method", "unsupported", f"use {hint}" if hint else "")
    takes = f"keywords: {', '.join(sorted(keywords))}" if keywords else ""
    return SupportRow(name, "ufunc method", "supported", takes)


def _method_rows() -> list[SupportRow]:
    rows = []
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        kind = "method" if callable(getattr(np.ndarray, name)) else "attribute"
        row = f"numpy.ndarray.{name}"
        info = numpy_rules.ndarray_method(name)
        if info is None:
            rows.append(SupportRow(row, kind, "unsupported", ""))
        elif info.forwards_to is not None and not numpy_rules.has_rule(info.forwards_to):
            note = f"forwards to numpy.{info.forwards_to}, which has no rule"
            rows.append(SupportRow(row, kind, "unsupported", note))
        elif info.always_raises:
            rows.append(SupportRow(row, kind, "refused", _CONCRETE))
        elif info.forwards_to is not None and _refused(info.forwards_to):
            why = numpy_rules.function_rules()[info.forwards_to].why
            rows.append(SupportRow(row, kind, "refused", f"as numpy.{info.forwards_to}: {why}"))
        else:
            rows.append(SupportRow(row, kind, "supported", info.summary))
    return rows


def _refused(function: str) -> bool:
    info = numpy_rules.function_rules().get(function)
    return info is not None and info.status == "refused"


_CONCRETE = (
    "always raises: a traced value's value is only known at run time (use ge.jit.cond / "
    "while_loop, ge.jit.debug_print, or make the argument static)"
)
# operator as written -> the TensorHolder method it calls
_OPERATORS: dict[str, str] = {
    "x + y": "__add__",
    "x - y": "__sub__",
    "x * y": "__mul__",
    "x / y": "__truediv__",
    "x // y": "__floordiv__",
    "x % y": "__mod__",
    "divmod(x, y)": "__divmod__",
    "x ** y": "__pow__",
    "x @ y": "__matmul__",
    "x & y": "__and__",
    "x | y": "__or__",
    "x ^ y": "__xor__",
    "x << y": "__lshift__",
    "x >> y": "__rshift__",
    "-x": "__neg__",
    "+x": "__pos__",
    "~x": "__invert__",
    "abs(x)": "__abs__",
    "x < y": "__lt__",
    "x <= y": "__le__",
    "x > y": "__gt__",
    "x >= y": "__ge__",
    "x == y": "__eq__",
    "x != y": "__ne__",
    "x[k]": "__getitem__",
    "x[k] = v": "__setitem__",
    "x += y": "__iadd__",
    "x -= y": "__isub__",
    "x *= y": "__imul__",
    "x /= y": "__itruediv__",
    "x //= y": "__ifloordiv__",
    "x %= y": "__imod__",
    "x **= y": "__ipow__",
    "x @= y": "__imatmul__",
    "len(x)": "__len__",
    "iter(x)": "__iter__",
    "bool(x)": "__bool__",
    "int(x)": "__int__",
    "float(x)": "__float__",
    "operator.index(x)": "__index__",
    "np.asarray(x)": "__array__",
}


def _operator_rows() -> list[SupportRow]:
    rows = []
    for written, method in _OPERATORS.items():
        ours = getattr(TensorHolder, method, None)
        info = numpy_rules.ndarray_method(method)
        if info is None or ours is getattr(object, method, None):
            rows.append(SupportRow(written, "operator", "unsupported", ""))
        elif info.always_raises:
            rows.append(SupportRow(written, "operator", "refused", _CONCRETE))
        else:
            rows.append(SupportRow(written, "operator", "supported", ""))
    return rows


# --- the error -----------------------------------------------------------------------------------
_NOT_IMPLEMENTED = "returned NotImplemented from __array_ufunc__"
_FUNCTION_TEXT = re.compile(r"no implementation found for '([\w.]+)' on types that implement")
_UFUNC_TEXT = re.compile(r"__array_ufunc__\(<ufunc '(\w+)'>, '(\w+)'")
_UFUNC_KEYWORDS = (
    "out",
    "where",
    "casting",
    "order",
    "dtype",
    "subok",
    "signature",
    "axes",
    "axis",
    "keepdims",
    "initial",
)


_FORMAT_TEXT = "unsupported format string passed to TensorHolder.__format__"


def rewrite(error: BaseException) -> GeTypeError | None:
    """``NotSupportedError`` for numpy's generic error about a traced value (see the module
    docstring), a ``GeTypeError`` pointing at ``ge.jit.debug_print`` for a format spec applied
    to one (``f"{x:.3f}"``), or ``None`` if ``error`` is neither."""
    text = str(error)
    if isinstance(error, TypeError) and text == _FORMAT_TEXT:
        where = _user_frame(error)
        return GeTypeError(
            f"format() with a format spec of a traced value{' at ' + where if where else ''}: "
            f"its values are only known when the compiled function runs; use "
            f'ge.jit.debug_print("{{:.3f}}", x) to print them at run time'
        )
    why: tuple[str, str] | None = None
    if isinstance(error, NotSupportedError):
        return None
    if isinstance(error, GeTypeError):
        why = _es_why(text)
    elif isinstance(error, TypeError) and "TensorHolder" in text:
        why = _function_why(text) or _ufunc_why(text)
    elif isinstance(error, AttributeError) and isinstance(
        getattr(error, "obj", None), TensorHolder
    ):
        name = getattr(error, "name", None)
        if isinstance(name, str) and hasattr(np.ndarray, name):
            why = (f"numpy.ndarray.{name}", f"traced values have no method or attribute {name}")
    if why is None:
        return None
    where = _user_frame(error)
    at = f"; called at {where}" if where else ""
    kind = _NotSupportedAttributeError if isinstance(error, AttributeError) else NotSupportedError
    return kind(f"ge.jit does not support {why[0]} ({why[1]}{at}); {HINT}")


# ge.es's own "no rule" errors: an ndarray method forwarding to a function with no rule, a
# ufunc method with none
_ES_FORWARD = re.compile(r"(\w+)\(\) of <TensorHolder [^>]*>: np\.(\w+) has no rule for traced")
_ES_METHOD = re.compile(r"np\.(\w+)\.(\w+) of a traced value is not supported")


def _es_why(text: str) -> tuple[str, str] | None:
    forward = _ES_FORWARD.match(text)
    if forward is not None:
        method, target = forward.groups()
        return f"numpy.ndarray.{method}", f"it is numpy.{target}, which has no rule"
    method_match = _ES_METHOD.match(text)
    if method_match is not None:
        ufunc, method = method_match.groups()
        hint = _METHOD_HINTS.get(f"{ufunc}.{method}")
        use = f": use {hint}" if hint else ""
        return f"numpy.{ufunc}.{method}", f"no rule for the ufunc method {method}{use}"
    return None


def _function_why(text: str) -> tuple[str, str] | None:
    match = _FUNCTION_TEXT.search(text)
    if match is None:
        return None
    return match.group(1), "no rule for this numpy function on traced values"


def _ufunc_why(text: str) -> tuple[str, str] | None:
    match = _UFUNC_TEXT.search(text)
    if match is None or _NOT_IMPLEMENTED not in text:
        return None
    ufunc, method = match.groups()
    if method != "__call__":
        hint = _METHOD_HINTS.get(f"{ufunc}.{method}")
        use = f": use {hint}" if hint else ""
        return f"numpy.{ufunc}.{method}", f"no rule for the ufunc method {method}{use}"
    if numpy_rules.ufunc_rule(ufunc) is None:
        return f"numpy.{ufunc}", "no rule for this ufunc on traced values"
    given = [k for k in _UFUNC_KEYWORDS if re.search(rf", {k}=", text[match.end() :])]
    if given:
        keywords = ", ".join(f"{k}=" for k in given)
        return f"numpy.{ufunc}", f"ufunc keywords are not taken on traced values: {keywords}"
    return f"numpy.{ufunc}", "no rule for these operands"


_LIBRARY_DIRS = (
    os.path.dirname(np.__file__) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # ge
)


def _user_frame(error: BaseException) -> str:
    """``file:line in function`` of the innermost frame of ``error`` outside numpy and ge."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if not f.filename.startswith(_LIBRARY_DIRS)
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"


# --- the doc page --------------------------------------------------------------------------------
_KINDS = ("function", "ufunc", "ufunc method", "method", "attribute", "operator")
_PAGE_HEAD = """# numpy on traced values: what `ge.jit` supports

Generated for numpy {numpy} from the live rule tables by
`python -m ge.jit._page > docs/jit_numpy_support.md`; do not edit by hand. In Python,
`ge.jit.numpy_support()` gives the same rows as data (a tuple of `SupportRow(name, kind,
status, notes)`; see `docs/jit.md`), including rules registered at run time. Status:
**supported**; **refused** (a rule that always raises, saying why); **unsupported** (no rule:
using it raises `ge.jit.NotSupportedError`). Functions numpy does not dispatch (`np.zeros`,
`np.arange`, ...) run on their concrete arguments and become constants.
"""


def render_page(table: SupportTable | None = None) -> str:
    """``docs/jit_numpy_support.md``: a summary, then one table per kind."""
    rows = numpy_support() if table is None else table
    head = _PAGE_HEAD.format(numpy=np.__version__)
    parts = [head, "| kind | supported | refused | unsupported |", "|---|---|---|---|"]
    for kind in _KINDS:
        counts = [
            len(rows.select(kind, status)) for status in ("supported", "refused", "unsupported")
        ]
        parts.append(f"| {kind} | {counts[0]} | {counts[1]} | {counts[2]} |")
    for kind in _KINDS:
        parts += ["", f"## {kind}s", ""]
        parts.append(rows.select(kind).as_markdown().rstrip("\n"))
    return "\n".join(parts) + "\n"
