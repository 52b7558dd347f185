"""Volcano's ``drf`` plugin with ``enableHierarchy: true``, as its code behaves.

Upstream: volcano-sh/volcano at ed72c7c8, ``pkg/scheduler/plugins/drf/drf.go``:
``buildHierarchy`` (weights clamped to >= 1), ``updateHierarchicalShare``
(rescaling), ``resourceSaturated``, ``calculateShare``, ``compareQueues``,
``jobOrderFn`` and ``reclaimFn``; the ``allocate`` action
(``pkg/scheduler/actions/allocate/allocate.go: allocateResources``) and the
``reclaim`` action (``pkg/scheduler/actions/reclaim/reclaim.go:
reclaimForTask``).  A reading in docs/upstream/volcano.md (sections 1-2), the
differences from H-DRF in docs/algorithms.md ("volcano").

The tree: Volcano's leaves are *jobs*.  Every hierfair leaf is a Volcano
queue (its path the ``volcano.sh/hierarchy`` annotation) and every live job
under it a leaf of the drf tree (:mod:`hierfair.algorithms.volcano_shares`).

* A job is *saturated* when, over the resources it holds, it holds its whole
  request (all its tasks, in any state) or asks for a resource no longer
  free anywhere; a job holding nothing never is.
* An internal node rescales its unsaturated children with a nonzero share to
  the least of their (unweighted) shares, adds its saturated children as
  they are, and takes the dominant share of that sum over *every* resource;
  it is saturated when all its children are.
* Queues are ordered by ``compareQueues``: from the root down, a saturated
  node last, else ``share / weight`` (weights only here), descending only on
  a tie (equal to 12 decimals); then (``proportion: true``, as TestHDRF's
  tiers) the proportion plugin's ``alloc / deserved``; then the queue name.
* Jobs in a queue: flat DRF share, then priority (higher first), then
  submission, then id.

``heap: true`` (the default) pops queues from Go's ``container/heap`` with
its stale positions; ``heap: false`` takes a fresh argmin each pop.
``reclaim: true`` runs the reclaim action before each allocate session: a
starving job's task evicts, one at a time, the running tasks of other queues
that ``reclaimFn`` returns (each judged alone on a cloned tree with the
reclaimer's task added and that task removed, victim iff ``compareQueues <
0``), the most highly ordered queue's first.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from hierfair.algorithms.volcano_shares import TOL, VolcanoSession, share_of
from hierfair.fields import Strict
from hierfair.sim.policy import PolicyView
from hierfair.sim.treewalk import round_score


class VolcanoParams(Strict):
    #: Run the reclaim action (with the priority plugin's JobStarving) before
    #: each allocate session.
    reclaim: bool = False
    #: Pop queues from Go's container/heap (stale positions); False: argmin.
    heap: bool = True
    #: Break drf ties by the proportion plugin's queue order, as TestHDRF.
    proportion: bool = False


class Tree:
    """The drf tree's shares: per hierfair node (``share``, ``saturated``,
    whether it exists: some live job below it) and per job."""

    def __init__(self, share: np.ndarray, sat: np.ndarray, exists: np.ndarray,
                 job_share: dict[int, float]) -> None:
        self.share, self.sat, self.exists, self.job_share = share, sat, exists, job_share


def drf_tree(policy: VolcanoDRF, alloc: dict[int, np.ndarray]) -> Tree:
    """``UpdateHierarchicalShare`` over the whole tree for the job
    allocations ``alloc`` (``totalAllocated`` is their sum)."""
    h = policy.state.hierarchy
    total = policy.total
    used = sum(alloc.values(), np.zeros_like(total))
    demanding = used < total - TOL
    n = h.n_nodes
    share = np.zeros(n)
    sat = np.zeros(n, dtype=bool)
    exists = np.zeros(n, dtype=bool)
    vec = np.zeros((n, len(total)))
    job_share: dict[int, float] = {}
    for v in range(n - 1, -1, -1):  # children before parents (pre-order)
        kids: list[tuple[float, bool, np.ndarray]] = []
        if h.is_leaf(v):
            for j in policy.by_leaf.get(v, []):
                a = alloc[j]
                req = policy.live[j].n_tasks * policy.live[j].demand
                held = a > TOL
                s = bool(np.any(held & (req > 0) & (a >= req - TOL))
                         or np.any(held & ~demanding & (req > 0)))
                job_share[j] = share_of(a, total)
                kids.append((job_share[j], s, a))
        else:
            kids = [(share[c], bool(sat[c]), vec[c]) for c in h.children[v] if exists[c]]
        if not kids:
            continue
        exists[v] = True
        mdr = 1.0
        for s_c, sat_c, _ in kids:
            if s_c != 0 and not sat_c:
                mdr = min(mdr, s_c)
        acc = np.zeros(len(total))
        for s_c, sat_c, a_c in kids:
            if s_c != 0:
                acc = acc + (a_c if sat_c else a_c * (mdr / s_c))
        vec[v] = acc
        share[v] = share_of(acc, total)
        sat[v] = all(k[1] for k in kids)
    return Tree(share, sat, exists, job_share)


class VolcanoDRF(VolcanoSession[VolcanoParams]):
    """Volcano's hierarchical drf (drf.go at ed72c7c8) with the allocate
    action and, optionally, reclaim."""

    name: ClassVar[str] = "volcano"
    description: ClassVar[str] = ("Volcano drf plugin with enableHierarchy as coded at ed72c7c8: "
                                  "jobs are leaves, unweighted rescaling, weights only in "
                                  "compareQueues, Go-heap allocate, optional reclaimFn")
    Params: ClassVar[type[BaseModel]] = VolcanoParams
    params: VolcanoParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self.vweights = np.maximum(state.hierarchy.weights, 1.0)  # buildHierarchy: w < 1 -> 1
        self.tree = Tree(np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool), {})
        self._prop: dict[int, float] = {}

    def use_heap(self) -> bool:
        return self.params.heap

    def allocs(self) -> dict[int, np.ndarray]:
        return {j: self.job_alloc(j) for j in self.live}

    def refresh(self) -> None:
        alloc = self.allocs()
        self.tree = drf_tree(self, alloc)
        if self.params.proportion:
            self._prop = self.proportion_shares(alloc)

    # -- orders --------------------------------------------------------------
    def compare_queues(self, tree: Tree, lq: int, rq: int) -> float:
        """``compareQueues``: < 0 when ``lq`` goes first."""
        lp, rp = self.paths[lq], self.paths[rq]
        w = self.vweights
        for i in range(min(len(lp), len(rp))):
            ln, rn = lp[i], rp[i]
            if not tree.sat[ln] and tree.sat[rn]:
                return -1.0
            if tree.sat[ln] and not tree.sat[rn]:
                return 1.0
            a = round_score(tree.share[ln] / w[ln])
            b = round_score(tree.share[rn] / w[rn])
            if a != b:
                return a - b
        return 0.0

    def queue_cmp(self, lq: int, rq: int) -> int:
        """The session's QueueOrderFn as -1/0/1: drf, proportion, name."""
        c = self.compare_queues(self.tree, lq, rq)
        if c == 0 and self.params.proportion:
            c = round_score(self._prop.get(lq, 0.0)) - round_score(self._prop.get(rq, 0.0))
        if c == 0:
            c = lq - rq
        return -1 if c < 0 else (1 if c > 0 else 0)

    def queue_less(self, lq: int, rq: int) -> bool:
        return self.queue_cmp(lq, rq) < 0

    def job_key(self, job: int) -> Any:
        j = self.live[job]
        return (round_score(self.tree.job_share.get(job, 0.0)), -j.priority, j.submit, job)

    def proportion_shares(self, alloc: dict[int, np.ndarray]) -> dict[int, float]:
        """The proportion plugin's queue share, ``max_r alloc_r / deserved_r``,
        with ``deserved`` from its loop (queue weight 1, no capability or
        guarantee): every unmet queue gets an equal part of what remains,
        capped by its request per resource, until nothing changes."""
        queues = [q for q in self.by_leaf if self.by_leaf[q]]
        request = {q: sum((self.live[j].n_tasks * self.live[j].demand for j in self.by_leaf[q]),
                          np.zeros_like(self.total)) for q in queues}
        deserved = {q: np.zeros_like(self.total) for q in queues}
        remaining = self.total.copy()
        met: set[int] = set()
        for _ in range(100):
            unmet = [q for q in queues if q not in met]
            if not unmet or np.all(remaining <= TOL):
                break
            before = remaining.copy()
            part = remaining / len(unmet)
            for q in unmet:
                old = deserved[q].copy()
                deserved[q] = np.minimum(deserved[q] + part, request[q])
                remaining = remaining - (deserved[q] - old)
                if np.all(request[q] <= deserved[q] + TOL):
                    met.add(q)
            if np.allclose(before, remaining):
                break
        out = {}
        for q in queues:
            a = sum((alloc[j] for j in self.by_leaf[q]), np.zeros_like(self.total))
            d = deserved[q]
            out[q] = max([a[r] / d[r] for r in range(len(d)) if d[r] > TOL] or [0.0])
        return out

    # -- the reclaim action ----------------------------------------------------
    def reclaim(self) -> list[tuple[int, int]]:
        if not self.params.reclaim:
            return []
        state = self.state
        self.refresh()
        self.dirty = False
        alloc = self.allocs()
        gone: set[int] = set()
        free: dict[int, np.ndarray] = {}
        out: list[tuple[int, int]] = []
        queues = [q for q in self.by_leaf if any(self.starving(j) for j in self.by_leaf[q])]
        queues.sort(key=functools.cmp_to_key(self.queue_cmp))
        for q in queues:
            for job in sorted((j for j in self.by_leaf[q] if self.starving(j)), key=self.job_key):
                need = self.live[job].demand
                for _ in range(self.starving(job)):
                    if state.fits(need) and not out:
                        break  # room is free: allocate places it
                    chosen = self._reclaim_task(q, job, need, alloc, gone, free)
                    if chosen is None:
                        break
                    for task in chosen:
                        alloc[state.task_info(task).job] = \
                            alloc[state.task_info(task).job] - state.task_info(task).demand
                        gone.add(task)
                        out.append((task, q))
                    alloc[job] = alloc[job] + need  # Pipeline fires AllocateFunc
                    self.pipelined.append(job)
                    self.tree = drf_tree(self, alloc)
        self.dirty = True
        return out

    def _reclaim_task(self, q: int, job: int, need: np.ndarray, alloc: dict[int, np.ndarray],
                      gone: set[int], free: dict[int, np.ndarray]) -> list[int] | None:
        """``reclaimForTask`` with ``reclaimFn`` as the only vote."""
        state = self.state
        base = dict(alloc)
        base[job] = base[job] + need
        by_server: dict[int, list[int]] = {}
        for task in state.running_tasks():
            info = state.task_info(task)
            if task in gone or info.leaf == q \
                    or info.job not in self.live:
                continue
            trial = dict(base)
            trial[info.job] = trial[info.job] - info.demand
            if self.compare_queues(drf_tree(self, trial), q, info.leaf) < 0:
                by_server.setdefault(info.server, []).append(task)
        if not by_server:
            return None

        def victim_order(a: int, b: int) -> int:
            ia, ib = state.task_info(a), state.task_info(b)
            if ia.leaf != ib.leaf:  # VictimQueueOrderFn = !QueueOrderFn: highest first
                return -self.queue_cmp(ia.leaf, ib.leaf)
            ka, kb = self.job_key(ia.job), self.job_key(ib.job)
            if ka != kb:  # reversed job order
                return -1 if ka > kb else 1
            return -1 if ia.start > ib.start or (ia.start == ib.start and a > b) else 1

        for server in by_server:
            by_server[server].sort(key=functools.cmp_to_key(victim_order))
        found = self.evict_on_one_server(need, free, by_server)
        return None if found is None else found[1]
