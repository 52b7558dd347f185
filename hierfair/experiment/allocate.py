"""Replay the papers' static examples: who holds what once the cluster is full.

Every job arrives at time 0 and the algorithm places tasks until none fits (no
task finishes meanwhile).  Then, ``churn`` times, the earliest-started running
task finishes and the algorithm allocates again -- the dynamic setting in which
naive hierarchical DRF starves a leaf (H-DRF §3.3).  The result is each node's
share of each resource (allocated / cluster total), its dominant share and its
task count; an internal node holds the plain sum of its children.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hierfair.algorithms import make_policy
from hierfair.algorithms.drf import dominant_shares
from hierfair.experiment.spec import AlgorithmSpec, Experiment
from hierfair.sim.model import ROOT, ROOT_NAME, shown
from hierfair.sim.policy import BasePolicy


@dataclass(frozen=True)
class Allocation:
    algorithm: str
    resources: tuple[str, ...]
    paths: tuple[str, ...]
    shares: np.ndarray  # (nodes, resources), allocated / cluster total
    tasks: np.ndarray  # (nodes,)

    @property
    def dominant(self) -> np.ndarray:
        return dominant_shares(self.shares, np.ones(len(self.resources)))

    def node(self, path: str) -> dict[str, float]:
        i = self.paths.index(ROOT if path == ROOT_NAME else path)
        row = {r: float(v) for r, v in zip(self.resources, self.shares[i])}
        row["dominant_share"] = float(self.dominant[i])
        tasks = float(self.tasks[i])
        row["tasks"] = int(tasks) if tasks.is_integer() else tasks
        return row

    def to_json(self) -> dict:
        return {"algorithm": self.algorithm, "resources": list(self.resources),
                "nodes": {shown(p): self.node(p) for p in self.paths}}


class Filled(NamedTuple):
    """What :func:`fill` leaves: resources and tasks per node, free per server."""

    alloc: np.ndarray
    tasks: np.ndarray
    #: free resources per server; a fractional allocation's: one row, the pool
    free: np.ndarray
    #: the allocation is a static definition's (no tasks, no churn)
    fractional: bool
    #: the running tasks as (leaves, servers, demands) rows; None for a
    #: fractional allocation, which is pooled
    placed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def fill(exp: Experiment, policy: BasePolicy, seed: int, churn: int = 0,
         placement: str | None = None) -> Filled:
    """The papers' static examples replayed: every job arrives at once and
    the cluster fills; then, ``churn`` times, the earliest-started task
    finishes and the policy refills the room.  A policy with a
    ``fractional`` method (static H-DRF) gives its exact allocation instead.
    ``hierfair allocate`` and the property probes both fill this way."""
    fractional = getattr(policy, "fractional", None)
    if fractional is not None:
        alloc, tasks = fractional(exp.hierarchy, exp.cluster.total, exp.workload(seed))
        return Filled(alloc, tasks, (exp.cluster.total - alloc[0])[None, :], True)
    sim = exp.simulator(policy, seed, placement=placement)
    sim.submit_all()
    for _ in range(churn):
        if not sim.finish_earliest():
            break
    placed = sim.placements()
    used = np.zeros_like(exp.cluster.capacities)
    np.add.at(used, placed[1], placed[2])
    return Filled(sim.view.alloc, sim.view.running.copy(), exp.cluster.capacities - used,
                  False, placed)


def allocate(exp: Experiment, algorithm: str | AlgorithmSpec, churn: int = 0,
             seed: int | None = None) -> Allocation:
    algo = algorithm if isinstance(algorithm, AlgorithmSpec) else AlgorithmSpec(name=algorithm)
    seed = exp.spec.seed_list[0] if seed is None else seed
    filled = fill(exp, make_policy(algo.name, algo.params), seed, churn, algo.placement)
    return Allocation(algorithm=algo.display, resources=exp.cluster.resources,
                      paths=exp.hierarchy.paths, shares=filled.alloc / exp.cluster.total,
                      tasks=filled.tasks)


def format_table(a: Allocation, depth: np.ndarray) -> str:
    """A human-readable table, nodes indented by depth."""
    names = [ROOT_NAME if not p else "  " * int(depth[i] - 1) + p.rsplit("/", 1)[-1]
             for i, p in enumerate(a.paths)]
    width = max(len(n) for n in names + ["node"])
    head = f"{'node':<{width}}  " + "  ".join(f"{r:>7}" for r in a.resources)
    head += f"  {'dominant':>8}  {'tasks':>6}"
    lines = [f"algorithm: {a.algorithm}", head, "-" * len(head)]
    dom = a.dominant
    for i, name in enumerate(names):
        cells = "  ".join(f"{v:7.4f}" for v in a.shares[i])
        lines.append(f"{name:<{width}}  {cells}  {dom[i]:8.4f}  {a.tasks[i]:6g}")
    return "\n".join(lines)
