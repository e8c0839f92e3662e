"""The GE-PY session flow on ge's CPU device (seed 000's Session sample and seed 004's online
run.py, with the built-in Add standing in for the custom op that a later release ports):
ge_initialize -> Session -> add_graph -> run_graph with device tensors -> check -> finalize.

Run: python examples/session_run.py
"""

from __future__ import annotations

import time

import ge.es
from ge.es.graph_builder import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Tensor
from ge.graph.types import DataType, Format, Placement
from ge.runtime import Stream
from ge.session import Session

GRAPH_ID = 0
NUM_ELEMENTS = 8 * 1024
WARMUP_ITERS = 5
BENCHMARK_ITERS = 100


def build_graph():
    builder = GraphBuilder("add_graph")
    input_x = builder.create_input(index=0, name="data_x", data_type=DataType.DT_FLOAT,
                                   format=Format.FORMAT_ND, shape=[NUM_ELEMENTS])
    input_y = builder.create_input(index=1, name="data_y", data_type=DataType.DT_FLOAT,
                                   format=Format.FORMAT_ND, shape=[NUM_ELEMENTS])
    builder.set_graph_output(ge.es.Add(input_x, input_y), 0)
    return builder.build_and_reset()


def build_input_data(start, step):
    return [start + float(index) * step for index in range(NUM_ELEMENTS)]


def build_device_tensor(data):
    return Tensor(data, None, DataType.DT_FLOAT, Format.FORMAT_ND, [NUM_ELEMENTS],
                  Placement.PLACEMENT_DEVICE)


def build_input_sets():
    values = ((build_input_data(1.0, 1.0), build_input_data(10.0, 0.5)),
              (build_input_data(3.0, 2.0), build_input_data(20.0, 0.25)))
    return [([build_device_tensor(x), build_device_tensor(y)], x, y) for x, y in values]


def validate_graph(session, input_sets):
    for inputs, values_x, values_y in input_sets:
        outputs = session.run_graph(GRAPH_ID, inputs)
        if len(outputs) != 1:
            raise RuntimeError(f"graph returned {len(outputs)} outputs")
        actual = outputs[0].data
        expected = [x + y for x, y in zip(values_x, values_y, strict=True)]
        max_error = max(abs(value - golden) for value, golden in
                        zip(actual, expected, strict=True))
        if max_error > 1.0e-5:
            raise RuntimeError(f"precision check failed, max_error={max_error}")
    print("[Session] precision check PASS")


def run_async(session, input_sets):
    stream = Stream()
    (output,) = session.run_graph_with_stream_async(GRAPH_ID, stream, input_sets[0][0])
    stream.synchronize()
    print(f"[Session] async run on stream {stream.handle}: output on "
          f"{output.placement.name} at {output.addr:#x}, first values {output.data[:3]}")


def benchmark(session, input_sets):
    for iteration in range(WARMUP_ITERS):
        session.run_graph(GRAPH_ID, input_sets[iteration % len(input_sets)][0])
    start = time.perf_counter()
    for iteration in range(BENCHMARK_ITERS):
        session.run_graph(GRAPH_ID, input_sets[iteration % len(input_sets)][0])
    elapsed = (time.perf_counter() - start) * 1.0e6 / BENCHMARK_ITERS
    print(f"[Session] run_graph: {elapsed:.1f} us per call over {BENCHMARK_ITERS} calls")


def main():
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    GeApi.ge_initialize(config)
    try:
        session = Session(config)
        ret = session.add_graph(GRAPH_ID, build_graph())
        if ret != 0:
            raise RuntimeError(f"add_graph failed with {ret}")
        input_sets = build_input_sets()
        validate_graph(session, input_sets)
        run_async(session, input_sets)
        benchmark(session, input_sets)
    finally:
        GeApi.ge_finalize()


if __name__ == "__main__":
    main()
