"""Build a small GE graph node by node with the ge.graph IR, inspect it, and round-trip it
through AIR.

Run: python examples/graph_ir.py
Most users build graphs with ge.es (see es_mlp.py); this shows the IR underneath.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from ge.graph import DataType, Format, Graph, Placement, Tensor, TensorDesc


def build_graph() -> Graph:
    """y = relu(x @ w + b), written node by node."""
    graph = Graph("graph_ir")
    # Ports follow GE's prototypes (see ge.ops.get_op("MatMulV2")): Data has input x and
    # output y; MatMulV2 has inputs x1, x2 and optional bias, offset_w left unconnected.
    x = graph.add_node("Data", "x", num_inputs=1, num_outputs=1, input_names=["x"],
                       output_names=["y"])
    x.set_attr("index", 0)
    x.update_input_desc(0, TensorDesc([4, 3], data_type=DataType.DT_FLOAT))
    x.update_output_desc(0, TensorDesc([4, 3], data_type=DataType.DT_FLOAT))

    rng = np.random.default_rng(0)
    weights = {
        "w": Tensor.from_numpy(rng.standard_normal((3, 2)).astype(np.float32)),
        "b": Tensor([0.5, -0.5], None, DataType.DT_FLOAT, Format.FORMAT_ND, [2]),
    }
    consts = {}
    for name, value in weights.items():
        const = graph.add_node("Const", name, num_outputs=1, output_names=["y"])
        const.set_attr("value", value)
        const.update_output_desc(0, value.get_tensor_desc())
        consts[name] = const

    matmul = graph.add_node("MatMulV2", num_inputs=4, num_outputs=1,
                            input_names=["x1", "x2", "bias", "offset_w"], output_names=["y"])
    matmul.set_attr("transpose_x1", False)
    matmul.set_attr("transpose_x2", False)
    add = graph.add_node("Add", num_inputs=2, num_outputs=1, input_names=["x1", "x2"],
                         output_names=["y"])
    relu = graph.add_node("Relu", num_inputs=1, num_outputs=1, input_names=["x"],
                          output_names=["y"])
    graph.add_data_edge(x, 0, matmul, 0)
    graph.add_data_edge(consts["w"], 0, matmul, 1)
    graph.add_data_edge(matmul, 0, add, 0)
    graph.add_data_edge(consts["b"], 0, add, 1)
    graph.add_data_edge(add, 0, relu, 0)
    for node in (matmul, add, relu):
        node.update_output_desc(0, TensorDesc([4, 2]))
    graph.set_outputs([(relu, 0)])
    graph.verify()
    return graph


def main() -> None:
    graph = build_graph()
    print(graph)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph_ir.air")
        graph.save_to_air(path)
        loaded = Graph("placeholder")
        loaded.load_from_air(path)
        print(f"\nsaved {os.path.getsize(path)} bytes of AIR; reloaded graph "
              f"'{loaded.name}' with {len(loaded.get_all_nodes())} nodes")
        assert str(loaded) == str(graph), "AIR round trip changed the graph"

    bias = loaded.find_node_by_name("b").get_attr("value")
    on_device = Tensor([1.0, 2.0, 3.0], None, DataType.DT_FLOAT, Format.FORMAT_ND, [3],
                       Placement.PLACEMENT_DEVICE)
    print(f"bias weights: {bias.get_data()}; device tensor at {on_device.addr:#x} holds "
          f"{on_device.get_data()}")


if __name__ == "__main__":
    main()
