"""The root-to-leaf walk shared by the hierarchical schedulers.

Every hierarchical algorithm of the H-DRF paper (Algorithms 1 and 4), its
naive predecessors (§3.3, §5.2) and DFF (Algorithm 3) allocate a task the
same way: start at the root and, at each level, step to the child with the
lowest *score* among the candidates, until a leaf is reached.  They differ only
in

* how a node's score is computed (plain dominant share, rescaled dominant
  share, fairness...), and
* who is a candidate: the *demanding* children whose subtree has a task that
  fits the free resources (Pareto-efficient), or every demanding child
  (``skip_unschedulable=False``: the walk may end at a leaf whose task does
  not fit, and then nothing is scheduled this round -- the Capacity
  Scheduler's behaviour in H-DRF §5.2).

:class:`TreeWalkPolicy` is that one mechanism; subclasses supply
:meth:`~TreeWalkPolicy.scores`.  Scores are recomputed at every decision, as
the papers write the algorithms (the reference implementations; incremental
versions are a separate concern).
"""

from __future__ import annotations

import math
from typing import ClassVar, Generic

import numpy as np

from hierfair.sim.policy import BasePolicy, P, PolicyView
from hierfair.sim.shares import inverse_totals

#: Scores are rounded to this many decimals before comparison, so equal
#: shares reached along different floating-point paths tie exactly and the
#: pre-order position decides (deterministic tie-break).
SCORE_DECIMALS = 12
_SCALE = 10.0 ** SCORE_DECIMALS


def round_score(x: float) -> float:
    """``np.round(x, SCORE_DECIMALS)`` for one plain float, bit for bit, for
    the incremental policies that must tie exactly where their numpy
    references do: numpy scales, rounds half to even and scales back (Python's
    ``round(x, 12)`` differs on ~1 % of values).  Monotone; ``inf`` passes."""
    return round(x * _SCALE) / _SCALE if x < math.inf else x


class TreeView:
    """Arrays over the hierarchy for level-by-level (vectorised) reductions."""

    def __init__(self, state: PolicyView) -> None:
        h = state.hierarchy
        self.n = h.n_nodes
        self.parent = h.parent
        self.weights = h.weights
        self.children = h.children
        self.leaves = np.array(h.leaves, dtype=np.int64)
        self.is_leaf = np.zeros(self.n, dtype=bool)
        self.is_leaf[self.leaves] = True
        depth = h.depth
        #: nodes of each depth, deepest first (root excluded)
        self.levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()), 0, -1)]

    def any_below(self, leaf_flags: np.ndarray) -> np.ndarray:
        """Per node: does any leaf of its subtree have the flag?  (Rows may be
        vectors of flags, e.g. one per resource.)"""
        out = leaf_flags.copy()
        parent = self.parent
        for nodes in self.levels:
            if out.ndim == 1:  # setting True is idempotent: no ufunc.at needed
                out[parent[nodes[out[nodes]]]] = True
            else:
                np.logical_or.at(out, parent[nodes], out[nodes])
        return out


class TreeWalkPolicy(BasePolicy[P], Generic[P]):
    """Walk from the root to the lowest-scored candidate at every level."""

    #: False: candidates are all demanding children, even if nothing under
    #: them fits -- the walk then stops the round (not Pareto-efficient).
    skip_unschedulable: ClassVar[bool] = True

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self.tree = TreeView(state)
        total = state.cluster.total
        self.total = total
        self.inv_total = inverse_totals(total)
        m = len(total)
        self._demand = np.zeros((self.tree.n, m))
        self._leaves = self.tree.leaves.tolist()

    # -- what the scores may use ---------------------------------------------
    def leaf_status(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(demanding, fits, demand)`` per node; leaf rows only are set in
        ``fits`` and ``demand`` (the next task's demand vector)."""
        state = self.state
        tree = self.tree
        demanding = np.zeros(tree.n, dtype=bool)
        fits = np.zeros(tree.n, dtype=bool)
        demand = self._demand
        demand[:] = 0.0
        next_demand, fit = state.next_demand, state.fits
        for leaf in self._leaves:
            d = next_demand(leaf)
            if d is not None:
                demanding[leaf] = True
                demand[leaf] = d
                fits[leaf] = fit(d)
        return demanding, fits, demand

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        """Per-node score; the walk steps to the lowest.  Subclasses define it."""
        raise NotImplementedError

    def walk_keys(self, demanding: np.ndarray, fits: np.ndarray,
                  demand: np.ndarray) -> np.ndarray | list:
        """Per node, what the walk compares (the lowest wins, the earlier
        node on ties): the rounded score; a production scheduler's comparator
        returns a tuple per node instead (tie-breaks of its own)."""
        return np.round(self.scores(demanding, fits, demand), SCORE_DECIMALS)

    # -- the walk ------------------------------------------------------------
    def select(self) -> int | None:
        demanding, fits, demand = self.leaf_status()
        tree = self.tree
        demanding = tree.any_below(demanding)
        if not demanding[0]:
            return None
        schedulable = tree.any_below(fits & demanding)
        if self.skip_unschedulable and not schedulable[0]:
            return None
        score = self.walk_keys(demanding, fits, demand)
        allowed = schedulable if self.skip_unschedulable else demanding
        node = 0
        children = tree.children
        while children[node]:
            best = -1
            for c in children[node]:
                if allowed[c] and (best < 0 or score[c] < score[best]):
                    best = c
            if best < 0:
                return None
            node = best
        return node if fits[node] else None
