"""hdrf-fast's walk kernel at a base revision against this checkout's, in one
process (a script, not a test): the same experiment run alternately with
each, CPU time of the simulation only, the schedule digest asserted equal.

    .venv/bin/python benchmarks/walk_ab.py SPEC [--base REV] [--stop SECONDS]
        [--reps N] [--data-dir DIR]

The base's ``walk`` is compiled from ``git show REV:algorithms/hdrf_fast_kernels.py``
(default 1f996ed, before fit answers were remembered) and called with this
checkout's arguments minus the ones it does not take (arguments are only
ever added at the end).  docs/performance.md,
"hdrf-fast's walk remembers fit answers", quotes its output.
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

import hierfair.algorithms.hdrf_fast as hf
from hierfair.algorithms import make_policy
from hierfair.experiment.spec import build_experiment


def base_walk(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:algorithms/hdrf_fast_kernels.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "base_kernels.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("base_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    walk = module.walk
    takes = getattr(walk, "py_func", walk).__code__.co_argcount  # new arguments come last
    return lambda *args: walk(*args[:takes])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--base", default="1f996ed")
    ap.add_argument("--stop", type=float, default=None, help="simulated seconds (spec's stop_at)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    data = yaml.safe_load(open(args.spec))
    data.pop("grid", None)
    data.pop("claims", None)
    exp = build_experiment(data, source=args.spec, data_dir=args.data_dir)
    exp.workload(0)
    stop = args.stop if args.stop is not None else exp.spec.stop_at
    walks = {"base": base_walk(args.base), "this": hf.walk}
    best, digests = {}, set()
    for _ in range(args.reps):
        for name, walk in walks.items():
            hf.walk = walk
            sim = exp.simulator(make_policy("hdrf-fast"), 0)
            t = time.process_time()
            result = sim.run(until=stop)
            cpu = time.process_time() - t
            best[name] = min(best.get(name, cpu), cpu)
            digests.add(result.schedule_digest)
            print(f"{name}: {cpu:.3f} CPU-s", flush=True)
    hf.walk = walks["this"]
    assert len(digests) == 1, "the two walks scheduled differently"
    print(f"best: base {best['base']:.3f}, this {best['this']:.3f} CPU-s "
          f"(x{best['base'] / best['this']:.2f}); same schedule")


if __name__ == "__main__":
    sys.exit(main())
