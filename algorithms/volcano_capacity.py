"""Volcano's ``capacity`` plugin with hierarchy, as far as scenario V5(a) needs.

Upstream: volcano-sh/volcano at ed72c7c8,
``pkg/scheduler/plugins/capacity/capacity.go``: ``buildHierarchicalQueueAttrs``,
``checkHierarchicalQueue`` (deserved, inherited capability,
``realCapability``), ``updateQueueAttrShare``, the hierarchical
``QueueOrderFn``, ``checkQueueAllocatableHierarchically``,
``PreemptiveFn`` and ``ReclaimableFn`` with ``ancestorReclaimLevel``
(PR #5115); the allocate and reclaim actions as in
:mod:`hierfair.algorithms.volcano_shares`.  Reading: docs/upstream/volcano.md §3.

Quotas: ``quota.guaranteed`` is Volcano's ``deserved``, ``quota.max`` its
``capability`` (a resource left out is inherited from the parent; the root's
is unlimited).  Volcano's ``guarantee`` has no field here: it is 0, so
``realCapability`` is the parent's capped by the node's capability.  The root's
deserved is the sum of its children's.  Weights are not read.

* share = ``max_r allocated_r / deserved_r`` over the resources in deserved,
  1 with none (best effort); ancestors' shares are frozen at session open
  (their ``allocated`` is live), a leaf's is live.
* queue order: higher node priority, then the shares of the two queues'
  ancestors at the first level where their paths part (smaller first, a
  non-empty deserved first on a tie), then the queue name (pre-order).
* allocatable: ``allocated + task <= realCapability`` on the task's
  resources, for the leaf and every ancestor.
* reclaim (``reclaim: true``): a starving job's task in a preemptive queue
  (``allocated + task <= deserved`` on some requested resource at the leaf,
  or on an ancestor up to ``ancestor_reclaim_level`` levels) evicts, one at a
  time, other queues' tasks ``ReclaimableFn`` accepts, running copies of the
  victims' allocations decreasing as it accepts them.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

from hierfair.algorithms.volcano_shares import TOL, VolcanoSession
from hierfair.fields import Strict
from hierfair.sim.policy import PolicyView
from hierfair.sim.treewalk import round_score


class VolcanoCapacityParams(Strict):
    #: Run the reclaim action before each allocate session.
    reclaim: bool = False
    #: ``ancestorReclaimLevel``: how many levels above a leaf reclaim may
    #: look (0: the leaf only).
    ancestor_reclaim_level: int = Field(0, ge=0)


class VolcanoCapacity(VolcanoSession[VolcanoCapacityParams]):
    """Volcano's hierarchical capacity plugin (capacity.go at ed72c7c8)."""

    name: ClassVar[str] = "volcano-capacity"
    description: ClassVar[str] = ("Volcano capacity plugin with hierarchy at ed72c7c8: share = "
                                  "max allocated/deserved, queue order at the first divergent "
                                  "level, realCapability, reclaim with ancestorReclaimLevel")
    Params: ClassVar[type[BaseModel]] = VolcanoCapacityParams
    params: VolcanoCapacityParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        res = state.cluster.resources
        # a tree without quotas: the deserved shares its weights promise
        h = state.hierarchy.with_implied_quotas(res, state.cluster.total)
        n = h.n_nodes
        d = h.quota_matrix("guaranteed", res, 0.0)
        self.has_d = np.array([bool(q.guaranteed) for q in h.quotas]) & (d > TOL).any(axis=1)
        cap = np.full((n, len(res)), np.inf)
        for v in range(n):  # pre-order: the parent first
            own = h.quotas[v].max or {}
            base = cap[h.parent[v]] if v else np.full(len(res), np.inf)
            cap[v] = [float(own[r]) if r in own else base[i] for i, r in enumerate(res)]
        real = cap.copy()
        for v in range(1, n):
            real[v] = np.minimum(real[h.parent[v]], cap[v])  # guarantee 0
        d[0] = sum((d[c] for c in h.children[0]), np.zeros(len(res)))
        self.has_d[0] = bool((d[0] > TOL).any())
        self.deserved, self.real = d, real
        self.frozen = np.zeros(n)

    # -- shares ----------------------------------------------------------------
    def share(self, v: int, alloc: np.ndarray) -> float:
        """``updateQueueAttrShare``."""
        if not self.has_d[v]:
            return 1.0
        d = self.deserved[v]
        return max(alloc[r] / d[r] for r in range(len(d)) if d[r] > TOL)

    def node_alloc(self) -> np.ndarray:
        """Allocated per queue, from the live jobs (AllocatedStatus tasks)."""
        return self.state.alloc

    def open_shares(self) -> None:
        alloc = self.node_alloc()
        self.frozen = np.array([self.share(v, alloc[v]) for v in range(len(self.frozen))])

    # -- orders ------------------------------------------------------------------
    def _node_share(self, v: int) -> float:
        return self.share(v, self.node_alloc()[v]) if self.state.hierarchy.is_leaf(v) \
            else float(self.frozen[v])

    def queue_cmp(self, lq: int, rq: int) -> int:
        h = self.state.hierarchy
        if h.priorities[lq] != h.priorities[rq]:
            return -1 if h.priorities[lq] > h.priorities[rq] else 1
        lp, rp = self.paths[lq], self.paths[rq]
        k = 0
        while k < min(len(lp), len(rp)) and lp[k] == rp[k]:
            k += 1
        ln = lp[k] if k < len(lp) else lq
        rn = rp[k] if k < len(rp) else rq
        a, b = round_score(self._node_share(ln)), round_score(self._node_share(rn))
        if a != b:
            return -1 if a < b else 1
        if self.has_d[ln] != self.has_d[rn]:
            return -1 if self.has_d[ln] else 1
        return -1 if lq < rq else (1 if lq > rq else 0)

    def queue_less(self, lq: int, rq: int) -> bool:
        return self.queue_cmp(lq, rq) < 0

    def job_key(self, job: int) -> Any:
        j = self.live[job]
        return (-j.priority, j.submit, job)

    def allocatable(self, leaf: int, demand: np.ndarray) -> bool:
        alloc = self.node_alloc()
        asked = demand > 0
        for v in [leaf, *self.state.hierarchy.ancestors(leaf)]:
            if np.any(alloc[v][asked] + demand[asked] > self.real[v][asked] + TOL):
                return False
        return True

    def select(self) -> int | None:
        if self._session is None and not self.pipelined:
            self.open_shares()
        return super().select()

    # -- reclaim -------------------------------------------------------------------
    def _within(self, v: int, used: np.ndarray, asked: np.ndarray) -> bool:
        """``used <= deserved`` on some requested resource of a deserved
        (epsilon 0.1 in Volcano's units: here TOL)."""
        d = self.deserved[v]
        dims = asked & ~((used < TOL) & (d < TOL))
        return bool(np.any(used[dims] <= d[dims] + TOL))

    def preemptive(self, leaf: int, need: np.ndarray, alloc: np.ndarray) -> bool:
        """``PreemptiveFn``."""
        asked = need > 0
        future = alloc[leaf] + need
        if np.any(future[asked] > self.real[leaf][asked] + TOL):
            return False
        if self.has_d[leaf] and self._within(leaf, future, asked):
            return True
        for anc in self.state.hierarchy.ancestors(leaf)[:self.params.ancestor_reclaim_level]:
            if anc == 0:
                break
            d = self.deserved[anc]
            dims = d > TOL
            if self.has_d[anc] and np.all(alloc[anc][dims] + need[dims] <= d[dims] + TOL):
                return True
        return False

    def _over(self, v: int, used: np.ndarray, req: np.ndarray) -> bool:
        """Immediate victim (``req`` meets no resource of ``v``'s deserved) or
        ``used > deserved`` on a relevant resource."""
        d = self.deserved[v]
        dims = d > TOL
        if not np.any(req[dims] > 0):
            return True
        return bool(np.any(used[dims] > d[dims] + TOL))

    def reclaimable(self, leaf: int, need: np.ndarray, tasks: list[int],
                    alloc: np.ndarray) -> list[int]:
        """``ReclaimableFn`` over candidates in victim order (``alloc`` is the
        running copy, decreased as victims are accepted)."""
        h = self.state.hierarchy
        level = self.params.ancestor_reclaim_level
        mine = h.ancestors(leaf)
        out = []
        for task in tasks:
            info = self.state.task_info(task)
            req, q = info.demand, info.leaf
            if not np.any((req > 0) & (need > 0)):
                continue
            theirs = h.ancestors(q)
            shared = any(a != 0 and a in mine for a in theirs[:level])
            if level and shared and not np.any(need[self.deserved[leaf] > TOL] > 0):
                continue
            if not self._over(q, alloc[q], req):
                continue
            ok = True
            for k in range(min(level, len(theirs))):
                anc = theirs[k]
                if anc == 0 or (k < len(mine) and mine[k] == anc):
                    continue
                if not self._over(anc, alloc[anc], req):
                    ok = False
                    break
            if not ok:
                continue
            for v in [q, *theirs]:
                alloc[v] = alloc[v] - req
            out.append(task)
        return out

    def reclaim(self) -> list[tuple[int, int]]:
        self.open_shares()
        if not self.params.reclaim:
            return []
        state = self.state
        h = state.hierarchy
        alloc = self.node_alloc().copy()
        gone: set[int] = set()
        free: dict[int, np.ndarray] = {}
        out: list[tuple[int, int]] = []
        queues = [q for q in self.by_leaf if any(self.starving(j) for j in self.by_leaf[q])]
        queues.sort(key=functools.cmp_to_key(self.queue_cmp))

        def victim_order(a: int, b: int) -> int:
            ia, ib = state.task_info(a), state.task_info(b)
            if ia.leaf != ib.leaf:  # VictimQueueOrderFn: the closer kin first
                da = len(set(self.paths[ia.leaf]) & set(self.paths[self._for]))
                db = len(set(self.paths[ib.leaf]) & set(self.paths[self._for]))
                if da != db:
                    return -1 if da > db else 1
                return -self.queue_cmp(ia.leaf, ib.leaf)
            ka, kb = self.job_key(ia.job), self.job_key(ib.job)
            if ka != kb:  # reversed job order
                return -1 if ka > kb else 1
            return -1 if ia.start > ib.start or (ia.start == ib.start and a > b) else 1

        for q in queues:
            self._for = q
            for job in sorted((j for j in self.by_leaf[q] if self.starving(j)), key=self.job_key):
                need = self.live[job].demand
                for _ in range(self.starving(job)):
                    if (state.fits(need) and not out) or not self.preemptive(q, need, alloc):
                        break
                    cands = sorted((t for t in state.running_tasks() if t not in gone
                                    and state.task_info(t).leaf != q),
                                   key=functools.cmp_to_key(victim_order))
                    by_server: dict[int, list[int]] = {}
                    for t in self.reclaimable(q, need, cands, alloc.copy()):
                        by_server.setdefault(state.task_info(t).server, []).append(t)
                    found = self.evict_on_one_server(need, free, by_server)
                    if found is None:
                        break
                    for t in found[1]:
                        info = state.task_info(t)
                        for v in [info.leaf, *h.ancestors(info.leaf)]:
                            alloc[v] = alloc[v] - info.demand
                        gone.add(t)
                        out.append((t, q))
                    for v in [q, *h.ancestors(q)]:
                        alloc[v] = alloc[v] + need
                    self.pipelined.append(job)
        return out
