"""YARN FairScheduler with the DRF policy, as its code behaves.

Concept.  On every node heartbeat the FairScheduler walks its queue tree from
the root: a parent sorts *all* its child queues with its policy's comparator
and hands the container to the first child that assigns one; a leaf sorts
its runnable apps with demand the same way and the first app that fits gets
it.  The DRF comparator (``DominantResourceFairnessPolicy``):

1. a *needy* schedulable -- usage below its minShare on its dominant resource
   (dominant on the unweighted cluster share) -- goes first;
2. neither needy: the usage ratios to the cluster, each divided by the
   weight, sorted by the schedulable's own ratio (largest first), compared
   lexicographically; both needy: the usage/minShare ratios in that order;
3. ties: start time (0 for every queue, submit time for apps), then name.

A parent's usage is the plain sum of its children's (``FSQueue.incUsedResource``
walks to the root): the H-DRF paper's naive H-DRF (§3.3), plus minShare and
a lexicographic tail H-DRF does not have.

Upstream: apache/hadoop, package ``...resourcemanager.scheduler.fair``:
``policies/DominantResourceFairnessPolicy.java`` (stored ee91492f;
``DominantResourceFairnessComparatorN.compare``, ``sortRatios``,
``compareRatios``, ``calculateClusterAndFairRatios``,
``calculateMinShareRatios``; ``DominantResourceFairnessComparator2.compare``
with the YARN-11482 fix of PR #5607), ``FSParentQueue.assignContainer``
(4994beff), ``FSLeafQueue.assignContainer`` (6e953eb6), ``FSAppAttempt``
(a2e07a54), ``FairScheduler.getAppWeight``.  Read in docs/upstream/sorters.md §2
(docs/algorithms.md, "yarn-fair").

Mapping: a node's ``quota.guaranteed`` is its ``minResources`` (minShare);
its weight is the queue weight; a queue's name is ``root.`` + its path with
dots; jobs are apps (weight 1: no sizeBasedWeight, every app priority 1;
start time = submit time, id = job id).  Comparator2 (doubles) runs with two
resources, ComparatorN (floats) otherwise, as ``NUM_RESOURCES`` selects; the
spec's first resource is YARN's index 0 (memory).  Every queue uses ``drf``
(``defaultQueueSchedulingPolicy: drf``).  Simplifications: no reservations
(an app whose container fits nowhere is skipped, the walk goes on), no
per-node heartbeat (a task goes where the placement rule puts it), no
maxShare, no locality delay.  Preemption (off by default): ``params.preemption``,
:mod:`hierfair.algorithms.yarn_preemption` (rules) and
:mod:`~hierfair.algorithms.yarn_starvation` (clocks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any, ClassVar, Generic, Literal

import numpy as np
from pydantic import Field

from hierfair.algorithms.yarn_starvation import FairPreemption
from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Hierarchy, Job
from hierfair.sim.policy import P, PolicyView
from hierfair.sim.treewalk import TreeWalkPolicy

Row = list[Any]  # one resource's [usage ratio, weighted ratio, minShare ratio]


@dataclass(frozen=True)
class Schedulable:
    """What a queue or an app shows the comparator (``Schedulable``), its
    resources in the cluster's order (index 0: memory, 1: vcores)."""

    usage: Sequence[float]
    min_share: Sequence[float] = field(default_factory=tuple)
    weight: float = 1.0
    start_time: float = 0.0
    name: str = ""

    def min_at(self, i: int) -> float:
        return self.min_share[i] if i < len(self.min_share) else 0.0


def _sign(x: float) -> int:
    """Java ``(int) Math.signum(x)``: NaN gives 0."""
    return 0 if math.isnan(x) else (x > 0) - (x < 0)


