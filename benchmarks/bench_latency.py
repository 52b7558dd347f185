"""Wall time of one scheduling decision, per algorithm and tree size.

The instance (benchmarks/workloads.py ``latency_instance``) is a contended
4-server cluster under a full binary tree, Google-like jobs queued at time 0
and arriving after; each run stops after ``DECISIONS`` decisions past the
first fill, and the median and 99th percentile of those decisions are
tracked.  benchmarks/latency.py prints the same numbers as a table, over any
grid.
"""

from __future__ import annotations

from .workloads import Stats, latency_grid

ALGORITHMS = ["drf", "naive-hdrf", "collapsed", "mch", "dff", "hdrf", "hdrf-fast"]
LEVELS = [2, 4, 6, 8, 10, 12, 14]
#: Decisions measured per run (p99 is then the 5th slowest).  At 14 levels the
#: slowest policies take ~30 ms a decision (dff: seconds at its p99), so
#: the whole grid runs in a few minutes.
DECISIONS = 500


class DecisionLatency:
    params = (ALGORITHMS, LEVELS)
    param_names = ["algorithm", "levels"]
    unit = "ns"
    timeout = 1800

    def setup_cache(self) -> Stats:
        # One simulation per grid point gives both statistics (asv would run
        # setup once per track_ function).
        return latency_grid(ALGORITHMS, LEVELS, DECISIONS)

    def setup(self, stats: Stats, algorithm: str, levels: int) -> None:
        if isinstance(stats[algorithm, levels], str):
            raise NotImplementedError(stats[algorithm, levels])

    def track_median(self, stats: Stats, algorithm: str, levels: int) -> int:
        return stats[algorithm, levels][0]  # type: ignore[index]

    def track_p99(self, stats: Stats, algorithm: str, levels: int) -> int:
        return stats[algorithm, levels][1]  # type: ignore[index]
