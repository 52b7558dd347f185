"""Simulated tasks per CPU-second of whole runs (a script, not a test).

    HIERFAIR_DATA=/work/shared/traces .venv/bin/python benchmarks/throughput.py \\
        [--spec benchmarks/swim-day.yaml] [--algorithm drf --algorithm hdrf]

Runs one spec's first seed (default: the SWIM Facebook day on 1,200 servers,
148,854 tasks) once per algorithm and prints the CPU time of the simulation
alone (``time.process_time``; building the workload is not counted), simulated
tasks per CPU-second, and peak memory.  Peak memory is the process's maximum
resident set size (``resource.getrusage(...).ru_maxrss``), so run one
algorithm per process to read it per algorithm; tracemalloc is off because it
slows allocation-heavy code several-fold and would distort the throughput.
docs/performance.md records what it printed before and after each change.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from hierfair.errors import SpecError
from hierfair.experiment.spec import AlgorithmSpec, Experiment, load_spec

ROOT = Path(__file__).resolve().parent.parent


def load(path: str) -> Experiment:
    """The spec with its traces from ``$HIERFAIR_DATA`` or ``../shared/traces``
    beside the checkout (as make sets it); a bad spec or a missing trace
    exits with its one-line message."""
    data = os.environ.get("HIERFAIR_DATA", str(ROOT.parent / "shared" / "traces"))
    try:
        return load_spec(path, data_dir=data)
    except SpecError as exc:
        sys.exit(f"{Path(sys.argv[0]).name}: {exc}")


def algorithm(exp: Experiment, name: str) -> AlgorithmSpec:
    """A label of the spec, or any algorithm by name on the spec's workload."""
    return next((a for a in exp.spec.algorithms if a.display == name), AlgorithmSpec(name=name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "benchmarks" / "swim-day.yaml"))
    ap.add_argument("--algorithm", action="append",
                    help="a label of the spec or an algorithm name (repeatable; default drf)")
    args = ap.parse_args(argv)
    exp = load(args.spec)
    seed = exp.spec.seeds[0]
    exp.workload(seed)  # build (and parse) outside the timing
    for name in args.algorithm or ["drf"]:
        algo = algorithm(exp, name)
        start = time.process_time()
        result = exp.simulate(algo, seed)
        cpu = time.process_time() - start
        tasks = len(result.tasks)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        print(f"{Path(args.spec).name} {name}: {tasks:,} tasks in {cpu:.2f} CPU-s, "
              f"{tasks / cpu:,.0f} tasks per CPU-second, peak RSS {peak:,.0f} MiB "
              "(process so far)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