def _ddiv(a: float, b: float) -> float:
    """IEEE division in doubles (Java's, where Python raises on 0)."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def _fdiv(a: float, b: float) -> float:
    """Java ``float`` division: both rounded to float32."""
    with np.errstate(all="ignore"):
        return float(np.float32(a) / np.float32(b))


# -- ComparatorN's helpers (float arithmetic) --------------------------------
def cluster_and_fair_ratios(used: Sequence[float], cluster: Sequence[float],
                            weight: float) -> tuple[list[Row], int]:
    """``calculateClusterAndFairRatios``: rows [usage/cluster, that/weight,
    0] and the dominant index (the first of the largest usage ratios)."""
    rows: list[Row] = []
    dominant = 0
    for i, (u, c) in enumerate(zip(used, cluster)):
        r = _fdiv(u, c)
        rows.append([r, _fdiv(r, weight), 0.0])
        if r > rows[dominant][0]:
            dominant = i
    return rows, dominant


def min_share_ratios(used: Sequence[float], min_share: Sequence[float]) -> list[float]:
    """``calculateMinShareRatios``: usage/minShare per resource, in floats."""
    return [_fdiv(u, m) for u, m in zip(used, min_share)]


def sort_ratios(rows: list[Row]) -> list[Row]:
    """``sortRatios``: by the usage ratio, largest first (a stable sort whose
    comparator is ``signum(o2[0] - o1[0])``, so NaN compares equal)."""
    def by_usage(a: Row, b: Row) -> int:
        return _sign(b[0] - a[0])
    return sorted(rows, key=cmp_to_key(by_usage))


def compare_ratios(r1: Sequence[Sequence[float]], r2: Sequence[Sequence[float]],
                   index: int) -> int:
    """``compareRatios``: the first non-zero sign of r1[i][index] - r2[i][index]."""
    for a, b in zip(r1, r2):
        s = _sign(a[index] - b[index])
        if s:
            return s
    return 0


def compare_n(s1: Schedulable, s2: Schedulable, cluster: Sequence[float]) -> int:
    """``DominantResourceFairnessComparatorN.compare`` without the final
    tie-breaks (:func:`compare` adds them)."""
    r1, d1 = cluster_and_fair_ratios(s1.usage, cluster, s1.weight)
    r2, d2 = cluster_and_fair_ratios(s2.usage, cluster, s2.weight)
    needy1 = s1.usage[d1] < s1.min_at(d1)
    needy2 = s2.usage[d2] < s2.min_at(d2)
    if needy1 != needy2:
        return -1 if needy1 else 1
    index = 1
    if needy1:  # both needy: usage over minShare, in the usage-ratio order
        for rows, s in ((r1, s1), (r2, s2)):
            mins = [s.min_at(i) for i in range(len(rows))]
            for row, m in zip(rows, min_share_ratios(s.usage, mins)):
                row[2] = m
        index = 2
    return compare_ratios(sort_ratios(r1), sort_ratios(r2), index)


# -- Comparator2 (two resources, double arithmetic) --------------------------
def cluster_and_fair_ratios2(used: Sequence[float], cluster: Sequence[float],
                             weight: float) -> tuple[list[float], int]:
    """Comparator2's ``calculateClusterAndFairRatios``: the weighted shares
    and the dominant index (vcores only if strictly larger, unweighted)."""
    shares = [_ddiv(used[0], cluster[0]), _ddiv(used[1], cluster[1])]
    dominant = 1 if shares[1] > shares[0] else 0
    return [_ddiv(s, weight) for s in shares], dominant


def min_share_ratios2(used: Sequence[float], min_share: Sequence[float]) -> list[float]:
    """Comparator2's ``calculateMinShareRatios``: usage/minShare, in doubles."""
    return [_ddiv(used[i], min_share[i]) for i in (0, 1)]


def compare_2(s1: Schedulable, s2: Schedulable, cluster: Sequence[float],
              yarn_11482: bool = False) -> int:
    """``DominantResourceFairnessComparator2.compare`` (fixed by YARN-11482;
    ``yarn_11482=True``: the pre-fix code, s2's neediness from s1's usage)."""
    sh1, d1 = cluster_and_fair_ratios2(s1.usage, cluster, s1.weight)
    sh2, d2 = cluster_and_fair_ratios2(s2.usage, cluster, s2.weight)
    needy1 = s1.usage[d1] < s1.min_at(d1)
    needy2 = (s1 if yarn_11482 else s2).usage[d2] < s2.min_at(d2)
    if needy1 != needy2:
        return -1 if needy1 else 1
    if needy1:
        sh1 = min_share_ratios2(s1.usage, [s1.min_at(i) for i in (0, 1)])
        sh2 = min_share_ratios2(s2.usage, [s2.min_at(i) for i in (0, 1)])
    return _sign(sh1[d1] - sh2[d2]) or _sign(sh1[1 - d1] - sh2[1 - d2])


def compare(s1: Schedulable, s2: Schedulable, cluster: Sequence[float],
            comparator: Literal["auto", "2", "N"] = "auto", yarn_11482: bool = False) -> int:
    """``DominantResourceFairnessPolicy.getComparator().compare``: < 0 when
    s1 gets the container first.  ``auto``: Comparator2 for two resources."""
    if comparator == "2" or (comparator == "auto" and len(cluster) == 2):
        res = compare_2(s1, s2, cluster, yarn_11482)
    else:
        res = compare_n(s1, s2, cluster)
    if res == 0:  # compareAttributes: start time, then name
        res = _sign(s1.start_time - s2.start_time) or (s1.name > s2.name) - (s1.name < s2.name)
    return res


