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

import numpy as np

from hierfair.algorithms import make_policy
from hierfair.algorithms.drf import dominant_shares
from hierfair.experiment.spec import AlgorithmSpec, Experiment
from hierfair.sim.model import ROOT, ROOT_NAME, shown


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


def allocate(exp: Experiment, algorithm: str | AlgorithmSpec, churn: int = 0,
             seed: int | None = None) -> Allocation:
    algo = algorithm if isinstance(algorithm, AlgorithmSpec) else AlgorithmSpec(name=algorithm)
    seed = exp.spec.seed_list[0] if seed is None else seed
    policy = make_policy(algo.name, algo.params)
    fractional = getattr(policy, "fractional", None)
    if fractional is not None:  # a static definition: no tasks, no churn
        alloc, tasks = fractional(exp.hierarchy, exp.cluster.total, exp.workload(seed))
        return Allocation(algorithm=algo.display, resources=exp.cluster.resources,
                          paths=exp.hierarchy.paths, shares=alloc / exp.cluster.total,
                          tasks=tasks)
    sim = exp.simulator(policy, seed)
    sim.submit_all()
    for _ in range(churn):
        if not sim.finish_earliest():
            break
    return Allocation(algorithm=algo.display, resources=exp.cluster.resources,
                      paths=exp.hierarchy.paths, shares=sim.view.alloc / exp.cluster.total,
                      tasks=sim.view.running.copy())


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
