"""Kernels the custom-op tests launch, compiled once per process (``ge.runtime.compile_kernel``
takes about a second each)."""

from __future__ import annotations

import functools

import numpy as np

from ge import runtime
from ge.runtime import KernelFunction, kernel_array


def add(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = x + y: args (x, y, z, n)."""
    n = args[3]
    x = kernel_array(args[0], n, np.float32)
    y = kernel_array(args[1], n, np.float32)
    z = kernel_array(args[2], n, np.float32)
    for i in range(block_idx, n, block_dim):
        z[i] = x[i] + y[i]


def affine(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = x * p[0] + p[1], p two float32 in device memory: args (x, z, n, p)."""
    n = args[2]
    x = kernel_array(args[0], n, np.float32)
    z = kernel_array(args[1], n, np.float32)
    p = kernel_array(args[3], 2, np.float32)
    for i in range(block_idx, n, block_dim):
        z[i] = x[i] * p[0] + p[1]


def add_one_in_place(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """x += 1: args (x, n)."""
    n = args[1]
    x = kernel_array(args[0], n, np.float32)
    for i in range(block_idx, n, block_dim):
        x[i] += 1.0


def fail_if(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """Raises inside the kernel when args[0] is non-zero."""
    if args[0] != 0:
        raise ValueError("asked to fail")


def scale2(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = 2 * x: args (x, z, n)."""
    n = args[2]
    x = kernel_array(args[0], n, np.float32)
    z = kernel_array(args[1], n, np.float32)
    for i in range(block_idx, n, block_dim):
        z[i] = x[i] * 2.0


def plus(block_idx, block_dim, args):  # type: ignore[no-untyped-def]
    """z = x + c, c an int scalar: args (x, z, n, c)."""
    n = args[2]
    x = kernel_array(args[0], n, np.float32)
    z = kernel_array(args[1], n, np.float32)
    for i in range(block_idx, n, block_dim):
        z[i] = x[i] + args[3]


@functools.cache
def binary(name: str) -> bytes:
    """The kernel binary of ``name`` of this module (``compile_kernel``'s bytes)."""
    return runtime.compile_kernel(globals()[name], name)


@functools.cache
def kernel(name: str) -> KernelFunction:
    """The loaded kernel ``name`` of this module."""
    return runtime.load_kernel_binary(binary(name)).get_function(name)
