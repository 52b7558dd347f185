"""Dominant Fairness Fairness (DFF).

Source: Wang, Jiang, Tan, Wu, *Dominant Fairness Fairness: Hierarchical
Scheduling for Multiple Resources in Heterogeneous Datacenters*, IEICE Trans.
Inf. & Syst., 2016, §3 (``../shared/papers/dff-dominant-fairness-fairness-ieice2016.md``).

DFF replaces dominant shares by *fairness* against per-node *Fair Resource*
vectors:

* Fair Resource (Definition 1, Eq. 3, Algorithm 1 UpdateFR): the root's is
  the cluster total; a child that needs resource j gets
  ``fr_parent,j * w_c / sum(w of siblings that need j)``; one that does not
  gets 0.  Recomputed when a job is submitted or completes.
* Fairness (Definition 2, Eqs. 5-6): ``f_i = max_j u_ij / fr_ij``.
* UpdateF (Algorithm 2): an internal node's consumption is the plain sum of
  its children's; if its fairness exceeds 1 and a schedulable demanding
  child has lower fairness, the node takes that child's fairness (the extra
  it holds is resources its blocked children left to siblings).
* Dynamic DFF (Algorithm 3): walk from the root to the schedulable demanding
  child with the lowest fairness, give its leaf one task.

Because ``fr`` splits each resource only among the nodes that need it, a node
that is the only one wanting MICs is entitled to all of them, and CPU-heavy
siblings cannot crowd MIC jobs out by saturating CPU first -- the
heterogeneous-cluster failure of H-DRF the letter reports (§4.2).

Cost per decision: O(n * m) (fairness recomputed per decision, Algorithm 3
line 9); O(n * m) per job arrival or completion for the Fair Resources.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.sim.model import Hierarchy, Job
from hierfair.sim.policy import NoParams, PolicyView
from hierfair.sim.treewalk import TreeWalkPolicy


def fair_resources(h: Hierarchy, needs: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Algorithm 1 (UpdateFR) from the root: Fair Resource vector per node.

    ``needs[i, j]``: node i needs resource j (some active leaf below it does).
    """
    fr = np.zeros((h.n_nodes, len(total)))
    fr[0] = total
    w = h.weights
    for node in range(h.n_nodes):
        kids = h.children[node]
        if not kids:
            continue
        idx = np.array(kids)
        wanting = (needs[idx] * w[idx, None]).sum(axis=0)  # per resource
        share = np.divide(fr[node], wanting, out=np.zeros_like(fr[node]), where=wanting > 0)
        fr[idx] = np.where(needs[idx], w[idx, None] * share, 0.0)
    return fr


def fairness(alloc: np.ndarray, fr: np.ndarray) -> np.ndarray:
    """Eq. 6, row-wise: ``max_j u_j / fr_j``; a resource held without a fair
    share counts as infinitely unfair, one neither held nor owed not at all."""
    ratio = np.divide(alloc, fr, out=np.zeros_like(alloc), where=fr > 0)
    ratio = np.where((fr <= 0) & (alloc > 0), np.inf, ratio)
    return ratio.max(axis=1)


class DFF(TreeWalkPolicy[NoParams]):
    """Dynamic DFF (DFF letter §3, Algorithms 1-3)."""

    name: ClassVar[str] = "dff"
    description: ClassVar[str] = ("Dominant Fairness Fairness: Fair Resource vectors and "
                                  "fairness max u/fr (DFF letter §3, Alg. 1-3)")

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        n, m = state.hierarchy.n_nodes, state.cluster.n_resources
        # Per leaf: how many unfinished jobs need each resource.
        self._need_count = np.zeros((n, m), dtype=np.int64)
        self._fr = np.zeros((n, m))
        self._fr_stale = True

    def on_job_arrival(self, job: Job) -> None:
        self._need_count[job.leaf] += job.demand > 0
        self._fr_stale = True

    def on_job_completion(self, job: Job) -> None:
        self._need_count[job.leaf] -= job.demand > 0
        self._fr_stale = True

    @property
    def fair_resource(self) -> np.ndarray:
        if self._fr_stale:
            needs = self.tree.any_below(self._need_count > 0)
            self._fr = fair_resources(self.state.hierarchy, needs, self.total)
            self._fr_stale = False
        return self._fr

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        """Algorithm 2 (UpdateF), from the leaves up."""
        tree = self.tree
        f = fairness(self.state.alloc, self.fair_resource)
        schedulable = tree.any_below(fits & demanding & tree.is_leaf)
        candidate = demanding & schedulable
        for nodes in tree.levels:  # deepest first: children are final
            par = tree.parent[nodes]
            least = np.full(tree.n, np.inf)
            np.minimum.at(least, par[candidate[nodes]], f[nodes[candidate[nodes]]])
            for p in np.unique(par).tolist():
                if f[p] > 1 and least[p] < f[p]:
                    f[p] = least[p]
        return f