# -- fair shares (ComputeFairShares; Y2, not used for ordering) --------------
def compute_fair_shares(weights: Sequence[float], min_shares: Sequence[float],
                        max_shares: Sequence[float | None], active: Sequence[bool],
                        total: float, steady: bool) -> list[int]:
    """``ComputeFairShares.computeSharesInternal`` for one resource type:
    the children of one queue share ``total`` (their parent's share).  Fixed
    shares first (maxShare <= 0, inactive queues for the instantaneous share,
    weight <= 0); the rest get ``(long) clamp(weight * R, minShare,
    maxShare)`` with R found by doubling then 25 halvings, the upper end
    kept.  Demand is no input: DRF's ``computeShares`` calls this per type."""
    big = float(2**63 - 1)
    maxes = [big if m is None else m for m in max_shares]
    shares = [0] * len(weights)
    free, taken = [], 0
    for i, (w, m, mx, act) in enumerate(zip(weights, min_shares, maxes, active)):
        if mx <= 0 or (not steady and not act):
            continue  # fixed at 0
        if w <= 0:
            shares[i] = int(m) if m > 0 else 0
            taken += shares[i]
            continue
        free.append(i)
    if not free:
        return shares

    def share(i: int, r: float) -> int:
        return int(min(max(weights[i] * r, min_shares[i]), maxes[i]))

    def used(r: float) -> int:
        return sum(share(i, r) for i in free)
    target = min(max(total - taken, 0), min(sum(maxes[i] for i in free), big))
    r_max = 1.0
    while used(r_max) < target:
        r_max *= 2.0
    left, right = 0.0, r_max
    for _ in range(25):  # COMPUTE_FAIR_SHARES_ITERATIONS
        mid = (left + right) / 2.0
        planned = used(mid)
        if planned == target:
            right = mid
            break
        if planned < target:
            left = mid
        else:
            right = mid
    for i in free:
        shares[i] = share(i, right)
    return shares


