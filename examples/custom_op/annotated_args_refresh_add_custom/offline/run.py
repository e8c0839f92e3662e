"""Seed 004's offline sample end to end (its ``run.sh``): build in one process, run in another.

    python run.py [output_dir]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ge_om_"))
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"}
    for script in ("build_graph.py", "run_model.py"):
        done = subprocess.run([sys.executable, str(HERE / script), str(out)], env=env, check=False)
        if done.returncode:
            print(f"{script} failed with exit code {done.returncode}", file=sys.stderr)
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
