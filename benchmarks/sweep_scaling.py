"""Parallel speed-up of a CPU-bound sweep at 1 and 2 workers (a script, not a test).

    .venv/bin/python benchmarks/sweep_scaling.py [--runs 8] [--backend loky|dask]

Runs the same 8-run H-DRF sweep (fresh results folder each time, nothing
cached) with ``jobs=1`` and ``jobs=2`` and prints wall times and their ratio.
The ratio, not the seconds, is the result: this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

from hierfair.experiment.spec import read_yaml
from hierfair.experiment.sweep import sweep

SPEC = Path(__file__).resolve().parent.parent / "experiments" / "sweep-example.yaml"


def timed(data: dict, jobs: int, backend: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        frame = sweep(data, out, jobs=jobs, backend=backend)
        elapsed = time.perf_counter() - t0
    assert (frame["status"] == "ok").all()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8, help="even number of runs (default 8)")
    ap.add_argument("--backend", default="loky", choices=("loky", "dask"))
    args = ap.parse_args()
    data = copy.deepcopy(read_yaml(SPEC))
    data["algorithms"] = ["hdrf"]
    data["seeds"] = [0, 1]
    data["workload"] = {"kind": "google-synthetic", "jobs": 400, "max_tasks": 100}
    data["grid"] = {"hierarchy.levels": [3, 4, 5, 6][: max(1, args.runs // 2)]}
    timed(data, 2, args.backend)  # start the worker pool, warm imports
    one = timed(data, 1, args.backend)
    two = timed(data, 2, args.backend)
    runs = 2 * len(data["grid"]["hierarchy.levels"])
    print(f"{runs} runs, backend {args.backend}: 1 worker {one:.2f} s, 2 workers {two:.2f} s, "
          f"speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
