"""Scheduling decisions per algorithm and tree size, timed by asv with repeats.

The instance is benchmarks/workloads.py's ``latency_instance`` (a full binary
tree of 2-14 levels over a contended 4-server cluster, Google-like jobs)
with its 512 queued jobs (``backlog_instance``): ``setup`` submits them all
and fills the cluster, untimed, and asv reruns it before every sample, so
every sample times the same ``STEPS`` churn steps from the same state.  A
step is ``Simulator.finish_earliest``: the earliest-started task ends, the
policy is told, and it is asked for leaves until it answers None (two to
four decisions, with the simulator's placement and bookkeeping).

CPU time, not wall time (``timer``): the machine is shared, and a process
waiting for a core is not a slower scheduler.  benchmarks/latency.py prints
per-decision median / p99 tables from the event-driven simulator instead.
"""

from __future__ import annotations

import time

from hierfair.sim import Simulator

from .workloads import filled

ALGORITHMS = ["drf", "naive-hdrf", "collapsed", "mch", "dff", "hdrf", "hdrf-fast"]
LEVELS = [2, 4, 6, 8, 10, 12, 14]
#: Churn steps per sample: 3-50 ms of CPU for most cells, 2 s for dff at 12
#: levels and 7.5 s at 14 (a few of its decisions there take a second).
STEPS = 20

timer = time.process_time


class DecisionLatency:
    params = (ALGORITHMS, LEVELS)
    param_names = ["algorithm", "levels"]
    number = 1  # setup (the fill) must precede every timed call
    # 3-8 samples a process (more while under 2 s), two processes: at least 6
    # a cell, the fewest with which asv compare's Mann-Whitney test can say
    # "different" (p < 0.002).
    repeat = (3, 8, 2.0)
    rounds = 2
    warmup_time = 0.0  # the fill in setup has run every code path once
    timeout = 900

    def setup(self, algorithm: str, levels: int) -> None:
        self.sim: Simulator = filled(algorithm, levels)

    def time_churn(self, algorithm: str, levels: int) -> None:
        for _ in range(STEPS):
            self.sim.finish_earliest()
