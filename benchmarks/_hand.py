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
