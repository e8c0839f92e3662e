"""What memory safety costs: ``Session.run_graph`` times (device inputs) of the issue's cases
with the checks as shipped (every ``kernel_array`` view checked against live device memory),
with ``GE_KERNEL_BOUNDSCHECK=1`` (every index checked too), and — given ``--baseline DIR``, a
checkout of ge from before the checks (e.g. ``git worktree add /tmp/before <commit>``) — that
baseline. Each configuration runs in its own process with its own kernel cache; processes
alternate for ``--rounds`` rounds and the table shows each configuration's median over them,
so the machine's drift hits every column alike.

Run: python benchmarks/safety_cost.py [--baseline DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, sys
# the ge under test is the first entry of PYTHONPATH, also when an editable install of
# another checkout put its import hook in front of sys.path
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
import numpy as np
sys.path.insert(0, sys.argv[1])
from _timing import interleaved_medians
import ge.es
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import Tensor
from ge.session import Session

def graph(name, shapes, body):
    b = GraphBuilder(name)
    inputs = [b.create_input(i, shape=s) for i, s in enumerate(shapes)]
    return b.build_and_reset([body(*inputs)])

rng = np.random.default_rng(0)
n1, n16 = 1 << 20, 1 << 24
cases = {
    "chain 1M f32": (graph("c1", [[n1], [n1]], lambda a, b: a * b + a * 0.5 - b * b), [n1, n1]),
    "chain 16M f32": (graph("c16", [[n16], [n16]], lambda a, b: a * b + a * 0.5 - b * b),
                      [n16, n16]),
    "exp/sin chain 1M f32": (graph("es", [[n1], [n1]],
                              lambda a, b: np.exp(a) * b + np.sin(a) * 0.5 - b * b), [n1, n1]),
    "softmax 1024x1024 f32": (graph("sm", [[1024, 1024]],
                               lambda a: ge.es.SoftmaxV2(a, axes=[-1])), [(1024, 1024)]),
}
GeApi.ge_initialize({"ge.exec.deviceId": "0"})
session = Session({})
runs = {}
for gid, (label, (g, shapes)) in enumerate(cases.items()):
    session.add_graph(gid, g)
    tensors = [Tensor.from_numpy(rng.standard_normal(s).astype(np.float32)).to_device()
               for s in shapes]
    session.run_graph(gid, tensors)
    runs[label] = lambda gid=gid, tensors=tensors: session.run_graph(gid, tensors)
times = interleaved_medians(runs, repeat=30, rounds=3)
assert ge.__file__.startswith(sys.argv[2]), (ge.__file__, sys.argv[2])
print(json.dumps({k: v * 1e3 for k, v in times.items()}))
GeApi.ge_finalize()
"""


def _run(root: Path, env: dict[str, str]) -> dict[str, float]:
    here = Path(__file__).resolve().parent
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(here), str(root)],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,  # sys.path[0] of "python -c" is the working directory
        env={**os.environ, "PYTHONPATH": str(root), **env},
    )
    if proc.returncode:
        raise SystemExit(f"the run of {root} with {env} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, help="a checkout of ge without the checks")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    configs: dict[str, tuple[Path, dict[str, str]]] = {"checked": (here, {})}
    if args.baseline is not None:
        configs = {"baseline": (args.baseline.resolve(), {}), **configs}
    configs["+boundscheck"] = (here, {"GE_KERNEL_BOUNDSCHECK": "1"})
    with tempfile.TemporaryDirectory() as cache:
        for name, (_, env) in configs.items():
            env["GE_KERNEL_CACHE_DIR"] = os.path.join(cache, name.strip("+"))
        results: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
        for _ in range(args.rounds):
            for name, (root, env) in configs.items():
                results[name].append(_run(root, env))
    cases = list(results["checked"][0])
    medians = {
        name: {case: statistics.median(r[case] for r in runs) for case in cases}
        for name, runs in results.items()
    }
    names = list(configs)
    print(f"{'case (ms)':24}" + "".join(f"{n:>14}" for n in names), end="")
    ratios = [n for n in names if n != "checked"]
    print(
        "".join(f"{n + '/chk':>18}" if n != "baseline" else f"{'chk/baseline':>18}" for n in ratios)
    )
    for case in cases:
        row = "".join(f"{medians[n][case]:14.3f}" for n in names)
        cells = []
        for n in ratios:
            if n == "baseline":
                cells.append(medians["checked"][case] / medians["baseline"][case])
            else:
                cells.append(medians[n][case] / medians["checked"][case])
        print(f"{case:24}{row}" + "".join(f"{c:18.3f}" for c in cells))


if __name__ == "__main__":
    main()
