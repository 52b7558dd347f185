"""One algorithm on one experiment, asked the questions the properties need.

A :class:`Probe` fills the cluster (every job at time 0, tasks placed until
none fits; optionally ``churn`` rounds of the earliest task ending), runs the
system in time (:meth:`Probe.run`), and does either on a variant of the
experiment: some leaves gone (``without``), some leaves declaring another
demand (``lies``), or every task cut into ``finer`` tasks of 1/``finer`` its
demand (whole tasks made finer, as the claims' ``grain`` does).  Answers are
cached per question.  Everything is read off the experiment, so a
counterexample spec answers exactly as the audit did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from hierfair.algorithms import make_policy
from hierfair.experiment.allocate import fill
from hierfair.experiment.spec import AlgorithmSpec, Experiment
from hierfair.sim.model import Demand, Job, Workload, eligible_servers
from hierfair.sim.policy import BasePolicy

Lies = tuple[tuple[str, tuple[float, ...]], ...]


@dataclass(frozen=True)
class Fill:
    """Who holds what once the cluster is full (after ``churn`` task ends)."""

    shares: np.ndarray  # (nodes, resources), of the cluster total
    tasks: np.ndarray  # (nodes,) running tasks
    free: np.ndarray  # (servers, resources) left free
    #: the running tasks as (leaves, servers, demands) rows; None: a pooled,
    #: fractional allocation
    placed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def dominant(self) -> np.ndarray:
        return self.shares.max(axis=1)

    def held(self) -> np.ndarray | None:
        """What each node holds on each server (nodes x servers x resources),
        built when asked (the per-server properties); None: pooled."""
        if self.placed is None:
            return None
        leaves, servers, demands = self.placed
        out = np.zeros((len(self.tasks), len(self.free), demands.shape[1]))
        np.add.at(out, (leaves, servers), demands)
        return out


def _declared(job: Job, lie: dict[int, np.ndarray]) -> np.ndarray:
    """The demand ``job`` declares: its own, or its leaf's lie -- which keeps
    the job's placement constraint (a lie changes the vector, not where the
    job may run)."""
    if job.leaf not in lie:
        return job.demand
    servers = eligible_servers(job.demand)
    return lie[job.leaf] if servers is None else Demand(lie[job.leaf], servers)


class Probe:
    """Questions to one algorithm about one experiment (seed = the spec's first)."""

    def __init__(self, exp: Experiment, algorithm: str | AlgorithmSpec,
                 shared: dict[str, Any] | None = None) -> None:
        self.exp = exp
        self._shared = {} if shared is None else shared  # per experiment, across algorithms
        self.algorithm = (algorithm if isinstance(algorithm, AlgorithmSpec)
                          else AlgorithmSpec(name=algorithm))
        self.seed = exp.spec.seed_list[0]
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
    def fill(self, churn: int = 0, without: tuple[str, ...] = (), lies: Lies = (),
             finer: int = 1) -> Fill:
        """``finer`` k: every task cut into k tasks of 1/k its demand (lies too)."""
        key = (churn, without, lies, finer)
        if key not in self._fills:
            filled = fill(self._variant(without, lies, finer), self._policy(), self.seed, churn,
                          self.algorithm.placement)
            if filled.fractional:  # a static definition: shares, no tasks, pooled
                have = self.total > 0
                shares = np.divide(filled.alloc, self.total, out=np.zeros_like(filled.alloc),
                                   where=have[None, :])
            else:
                shares = filled.alloc / self.total
            self._fills[key] = Fill(shares=shares, tasks=filled.tasks, free=filled.free,
                                    placed=filled.placed)
        return self._fills[key]

    @cached_property
    def exact(self) -> bool:
        """The algorithm answers with its exact fluid allocation (static H-DRF's
        fractional one), not with whole tasks."""
        return getattr(self._policy(), "fractional", None) is not None

    def useful(self, lies: Lies = (), finer: int = 1) -> dict[int, float]:
        """Each demanding leaf's *useful* tasks when the leaves in ``lies``
        declare those demands: how many of its true (whole-size) tasks the
        bundle it holds once the cluster is full runs -- min over the
        resources it truly needs of held / needed, fractional.  A declaration
        the algorithm cannot run at all (it raises) gets the liars nothing."""
        try:
            fill = self.fill(lies=lies, finer=finer)
        except Exception:  # a lie the algorithm cannot run gains nothing
            if not lies:
                raise
            return {self.exp.hierarchy.index(path): 0.0 for path, _ in lies}
        out = {}
        for leaf in np.flatnonzero(self.demands.any(axis=1)):
            d = self.demands[leaf]
            used = d > 0
            if (self.total[used] <= 0).any():  # needs a resource the cluster lacks
                out[int(leaf)] = 0.0
                continue
            held = fill.shares[leaf, used] * self.total[used]
            out[int(leaf)] = float(np.min(held / d[used]))
        return out

    def first_fill_tasks(self) -> int:
        """How many tasks run once the cluster is first full: the churn that
        ends every one of them once."""
        return int(self.fill().tasks[0])

    def run(self, until: float) -> pd.DataFrame:
        """The allocations table (time, path, tasks, resources) of a run
        stopped at simulated time ``until``."""
        key = (until,)
        if key not in self._runs:
            sim = self.exp.simulator(self._policy(), self.seed,
                                     placement=self.algorithm.placement)
            self._runs[key] = sim.run(until=until).allocations
        return self._runs[key]

    # -- helpers -------------------------------------------------------------
    def _policy(self) -> BasePolicy:
        return make_policy(self.algorithm.name, self.algorithm.params)

    def _variant(self, without: tuple[str, ...], lies: Lies, finer: int = 1) -> Experiment:
        if not without and not lies and finer == 1:
            return self.exp
        h = self.exp.hierarchy
        gone = {h.index(p) for p in without}
        lie = {h.index(p): np.array(d, dtype=float) for p, d in lies}
        jobs = [replace(j, demand=_declared(j, lie) / finer,
                        durations=np.repeat(j.durations, finer))
                for j in self.workload.jobs if j.leaf not in gone]
        kept = replace(self.workload, jobs=tuple(replace(j, id=i) for i, j in enumerate(jobs)))
        clone = replace(self.exp, _workloads={})
        clone._workloads[self.seed] = kept
        return clone
