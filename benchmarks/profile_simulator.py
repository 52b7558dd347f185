"""Where a whole simulation spends its time (a script, not a test).

    .venv/bin/python benchmarks/profile_simulator.py [--algorithm hdrf] [--top 25]

Runs one spec's first run (default: experiments/hdrf-fig13.yaml's first grid
point and seed -- 60 servers, 200 Facebook-bin jobs, ~39k tasks) under
cProfile and prints the simulated tasks per CPU-second and the functions with
the most own time.  docs/performance.md records what it found.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import ROOT, algorithm, load  # noqa: E402 - a sibling script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "experiments" / "hdrf-fig13.yaml"))
    ap.add_argument("--algorithm", default="hdrf",
                    help="a label of the spec or an algorithm name (default hdrf)")
    ap.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    args = ap.parse_args(argv)
    exp = load(args.spec)
    algo = algorithm(exp, args.algorithm)
    seed = exp.spec.seeds[0]
    exp.workload(seed)  # build (and parse) outside the profile
    profile = cProfile.Profile()
    start = time.process_time()
    profile.enable()
    result = exp.simulate(algo, seed)
    profile.disable()
    cpu = time.process_time() - start
    tasks = len(result.tasks)
    print(f"{Path(args.spec).name} {args.algorithm}: {tasks} tasks in {cpu:.1f} CPU-s under "
          f"cProfile ({tasks / cpu:,.0f} tasks per CPU-second)")
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
