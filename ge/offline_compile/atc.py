"""``ge-atc``: compile an AIR graph file into an offline model, as GE's ATC does.

    ge-atc --model graph.air --output out [--soc_version cpu] [--input_shape "x:1,3;y:2"]
           [--dynamic_dims "1;4;8" | --dynamic_batch_size "1,4,8"] [--log info]

writes ``out.om``. Python custom ops listed in ``ASCEND_CUSTOM_OPP_PATH`` are loaded first
(their ``compile`` and ``declare_launch_args`` callbacks run during the compile). Each stage is
reported as it finishes — a progress bar on a terminal, a plain line otherwise — and any error
ends the command with exit code 1 and a one-line message (``--log debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = ["main"]

_LOG_LEVELS = ("debug", "info", "warning", "error", "null")
_AIR_FRAMEWORK = 1  # ATC's --framework value for MindSpore/AIR graphs, the one form read here


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ge-atc",
        description="Compile an AIR graph file into a ge offline model (.om).",
        epilog="Custom ops: Python modules, directories or packages listed in "
        "ASCEND_CUSTOM_OPP_PATH are loaded before compiling. Run the model with "
        "ge.runtime.load_model(path).",
    )
    parser.add_argument("--model", required=True, help="the AIR file to compile")
    parser.add_argument(
        "--output", required=True, help="the model path without extension (.om is appended)"
    )
    parser.add_argument(
        "--framework",
        type=int,
        default=_AIR_FRAMEWORK,
        help=f"the source format; only {_AIR_FRAMEWORK} (AIR) is read (default {_AIR_FRAMEWORK})",
    )
    parser.add_argument(
        "--soc_version",
        default="cpu",
        help="the target chip, recorded in the model (ge's device is the CPU; default cpu)",
    )
    parser.add_argument(
        "--input_shape",
        default="",
        help='shapes for inputs declared with -1 dims, by Data node name: "x:1,3,224;y:2"',
    )
    parser.add_argument(
        "--dynamic_dims",
        default="",
        help="shape gears for the -1 dims of --input_shape, one value per -1 dim in input "
        'order, gears separated by ";": "1,224;8,448" (one plan per gear)',
    )
    parser.add_argument(
        "--dynamic_batch_size",
        default="",
        help='batch gears: each value fills every -1 dim of --input_shape: "1,2,4,8"',
    )
    parser.add_argument(
        "--log",
        default="null",
        choices=_LOG_LEVELS,
        help="how much to report: info and debug print each stage's details, debug adds "
        "tracebacks to errors (default null: progress and errors only)",
    )
    return parser


class _Progress:
    """One line per stage, or a redrawn bar when ``stream`` is a terminal."""

    def __init__(self, stages: int, stream: TextIO) -> None:
        self.stages = stages
        self.done = 0
        self.stream = stream
        self.bar = stream.isatty()
        self.start = time.perf_counter()

    def stage(self, name: str, run: Callable[[], Any]) -> Any:
        if self.bar:
            self._draw(f"{name} ...")
        began = time.perf_counter()
        result = run()
        self.done += 1
        note = f"{name} ({time.perf_counter() - began:.2f} s)"
        if self.bar:
            self._draw(note, final=self.done == self.stages)
        else:
            print(f"ge-atc: [{self.done}/{self.stages}] {note}", file=self.stream, flush=True)
        return result

    def _draw(self, text: str, final: bool = False) -> None:
        width = 24
        filled = width * self.done // self.stages
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if final else ""
        self.stream.write(f"\r[{bar}] {self.done}/{self.stages} {text:<48}{end}")
        self.stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ge-atc`` with ``argv`` (default: the command line); returns the exit code."""
    args = _parser().parse_args(argv)
    progress = _Progress(4, sys.stderr)
    try:
        if args.framework != _AIR_FRAMEWORK:
            raise ValueError(
                f"--framework={args.framework} is not read by ge-atc; only "
                f"--framework={_AIR_FRAMEWORK} (AIR) is"
            )
        from ge import offline_compile  # noqa: PLC0415
        from ge.graph import Graph  # noqa: PLC0415

        options = {"ge.socVersion": args.soc_version}
        progress.stage("load custom ops", lambda: offline_compile.build_initialize(dict(options)))
        graph = Graph("atc")
        progress.stage(f"read {args.model}", lambda: graph.load_from_air(args.model))
        flags = ("input_shape", "dynamic_dims", "dynamic_batch_size")
        build = {k: getattr(args, k) for k in flags if getattr(args, k)}
        model = progress.stage(
            f"compile {graph.name}", lambda: offline_compile.build_model(graph, build)
        )
        progress.stage(
            f"write {args.output}.om", lambda: offline_compile.save_model(args.output, model)
        )
        offline_compile.build_finalize()
    except Exception as e:  # every failure is one readable line and exit code 1
        if progress.bar:
            sys.stderr.write("\n")
        if args.log == "debug":
            traceback.print_exc(file=sys.stderr)
        print(f"ge-atc: error: {e}", file=sys.stderr)
        return 1
    if args.log in ("info", "debug"):
        print(
            f"ge-atc: wrote {args.output}.om ({model.get_length()} bytes) in "
            f"{time.perf_counter() - progress.start:.2f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
