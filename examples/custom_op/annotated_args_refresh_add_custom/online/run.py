"""Seed 004's online sample on ge: build the custom-op graphs, check every element over two
rounds of freshly allocated device inputs, then time them.

``AnnotatedAddCustom`` declares its launch once (``declare_launch_args``, when the plan is
built) and each run only refreshes the addresses in it; ``NoRefreshAddCustom`` runs its Python
``execute`` on every run. Both launch the same kernel.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["ASCEND_CUSTOM_OPP_PATH"] = str(HERE / "ops")  # the ops load at ge_initialize

from ge.es.graph_builder import GraphBuilder  # noqa: E402
from ge.ge_global import GeApi  # noqa: E402
from ge.graph import Tensor  # noqa: E402
from ge.graph.types import DataType, Format, Placement  # noqa: E402
from ge.session import Session  # noqa: E402

ANNOTATED_GRAPH_ID = 0
NO_REFRESH_GRAPH_ID = 1
NUM_ELEMENTS = 8 * 1024
WARMUP_ITERS = 5
BENCHMARK_ITERS = 100


def build_graph(name, op_factory):  # type: ignore[no-untyped-def]
    builder = GraphBuilder(name)
    x = builder.create_input(
        index=0,
        name="data_x",
        data_type=DataType.DT_FLOAT,
        format=Format.FORMAT_ND,
        shape=[NUM_ELEMENTS],
    )
    y = builder.create_input(
        index=1,
        name="data_y",
        data_type=DataType.DT_FLOAT,
        format=Format.FORMAT_ND,
        shape=[NUM_ELEMENTS],
    )
    builder.set_graph_output(op_factory(x, y), 0)
    return builder.build_and_reset()


def build_input_data(start, step):  # type: ignore[no-untyped-def]
    return [start + float(index) * step for index in range(NUM_ELEMENTS)]


def build_device_tensor(data):  # type: ignore[no-untyped-def]
    return Tensor(
        data, None, DataType.DT_FLOAT, Format.FORMAT_ND, [NUM_ELEMENTS], Placement.PLACEMENT_DEVICE
    )


def build_input_sets():  # type: ignore[no-untyped-def]
    values = (
        (build_input_data(1.0, 1.0), build_input_data(10.0, 0.5)),
        (build_input_data(3.0, 2.0), build_input_data(20.0, 0.25)),
    )
    return [([build_device_tensor(x), build_device_tensor(y)], x, y) for x, y in values]


def validate_graph(session, graph_id, input_sets, graph_name):  # type: ignore[no-untyped-def]
    for inputs, values_x, values_y in input_sets:
        outputs = session.run_graph(graph_id, inputs)
        if len(outputs) != 1:
            raise RuntimeError(f"{graph_name} returned {len(outputs)} outputs")
        actual = outputs[0].numpy().reshape(-1).tolist()
        expected = [x + y for x, y in zip(values_x, values_y, strict=True)]
        max_error = max(abs(v - g) for v, g in zip(actual, expected, strict=True))
        if max_error > 1.0e-5:
            raise RuntimeError(f"{graph_name} precision check failed, max_error={max_error}")
    print(f"[OnlinePython] {graph_name} precision check PASS")


def benchmark_graph(session, graph_id, input_sets):  # type: ignore[no-untyped-def]
    for iteration in range(WARMUP_ITERS):
        session.run_graph(graph_id, input_sets[iteration % len(input_sets)][0])
    start = time.perf_counter()
    for iteration in range(BENCHMARK_ITERS):
        session.run_graph(graph_id, input_sets[iteration % len(input_sets)][0])
    return (time.perf_counter() - start) * 1.0e6


def run_graph() -> int:
    options = {"ge.exec.deviceId": "0", "ge.graphRunMode": "1"}
    ge_api = GeApi()
    session = None
    graph_ids = []
    try:
        ge_api.ge_initialize(options)
        from ge.es.custom import (  # noqa: PLC0415  (loaded by ge_initialize)
            AnnotatedAddCustom,
            NoRefreshAddCustom,
        )

        session = Session(options)
        session.add_graph(
            ANNOTATED_GRAPH_ID, build_graph("python_annotated_graph", AnnotatedAddCustom)
        )
        graph_ids.append(ANNOTATED_GRAPH_ID)
        session.add_graph(
            NO_REFRESH_GRAPH_ID, build_graph("python_no_refresh_graph", NoRefreshAddCustom)
        )
        graph_ids.append(NO_REFRESH_GRAPH_ID)
        input_sets = build_input_sets()
        validate_graph(session, ANNOTATED_GRAPH_ID, input_sets, "AnnotatedAddCustom")
        validate_graph(session, NO_REFRESH_GRAPH_ID, input_sets, "NoRefreshAddCustom")
        annotated_us = benchmark_graph(session, ANNOTATED_GRAPH_ID, input_sets)
        no_refresh_us = benchmark_graph(session, NO_REFRESH_GRAPH_ID, input_sets)
        speedup = no_refresh_us / annotated_us if annotated_us > 0.0 else 0.0
        print(f"[Perf] input shape: [{NUM_ELEMENTS}], dtype: float32")
        print(f"[Perf] iters: {BENCHMARK_ITERS}")
        print(
            f"[Perf] AnnotatedAddCustom: {annotated_us:.3f} us "
            f"(avg {annotated_us / BENCHMARK_ITERS:.3f} us/iter)"
        )
        print(
            f"[Perf] NoRefreshAddCustom: {no_refresh_us:.3f} us "
            f"(avg {no_refresh_us / BENCHMARK_ITERS:.3f} us/iter)"
        )
        print(f"[Perf] Annotated speedup: {speedup:.3f}x")
        print("[OnlinePython] CPU_EXECUTION=PASS")
        return 0
    except Exception as exc:
        print(f"[OnlinePython] run_graph failed: {exc}")
        traceback.print_exc()
        return 1
    finally:
        if session is not None:
            for graph_id in graph_ids:
                session.remove_graph(graph_id)
        ge_api.ge_finalize()


if __name__ == "__main__":
    sys.exit(run_graph())
