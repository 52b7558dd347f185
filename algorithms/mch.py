"""Multi-resource Collapsed Hierarchies (MCH).

Source: the MCH letter, §III (``../shared/papers/mch-multiresource-collapsed-hierarchies.txt``).

MCH flattens the hierarchy into leaf weights that account for several
resources, then runs weighted DRF (O(q) per weight computation, O(log p) per
decision).  Weights (§III-A.3), for unit node weights:

* internal nodes get a *generated demand* (Eq. 2): the sum of their active
  children's normalised demands ``s_i^j = d_i^j / (c_j mu_i)``, whose largest
  component is that node's ``mu``;
* a *full-type* leaf (it demands every resource) weighs
  ``prod_{h=1}^{H-1} 1 / mu_{P^h(i)}`` -- one over ``mu`` of each internal
  ancestor below the root;
* a *partial-type* leaf that demands the first-saturated resource ``k*``
  weighs the same; one that does not demand ``k*`` weighs 1.

Our generalisations (docs/algorithms.md): node weights multiply children's
normalised demands in the generated demand and the leaf weight by the product
of the path's weights; ``k*`` is the resource with the largest component of
the root's generated demand (the one the static filling saturates first); a
partial-type leaf is one that does not demand every resource.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.algorithms.collapsed import FlatteningPolicy
from hierfair.model import Hierarchy


def mch_weights(h: Hierarchy, demands: np.ndarray, total: np.ndarray,
                active: np.ndarray) -> tuple[np.ndarray, int]:
    """Flat MCH weight per node (leaves meaningful) and ``k*``.

    ``demands[i]``: leaf i's per-task demand; ``active[i]``: leaf i demands.
    """
    n, m = demands.shape
    w = h.weights
    inv = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
    share = demands * inv
    mu = np.zeros(n)
    s = np.zeros((n, m))  # normalised demand, max component 1
    raw = np.zeros((n, m))
    for node in range(n - 1, -1, -1):
        if not h.children[node]:
            if active[node]:
                raw[node] = share[node]
        else:
            for c in h.children[node]:
                if mu[c] > 0:
                    raw[node] += w[c] * s[c]
        mu[node] = raw[node].max()
        if mu[node] > 0:
            s[node] = raw[node] / mu[node]
    k_star = int(np.argmax(raw[0]))
    path_weight = np.ones(n)
    inv_mu = np.ones(n)  # product of 1/mu over internal ancestors below the root
    for node in range(1, n):
        p = h.parent[node]
        path_weight[node] = path_weight[p] * w[node]
        inv_mu[node] = inv_mu[p] * (1.0 / mu[p] if p != 0 and mu[p] > 0 else 1.0)
    full = (demands > 0).all(axis=1)
    uses_k = demands[:, k_star] > 0
    flat = np.where(full | uses_k, path_weight * inv_mu, path_weight)
    return flat, k_star


class MCH(FlatteningPolicy):
    """MCH (letter §III): full/partial-type weights with ``k*``, then weighted DRF."""

    name: ClassVar[str] = "mch"
    description: ClassVar[str] = ("multi-resource collapsed hierarchies: demand-aware flat "
                                  "weights + weighted DRF (MCH letter §III)")

    def signature(self) -> tuple:
        state = self.state
        return tuple((leaf, state.next_demand(leaf).tobytes()) for leaf in self._leaves
                     if state.pending(leaf) > 0)

    def flat_weights(self) -> np.ndarray:
        state = self.state
        n, m = state.hierarchy.n_nodes, state.cluster.n_resources
        demands = np.zeros((n, m))
        active = np.zeros(n, dtype=bool)
        for leaf in self._leaves:
            d = state.next_demand(leaf)
            if d is not None:
                demands[leaf], active[leaf] = d, True
        flat, _ = mch_weights(state.hierarchy, demands, state.cluster.total, active)
        return flat
