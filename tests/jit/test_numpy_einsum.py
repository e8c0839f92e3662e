"""``np.einsum`` through ``@ge.jit`` (``ge/es/_numpy_linalg.py``), against numpy.

The rule contracts pairwise (greedy order, matmuls where a letter is summed); the cases cover
chains of 3 and 4 operands, batch letters, a summed letter in 3 operands, traces and repeated
letters, 0-size and size-1 (broadcast) axes, and numpy's result dtypes; the plan test checks
that the benchmark's three-operand contraction lowers to matmuls and never builds the full
``n*k*i*j`` product.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import ge
from ge.error import GeValueError

# (subscripts, operand shapes, dtype); the operands are drawn from a fixed seed.
CASES: tuple[tuple[str, tuple[tuple[int, ...], ...], str], ...] = (
    ("ni,kij,nj->nk", ((5, 4), (3, 4, 4), (5, 4)), "float32"),  # the benchmark's bilinear
    ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 5)), "float32"),  # 3-operand chain
    ("ij,jk,kl,lm->im", ((2, 3), (3, 4), (4, 5), (5, 2)), "float64"),  # 4-operand chain
    ("ab,bc,cd,da->", ((3, 4), (4, 2), (2, 5), (5, 3)), "float32"),  # a closed ring
    ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5)), "float32"),  # batch
    ("bij,bjk,bkl->bli", ((2, 3, 4), (2, 4, 5), (2, 5, 3)), "float32"),  # batch chain, permuted out
    ("bhqd,bhkd->bhqk", ((2, 3, 4, 5), (2, 3, 6, 5)), "float32"),  # attention scores
    ("ibj,jbk->bik", ((3, 2, 4), (4, 2, 5)), "float32"),  # batch letter in the middle
    ("ij,kj->ik", ((3, 4), (5, 4)), "float32"),  # right operand transposed (flag)
    ("ji,jk->ik", ((4, 3), (4, 5)), "float32"),  # left operand transposed (flag)
    ("i,i,i->", ((6,), (6,), (6,)), "float32"),  # a summed letter in 3 operands
    ("ij,ij,ij->j", ((3, 4), (3, 4), (3, 4)), "float32"),
    ("ij,jk,jl->ikl", ((2, 3), (3, 4), (3, 5)), "float32"),  # summed in 3, all kept
    ("ij,ij->ij", ((3, 4), (3, 4)), "float32"),  # Hadamard
    ("i,j,k->ijk", ((2,), (3,), (4,)), "float32"),  # outer
    ("ij,k->", ((2, 3), (4,)), "float32"),  # nothing shared: each summed alone
    ("ii,ij->j", ((3, 3), (3, 4)), "float32"),  # trace-like repeated letter, then a matmul
    ("iij,jk->ik", ((3, 3, 4), (4, 2)), "float32"),
    ("ij,jk->ik", ((0, 3), (3, 4)), "float32"),  # 0-size free axis
    ("ij,jk->ik", ((2, 0), (0, 4)), "float32"),  # 0-size summed axis: zeros
    ("ij,jk,kl->il", ((2, 3), (3, 0), (0, 2)), "float32"),
    ("ij,jk->ik", ((2, 1), (3, 4)), "float32"),  # size-1 summed axis broadcasts
    ("ij,ij->ij", ((1, 4), (3, 4)), "float32"),  # size-1 kept axis broadcasts
    (",ij->ij", ((), (2, 3)), "float32"),  # a 0-d operand
    ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 5)), "int32"),  # integer chain (no matmul kernel)
    ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5)), "int64"),
    ("ij,jk->ik", ((2, 3), (3, 4)), "float16"),
)


def _operand(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-3, 4, shape).astype(dtype)


def _check(actual: Any, expected: Any) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != numpy's {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != numpy's {e.dtype}"
    if a.dtype.kind == "f":  # another summation order than numpy's
        tol = {2: 2e-2, 4: 1e-5, 8: 1e-12}[a.dtype.itemsize]
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize(("spec", "shapes", "dtype"), CASES, ids=[c[0] + "-" + c[2] for c in CASES])
def test_matches_numpy(spec: str, shapes: tuple[tuple[int, ...], ...], dtype: str) -> None:
    args = [_operand(s, dtype, n) for n, s in enumerate(shapes)]
    fn = lambda *xs: np.einsum(spec, *xs)  # noqa: E731
    _check(ge.jit(fn)(*args), fn(*args))


@pytest.mark.parametrize(
    ("spec", "dtypes"),
    [
        ("i,i->", ("int8", "uint8")),  # int16, numpy's result type
        ("ij,jk->ik", ("float16", "float32")),
        ("ij,jk->ik", ("int32", "float32")),  # float64
        ("i,i->", ("bool", "bool")),  # bool: numpy's "any of the products"
        ("ij,jk->ik", ("bool", "bool")),
    ],
)
def test_mixed_dtypes(spec: str, dtypes: tuple[str, str]) -> None:
    shapes = [(3,), (3,)] if spec == "i,i->" else [(2, 3), (3, 4)]
    args = [_operand(s, d, n) for n, (s, d) in enumerate(zip(shapes, dtypes, strict=True))]
    fn = lambda *xs: np.einsum(spec, *xs)  # noqa: E731
    _check(ge.jit(fn)(*args), fn(*args))


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal"])
def test_optimize_accepted(optimize: Any) -> None:
    args = [_operand(s, "float32", n) for n, s in enumerate([(2, 3), (3, 4), (4, 5)])]
    fn = lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)  # noqa: E731
    _check(ge.jit(fn)(*args), fn(*args))


def test_non_contiguous_operands() -> None:
    a = _operand((4, 6), "float32", 0)[:, ::2]
    b = _operand((3, 8), "float32", 1)[:, ::2].T.copy().T
    fn = lambda x, y: np.einsum("ij,jk->ik", x, y)  # noqa: E731
    _check(ge.jit(fn)(a, b), fn(a, b))


def test_bilinear_lowers_to_matmuls() -> None:
    """The benchmark's ``ni,kij,nj->nk``: two matmuls, no ReduceSum, and no intermediate as
    large as the ``n*k*i*j`` product the rule used to build."""
    n, k, i = 16, 8, 12
    args = [_operand(s, "float32", m) for m, s in enumerate([(n, i), (k, i, i), (n, i)])]
    text = ge.jit(lambda a, w, b: np.einsum("ni,kij,nj->nk", a, w, b)).lower(*args).as_text()
    assert len(re.findall(r"= (?:Batch)?MatMulV2\(", text)) == 2, text
    assert "ReduceSum" not in text, text
    peak = int(re.search(r"peak intermediate memory (\d+) bytes", text).group(1))  # type: ignore[union-attr]
    assert peak < n * k * i * i * 4, text


@pytest.mark.parametrize(
    ("spec", "shapes", "text"),
    [
        ("ij,jk->ik", ((2, 3), (4, 5)), "size of 'j' is 3 and 4"),
        ("ij,jk->ik", ((2, 3),), "2 subscript terms for 1 operands"),
        ("ijk,jk->i", ((2, 3), (3, 4)), "term 'ijk' has 3 subscripts for a 2-d operand"),
        ("ij,jk->iq", ((2, 3), (3, 4)), "bad output subscripts 'iq'"),
        ("ij,jk->ii", ((2, 3), (3, 4)), "bad output subscripts 'ii'"),
    ],
)
def test_bad_input(spec: str, shapes: tuple[tuple[int, ...], ...], text: str) -> None:
    args = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(GeValueError) as info:
        ge.jit(lambda *xs: np.einsum(spec, *xs))(*args)
    assert text in str(info.value), str(info.value)
