"""Kueue's quota tree and its dominant resource share (DRS), as coded.

Source: kubernetes-sigs/kueue at ff69552e (2026-08-23),
``pkg/cache/scheduler/resource_node.go`` (``localQuota``,
``accumulateFromChild``, ``available``, ``potentialAvailable``) and
``pkg/cache/scheduler/fair_sharing.go`` (``dominantResourceShare``,
``calculateLendable``, ``PreciseWeightedShare``, ``CompareDRS``); the rules
as read there are in docs/algorithms.md ("kueue").

The hierarchy's root is Kueue's root cohort, its internal nodes are cohorts
and its leaves ClusterQueues (CQs); one flavor, so a flavor-resource is a
resource.  Per node and resource:

* ``localQuota`` = max(0, SubtreeQuota - lendingLimit) where a lending limit
  is set, else 0: what the node keeps from its cohort;
* ``SubtreeQuota`` of a CQ is its nominal quota; of a cohort, its own nominal
  plus each child's SubtreeQuota minus the child's localQuota;
* a cohort's usage is the sum of its children's usage above their
  localQuota (naive aggregation: nothing is rescaled);
* DRS(n) = max_r (Usage_r(n) - SubtreeQuota_r(n))+ * 1000 /
  potentialAvailable_r(parent(n)), in per-mille, over the resources the
  node borrows; divided by the node's weight (0: +Inf while borrowing).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from hierfair.sim.model import Hierarchy

#: Amounts are sums of floats; a request fits when over by no more than this.
SLACK = 1e-9


class DRS(NamedTuple):
    """``dominantResourceShare``'s result: the per-mille ratio (unweighted),
    the node's weight, whether it borrows, and the resources it borrows."""

    ratio: float
    weight: float
    borrowing: bool
    borrowed: frozenset[int]

    @property
    def weighted(self) -> float:
        """``PreciseWeightedShare``: 0 when not borrowing, +Inf for weight 0."""
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0


def compare_drs(a: DRS, b: DRS, zero_weight_ratio: bool = True) -> int:
    """``CompareDRS``: -1, 0 or 1.  Two zero-weight borrowers compare by their
    unweighted ratio since PR #6925 (``zero_weight_ratio``); before it both
    were MaxInt, equal -- the cause of the preemption cycle of #6774."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        x, y = (a.ratio, b.ratio) if zero_weight_ratio else (0.0, 0.0)
    elif a.zero_weight_borrows:
        return 1
    elif b.zero_weight_borrows:
        return -1
    else:
        x, y = a.weighted, b.weighted
    return (x > y) - (x < y)


class QuotaTree:
    """The static part: quotas, limits, weights, and what each node could
    reach in an empty tree (``potentialAvailable``)."""

    def __init__(self, hierarchy: Hierarchy, resources: tuple[str, ...],
                 capacity: np.ndarray | None = None) -> None:
        h = hierarchy
        self.hierarchy = h
        self.parent = h.parent
        n = h.n_nodes
        self.nominal = h.quota_matrix("nominal", resources, 0.0)
        if capacity is not None:
            # the capacity no quota accounts for is the root cohort's own: a
            # tree without quotas shares the whole cluster by weighted DRS
            self.nominal[0] = np.maximum(0.0, capacity - self.nominal[1:].sum(axis=0))
        self.borrowing_limit = h.quota_matrix("borrowing_limit", resources, math.inf)
        lending_limit = h.quota_matrix("lending_limit", resources, math.inf)
        self.weights = h.weights
        sq = self.nominal.copy()
        lq = np.zeros_like(sq)
        for i in range(n - 1, 0, -1):  # reverse pre-order: a node's subtree is final
            lq[i] = np.where(np.isfinite(lending_limit[i]),
                             np.maximum(0.0, sq[i] - lending_limit[i]), 0.0)
            sq[self.parent[i]] += sq[i] - lq[i]
        self.subtree_quota, self.local_quota = sq, lq
        pa = np.zeros_like(sq)
        pa[0] = sq[0]
        for i in range(1, n):  # pre-order: the parent's is final
            pa[i] = np.minimum(lq[i] + pa[self.parent[i]], sq[i] + self.borrowing_limit[i])
        self.potential = pa
        #: root, ..., node for every node
        self.paths = [h.path_from_root(i) for i in range(n)]
        # non-root nodes by depth, deepest first, each level in descending
        # index order: :meth:`usage` adds a level at a time in exactly the
        # order a reverse pre-order walk would (the same floating-point sums)
        depth = np.array([len(p) - 1 for p in self.paths])
        self._levels = [(lvl := np.flatnonzero(depth == d)[::-1], self.parent[lvl],
                         self.local_quota[lvl]) for d in range(int(depth.max()), 0, -1)]

    # -- what depends on usage (``u``: usage per node, CQ rows set, cohorts 0) --
    def usage(self, cq_usage: np.ndarray) -> np.ndarray:
        """Every node's usage from the CQs': a cohort's is its children's above
        their localQuota."""
        u = cq_usage.copy()
        for nodes, parents, lq in self._levels:  # unbuffered: in the order given
            np.add.at(u, parents, np.maximum(0.0, u[nodes] - lq))
        return u

    def available(self, node: int, u: np.ndarray) -> np.ndarray:
        """``available``: what the node may still take, through its borrowing
        limits and its ancestors' (clamped at 0, as ``ClusterQueueSnapshot.Available``)."""
        sq, lq, bl = self.subtree_quota, self.local_quota, self.borrowing_limit
        a = sq[0] - u[0]
        for i in self.paths[node][1:]:
            parent_room = a
            limited = np.isfinite(bl[i])
            if limited.any():
                used = np.maximum(0.0, u[i] - lq[i])
                parent_room = np.where(limited, np.minimum(sq[i] - lq[i] - used + bl[i], a), a)
            a = np.maximum(0.0, lq[i] - u[i]) + parent_room
        return np.maximum(a, 0.0)

    def drs(self, node: int, u: np.ndarray) -> DRS:
        """``dominantResourceShare`` of ``node`` at usage ``u`` (all nodes')."""
        w = float(self.weights[node]) if node else 1.0
        if node == 0:
            return DRS(0.0, w, False, frozenset())
        over = u[node] - self.subtree_quota[node]
        borrowed = np.flatnonzero(over > SLACK)
        if not borrowed.size:
            return DRS(0.0, w, False, frozenset())
        lendable = self.potential[self.parent[node]]
        ratios = [float(over[r]) * 1000.0 / float(lendable[r]) for r in borrowed
                  if lendable[r] > 0]
        return DRS(max(ratios, default=0.0), w, True, frozenset(borrowed.tolist()))

    def borrowing_with(self, node: int, u: np.ndarray, request: np.ndarray) -> bool:
        """``BorrowingWith``: the node would be over its quota with ``request``
        (a CQ over its nominal, a cohort over its subtree quota)."""
        quota = self.subtree_quota[node]
        need = request > 0
        return bool(np.any(quota[need] < u[node][need] + request[need] - SLACK))

    def almost_lcas(self, a: int, b: int) -> tuple[int, int]:
        """The children of the lowest common ancestor on the paths to ``a``
        and ``b`` (``getAlmostLCA``)."""
        pa, pb = self.paths[a], self.paths[b]
        k = 0
        while k + 1 < min(len(pa), len(pb)) and pa[k + 1] == pb[k + 1]:
            k += 1
        return pa[k + 1], pb[k + 1]

    def is_ancestor(self, node: int, of: int) -> bool:
        return node in self.paths[of][:-1]
