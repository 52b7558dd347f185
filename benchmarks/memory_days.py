"""Peak memory of one run against how long it runs (a script, not a test;
issue 30: a run of N days should hold about what a run of one day holds).

    .venv/bin/python benchmarks/memory_days.py DAYS [LOAD] [ALGORITHM] [--keep]

Runs experiments/long/hdrf-fig13-7days.yaml (H-DRF §5.3.2 at 1:20) at offered
load LOAD (default 0.5) with ALGORITHM (default hdrf-fast), seed 0, stopped
after DAYS simulated days, in this process; prints its CPU time and peak
resident memory (``ru_maxrss``: run each N in a fresh process).  It runs as
``hierfair run`` does, streaming what the spec's tables leave out
(``--keep``: keeping every task's columns and utilisation row to the end).
docs/performance.md, "Datacenter scale", records what it printed.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml

from hierfair.algorithms import make_policy
from hierfair.experiment.results import summarize
from hierfair.experiment.spec import AlgorithmSpec, build_experiment
from hierfair.experiment.table_files import TableFiles

SPEC = Path(__file__).resolve().parent.parent / "experiments" / "long" / "hdrf-fig13-7days.yaml"


def main(argv: list[str]) -> int:
    keep = "--keep" in argv
    argv = [a for a in argv if a != "--keep"]
    days = float(argv[0])
    load = float(argv[1]) if len(argv) > 1 else 0.5
    algo = argv[2] if len(argv) > 2 else "hdrf-fast"
    data = yaml.safe_load(SPEC.read_text())
    data.pop("grid")
    data.pop("claims", None)
    data["workload"]["arrivals"]["offered_load"] = load
    data["stop_at"] = days * 86400
    exp = build_experiment(data, source=str(SPEC), max_memory=float("inf"))
    exp.workload(0)
    built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.process_time()
    if keep:  # every utilisation row and every task's columns to the end
        result = exp.simulate(AlgorithmSpec(name=algo), 0)
        summarize(result)
    else:  # as `hierfair run` does: streamed, its tables written as they grow
        with tempfile.TemporaryDirectory() as folder, TableFiles(Path(folder)) as files:
            result = exp.simulator(make_policy(algo), 0, spill_dir=folder,
                                   table_sink=files.write).run(until=exp.spec.stop_at)
            summarize(result)  # as hierfair run does: its row, then its tables
            files.finish_all(result, exp.spec.tables)
    core = time.process_time() - t  # (with its summary row; streamed: and its tables written)
    done = result.counts["tasks"] - result.counts["tasks_unfinished"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"days={days:g} load={load:g} {algo}: tasks {result.counts['tasks']:,} finished "
          f"{done:,}; simulation {core:.1f} CPU-s ({done / core:,.0f} tasks/CPU-s); RSS after "
          f"building {built:,.0f} MB, peak {peak:,.0f} MB; "
          f"{result.counts['decisions']:,} decisions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
