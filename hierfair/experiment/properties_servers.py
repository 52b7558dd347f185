"""Fairness when servers differ: the per-server forms of sharing incentive
and envy-freeness that DRFH, TSF and PS-DSF claim (issue 28).

On one pooled server they are the DRF properties of
:mod:`hierfair.experiment.properties`; on several they count what a bundle
is worth *server by server*, since a task runs on one server and a bundle
split over servers holds fewer tasks than its pooled sum would:

* **sharing incentive over servers**: on a one-level tree, each demanding
  leaf runs at least the whole tasks its weighted part ``s_n = w_n / sum w``
  of *every server* would hold, ``sum_i floor(min_r s_n c_{i,r} / d_{n,r})``
  (TSF's guarantee, SC 2016; PS-DSF's, arXiv 1712.10114 "under conditions").
* **envy-freeness over servers**: no demanding leaf n could run more tasks
  with another leaf m's bundles, server by server and scaled by ``w_n /
  w_m``, than it runs: ``sum_i floor(min_r (w_n/w_m) A_{m,i,r} / d_{n,r}) <=
  x_n`` (DRFH, INFOCOM 2014: "no user prefers the allocation of another
  user"; TSF; PS-DSF under conditions).

* **fluid gap** (a metric): how far each mechanism's online form stays
  from its divisible allocation, computed by the independent oracle
  (:mod:`hierfair.experiment.fluid_hetero`), with tasks 10x finer.

The first two count whole tasks, miss by more than one task to count, and are
refined (``refine: tasks``): a miss that vanishes with tasks 10x finer is
whole tasks' granularity, not the mechanism.  A static definition's
fractional, pooled allocation (static H-DRF) has no per-server bundles:
n/a.  docs/properties.md has the definitions beside the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from hierfair.experiment import fluid_hetero
from hierfair.experiment.property_types import EPS, Outcome

if TYPE_CHECKING:
    from hierfair.experiment.probe import Probe

#: Algorithms whose papers state their properties on heterogeneous servers:
#: a violation on several servers contradicts their promise (the others'
#: papers state theirs on a pooled cluster).
HETEROGENEOUS = frozenset({"drfh", "tsf", "psdsf"})

_ABSTRACTS = {
    "drfh": "DRFH (INFOCOM 2014), abstract",
    "tsf": "TSF (SC 2016), abstract",
    "psdsf": "PS-DSF (arXiv 1712.10114), abstract: under conditions",
}
#: Where a paper promises each per-server property (abstracts: the bodies
#: could not be read here, docs/algorithms.md).
SERVERS_PROMISED: dict[str, dict[str, str]] = {
    "sharing-incentive-servers": {a: _ABSTRACTS[a] for a in ("tsf", "psdsf")},
    "envy-servers": dict(_ABSTRACTS),
}


def contradicts(algorithm: str, cluster: str) -> bool:
    """Whether a violation on this kind of cluster ("pooled" or "servers")
    contradicts a promise made for ``algorithm``."""
    return cluster == "pooled" or algorithm in HETEROGENEOUS


def _tasks_on(bundle: np.ndarray, demand: np.ndarray) -> float:
    """Whole tasks of ``demand`` a per-server bundle (servers x resources)
    holds: per server, min over the resources it needs, floored, summed."""
    used = demand > 0
    return float(np.floor(np.min(bundle[:, used] / demand[used], axis=1) + EPS).sum())


def _demanding(p: Probe) -> list[int]:
    return [int(i) for i in np.flatnonzero(p.demands.any(axis=1))]


def sharing_incentive_servers(p: Probe) -> Outcome | str:
    h = p.exp.hierarchy
    if int(h.depth.max()) > 1:
        return "defined on one-level trees (users are the leaves)"
    fill = p.fill()
    if fill.placed is None:
        return "a pooled, fractional allocation has no per-server bundles"
    caps = p.exp.cluster.capacities
    return shortfall(p, fill.tasks, _demanding(p), "every server",
                     lambda i, part: _tasks_on(caps * part, p.demands[i]))


def shortfall(p: Probe, tasks: np.ndarray, leaves: list[int], parts: str,
              holds: Callable[[int, float], float]) -> Outcome:
    """Sharing incentive's check, pooled or per server: the most tasks a
    demanding leaf runs short of what its weighted part of ``parts`` holds
    (``holds(leaf, part)``)."""
    h = p.exp.hierarchy
    weight = sum(h.weights[i] for i in leaves)
    worst, witness = 0.0, ""
    for i in leaves:
        part = h.weights[i] / weight
        mine = holds(i, part)
        if mine - tasks[i] > worst:
            worst = float(mine - tasks[i])
            witness = (f"{h.paths[i]} holds {tasks[i]:g} tasks; its {part:.3g} of "
                       f"{parts} holds {mine:g}")
    return Outcome(worst, 1.0, witness)


def envy_servers(p: Probe) -> Outcome | str:
    fill = p.fill()
    held = fill.held()
    if held is None:
        return "a pooled, fractional allocation has no per-server bundles"
    h, leaves = p.exp.hierarchy, _demanding(p)
    worst, witness = 0.0, ""
    for i in leaves:
        for j in leaves:
            if i == j:
                continue
            theirs = _tasks_on(held[j] * (h.weights[i] / h.weights[j]), p.demands[i])
            if theirs - fill.tasks[i] > worst:
                worst = float(theirs - fill.tasks[i])
                witness = (f"{h.paths[i]} holds {fill.tasks[i]:g} tasks; {h.paths[j]}'s "
                           f"bundles (server by server, scaled by weight) would hold {theirs:g}")
    return Outcome(worst, 1.0, witness)


#: The divisible allocation each heterogeneous mechanism is defined by
#: (hierfair.experiment.fluid_hetero, the independent oracle).
FLUID = {"drfh": fluid_hetero.drfh, "tsf": fluid_hetero.tsf,
         "per-server-drf": fluid_hetero.per_server_drf, "psdsf": fluid_hetero.psdsf}
#: Tasks this many times finer measure the online form against the fluid one.
FLUID_FINER = 10


def fluid_gap(p: Probe) -> Outcome | str:
    """A metric: how far the online form stays from the mechanism's fluid
    allocation -- the largest difference, over demanding leaves, between the
    tasks it runs with tasks 10x finer (in whole-task units) and the
    oracle's.  Users are the demanding leaves with their own weights, as the
    mechanisms treat them on any tree.  PS-DSF allocations need not be
    unique: its gap is from the one the oracle's iteration reaches."""
    oracle = FLUID.get(p.algorithm.name)
    if oracle is None:
        return "no divisible allocation on several servers is defined for it here"
    h = p.exp.hierarchy  # users are the leaves, weighted by their own weight, any tree
    leaves = _demanding(p)
    caps, demands = p.exp.cluster.capacities, p.demands[leaves]
    if (demands[:, caps.sum(axis=0) <= 0] > 0).any():
        return "a leaf needs a resource no server has"
    exact = oracle(caps, demands, h.weights[leaves]).X.sum(axis=1)
    fine = p.fill(finer=FLUID_FINER).tasks[leaves] / FLUID_FINER
    gaps = np.abs(fine - exact)
    worst = int(np.argmax(gaps))
    return Outcome(float(gaps[worst]), float("inf"),
                   f"{h.paths[leaves[worst]]} runs {fine[worst]:.4g} tasks (x{FLUID_FINER} "
                   f"finer), the fluid allocation {exact[worst]:.4g}")
