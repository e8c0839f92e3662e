"""Input checks of a compiled graph: what each input slot takes, and the errors naming it.

A graph's inputs are its ``Data`` nodes by slot (their ``index`` attr; a subgraph's may name a
parent input through ``_parent_node_index``, hence ``offset``). A run's inputs must have each
slot's dtype exactly and its shape, ``-1`` dims free (``[-2]``: any rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ge.error import GeError, GeValueError
from ge.graph._dtypes import numpy_dtype
from ge.graph._printer import format_desc
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor_desc import TensorDesc
from ge.ops.infer import _subgraph_slot
from ge.ops.registry import get_op

__all__ = ["InputSpec", "check_inputs", "input_specs"]


class InputSpec:
    """A graph input as callers must feed it: slot, Data node name, dtype, shape (-1 free)."""

    def __init__(self, slot: int, node: Node) -> None:
        self.slot = slot
        self.name = node.name
        self.desc: TensorDesc = node.get_output_desc(0)
        self.dtype = numpy_dtype(self.desc.get_data_type())
        self.shape = list(self.desc.get_shape())

    @property
    def free(self) -> bool:
        """Whether runs may feed other shapes than one (a ``-1`` dim, or any rank)."""
        return -1 in self.shape or self.shape == [-2]

    def check(self, dtype: np.dtype[Any], shape: Sequence[int]) -> None:
        if dtype != self.dtype:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {format_desc(self.desc)}, got "
                f"dtype {dtype}"
            )
        if self.shape == [-2]:
            return
        fits = len(shape) == len(self.shape) and all(
            want in (-1, have) for want, have in zip(self.shape, shape, strict=True)
        )
        if not fits:
            raise GeValueError(
                f"input {self.slot} ({self.name}): expected {format_desc(self.desc)}, got "
                f"shape {list(shape)}"
            )


def input_specs(graph: Graph, offset: int = 0) -> list[InputSpec]:
    """The inputs of ``graph`` by slot; ``GeError`` unless the slots are ``0..n-1``."""
    data = [n for n in graph.get_direct_nodes() if get_op(n.type).io == "input"]
    by_slot = {_subgraph_slot(n, offset): n for n in data}
    if sorted(by_slot) != list(range(len(by_slot))):
        raise GeError(
            f"graph '{graph.name}' input indexes {sorted(by_slot)} must be 0..{len(by_slot) - 1}"
        )
    return [InputSpec(i, by_slot[i]) for i in range(len(by_slot))]


def check_inputs(
    specs: Sequence[InputSpec], dtypes: Sequence[np.dtype[Any]], shapes: Sequence[Sequence[int]]
) -> None:
    """``GeValueError`` naming the first input whose count, dtype or shape does not fit."""
    if len(dtypes) != len(specs):
        raise GeValueError(
            f"the graph takes {len(specs)} inputs ({', '.join(s.name for s in specs)}), "
            f"got {len(dtypes)}"
        )
    for spec, dtype, shape in zip(specs, dtypes, shapes, strict=True):
        spec.check(dtype, shape)
