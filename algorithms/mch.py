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

:class:`MCHReference` re-flattens the whole tree whenever a demanding leaf's
next demand changes (the readable specification, not registered);
:class:`MCH` makes the same decisions incrementally (see
:class:`~hierfair.algorithms.collapsed_incremental.IncrementalFlattening`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.algorithms.collapsed import FlatteningPolicy
from hierfair.algorithms.collapsed_incremental import IncrementalFlattening
from hierfair.sim.model import Hierarchy
from hierfair.sim.policy import BackfillParams, PolicyView
from hierfair.sim.shares import inverse_totals
from hierfair.sim.treewalk import round_score

_INF = float("inf")


def mch_weights(h: Hierarchy, demands: np.ndarray, total: np.ndarray,
                active: np.ndarray) -> tuple[np.ndarray, int]:
    """Flat MCH weight per node (leaves meaningful) and ``k*``.

    ``demands[i]``: leaf i's per-task demand; ``active[i]``: leaf i demands.
    """
    n, m = demands.shape
    w = h.weights
    inv = inverse_totals(total)
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


class MCHReference(FlatteningPolicy[BackfillParams]):
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


class MCH(IncrementalFlattening[BackfillParams]):
    """MCH (letter §III) incrementally: the reference's weights and decisions.

    Per node, the generated demand (Eq. 2: ``raw``, its largest component
    ``mu`` and ``s = raw / mu``), summed over the children in the reference's
    order, so every float is the reference's.  A leaf's flat weight is
    ``pw * g`` (*mu-type*: full-type, or demanding ``k*``) or ``pw`` (the
    other partial-type leaves), with ``pw`` the static product of weights and
    ``g`` the product of ``1 / mu`` over the internal ancestors, carried down
    by the search.  Two aggregates per node, one per type, since the types
    scale differently.

    ``k*`` is global: when it changes, every demanding partial-type leaf is
    re-typed (``self.retypes`` counts these, ``self.retyped`` the leaves);
    full-type leaves never are.
    """

    name: ClassVar[str] = MCHReference.name
    description: ClassVar[str] = MCHReference.description

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        n, m = h.n_nodes, state.cluster.n_resources
        self._zeros = [0.0] * m
        self._mu = [0.0] * n
        self._s = [self._zeros] * n
        self._raw_root = self._zeros
        pw = [1.0] * n
        for node in range(1, n):  # the reference's path_weight, same products
            pw[node] = pw[self._parent[node]] * self._w[node]
        self._pw = pw
        self._demand: list[list[float]] = [self._zeros] * n
        self._mu_type = [True] * n
        self._loc_mu = [_INF] * n
        self._loc_pw = [_INF] * n
        self._partial: set[int] = set()  # demanding partial-type leaves
        self._k = 0
        self.retypes = 0
        self.retyped = 0

    def _update_leaf(self, leaf: int) -> None:
        d = self.state.next_demand(leaf)
        self._dem[leaf] = d is not None
        demand = d.tolist() if d is not None else self._zeros
        self._demand[leaf] = demand
        raw = [x * i for x, i in zip(demand, self._invl)]
        mu = max(raw)
        self._mu[leaf] = mu
        self._s[leaf] = [r / mu for r in raw] if mu > 0 else self._zeros
        if d is not None and not all(x > 0 for x in demand):
            self._partial.add(leaf)
        else:
            self._partial.discard(leaf)
        self._mu_type[leaf] = leaf not in self._partial or demand[self._k] > 0

    def leaf_changed(self, leaf: int) -> None:
        super().leaf_changed(leaf)
        raw = self._raw_root
        k = max(range(len(raw)), key=raw.__getitem__)  # np.argmax: first maximum
        if k != self._k:
            self._retype(k)

    def _retype(self, k: int) -> None:
        """``k*`` moved: partial-type leaves demanding it become mu-type."""
        self._k = k
        self.retypes += 1
        moved = [leaf for leaf in self._partial
                 if self._mu_type[leaf] != (self._demand[leaf][k] > 0)]
        for leaf in moved:
            self._mu_type[leaf] = not self._mu_type[leaf]
            self._set_leaf(leaf)
        self.retyped += len(moved)
        self._settle(moved)

    def _set_leaf(self, leaf: int) -> None:
        share = self._share[leaf] if self._eligible(leaf) else _INF
        mu_type = self._mu_type[leaf]
        self._loc_mu[leaf] = share if mu_type else _INF
        self._loc_pw[leaf] = _INF if mu_type else share

    def _recompute(self, node: int) -> bool:
        w, mu, s = self._w, self._mu, self._s
        loc_mu, loc_pw = self._loc_mu, self._loc_pw
        raw = self._zeros
        best_mu = best_pw = _INF
        for c in self._kids[node]:
            if mu[c] > 0:  # the reference's raw[node] += w[c] * s[c]
                wc = w[c]
                raw = [r + wc * x for r, x in zip(raw, s[c])]
            best_mu = min(best_mu, loc_mu[c] / w[c])
            best_pw = min(best_pw, loc_pw[c] / w[c])
        new_mu = max(raw)
        new_s = [r / new_mu for r in raw] if new_mu > 0 else self._zeros
        scale = new_mu if node and new_mu > 0 else 1.0
        new_loc_mu = best_mu * scale if best_mu < _INF else _INF
        changed = (new_mu != mu[node] or new_s != s[node]
                   or new_loc_mu != loc_mu[node] or best_pw != loc_pw[node])
        mu[node], s[node], loc_mu[node], loc_pw[node] = new_mu, new_s, new_loc_mu, best_pw
        if not node:
            self._raw_root = raw
        return changed

    def _live(self, node: int) -> bool:
        return self._loc_mu[node] < _INF or self._loc_pw[node] < _INF

    def _child_prefix(self, node: int, child: int, prefix: float) -> float:
        mu = self._mu[node]
        return prefix * (1.0 / mu if node and mu > 0 else 1.0)

    def _key(self, leaf: int, prefix: float) -> float:
        pw = self._pw[leaf]
        return round_score(self._share[leaf] / (pw * prefix if self._mu_type[leaf] else pw))

    def _bound(self, node: int, prefix: float) -> float:
        pw, margin = self._pw[node], self._margin
        return min(round_score(self._loc_mu[node] / (pw * prefix) * margin),
                   round_score(self._loc_pw[node] / pw * margin))
