"""Dominant Resource Fairness (DRF) and its weighted form.

A user's *dominant share* is the largest fraction of any resource it has been
allocated: ``s_i = max_j u_ij / r_j`` (DRF paper, §4 and Algorithm 1).  DRF is
max-min fairness on dominant shares: it repeatedly gives the next task to the
user with the lowest dominant share.  Weighted DRF (DRF §4.3) divides by the
user's weight, ``s_i = max_j u_ij / (w_i r_j)``, so a user of weight 2 settles
at twice the dominant share of a user of weight 1.

Here the "users" are the leaves of the hierarchy and the hierarchy above them
is ignored (flat DRF); a leaf's weight is the weight written on the leaf itself.
See docs/algorithms.md for what ``backfill`` changes relative to Algorithm 1.
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar

import numpy as np

from hierfair.sim.policy import BackfillParams, LeafPriorityPolicy, PolicyView
from hierfair.sim.shares import RoundMemo, dominant_share_of, inverse_totals

#: Shares are rounded to this many decimals in priority keys, so that two
#: equal shares computed along different float paths tie exactly and the
#: leaf order, not rounding noise, decides.
KEY_DECIMALS = 12


def dominant_share(alloc: np.ndarray, total: np.ndarray) -> float:
    """``max_j alloc_j / total_j`` over resources the cluster has."""
    has = total > 0
    return float(np.max(alloc[has] / total[has])) if has.any() else 0.0


def dominant_shares(alloc: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Row-wise dominant shares of an ``(n, m)`` allocation matrix."""
    has = total > 0
    if not has.any():
        return np.zeros(alloc.shape[0])
    return (alloc[:, has] / total[has]).max(axis=1)


class WeightedDRF(LeafPriorityPolicy[BackfillParams]):
    """Flat weighted DRF over the leaves (DRF paper, Algorithm 1 and §4.3).

    Each decision serves the demanding leaf with the lowest weighted dominant
    share ``s_i / w_i`` whose next task fits (``backfill: true``, the default),
    or stops when the lowest one's task does not fit (``backfill: false``,
    Algorithm 1 to the letter: "else return -- the cluster is full").

    Cost per decision: O(log n) heap operations for n leaves, plus, after a
    release, one fit test per distinct parked demand.

    With backfill, leaves whose task does not fit are parked by their demand
    (a run has few distinct ones: SWIM two, Table 1's bins four), and after a
    release only the demands that now fit go back into the heap.
    :class:`LeafPriorityPolicy` pushes every parked leaf back after each
    release, so in a contended cluster (a release per task) every decision
    re-tested every demanding leaf (~150 us at 2^14 leaves).  The leaf chosen
    is the same: the least ``(key, leaf)`` whose demand fits.
    """

    name: ClassVar[str] = "drf"
    description: ClassVar[str] = "weighted DRF over the leaves, hierarchy ignored (DRF Alg. 1)"

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        # plain floats: one key per task start and finish
        self._dominant = dominant_share_of(inverse_totals(state.cluster.total).tolist())
        self._round = RoundMemo(KEY_DECIMALS)
        self._weight = state.hierarchy.weights.tolist()
        # demand bytes -> [demand, parked entries]: the demands that fit on no
        # server since the last release (None: leaves with no next demand)
        self._parked_by: dict[bytes | None, list[Any]] = {}

    def key(self, leaf: int) -> float:
        return self._round[self._dominant(self.state.alloc_row(leaf)) / self._weight[leaf]]

    def select(self) -> int | None:
        if not self._backfill:
            return super().select()
        state = self.state
        heap, parked, fits = self._heap, self._parked_by, state.fits
        if parked and state.release_epoch != self._parked_epoch:
            # room was released: back into the heap go the leaves whose demand
            # fits now (the others would be popped and parked again)
            for key in list(parked):
                demand, entries = parked[key]
                if key is None or fits(demand):
                    for entry in entries:
                        heapq.heappush(heap, entry)
                    del parked[key]
        self._parked_epoch = state.release_epoch
        version = self._version
        while heap:
            _, leaf, v = heap[0]
            if v != version[leaf]:
                heapq.heappop(heap)
                continue
            demand = state.next_demand(leaf)
            # by bytes, as the index caches fits (a constrained demand's carry its mask)
            key = None if demand is None else demand.tobytes()
            group = parked.get(key)
            if group is None:
                if demand is not None and fits(demand):
                    return leaf
                group = parked[key] = [demand, []]
            entries = group[1]
            entries.append(heapq.heappop(heap))
            if len(entries) > self._heap_limit:  # stale entries out: O(leaves)
                group[1] = [e for e in entries if e[2] == version[e[1]]]
        return None

