"""A Python custom op's scalar body: ``register_op(op_type=..., scalar=fn)`` (ours, not GE-PY's).

``fn`` says what one output element is, given one element of each input: a ``def`` whose body
is one ``return <expression>`` (a docstring may precede it) or a ``lambda``, its positional
parameters the op's inputs in order, its keyword-only parameters op attributes (``int``,
``float`` or ``bool`` ones). A string expression over the input and attribute names works too.
The expression may use numbers, arithmetic, comparisons, ``and``/``or``/``not``,
``x if c else y``, ``abs``/``min``/``max``, and ``math.*``/``np.*`` functions and constants:
what Numba compiles in nopython mode.

It becomes the op's ``OpDef.scalar`` (``ge.ops.schema.ScalarBody``), exactly as a built-in
elementwise op's: the op is elementwise, a node of it without an implementation that runs gets
the generated elementwise kernel, and the fusion pass fuses it with its elementwise neighbours
into one kernel (``Custom(x) * 2 + 1`` reads ``x`` once). Its numpy reference (``eval_graph``,
constant folding) evaluates the same expression element by element.

Decisions: the expression is read from the function's source (so the generated kernel source,
which the kernel disk cache is keyed on, holds the expression itself and no reference to a
Python object: kernels load in processes that never imported the function). Inputs are
converted to their promoted type (half types computed in float32) and the value is rounded to
the output type ``infer_meta`` gives, as for built-ins; ``math.exp`` and friends of float32 use
the kernels' float32 approximations. ``infer_meta`` must give the inputs' broadcast shape (an
elementwise op's), which is checked at build time. Only single-output ops whose inputs are all
required, without ``mutates_args``, can have a scalar body. Attributes become kernel parameters
(float64), so a new attribute value reuses the compiled kernel. A node with a registered
implementation (``execute`` / ``declare_launch_args``) still runs it when not fused; the scalar
body is a promise that it computes the same thing.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ge.error import InferError
from ge.graph._dtypes import numpy_dtype
from ge.graph.types import AttrValueType
from ge.ops.schema import ExecContext, InferContext, ScalarBody

__all__ = ["parse_scalar", "scalar_body", "scalar_infer", "scalar_reference"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_MAX_PARAMS = 10  # p0 ... p9
_MODULES = {"math": "math", "np": "np", "numpy": "np"}
_BUILTINS = frozenset({"abs", "min", "max"})
_NUMERIC_ATTRS = frozenset({AttrValueType.VT_INT, AttrValueType.VT_FLOAT, AttrValueType.VT_BOOL})
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


def _source_node(fn: Callable[..., Any]) -> ast.expr:
    """The returned expression of ``fn`` (a lambda or a one-``return`` def), from its source."""
    try:
        lines, _ = inspect.findsource(fn)
    except (OSError, TypeError):
        raise TypeError(
            "scalar: the source of the function cannot be read; pass the expression as a string"
        ) from None
    tree = ast.parse("".join(lines))
    code = fn.__code__
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    is_lambda = fn.__name__ == "<lambda>"
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if is_lambda and isinstance(node, ast.Lambda):
            first, body = node.lineno, node.body
        elif not is_lambda and isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            stmts = node.body
            if (
                stmts
                and isinstance(stmts[0], ast.Expr)
                and isinstance(stmts[0].value, ast.Constant)
            ):
                stmts = stmts[1:]  # the docstring
            if len(stmts) != 1 or not isinstance(stmts[0], ast.Return) or not stmts[0].value:
                raise TypeError(
                    f"scalar: {fn.__name__} must be one 'return <expression>' (got "
                    f"{len(stmts)} statement(s))"
                )
            body = stmts[0].value
        else:
            continue
        args = node.args
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        if first == code.co_firstlineno and names == params:
            found.append(body)
    if len(found) != 1:
        raise TypeError(
            f"scalar: cannot tell the source of {fn.__qualname__} ({len(found)} candidates on "
            f"its line); use a def, or pass the expression as a string"
        )
    return found[0]


def _signature(fn: Callable[..., Any]) -> tuple[list[str], list[str]]:
    """Positional and keyword-only parameter names of ``fn``."""
    positional, keywords = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            positional.append(p.name)
        elif p.kind is p.KEYWORD_ONLY:
            keywords.append(p.name)
        else:
            raise TypeError(
                f"scalar: parameter '{p.name}' must be positional without a default (an input) "
                f"or keyword-only (an attribute)"
            )
    return positional, keywords


class _Rename(ast.NodeTransformer):
    """Inputs to ``a, b, ...``, attributes to ``p0, p1, ...``, module constants to numbers."""

    def __init__(self, inputs: dict[str, str], attrs: dict[str, AttrValueType]) -> None:
        self.inputs = inputs
        self.attrs = attrs
        self.params: list[str] = []

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.inputs:
            return ast.copy_location(ast.Name(self.inputs[node.id], ast.Load()), node)
        if node.id in self.attrs:
            if self.attrs[node.id] not in _NUMERIC_ATTRS:
                raise TypeError(
                    f"scalar: attribute '{node.id}' is {self.attrs[node.id].name}; only int, "
                    f"float and bool attributes can be used"
                )
            if node.id not in self.params:
                self.params.append(node.id)
            var = f"p{self.params.index(node.id)}"
            return ast.copy_location(ast.Name(var, ast.Load()), node)
        if node.id in _BUILTINS:
            return node
        raise TypeError(
            f"scalar: name '{node.id}' is neither an input, an attribute, math nor np "
            f"(inputs: {sorted(self.inputs)}, attributes: {sorted(self.attrs)})"
        )

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        root = node.value
        if not isinstance(root, ast.Name) or root.id not in _MODULES:
            raise TypeError(
                f"scalar: only math.<name> and np.<name> are allowed, got {_text(node)}"
            )
        module = math if _MODULES[root.id] == "math" else np
        value = getattr(module, node.attr, None)
        if value is None:
            raise TypeError(f"scalar: {root.id} has no attribute '{node.attr}'")
        if isinstance(value, (int, float)):  # math.pi: a number in the source
            return ast.copy_location(ast.Constant(float(value)), node)
        return ast.copy_location(
            ast.Attribute(ast.Name(_MODULES[root.id], ast.Load()), node.attr), node
        )

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if node.keywords:
            raise TypeError(f"scalar: calls take positional arguments only, got {_text(node)}")
        if not isinstance(node.func, (ast.Name, ast.Attribute)) or (
            isinstance(node.func, ast.Name) and node.func.id not in _BUILTINS
        ):
            raise TypeError(f"scalar: cannot call {_text(node.func)} (math.*, np.*, abs, min, max)")
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, (bool, int, float)):
            raise TypeError(f"scalar: constant {node.value!r} is not a number")
        return node


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def parse_scalar(
    scalar: Callable[..., Any] | str,
    inputs: Sequence[str],
    attrs: dict[str, AttrValueType],
) -> tuple[str, tuple[str, ...]]:
    """``scalar`` as (expression over ``a, b, ...`` and ``p0, ...``, attribute of each ``p``).

    >>> attrs = {"alpha": AttrValueType.VT_FLOAT}
    >>> parse_scalar(lambda x, y, *, alpha: x * alpha + math.pi + y, ["x", "y"], attrs)
    ('a * p0 + 3.141592653589793 + b', ('alpha',))
    >>> parse_scalar("alpha * abs(x)", ["x"], attrs)
    ('p0 * abs(a)', ('alpha',))
    """
    if len(inputs) > len(_LETTERS):
        raise ValueError(f"scalar: at most {len(_LETTERS)} inputs, got {len(inputs)}")
    if isinstance(scalar, str):
        try:
            expr = ast.parse(scalar.strip(), mode="eval").body
        except SyntaxError as e:
            raise ValueError(f"scalar: {scalar!r} is not a Python expression: {e.msg}") from None
        names = dict(zip(inputs, _LETTERS, strict=False))
        known = {k: v for k, v in attrs.items() if k not in names}
    elif callable(scalar):
        positional, keywords = _signature(scalar)
        if len(positional) != len(inputs):
            raise TypeError(
                f"scalar: takes {len(positional)} positional parameter(s), the op has "
                f"{len(inputs)} input(s) {list(inputs)}"
            )
        unknown = [k for k in keywords if k not in attrs]
        if unknown:
            raise TypeError(f"scalar: keyword-only {unknown} are not attributes of the op")
        expr = _source_node(scalar)
        names = dict(zip(positional, _LETTERS, strict=False))
        known = {k: attrs[k] for k in keywords}
    else:
        raise TypeError(f"scalar must be a function or a string, got {type(scalar).__name__}")
    for node in ast.walk(expr):
        if not isinstance(node, _ALLOWED):
            raise TypeError(f"scalar: {type(node).__name__} is not allowed in {_text(expr)!r}")
    rename = _Rename(names, known)
    tree = ast.fix_missing_locations(rename.visit(ast.Expression(expr)))
    if len(rename.params) > _MAX_PARAMS:
        raise ValueError(f"scalar: at most {_MAX_PARAMS} attributes, got {len(rename.params)}")
    return ast.unparse(tree), tuple(rename.params)


def scalar_body(expr: str, params: tuple[str, ...]) -> ScalarBody:
    """The ``OpDef.scalar`` of a custom op: ``expr`` with ``params`` read from the node."""
    if not params:
        return ScalarBody(expr)
    return ScalarBody(expr, params=lambda attrs: [float(attrs[name]) for name in params])


def _held(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype(np.float32) if dtype.name in ("float16", "bfloat16") else dtype


def scalar_reference(expr: str, params: tuple[str, ...], arity: int) -> Any:
    """The numpy reference: ``expr`` evaluated element by element, in the promoted type of
    the inputs, rounded to the output type."""
    args = ", ".join([*_LETTERS[:arity], *(f"p{k}" for k in range(len(params)))])
    scope = {"math": math, "np": np, "__builtins__": {"abs": abs, "min": min, "max": max}}
    element = eval(f"lambda {args}: {expr}", scope)  # checked by parse_scalar: no names

    def reference(ctx: ExecContext) -> list[np.ndarray]:
        xs = [np.asarray(x) for x in ctx.inputs]
        compute = np.result_type(*(_held(x.dtype) for x in xs))
        out = numpy_dtype(ctx.outputs[0].get_data_type()) if ctx.outputs else compute
        values = [float(ctx.attrs[name]) for name in params]
        each = np.vectorize(lambda *e: element(*e, *values), otypes=[np.float64])
        if out.kind in "biu":  # exact integers (float64 would round beyond 2**53)
            each = np.vectorize(lambda *e: element(*e, *values), otypes=[object])
        with np.errstate(all="ignore"):
            y = each(*(x.astype(compute) for x in xs))
        return [np.asarray(y).astype(out)]

    return reference


def scalar_infer(infer: Callable[[InferContext], list[Any]], op_type: str) -> Any:
    """``infer``, checked to give the inputs' broadcast shape (what an elementwise op does)."""

    def checked(ctx: InferContext) -> list[Any]:
        outputs = infer(ctx)
        shapes = [list(x._shape) for x in ctx.inputs]
        out = list(outputs[0]._shape)
        if any(d < 0 for s in [*shapes, out] for d in s):
            return outputs
        try:
            expected = list(np.broadcast_shapes(*(tuple(s) for s in shapes)))
        except ValueError:
            raise InferError(
                f"{op_type} has a scalar body (an elementwise op), but its inputs {shapes} do "
                f"not broadcast"
            ) from None
        if out != expected:
            raise InferError(
                f"{op_type} has a scalar body (an elementwise op): infer_meta must give the "
                f"inputs' broadcast shape {expected}, gave {out}"
            )
        return outputs

    checked.__qualname__ = getattr(infer, "__qualname__", "infer")
    return checked
