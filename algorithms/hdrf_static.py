"""Static H-DRF, exact: the allocation the dynamic algorithms aim at.

Source: Bhattacharya, Culler, Friedman, Ghodsi, Shenker, Stoica, *Hierarchical
Scheduling for Diverse Datacenter Workloads*, SoCC 2013
(``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``).

*Static H-DRF* (§3.1, Algorithm 1) defines the allocation: starting from
nothing, repeatedly walk from the root to a leaf, at every level stepping to
the demanding child with the lowest (weighted) dominant share, and give that
leaf an epsilon of dominant share; an internal node holds the plain sum of its
children.  :func:`static_hdrf` computes the limit epsilon -> 0 exactly, as an
event-driven water-filling (see its docstring).

:class:`StaticHDRF` (``static-hdrf``) is that allocation as a policy: the
ground truth of ``hierfair allocate``, and in a simulation an oracle serving
the leaf furthest below its target.  :func:`static_targets` computes those
targets for it and for ``hdrf-preemptive`` (:mod:`hierfair.algorithms.hdrf`,
which re-exports this module's names).

See docs/algorithms.md, "static-hdrf".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hierfair.sim.model import Hierarchy, Workload
from hierfair.sim.policy import BasePolicy, NoParams, PolicyView
from hierfair.sim.shares import inverse_totals

#: Relative tolerance for ties between levels, argmax sets and saturation in
#: the exact water-filling (shares are in [0, 1]).
TIE = 1e-9


@dataclass(frozen=True)
class StaticAllocation:
    """The static H-DRF allocation."""

    alloc: np.ndarray  # (nodes, resources), in resource units; internal = sum
    dominant: np.ndarray  # per leaf: dominant share x_i (0 for non-users)
    saturated: np.ndarray  # resources fully allocated at the end
    events: int  # water-filling phases it took


def static_hdrf(hierarchy: Hierarchy, demands: np.ndarray, total: np.ndarray,
                caps: np.ndarray | None = None, max_events: int | None = None
                ) -> StaticAllocation:
    """Static H-DRF (H-DRF §3.1, Algorithm 1) in the limit epsilon -> 0, exactly.

    ``demands[i]`` is leaf i's per-task demand vector (a zero row: the leaf
    asks for nothing); ``caps[i]`` bounds leaf i's dominant share (its total
    demand; ``inf`` = insatiable).

    Water-filling with rates.  Let ``x_i`` be leaf i's dominant share; its
    allocation is ``x_i * a_i`` with ``a_i`` its demand normalised so that
    ``max_j a_ij = 1`` (in shares of the cluster total).  Algorithm 1 pours
    epsilons down the tree, each level to the child with the lowest weighted
    share ``sigma_c / w_c`` (``sigma`` = max over resources of the subtree
    sum).  In the limit, at each node the children tied at the lowest level
    (the *receivers*) share the node's inflow so that their weighted shares
    rise together: child c gets a fraction proportional to ``w_c / g_c``, where
    ``g_c`` is how fast c's dominant share rises per unit of inflow (1 for a
    leaf; for an internal node, the largest rate among the resources that are
    its current maximum).  A child whose share cannot rise (``g_c = 0``: its
    inflow goes to a resource below its maximum) absorbs the whole inflow, as
    the discrete walk would keep choosing it.  Between *events* every rate is
    constant, so the allocation moves linearly; the next event is the first
    of: a resource saturates; a leaf reaches its cap; the rising level of a
    node's receivers reaches a sibling's level; a resource overtakes a node's
    current maximum.  The function jumps from event to event; no epsilon.
    """
    n = hierarchy.n_nodes
    m = len(total)
    inv = inverse_totals(total)
    per_task = np.asarray(demands, dtype=float) * inv
    mu = per_task.max(axis=1)
    user = np.zeros(n, dtype=bool)
    user[list(hierarchy.leaves)] = True
    user &= mu > 0
    # a leaf needing a resource the cluster has none of can run no task
    # (Algorithm 1 walks only to nodes with a task that can be scheduled)
    user &= ~((np.asarray(demands) > 0) & (np.asarray(total) <= 0)).any(axis=1)
    a = np.zeros((n, m))
    a[user] = per_task[user] / mu[user, None]
    cap = np.full(n, np.inf) if caps is None else np.asarray(caps, dtype=float).copy()
    w = hierarchy.weights
    children = hierarchy.children
    order = range(n)  # pre-order: parents before children
    x = np.zeros(n)
    saturated = np.zeros(m, dtype=bool)
    limit = max_events if max_events is not None else 50 * (n + m) * (m + 1) + 1000
    events = 0

    while True:
        S = x[:, None] * a
        for node in range(n - 1, 0, -1):
            S[hierarchy.parent[node]] += S[node]
        active = user & (x < cap * (1 - TIE)) & ~((a > 0) & saturated).any(axis=1)
        for node in range(n - 1, 0, -1):
            active[hierarchy.parent[node]] |= active[node]
        if not active[0]:
            break
        events += 1
        if events > limit:
            raise RuntimeError("static H-DRF did not converge; please report this instance")
        sigma = S.max(axis=1)
        level = sigma / w

        # bottom-up: rate vector per unit inflow (v), gain (g), receivers' split
        v = np.zeros((n, m))
        g = np.zeros(n)
        split: dict[int, list[tuple[int, float]]] = {}
        for node in range(n - 1, -1, -1):
            if not active[node]:
                continue
            if not children[node]:
                v[node], g[node] = a[node], 1.0
                continue
            act = [c for c in children[node] if active[c]]
            low = min(level[c] for c in act)
            receivers = [c for c in act if level[c] <= low + TIE * (1 + low)]
            stuck = [c for c in receivers if g[c] <= TIE]
            if stuck:
                parts = [(c, 1.0 / len(stuck)) for c in stuck]
            else:
                raw = [(c, w[c] / g[c]) for c in receivers]
                tot = sum(p for _, p in raw)
                parts = [(c, p / tot) for c, p in raw]
            split[node] = parts
            v[node] = sum(p * v[c] for c, p in parts)
            top = S[node] >= sigma[node] - TIE * (1 + sigma[node])
            g[node] = float(v[node][top].max())

        # top-down: inflow rate of every node (root pours 1 per unit time)
        r = np.zeros(n)
        r[0] = 1.0
        for node in order:
            for c, p in split.get(node, ()):
                r[c] = r[node] * p
        rho = r[:, None] * v

        dt = np.inf
        rising = rho[0] > TIE
        if rising.any():
            dt = min(dt, float(((1 - S[0, rising]) / rho[0, rising]).min()))
        grow = user & active & (r > 0) & np.isfinite(cap)
        if grow.any():
            dt = min(dt, float(((cap[grow] - x[grow]) / r[grow]).min()))
        for node, parts in split.items():
            recv = {c for c, _ in parts}
            c0 = parts[0][0]
            lift = g[c0] * r[c0] / w[c0]
            low = level[c0]
            if lift > TIE:
                for c in children[node]:
                    if active[c] and c not in recv:
                        dt = min(dt, (level[c] - low) / lift)
            if r[node] > 0:
                top = S[node] >= sigma[node] - TIE * (1 + sigma[node])
                speed = g[node] * r[node]
                over = ~top & (rho[node] > speed + TIE)
                if over.any():
                    dt = min(dt, float(((sigma[node] - S[node, over])
                                        / (rho[node, over] - speed)).min()))
        if not np.isfinite(dt):
            break
        dt = max(dt, 0.0)
        x = np.where(user & (r > 0), x + r * dt, x)
        x = np.minimum(x, cap)
        root = (x[:, None] * a)[user].sum(axis=0)
        saturated |= root >= 1 - TIE

    alloc = x[:, None] * a * total
    for node in range(n - 1, 0, -1):
        alloc[hierarchy.parent[node]] += alloc[node]
    return StaticAllocation(alloc=alloc, dominant=x, saturated=saturated, events=events)


def static_targets(state: PolicyView, leaves: list[int], key: tuple | None,
                   targets: np.ndarray) -> tuple[tuple, np.ndarray]:
    """Static H-DRF dominant shares for the present demand: demanding leaves
    insatiable (their next task's vector), the others capped at what they
    hold.  Recomputed only when the demanding leaves or their vectors change
    (``key``); returns the new key and targets."""
    demanding = tuple((leaf, state.next_demand(leaf).tobytes()) for leaf in leaves
                      if state.pending(leaf) > 0)
    if demanding == key:
        return key, targets
    n, m = state.hierarchy.n_nodes, state.cluster.n_resources
    total = state.cluster.total
    inv = inverse_totals(total)
    demands = np.zeros((n, m))
    caps = np.full(n, np.inf)
    for leaf in leaves:
        d = state.next_demand(leaf)
        if d is not None:
            demands[leaf] = d
        elif state.running[leaf] > 0:
            demands[leaf] = state.alloc[leaf]
            caps[leaf] = float((state.alloc[leaf] * inv).max())
    return demanding, static_hdrf(state.hierarchy, demands, total, caps).dominant


class StaticHDRF(BasePolicy[NoParams]):
    """Static H-DRF as a policy: the exact allocation of :func:`static_hdrf`.

    In ``hierfair allocate`` it returns the fractional allocation itself (the
    ground truth the dynamic algorithms are compared against).  In a
    simulation it is an *oracle*: whenever the set of demanding leaves
    changes it recomputes the static allocation -- demanding leaves
    insatiable, the others capped at what they hold -- and then serves the
    schedulable leaf furthest below its target (lowest held/target dominant
    share; pre-order breaks ties).  Cost: one water-filling, O(events * n * m),
    per demand change; O(n) per decision.
    """

    name: ClassVar[str] = "static-hdrf"
    description: ClassVar[str] = ("exact static H-DRF allocation by event-driven water-filling "
                                  "(H-DRF §3.1 Alg. 1); ground truth")

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self._leaves = list(state.hierarchy.leaves)
        self._key: tuple | None = None
        self._target = np.zeros(state.hierarchy.n_nodes)
        total = state.cluster.total
        self._inv = inverse_totals(total)

    @staticmethod
    def fractional(hierarchy: Hierarchy, total: np.ndarray,
                   workload: Workload) -> tuple[np.ndarray, np.ndarray]:
        """The static allocation for a workload submitted all at once:
        ``(alloc per node, fractional tasks per node)``.

        A leaf demands its first job's task vector, capped at the tasks of its
        jobs that share that vector (static H-DRF has one demand vector per
        leaf)."""
        n, m = hierarchy.n_nodes, len(total)
        demands = np.zeros((n, m))
        tasks = np.zeros(n)
        for job in workload.jobs:
            if not tasks[job.leaf]:
                demands[job.leaf] = job.demand
            if np.array_equal(demands[job.leaf], job.demand):
                tasks[job.leaf] += job.n_tasks
        inv = inverse_totals(total)
        mu = (demands * inv).max(axis=1)
        result = static_hdrf(hierarchy, demands, total, caps=tasks * mu)
        count = np.divide(result.dominant, mu, out=np.zeros(n), where=mu > 0)
        for node in range(n - 1, 0, -1):
            count[hierarchy.parent[node]] += count[node]
        return result.alloc, count

    def _targets(self) -> np.ndarray:
        self._key, self._target = static_targets(self.state, self._leaves, self._key,
                                                 self._target)
        return self._target

    def select(self) -> int | None:
        state = self.state
        target = self._targets()
        best, best_ratio = None, np.inf
        for leaf in self._leaves:
            d = state.next_demand(leaf)
            if d is None or target[leaf] <= 0 or not state.fits(d):
                continue
            ratio = round(float((state.alloc[leaf] * self._inv).max()) / target[leaf], 12)
            if ratio < best_ratio:
                best, best_ratio = leaf, ratio
        return best
