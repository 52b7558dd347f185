"""YARN FairScheduler's preemption (fair-share and min-share starvation), as coded.

Concept.  Preemption in the FairScheduler is driven by *starved apps*.  On
every update (``FairScheduler.update``, only while the cluster is used above
``preemption.cluster-utilization-threshold``) each leaf queue walks its apps
with pending demand in its policy's order (``FSLeafQueue.updateStarvedApps``):

* an app is *fair-share starved* when its usage is below
  ``min(fairSharePreemptionThreshold * fairShare, demand)`` (dominant share
  against dominant share) continuously for ``fairSharePreemptionTimeout``;
  the walk stops at the first app that is not (``FSAppAttempt
  .fairShareStarvation``, ``updateStarvedAppsFairshare``);
* a leaf is *min-share starved* by ``min(minShare, demand) - usage`` after
  ``minSharePreemptionTimeout`` (``FSLeafQueue.minShareStarvation``); what
  fair-share starvation does not cover is handed to its apps in order
  (``updateStarvedAppsMinshare``).

A preemption thread takes starved apps one at a time (``FSStarvedApps``, a
heap ordered by ``fitsIn`` of their starvation) and, for as many of the app's
containers as its starvation covers (memory ratio, ``getStarvedResourceRequests``),
looks node by node for running containers to preempt *on one node* so the
container fits there, fewest AM containers first (``FSPreemptionThread
.identifyContainersToPreemptForOneContainer`` / ``...OnNode``).  A container
may be taken only if its app stays at or above its own fair share without it
(``FSAppAttempt.canContainerBePreempted``) and its queue allows preemption.

Upstream: apache/hadoop, package ``...resourcemanager.scheduler.fair``, read
in docs/upstream/yarn-preemption.md with the stored commits and line
references.  This module holds the pure rules and the thread's search; the
bookkeeping over time (the update, the clocks, the thread's loop) is
:mod:`hierfair.algorithms.yarn_starvation`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

Vec = Sequence[float]


# -- Resources / DominantResourceCalculator ---------------------------------
def shares(cluster: Vec, v: Vec) -> list[float]:
    """Per resource, ``v / cluster`` (a resource the cluster lacks: 0)."""
    return [x / c if c else 0.0 for x, c in zip(v, cluster)]


def drc_compare(cluster: Vec, a: Vec, b: Vec, single_type: bool = False) -> int:
    """``DominantResourceCalculator.compare``: equal vectors 0; ``single_type``
    compares the dominant shares only, otherwise the shares sorted largest
    first, lexicographically (the two-resource fast path is the same)."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    if a == b:
        return 0
    sa, sb = shares(cluster, a), shares(cluster, b)
    if single_type:
        d = max(sa) - max(sb)
        return int(d > 0) - int(d < 0)
    for x, y in zip(sorted(sa, reverse=True), sorted(sb, reverse=True)):
        if x != y:
            return 1 if x > y else -1
    return 0


def usage_below_share(cluster: Vec, usage: Vec, share: Vec) -> bool:
    """``FSAppAttempt.isUsageBelowShare`` under DRF: the usage's dominant share
    strictly below the share's (``compare(..., singleType=true) < 0``)."""
    return drc_compare(cluster, usage, share, single_type=True) < 0


def fits_in(a: Vec, b: Vec) -> bool:
    """``Resources.fitsIn``: every component of a at most b's."""
    return all(x <= y + 1e-9 for x, y in zip(a, b))


def minus_nonneg(a: Vec, b: Vec) -> list[float]:
    """``Resources.subtractFromNonNegative``."""
    return [max(x - y, 0.0) for x, y in zip(a, b)]


def is_none(a: Vec) -> bool:
    """``Resources.isNone``: all zero."""
    return all(x == 0 for x in a)


# -- starvation ----------------------------------------------------------------
def fair_demand(fair_share: Vec, demand: Vec, threshold: float) -> list[float]:
    """``componentwiseMin(fairShare * threshold, demand)`` (``Resources.multiply``
    truncates to long)."""
    return [min(float(math.floor(f * threshold)), d) for f, d in zip(fair_share, demand)]


def fair_share_starved(cluster: Vec, usage: Vec, fair_share: Vec, demand: Vec,
                       threshold: float) -> tuple[bool, list[float]]:
    """``FSAppAttempt.fairShareStarvation`` without its clock: whether the app
    is below its fair demand, and by how much (``fairDemand - usage``, >= 0)."""
    target = fair_demand(fair_share, demand, threshold)
    return usage_below_share(cluster, usage, target), minus_nonneg(target, usage)


def min_share_starvation(usage: Vec, min_share: Vec, demand: Vec) -> list[float]:
    """``FSLeafQueue.minShareStarvation`` without its clock:
    ``componentwiseMin(minShare, demand) - usage``, >= 0."""
    return minus_nonneg([min(m, d) for m, d in zip(min_share, demand)], usage)


def distribute_min_share(cluster: Vec, apps: Sequence[tuple[Vec, Vec]],
                         starvation: Vec) -> list[list[float] | None]:
    """``FSLeafQueue.updateStarvedAppsMinshare``: ``apps`` are (pending demand,
    fair-share starvation) in the leaf's order; returns each app's min-share
    starvation, None for an app it resets.  As coded, an app whose share
    exceeds what is left gets ``its share - what is left`` (not what is left)."""
    pending = list(starvation)
    out: list[list[float] | None] = []
    for pending_demand, fs in apps:
        if is_none(pending):
            out.append(None)
            continue
        mine = minus_nonneg(pending_demand, fs)
        if drc_compare(cluster, mine, pending) > 0:
            mine = minus_nonneg(mine, pending)
            pending = [0.0] * len(pending)
        else:
            pending = minus_nonneg(pending, mine)
        out.append(mine)
    return out


