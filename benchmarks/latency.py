"""Decision latency per algorithm and tree size, as a markdown table.

    .venv/bin/python benchmarks/latency.py [--algorithms drf,hdrf] [--levels 2,6,10,14]
                                           [--decisions 200]

Each cell is the median / 99th percentile wall time (us) of one scheduling
decision, as the simulator records it, over the first ``--decisions``
decisions after the first fill of benchmarks/workloads.py's
``latency_instance`` (a full binary tree of that many levels over a contended
4-server cluster, Google-like jobs).  The asv benchmark
benchmarks/bench_latency.py times the same grid's decisions as batches (its
statistics are asv's); docs/performance.md quotes this table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if not __package__:  # run as a file: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_latency import ALGORITHMS, LEVELS  # noqa: E402
from benchmarks.workloads import Stats, latency_grid  # noqa: E402

#: Decisions per cell: p99 is then the 5th slowest.
DECISIONS = 500


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f}" if ns < 1e4 else f"{ns / 1e3:,.0f}"


def table(stats: Stats, algorithms: list[str], levels: list[int]) -> str:
    """Algorithms down, tree sizes across; skipped algorithms are left out."""
    lines = ["| algorithm | " + " | ".join(f"{2**d:,} leaves ({d} levels)" for d in levels)
             + " |", "|---" * (len(levels) + 1) + "|"]
    for algorithm in algorithms:
        cells = [stats[algorithm, d] for d in levels]
        if all(isinstance(c, str) for c in cells):
            continue
        lines.append(f"| {algorithm} | " + " | ".join(
            "-" if isinstance(c, str) else f"{_us(c[0])} / {_us(c[1])}"
            for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS),
                    help=f"comma-separated (default {','.join(ALGORITHMS)})")
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)),
                    help=f"comma-separated tree depths (default {','.join(map(str, LEVELS))})")
    ap.add_argument("--decisions", type=int, default=DECISIONS,
                    help=f"decisions measured per run (default {DECISIONS})")
    args = ap.parse_args(argv)
    algorithms = args.algorithms.split(",")
    levels = [int(x) for x in args.levels.split(",")]
    stats = latency_grid(algorithms, levels, args.decisions)
    print(f"Decision latency, median / p99 (us), over {args.decisions} decisions "
          "after the first fill:\n")
    print(table(stats, algorithms, levels))
    for algorithm in algorithms:
        reason = stats[algorithm, levels[0]]
        if isinstance(reason, str):
            print(f"skipped {algorithm}: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
