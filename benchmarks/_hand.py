"""Hand-written parallel Numba loops: the "hand Numba" column of the benchmark tables."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, fastmath=True, cache=False)
def hand_chain(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in numba.prange(x.size):
        out[i] = x[i] * y[i] + x[i] * np.float32(0.5) - y[i] * y[i]


@numba.njit(parallel=True, cache=False)
def hand_expsin(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in numba.prange(x.size):
        out[i] = np.exp(x[i]) * y[i] + np.sin(x[i]) * np.float32(0.5) - y[i] * y[i]


@numba.njit(parallel=True, cache=False)
def hand_softmax(x: np.ndarray, out: np.ndarray) -> None:
    for r in numba.prange(x.shape[0]):
        m = x[r].max()
        s = np.float32(0)
        for c in range(x.shape[1]):
            out[r, c] = np.exp(x[r, c] - m)
            s += out[r, c]
        out[r] /= s


@numba.njit(parallel=True, cache=False)
def hand_cumsum(x: np.ndarray, out: np.ndarray) -> None:
    for r in numba.prange(x.shape[0]):
        s = np.float32(0)
        for c in range(x.shape[1]):
            s += x[r, c]
            out[r, c] = s


@numba.njit(parallel=True, cache=False)
def hand_sort(x: np.ndarray, out: np.ndarray) -> None:
    for r in numba.prange(x.shape[0]):
        out[r] = np.sort(x[r])


@numba.njit(parallel=True, fastmath=True, cache=False)
def hand_bilinear(a: np.ndarray, w: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    # out[n, k] = sum_ij a[n, i] w[k, i, j] b[n, j]
    for n in numba.prange(a.shape[0]):
        for k in range(w.shape[0]):
            s = np.float32(0)
            for i in range(w.shape[1]):
                t = np.float32(0)
                for j in range(w.shape[2]):
                    t += w[k, i, j] * b[n, j]
                s += a[n, i] * t
            out[n, k] = s


@numba.njit(parallel=True, fastmath=True, cache=False)
def hand_stencil(u: np.ndarray, out: np.ndarray) -> None:
    out[0] = u[0]
    out[-1] = u[-1]
    out[:, 0] = u[:, 0]
    out[:, -1] = u[:, -1]
    for i in numba.prange(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = np.float32(0.25) * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
