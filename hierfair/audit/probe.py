"""One algorithm on one experiment, asked the questions the properties need.

A :class:`Probe` fills the cluster (every job at time 0, tasks placed until
none fits; optionally ``churn`` rounds of the earliest task ending), runs the
system in time (:meth:`Probe.run`), and does either on a variant of the
experiment: some leaves gone (``without``) or some leaves declaring another
demand (``lies``).  Answers are cached per question.  Everything is read off
the experiment, so a counterexample spec answers exactly as the audit did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from hierfair.algorithms import make_policy
from hierfair.experiment.spec import AlgorithmSpec, Experiment
from hierfair.sim.model import Workload
from hierfair.sim.policy import BasePolicy

Lies = tuple[tuple[str, tuple[float, ...]], ...]


@dataclass(frozen=True)
class Fill:
    """Who holds what once the cluster is full (after ``churn`` task ends)."""

    shares: np.ndarray  # (nodes, resources), of the cluster total
    tasks: np.ndarray  # (nodes,) running tasks
    free: np.ndarray  # (servers, resources) left free

    @property
    def dominant(self) -> np.ndarray:
        return self.shares.max(axis=1)


class Probe:
    """Questions to one algorithm about one experiment (seed = the spec's first)."""

    def __init__(self, exp: Experiment, algorithm: str | AlgorithmSpec,
                 shared: dict[str, Any] | None = None) -> None:
        self.exp = exp
        self._shared = {} if shared is None else shared  # per experiment, across algorithms
        self.algorithm = (algorithm if isinstance(algorithm, AlgorithmSpec)
                          else AlgorithmSpec(name=algorithm))
        self.seed = exp.spec.seeds[0]
        self._fills: dict[tuple, Fill] = {}
        self._runs: dict[tuple, pd.DataFrame] = {}

    # -- what the experiment says ------------------------------------------
    @cached_property
    def workload(self) -> Workload:
        return self.exp.workload(self.seed)

    @cached_property
    def demands(self) -> np.ndarray:
        """(nodes, resources): each demanding leaf's per-task demand."""
        out = np.zeros((self.exp.hierarchy.n_nodes, self.exp.cluster.n_resources))
        for job in self.workload.jobs:
            out[job.leaf] = job.demand
        return out

    @cached_property
    def total(self) -> np.ndarray:
        return self.exp.cluster.total

    @cached_property
    def grain(self) -> float:
        """The largest one-task dominant share: whole tasks' granularity."""
        inv = np.where(self.total > 0, 1.0 / np.where(self.total > 0, self.total, 1), 0.0)
        return float((self.demands * inv).max(initial=0.0))

    @cached_property
    def pooled(self) -> bool:
        return self.exp.cluster.n_servers == 1

    @cached_property
    def longest_task(self) -> float:
        return max(float(j.durations.max()) for j in self.workload.jobs)

    @cached_property
    def horizon(self) -> float:
        """The window of the running-system properties: six longest tasks
        (the running instance keeps every leaf demanding that long)."""
        return 6.0 * self.longest_task

    def shared(self, key: str, make: Callable[[], Any]) -> Any:
        """A value that depends on the experiment only (computed once for
        all algorithms probed with the same ``shared`` dict)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    # -- questions ------------------------------------------------------------
    def fill(self, churn: int = 0, without: tuple[str, ...] = (), lies: Lies = ()) -> Fill:
        key = (churn, without, lies)
        if key not in self._fills:
            exp, policy = self._variant(without, lies), self._policy()
            fractional = getattr(policy, "fractional", None)
            if fractional is not None:  # a static definition: shares, no tasks, pooled
                alloc, tasks = fractional(exp.hierarchy, self.total, exp.workload(self.seed))
                self._fills[key] = Fill(shares=alloc / self.total, tasks=tasks,
                                        free=(self.total - alloc[0])[None, :])
                return self._fills[key]
            sim = exp.simulator(policy, self.seed)
            sim.submit_all()
            for _ in range(churn):
                if not sim.finish_earliest():
                    break
            free = self.exp.cluster.capacities - sim.server_used()
            self._fills[key] = Fill(shares=sim.alloc / self.total, tasks=sim.running.copy(),
                                    free=free)
        return self._fills[key]

    def first_fill_tasks(self) -> int:
        """How many tasks run once the cluster is first full: the churn that
        ends every one of them once."""
        return int(self.fill().tasks[0])

    def run(self, until: float) -> pd.DataFrame:
        """The allocations table (time, path, tasks, resources) of a run
        stopped at simulated time ``until``."""
        key = (until,)
        if key not in self._runs:
            sim = self.exp.simulator(self._policy(), self.seed)
            self._runs[key] = sim.run(until=until).allocations
        return self._runs[key]

    # -- helpers -------------------------------------------------------------
    def _policy(self) -> BasePolicy:
        return make_policy(self.algorithm.name, self.algorithm.params)

    def _variant(self, without: tuple[str, ...], lies: Lies) -> Experiment:
        if not without and not lies:
            return self.exp
        h = self.exp.hierarchy
        gone = {h.index(p) for p in without}
        lie = {h.index(p): np.array(d, dtype=float) for p, d in lies}
        jobs = [replace(j, demand=lie.get(j.leaf, j.demand))
                for j in self.workload.jobs if j.leaf not in gone]
        kept = replace(self.workload, jobs=tuple(replace(j, id=i) for i, j in enumerate(jobs)))
        clone = replace(self.exp, _workloads={})
        clone._workloads[self.seed] = kept
        return clone
