"""Buffer donation with @ge.jit: an update step that writes its result over its input.

A training-style loop keeps its state in a device ``ge.graph.Tensor`` and donates it to each
step (``donate_argnums=0``): the step's result is written into the donated memory (no fresh
result block per step, device memory stays flat), and the donated tensor cannot be used again
by mistake: it raises an error naming the step.

Run: python examples/jit_donation.py
"""

from __future__ import annotations

import numpy as np

import ge
from ge.graph import Tensor
from ge.runtime import memory


@ge.jit(donate_argnums=0)
def sgd_step(weights: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    return weights - lr * grad


def main() -> None:
    rng = np.random.default_rng(0)
    grad = rng.standard_normal(1 << 16).astype(np.float32)
    weights = Tensor.from_numpy(np.zeros(1 << 16, np.float32)).to_device()

    expected = np.zeros(1 << 16, np.float32)
    before = memory.live_bytes()
    for _ in range(5):
        old = weights
        new = sgd_step(weights, grad, 0.1)  # written over `weights`' memory
        weights = Tensor.from_numpy(new).to_device()
        expected -= np.float32(0.1) * grad
        try:
            old.numpy()
        except ge.GeError as e:  # the donated tensor is spent
            message = str(e)
    ge.jit.wait_for_compiles()
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-5, atol=1e-6)
    print(f"after 5 steps: weights[:3] = {weights.numpy()[:3]}")
    print(f"using a donated tensor again: {message}")
    print(f"device bytes held beyond the start: {memory.live_bytes() - before}")


if __name__ == "__main__":
    main()
