"""Seed 004's offline sample, step 1: build the graph, save it as AIR, compile the OM.

The custom op module (``ops/``) is found through ``ASCEND_CUSTOM_OPP_PATH`` when
``build_initialize`` runs; its ``compile`` and ``declare_launch_args`` callbacks run here, at
build time, and the model keeps only the kernel binary and the recorded launch.

    python build_graph.py [output_dir]     # writes add_custom.air and add_custom.om
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["ASCEND_CUSTOM_OPP_PATH"] = str(HERE / "ops")

from ge import offline_compile  # noqa: E402
from ge.es.graph_builder import GraphBuilder  # noqa: E402
from ge.graph.types import DataType, Format  # noqa: E402

NUM_ELEMENTS = 8 * 1024


def build_graph():  # type: ignore[no-untyped-def]
    from ge.es.custom import AnnotatedAddCustom  # noqa: PLC0415  (registered at build_initialize)

    builder = GraphBuilder("annotated_add_offline")
    x, y = (
        builder.create_input(
            index=i,
            name=name,
            data_type=DataType.DT_FLOAT,
            format=Format.FORMAT_ND,
            shape=[NUM_ELEMENTS],
        )
        for i, name in enumerate(("data_x", "data_y"))
    )
    builder.set_graph_output(AnnotatedAddCustom(x, y), 0)
    return builder.build_and_reset()


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    offline_compile.build_initialize({"ge.socVersion": "cpu"})
    try:
        graph = build_graph()
        graph.save_to_air(str(out_dir / "add_custom.air"))
        model = offline_compile.build_model(graph)
        offline_compile.save_model(str(out_dir / "add_custom"), model)  # appends .om
    finally:
        offline_compile.build_finalize()
    print(f"OM_WRITTEN={out_dir / 'add_custom.om'} ({model.get_length()} bytes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "out"))
