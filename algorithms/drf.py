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

from typing import ClassVar

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

    Cost per decision: O(log n) heap operations for n leaves.
    """

    name: ClassVar[str] = "drf"
    description: ClassVar[str] = "weighted DRF over the leaves, hierarchy ignored (DRF Alg. 1)"

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        # plain floats: one key per task start and finish
        self._dominant = dominant_share_of(inverse_totals(state.cluster.total).tolist())
        self._round = RoundMemo(KEY_DECIMALS)
        self._weight = state.hierarchy.weights.tolist()

    def key(self, leaf: int) -> float:
        return self._round[self._dominant(self.state.alloc_row(leaf)) / self._weight[leaf]]