# -- a tree walk that also picks the job inside the leaf ----------------------
class LeafAppsWalk(TreeWalkPolicy[P], Generic[P]):
    """TreeWalkPolicy whose leaf serves the first of its pending jobs, in
    :meth:`app_order`, whose task fits (YARN's and YuniKorn's leaves try
    their apps in order; hierfair's base runs the FIFO head only)."""

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self._choice: dict[int, int] = {}
        self._jobs: dict[int, Job] = {}
        self._usage: dict[int, np.ndarray] | None = None

    def on_job_arrival(self, job: Job) -> None:
        self._jobs[job.id] = job
        super().on_job_arrival(job)

    def app_order(self, leaf: int, jobs: list[Job]) -> list[Job]:
        """The leaf's pending jobs in the order the leaf tries them."""
        raise NotImplementedError

    def job_usage(self, job: int) -> np.ndarray:
        """Resources the job's running tasks hold (found once per decision)."""
        if self._usage is None:
            state = self.state
            self._usage = {}
            for task in state.running_tasks():
                info = state.task_info(task)
                self._usage[info.job] = self._usage.get(info.job, 0.0) + info.demand
        return self._usage.get(job, np.zeros(len(self.total)))

    def leaf_status(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        demanding, fits, demand = super().leaf_status()
        self._usage, self._choice = None, {}
        state = self.state
        for leaf in np.flatnonzero(demanding).tolist():
            pending = [self._jobs[j] for j in state.pending_jobs(leaf)]
            order = pending if len(pending) == 1 else self.app_order(leaf, pending)
            chosen = next((j for j in order if state.fits(j.demand)), None)
            if chosen is not None:
                self._choice[leaf] = chosen.id
                fits[leaf], demand[leaf] = True, chosen.demand
        return demanding, fits, demand

    def job_for(self, leaf: int) -> int | None:
        return self._choice.get(leaf)


def comparator_key(cmp: Callable[[Any, Any], int], items: Sequence[Any]) -> list[Any]:
    """Walk keys from a pairwise comparator (the walk takes the first lowest)."""
    wrap = cmp_to_key(cmp)
    return [wrap(x) for x in items]


# -- the policy ---------------------------------------------------------------
class YarnParams(Strict):
    #: Which DRF comparator class: ``auto`` (upstream: Comparator2 with exactly
    #: two resource types), ``2`` or ``N``.
    comparator: Literal["auto", "2", "N"] = "auto"
    #: Reproduce YARN-11482 (Comparator2 before PR #5607: s2 is needy when
    #: s1's usage is below s2's minShare).
    yarn_11482: bool = False
    #: ``yarn.scheduler.fair.preemption`` (off: the policy never preempts).
    preemption: bool = False
    #: ``fairSharePreemptionTimeout`` in seconds, every queue (None: upstream's
    #: default, Long.MAX_VALUE ms, never).
    fair_share_preemption_timeout: float | None = Field(None, ge=0)
    #: ``minSharePreemptionTimeout`` in seconds, every queue (None: never).
    min_share_preemption_timeout: float | None = Field(None, ge=0)
    #: ``fairSharePreemptionThreshold``, every queue.
    fair_share_preemption_threshold: float = Field(0.5, ge=0, le=1)
    #: ``yarn.scheduler.fair.preemption.cluster-utilization-threshold``.
    utilization_threshold: float = Field(0.8, ge=0)
    #: Queues (paths) with ``allowPreemptionFrom: false``; their subtrees too.
    non_preemptable: list[str] = Field(default_factory=list)
    #: ``FSPreemptionThread.delayBeforeNextStarvationCheck`` in seconds:
    #: waitTimeBeforeKill 15 + 4 heartbeats of 1 s + 10 (the defaults).
    starvation_check_delay: float = Field(29.0, ge=0)
    #: The first task a job starts is its ApplicationMaster container (the
    #: preemption thread takes sets with fewer AM containers first).
    am_containers: bool = False


class YarnFair(LeafAppsWalk[YarnParams]):
    """FairScheduler's walk with DominantResourceFairnessPolicy at every queue."""

    name: ClassVar[str] = "yarn-fair"
    description: ClassVar[str] = ("YARN FairScheduler with the DRF policy as coded: needy "
                                  "(below minShare) first, sorted weighted ratios compared "
                                  "lexicographically, plain-sum parents")
    Params = YarnParams

    @classmethod
    def check_hierarchy(cls, params: YarnParams, hierarchy: Hierarchy) -> None:
        for path in params.non_preemptable:
            if path not in hierarchy.paths[1:]:
                raise SpecError("no such queue in the hierarchy",
                                where="params.non_preemptable", value=path)

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h, resources = state.hierarchy, state.cluster.resources
        self._cluster = state.cluster.total.tolist()
        self._min = h.quota_matrix("guaranteed", resources, 0.0).tolist()
        self._names = ["root" + ("." + p.replace("/", ".") if p else "") for p in h.paths]
        self._pre = FairPreemption(self, self.params) if self.params.preemption else None

    # -- preemption (FairPreemption keeps its clocks; off: nothing happens) ----
    def on_job_arrival(self, job: Job) -> None:
        if self._pre is not None:
            self._pre.arrived(job)
        super().on_job_arrival(job)

    def on_job_completion(self, job: Job) -> None:
        if self._pre is not None:
            self._pre.completed(job)
        super().on_job_completion(job)

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        if self._pre is not None:
            self._pre.started(leaf)
        super().on_task_start(leaf, demand)

    def preemptions(self) -> list[tuple[int, int]]:
        return self._pre.preemptions() if self._pre is not None else []

    def wake_at(self) -> float | None:
        return self._pre.wake_at() if self._pre is not None else None

    def _cmp(self, a: Schedulable, b: Schedulable) -> int:
        return compare(a, b, self._cluster, self.params.comparator, self.params.yarn_11482)

    def queue(self, node: int) -> Schedulable:
        h = self.state.hierarchy
        return Schedulable(self.state.alloc_row(node), self._min[node], float(h.weights[node]),
                           0.0, self._names[node])

    def app(self, job: Job) -> Schedulable:
        return Schedulable(self.job_usage(job.id).tolist(), (), 1.0, job.submit,
                           f"application_{job.id:08d}")

    def walk_keys(self, demanding: Any, fits: Any, demand: Any) -> list:
        return comparator_key(self._cmp, [self.queue(n) for n in range(self.tree.n)])

    def app_order(self, leaf: int, jobs: list[Job]) -> list[Job]:
        key = cmp_to_key(self._cmp)  # FSLeafQueue: the leaf's policy orders its apps
        return sorted(jobs, key=lambda j: key(self.app(j)))
