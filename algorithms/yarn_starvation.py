"""YARN FairScheduler's preemption over time: the update, its clocks, the thread.

Concept.  ``FairScheduler.update`` recomputes the instantaneous fair shares
and, while the cluster is used above the utilisation threshold, each leaf's
starved apps (``FSLeafQueue.updateStarvedApps``); the preemption thread then
takes the starved apps and stops containers for them (``FSPreemptionThread``).
The rules themselves (starvation, ``canContainerBePreempted``, the per-node
search) are :mod:`hierfair.algorithms.yarn_preemption`'s; this module keeps
what changes over time -- the starvation clocks (``lastTimeAtFairShare``,
``lastTimeAtMinShare``) and each app's next check (``preemptionTriggered``) -- for :class:`~hierfair.algorithms.yarn_fair.YarnFair`.
Reading: docs/upstream/yarn-preemption.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hierfair.algorithms.yarn_preemption import (
    Candidate,
    StarvedApps,
    can_container_be_preempted,
    containers_for_one,
    distribute_min_share,
    fair_share_starved,
    is_none,
    min_share_starvation,
    minus_nonneg,
    node_order,
    starved_containers,
)
from hierfair.sim.model import Job

if TYPE_CHECKING:  # yarn_fair imports this module
    from hierfair.algorithms.yarn_fair import YarnFair, YarnParams


class RunningView(NamedTuple):
    """A running task as the thread sees it (evicting: already being preempted)."""

    job: int
    leaf: int
    server: int
    demand: np.ndarray
    evicting: bool


Zero = list[float]


class FairPreemption:
    """``FairScheduler.update`` + ``FSPreemptionThread`` for one run of
    :class:`~algorithms.yarn_fair.YarnFair`.

    The update (fair shares, starvation clocks, starved apps) runs at the
    start of each round -- the thread then picks victims at once -- and again
    at its end (``wake_at``), so a clock sees the state the round leaves until
    the next event: the state only changes at events, so this is upstream's
    0.5-s update with the interval taken to 0.  A queue or app found
    satisfied at one update is taken as satisfied until the next (its clock
    restarts then)."""

    def __init__(self, policy: YarnFair, params: YarnParams) -> None:
        from hierfair.algorithms.yarn_fair import compute_fair_shares  # import cycle
        self._shares_of = compute_fair_shares
        self.policy, self.p = policy, params
        state = self.state = policy.state
        h = state.hierarchy
        self.cluster = state.cluster.total.tolist()
        self.n_res = len(self.cluster)
        never = math.inf  # upstream's default, Long.MAX_VALUE ms
        fs, ms = params.fair_share_preemption_timeout, params.min_share_preemption_timeout
        self.fs_timeout = never if fs is None else fs
        self.ms_timeout = never if ms is None else ms
        self.min: list[list[float]] = policy._min
        blocked = {h.paths.index(q) for q in params.non_preemptable}
        self.preemptable = [True] * h.n_nodes  # allowPreemptionFrom, inherited
        for node in range(1, h.n_nodes):
            self.preemptable[node] = node not in blocked and self.preemptable[h.parent[node]]
        self.active: dict[int, list[int]] = {leaf: [] for leaf in h.leaves}
        self.last_fair: dict[int, float] = {}
        self.last_min = [0.0] * h.n_nodes  # queues exist from time 0
        self.fair_ok: set[int] = set()
        self.min_ok: set[int] = set()
        self.fs: dict[int, list[float]] = {}
        self.ms: dict[int, list[float]] = {}
        self.next_check: dict[int, float] = {}
        self.am: dict[int, int] = {}
        self.heap = StarvedApps(lambda j: [a + b for a, b in zip(self.fs.get(j, self._zero()),
                                                                  self.ms.get(j, self._zero()))])

    def _zero(self) -> Zero:
        return [0.0] * self.n_res

    # -- notifications ---------------------------------------------------------
    def arrived(self, job: Job) -> None:
        self.active[job.leaf].append(job.id)
        self.last_fair[job.id] = self.state.now  # FSAppAttempt: lastTimeAtFairShare = start

    def completed(self, job: Job) -> None:
        jobs = self.active[job.leaf]
        if job.id in jobs:
            jobs.remove(job.id)

    def started(self, leaf: int) -> None:
        job = self.state.last_job(leaf)
        if job is None:
            return
        if self.p.am_containers and job not in self.am:
            self.am[job] = self.state.running_tasks(leaf)[-1]  # the one just started

    # -- what the apps hold and ask ---------------------------------------------
    def _measure(self) -> None:
        """Each app's usage (evicting tasks included: they still hold it),
        pending count and demand (``FSAppAttempt.updateDemand``)."""
        state = self.state
        self.policy._usage = None  # the walk's cache of app usage is a round old
        self.usage: dict[int, np.ndarray] = {}
        self.running: list[tuple[int, RunningView]] = []
        evicting = state.evicting
        for task in state.running_tasks():
            info = state.task_info(task)
            self.usage[info.job] = self.usage.get(info.job, 0.0) + info.demand
            self.running.append((task, RunningView(info.job, info.leaf, info.server, info.demand,
                                                   evicting(task))))
        pending = state.job_pending
        self.demand = {j: (self.usage.get(j, 0.0) + pending(j) * state.job(j).demand)
                       for jobs in self.active.values() for j in jobs}

    def _usage(self, job: int) -> np.ndarray:
        return self.usage.get(job, np.zeros(self.n_res))

    def fair_shares(self) -> tuple[list[list[float]], dict[int, list[float]]]:
        """Instantaneous fair shares (``ComputeFairShares`` per resource type,
        from the root's = the cluster down; a queue without runnable apps
        gets 0); each leaf's apps share its fair share with weight 1."""
        h, n, R = self.state.hierarchy, self.state.hierarchy.n_nodes, self.n_res
        active = [False] * n
        for leaf, jobs in self.active.items():
            node = leaf
            while jobs and node >= 0 and not active[node]:
                active[node] = True
                node = h.parent[node] if node else -1
        fs = [[0.0] * R for _ in range(n)]
        fs[0] = list(self.cluster)
        for node in range(n):
            kids = h.children[node]
            for r in range(R):
                got = self._shares_of([float(h.weights[c]) for c in kids],
                                      [self.min[c][r] for c in kids], [None] * len(kids),
                                      [active[c] for c in kids], fs[node][r], False)
                for c, s in zip(kids, got):
                    fs[c][r] = float(s)
        apps: dict[int, list[float]] = {}
        for leaf, jobs in self.active.items():
            k = len(jobs)
            per_r = [self._shares_of([1.0] * k, [0.0] * k, [None] * k, [True] * k,
                                     fs[leaf][r], False) for r in range(R)]
            for i, j in enumerate(jobs):
                apps[j] = [float(per_r[r][i]) for r in range(R)]
        return fs, apps

    # -- the update ------------------------------------------------------------
    def should_attempt(self) -> bool:
        """``FairScheduler.shouldAttemptPreemption``: utilisation (the largest
        over resources) strictly above the threshold."""
        used = self.state.alloc_row(0)
        util = max((u / c for u, c in zip(used, self.cluster) if c), default=0.0)
        return self.p.utilization_threshold < util

    def update(self, thread: bool) -> bool:
        """One ``FairScheduler.update`` with starvation checks; ``thread``:
        starved apps go to the preemption thread's heap.  False: not attempted."""
        now, p = self.state.now, self.p
        if not self.should_attempt():
            self.fair_ok.clear()  # no update runs meanwhile: clocks are not restarted
            self.min_ok.clear()
            return False
        for j in self.fair_ok:  # satisfied at the last update, so until now
            self.last_fair[j] = now
        for leaf in self.min_ok:
            self.last_min[leaf] = now
        self.fair_ok, self.min_ok = set(), set()
        self._measure()
        _, self.app_fair = self.fair_shares()
        jobs_of = self.state.job
        for leaf, jobs in self.active.items():
            with_demand = [jobs_of(j) for j in jobs
                           if self.state.job_pending(j) > 0 and now >= self.next_check.get(j, -math.inf)]
            order = [j.id for j in self.policy.app_order(leaf, with_demand)]
            fs_total = np.zeros(self.n_res)
            threshold = p.fair_share_preemption_threshold
            for j in order:  # updateStarvedAppsFairshare
                starved, amount = fair_share_starved(self.cluster, self._usage(j),
                                                     self.app_fair[j], self.demand[j], threshold)
                if not starved:
                    self.last_fair[j] = now
                    self.fair_ok.add(j)
                due = starved and now >= self.last_fair[j] + self.fs_timeout
                self.fs[j] = amount if due else self._zero()
                if is_none(self.fs[j]):
                    break
                if thread:
                    self.heap.add(j)
                fs_total += self.fs[j]
            leaf_demand = sum((self.demand[j] for j in jobs), np.zeros(self.n_res))
            ms = min_share_starvation(self.state.alloc_row(leaf), self.min[leaf], leaf_demand)
            if is_none(ms):
                self.last_min[leaf] = now
                self.min_ok.add(leaf)
            if now < self.last_min[leaf] + self.ms_timeout:
                ms = self._zero()
            ms = minus_nonneg(ms, fs_total)
            pending = [(self.demand[j] - self._usage(j), self.fs.get(j, self._zero()))
                       for j in order]
            for j, mine in zip(order, distribute_min_share(self.cluster, pending, ms)):
                self.ms[j] = self._zero() if mine is None else mine
                if mine is not None and thread:
                    self.heap.add(j)
        return True

    # -- the thread ------------------------------------------------------------
    def preemptions(self) -> list[tuple[int, int]]:
        """Update, then ``FSPreemptionThread.run`` until no starved app is left."""
        if not self.update(thread=True):
            return []
        out: list[tuple[int, int]] = []
        claimed: set[int] = set()
        promised = {s: np.zeros(self.n_res) for s in range(self.state.cluster.n_servers)}
        going: dict[int, np.ndarray] = {}  # per app: resources to be preempted
        for task, rv in self.running:
            if rv.evicting:
                promised[rv.server] = promised[rv.server] + rv.demand
                going[rv.job] = going.get(rv.job, 0.0) + rv.demand

        def can_preempt(c: Candidate, considering: np.ndarray) -> bool:
            leaf = self.state.job(c.job).leaf
            return self.preemptable[leaf] and can_container_be_preempted(
                self.cluster, self._usage(c.job), going.get(c.job, np.zeros(self.n_res)),
                c.demand, considering, self.app_fair[c.job])

        while (j := self.heap.take()) is not None:
            job = self.state.job(j)
            starvation = [a + b for a, b in zip(self.fs.get(j, self._zero()),
                                                self.ms.get(j, self._zero()))]
            before = len(out)
            for _ in range(starved_containers(starvation, job.demand,
                                              self.state.job_pending(j))):
                best = containers_for_one(job.demand, self._nodes(claimed, promised), can_preempt)
                for c in best or ():
                    claimed.add(c.task)
                    server = self.state.task_info(c.task).server
                    promised[server] = promised[server] + c.demand
                    going[c.job] = going.get(c.job, 0.0) + c.demand
                    out.append((c.task, job.leaf))
            if len(out) > before and self.state.job_pending(j) > 0:
                self.policy._choice[job.leaf] = j  # the simulator's swap serves it
            self.next_check[j] = self.state.now + self.p.starvation_check_delay
        return out

    def _nodes(self, claimed: set[int], promised: dict[int, np.ndarray]
               ) -> list[tuple[np.ndarray, list[Candidate]]]:
        by_server: dict[int, list[Candidate]] = {s: [] for s in promised}
        for task, rv in self.running:
            if task not in claimed and not rv.evicting:
                by_server[rv.server].append(Candidate(task, rv.job, rv.demand,
                                                      self.am.get(rv.job) == task))
        return [(np.maximum(self.state.server_free(s) - promised[s], 0.0), node_order(cs))
                for s, cs in by_server.items()]

    def wake_at(self) -> float | None:
        """After the round: update the clocks, and ask for a round when the
        first running one runs out (a starvation timeout, an app's next check)."""
        if not self.update(thread=False):
            return None
        now, times = self.state.now, []
        for jobs in self.active.values():
            for j in jobs:
                if self.state.job_pending(j) <= 0:
                    continue
                times.append(self.next_check.get(j, -math.inf))
                if j not in self.fair_ok:
                    times.append(self.last_fair[j] + self.fs_timeout)
        times += [self.last_min[leaf] + self.ms_timeout
                  for leaf in self.active if leaf not in self.min_ok]
        due = [t for t in times if now < t < math.inf]
        return min(due) if due else None
