"""Control flow with subgraphs: an If whose branches are graphs of their own (the shape of GE's
make_if_graph sample) and a While loop, built with ge.es and run on the reference interpreter.

Run: python examples/es_control_flow.py
"""

from __future__ import annotations

import numpy as np

import ge.es
from ge.es import GraphBuilder
from ge.graph import DataType, Graph
from ge.ops import eval_graph


def branch(name: str, scale: float) -> Graph:
    """A subgraph taking the If's first data input and returning x * scale + 1."""
    builder = GraphBuilder(name)
    x = builder.create_input(0, shape=[3])
    return builder.build_and_reset([x * scale + 1.0])


def make_if_graph() -> Graph:
    builder = GraphBuilder("if_graph")
    cond = builder.create_input(0, data_type=DataType.DT_BOOL)
    x = builder.create_input(1, shape=[3])
    (y,) = ge.es.If(cond, [x], 1, branch("then_graph", 2.0), branch("else_graph", -1.0))
    return builder.build_and_reset([y])


def make_while_graph() -> Graph:
    """i, acc = 0, 1; while i < n: i += 1; acc *= 2."""
    cond_b = GraphBuilder("cond")
    i, _acc, n = (cond_b.create_input(k, data_type=t) for k, t in
                  enumerate((DataType.DT_INT32, DataType.DT_FLOAT, DataType.DT_INT32)))
    cond = cond_b.build_and_reset([i < n])

    body_b = GraphBuilder("body")
    i, acc, n = (body_b.create_input(k, data_type=t) for k, t in
                 enumerate((DataType.DT_INT32, DataType.DT_FLOAT, DataType.DT_INT32)))
    body = body_b.build_and_reset([i + 1, acc * 2.0, n])

    builder = GraphBuilder("while_graph")
    n = builder.create_input(0, data_type=DataType.DT_INT32)
    start = [builder.create_scalar_int32(0), builder.create_scalar_float(1.0), n]
    _, acc, _ = ge.es.While(start, 3, cond, body)
    return builder.build_and_reset([acc])


def main() -> None:
    if_graph = make_if_graph()
    print(if_graph)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for flag in (True, False):
        (y,) = eval_graph(if_graph, [np.array(flag), x])
        print(f"If(cond={flag}) -> {y}")
        np.testing.assert_allclose(y, x * (2.0 if flag else -1.0) + 1.0)

    while_graph = make_while_graph()
    print()
    print(while_graph)
    (acc,) = eval_graph(while_graph, [np.int32(5)])
    print(f"While: 2**5 = {acc}")
    assert acc == 32.0


if __name__ == "__main__":
    main()
