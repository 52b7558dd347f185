"""Naive hierarchical DRF, as Hadoop's Capacity Scheduler implements it.

Source: H-DRF paper (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``)
§3.3 ("Naive H-DRF") and §5.2 ("C.S-Current" and "Pareto-Efficient-C.S").

Each decision walks from the root, at every level stepping to the demanding
child with the smallest weighted dominant share, and gives one task to the
leaf it reaches.  An internal node's consumption is the plain sum of its
children's -- the attribution that starves leaves (Fig. 4: after tasks churn,
n2,1's CPUs all drift to n1,1 because n2 looks full through n2,2's GPUs).

* ``naive-hdrf`` ("Pareto-Efficient-C.S"): only children with a task that fits
  somewhere below them are considered, so nothing is left idle that a task
  could use.
* ``capacity-current`` ("C.S-Current"): the walk considers every demanding
  child; if the leaf it reaches cannot place its task, nothing more is
  scheduled in that round -- not Pareto-efficient.

Cost per decision: O(n * m) (the reference tree walk recomputes all shares).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.sim.policy import NoParams
from hierfair.sim.treewalk import TreeWalkPolicy


class NaiveHDRF(TreeWalkPolicy[NoParams]):
    """H-DRF §3.3: the tree walk on plain-sum dominant shares."""

    name: ClassVar[str] = "naive-hdrf"
    description: ClassVar[str] = ("naive hierarchical DRF, Pareto-efficient Capacity Scheduler "
                                  "(H-DRF §3.3); starves leaves")

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        share = (self.state.alloc * self.inv_total).max(axis=1)
        return share / self.tree.weights


class CapacityCurrent(NaiveHDRF):
    """H-DRF §5.2 "C.S-Current": as naive-hdrf, but stops the round when the
    chosen leaf's task does not fit."""

    name: ClassVar[str] = "capacity-current"
    description: ClassVar[str] = ("Capacity Scheduler as shipped (H-DRF §5.2 C.S-Current): "
                                  "naive walk that stops when the chosen task does not fit")
    skip_unschedulable: ClassVar[bool] = False
