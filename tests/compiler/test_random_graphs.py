"""Hypothesis-generated random graphs: whatever the optimizer, the lowering, the kernels and the
memory planner do, ``CompiledGraph(g).run_arrays(x)`` must equal ``eval_graph(g, x)``.

Graphs are random DAGs built with ``ge.es`` from a few float32 inputs of broadcast-compatible
shapes (some declared with ``-1`` dims), mixing unary and binary elementwise ops, constants,
reductions, concat, transpose, reshape and matmul where shapes allow. Values stay in domains
where every op is defined (``Abs`` before ``Log``/``Sqrt``, denominators ``>= 1``, ``Tanh``
before ``Exp``), so both sides are finite and comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ge.es
from ge.compiler.executable import CompiledGraph
from ge.es import GraphBuilder
from ge.graph import Graph
from ge.ops import eval_graph

RTOL, ATOL = 1e-5, 1e-6


@dataclass
class Value:
    holder: Any
    shape: tuple[int, ...]  # the concrete shape at run time


UNARY: dict[str, Any] = {
    "neg": lambda t: -t,
    "abs": np.abs,
    "tanh": np.tanh,
    "sigmoid": ge.es.Sigmoid,
    "exp_tanh": lambda t: np.exp(np.tanh(t)),
    "log_abs": lambda t: np.log(np.abs(t) + 1.0),
    "sqrt_abs": lambda t: np.sqrt(np.abs(t)),
    "square_tanh": lambda t: np.square(np.tanh(t)),
    "relu": ge.es.Relu,
    "scale": lambda t: t * 0.5 + 0.25,
}

BINARY: dict[str, Any] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (np.abs(b) + 1.0),
    "max": np.maximum,
    "min": np.minimum,
}


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


@st.composite
def input_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    rank = draw(st.integers(1, 3))
    base = [draw(st.integers(1, 4)) for _ in range(rank)]
    shapes = []
    for _ in range(draw(st.integers(1, 3))):
        r = draw(st.integers(1, rank))
        dims = base[rank - r :]
        shapes.append(tuple(d if draw(st.booleans()) else 1 for d in dims))
    return shapes


def _step(draw: st.DrawFn, b: GraphBuilder, pool: list[Value]) -> Value:  # noqa: PLR0912
    kind = draw(
        st.sampled_from(
            [
                "unary",
                "unary",
                "binary",
                "binary",
                "binary",
                "const",
                "reduce",
                "concat",
                "transpose",
                "reshape",
                "matmul",
            ]
        )
    )
    x = pool[draw(st.integers(0, len(pool) - 1))]
    if kind == "unary":
        name = draw(st.sampled_from(sorted(UNARY)))
        return Value(UNARY[name](x.holder), x.shape)
    if kind == "binary":
        partners = [v for v in pool if broadcast(x.shape, v.shape) is not None]
        y = partners[draw(st.integers(0, len(partners) - 1))]
        name = draw(st.sampled_from(sorted(BINARY)))
        shape = broadcast(x.shape, y.shape)
        assert shape is not None
        if draw(st.booleans()):
            return Value(BINARY[name](x.holder, y.holder), shape)
        return Value(BINARY[name](y.holder, x.holder), shape)
    if kind == "const":
        suffix = x.shape[len(x.shape) - draw(st.integers(0, len(x.shape))) :]
        seed = draw(st.integers(0, 2**16))
        value = np.random.default_rng(seed).uniform(-1.5, 1.5, size=suffix).astype(np.float32)
        name = draw(st.sampled_from(["add", "mul", "sub", "div"]))
        operand = value.tolist() if suffix else float(value)
        if draw(st.booleans()):  # a constant expression, foldable
            c = b.create_const_float(0.5)
            operand = (
                (c * 2.0 + operand)
                if not suffix
                else (b.create_const_float(1.0) * np.asarray(operand, np.float32))
            )
        return Value(BINARY[name](x.holder, operand), x.shape)
    if kind == "reduce" and x.shape:
        axis = draw(st.integers(0, len(x.shape) - 1))
        keep = draw(st.booleans())
        method = draw(st.sampled_from(["sum", "mean", "max", "min"]))
        out = getattr(x.holder, method)(axis=axis, keepdims=keep)
        shape = list(x.shape)
        if keep:
            shape[axis] = 1
        else:
            del shape[axis]
        return Value(out, tuple(shape))
    if kind == "concat" and x.shape:
        same = [v for v in pool if v.shape == x.shape]
        y = same[draw(st.integers(0, len(same) - 1))]
        axis = draw(st.integers(0, len(x.shape) - 1))
        out = np.concatenate([x.holder, y.holder], axis=axis)
        shape = list(x.shape)
        shape[axis] *= 2
        return Value(out, tuple(shape))
    if kind == "transpose" and len(x.shape) >= 2:
        perm = draw(st.permutations(list(range(len(x.shape)))))
        out = ge.es.Transpose(x.holder, list(perm))
        return Value(out, tuple(x.shape[p] for p in perm))
    if kind == "reshape" and x.shape:
        if draw(st.booleans()):
            return Value(x.holder.reshape(-1), (int(np.prod(x.shape)),))
        shape = tuple(reversed(x.shape))
        return Value(x.holder.reshape(list(shape)), shape)
    if kind == "matmul" and len(x.shape) == 2:
        partners = [v for v in pool if len(v.shape) == 2 and v.shape[0] == x.shape[1]]
        if partners:
            y = partners[draw(st.integers(0, len(partners) - 1))]
            return Value(x.holder @ y.holder, (x.shape[0], y.shape[1]))
        return Value(x.holder @ x.holder.T, (x.shape[0], x.shape[0]))
    return Value(np.abs(x.holder) - 0.5, x.shape)  # fallback when the kind does not apply


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[Graph, list[np.ndarray]]:
    shapes = draw(input_shapes())
    dynamic = draw(st.booleans())
    b = GraphBuilder("random")
    pool: list[Value] = []
    for i, shape in enumerate(shapes):
        declared = [-1 if dynamic and k == 0 else d for k, d in enumerate(shape)]
        pool.append(Value(b.create_input(i, name=f"in{i}", shape=declared), shape))
    for _ in range(draw(st.integers(1, 8))):
        pool.append(_step(draw, b, pool))
    n_out = draw(st.integers(1, min(3, len(pool))))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n_out, max_size=n_out))
    outputs = [pool[-1].holder] + [pool[k].holder for k in picks[1:]]
    graph = b.build_and_reset(outputs)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    feeds = [rng.uniform(-2, 2, size=s).astype(np.float32) for s in shapes]
    return graph, feeds


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(random_graphs())
def test_compiled_equals_eval_graph(case: tuple[Graph, list[np.ndarray]]) -> None:
    graph, feeds = case
    expected = [np.asarray(e) for e in eval_graph(graph, feeds)]
    compiled = CompiledGraph(graph)
    actual = compiled.run_arrays(feeds)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape, (a.shape, e.shape, graph.as_text())
        assert a.dtype == e.dtype
        assert np.all(np.isfinite(e))
        # transcendental kernels may differ from numpy by an ulp; cancellation can scale
        # that, so the absolute tolerance follows the magnitude of the values involved
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL * scale, err_msg=graph.as_text())
    # a second run reuses the plan and gives the same result
    again = compiled.run_arrays(feeds)
    for a, b in zip(again, actual, strict=True):
        np.testing.assert_array_equal(a, b)