def starved_containers(starvation: Vec, capability: Vec, pending_tasks: int) -> int:
    """``FSAppAttempt.getStarvedResourceRequests`` for one request: how many of
    the app's pending containers its starvation covers, ``floor`` of the
    *memory* ratio (``scheduler.getResourceCalculator()`` is the
    DefaultResourceCalculator; float division), at most the pending count."""
    if is_none(starvation) or pending_tasks <= 0:
        return 0
    mem, cap = float(np.float32(starvation[0])), float(np.float32(capability[0]))
    if cap == 0:
        return pending_tasks if mem > 0 else 0  # Java: floor(+Inf) -> MAX; NaN -> 0
    return min(int(math.floor(float(np.float32(mem) / np.float32(cap)))), pending_tasks)


def can_container_be_preempted(cluster: Vec, usage: Vec, to_be_preempted: Vec,
                               container: Vec, considering: Vec, fair_share: Vec) -> bool:
    """``FSAppAttempt.canContainerBePreempted`` (its queue allows preemption
    and the container is not claimed already: checked by the caller): the
    app's usage without the containers already to be preempted, this one and
    the ones being considered with it, is not below its fair share."""
    after = [u - t - c - k for u, t, c, k in zip(usage, to_be_preempted, container, considering)]
    return not usage_below_share(cluster, after, fair_share)


# -- FSStarvedApps: a java.util.PriorityQueue with StarvationComparator ------
class StarvedApps:
    """``FSStarvedApps``: a binary heap (PriorityBlockingQueue's sift-up and
    sift-down) whose comparator says app1 < app2 when app1's starvation fits
    in app2's, else app1 > app2 (never equal): the least starved first."""

    def __init__(self, starvation: Callable[[int], Vec]) -> None:
        self._heap: list[int] = []
        self._starvation = starvation

    def _cmp(self, a: int, b: int) -> int:
        return -1 if fits_in(self._starvation(a), self._starvation(b)) else 1

    def add(self, app: int) -> None:
        """``addStarvedApp``: once."""
        if app in self._heap:
            return
        heap, k = self._heap, len(self._heap)
        heap.append(app)
        while k > 0:  # siftUpUsingComparator
            parent = (k - 1) >> 1
            if self._cmp(app, heap[parent]) >= 0:
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = app

    def take(self) -> int | None:
        if not self._heap:
            return None
        heap = self._heap
        first, last = heap[0], heap.pop()
        n = len(heap)
        if n:
            k, half = 0, n >> 1
            while k < half:  # siftDownUsingComparator
                child = 2 * k + 1
                if child + 1 < n and self._cmp(heap[child], heap[child + 1]) > 0:
                    child += 1
                if self._cmp(last, heap[child]) <= 0:
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return first


# -- FSPreemptionThread's search ---------------------------------------------
class Candidate(NamedTuple):
    """A running container on a node: its task, app (job), resources, AM flag."""

    task: int
    job: int
    demand: np.ndarray
    am: bool


#: (container, resources of its app already in this node's set) -> may it go?
CanPreempt = Callable[[Candidate, np.ndarray], bool]


def containers_on_node(request: np.ndarray, potential: np.ndarray,
                       candidates: Sequence[Candidate], can_preempt: CanPreempt,
                       max_am: int) -> tuple[list[Candidate], int] | None:
    """``identifyContainersToPreemptOnNode``: walk the node's containers (non-AM
    first), keep those that may be preempted until the request fits in the
    node's potential (free, less what is already promised); None if it never
    fits or the set would hold ``max_am`` AM containers or more."""
    chosen: list[Candidate] = []
    by_app: dict[int, np.ndarray] = {}
    potential = potential.copy()
    n_am = 0
    for c in candidates:
        considering = by_app.get(c.job, np.zeros_like(c.demand))
        if can_preempt(c, considering):
            if c.am:
                n_am += 1
                if n_am >= max_am:
                    return None
            chosen.append(c)
            by_app[c.job] = considering + c.demand
            potential = potential + c.demand
        if fits_in(request, potential):
            return chosen, n_am
    return None


def containers_for_one(request: np.ndarray, nodes: Sequence[tuple[np.ndarray, Sequence[Candidate]]],
                       can_preempt: CanPreempt) -> list[Candidate] | None:
    """``identifyContainersToPreemptForOneContainer``: over the nodes in order,
    the set with the fewest AM containers (a later node must do strictly
    better); the first set with none ends the search."""
    best: list[Candidate] | None = None
    max_am = 2**31 - 1
    for potential, candidates in nodes:
        found = containers_on_node(request, potential, candidates, can_preempt, max_am)
        if found is not None:
            best, max_am = found
            if max_am == 0:
                break
    return best


def node_order(running: Sequence[Candidate]) -> list[Candidate]:
    """``FSSchedulerNode.getRunningContainersWithAMsAtTheEnd``: iterating the
    node's containers (here: in launch order), each non-AM one is put first
    (``addFirst``: the latest launched first), each AM one last."""
    non_am = [c for c in running if not c.am]
    return non_am[::-1] + [c for c in running if c.am]
