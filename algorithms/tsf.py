"""TSF: Task Share Fairness (Wang, Li, Liang and Li, "Multi-Resource Fair
Sharing for Datacenter Jobs with Placement Constraints", SC 2016).

A user's *task share* is the number of tasks it runs over the number it
could run if it had the whole cluster to itself: ``x_n / h_n`` with ``h_n =
sum_i gamma_{n,i}`` over the servers it may use, and ``gamma_{n,i} = min_r
c_{i,r} / d_{n,r}`` the tasks it could run alone on server i.  TSF is
max-min fair in task shares, divided by weight (progressive filling).  Only
the abstract could be read here; the formula is issue 28's.

Online (the form a scheduler runs): serve the demanding leaf with the lowest
weighted task share whose next task fits; the run's placement rule puts it.
A leaf whose tasks differ in size counts each running task as ``1 / h(d)``
for its own demand ``d`` (``x_n / h_n`` when every task is the same).  Users
are the leaves, weighted by their own weight.  With placement constraints
``h`` counts only the servers the task may use (``demand.servers``).

Under churn the online form fills each freed slot with the lowest task share
at that moment; it does not move running tasks to reach the divisible TSF
allocation (``hierfair.experiment.fluid_hetero.tsf``), and docs/algorithms.md
says how far apart they end.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.algorithms.drf import KEY_DECIMALS  # equal shares tie exactly, as in drf
from hierfair.sim.model import eligible_servers
from hierfair.sim.policy import BackfillParams, LeafPriorityPolicy, PolicyView



def tasks_alone(capacities: np.ndarray, demand: np.ndarray) -> float:
    """``h = sum_i min_r c_{i,r} / d_r``: tasks of ``demand`` the servers it
    may use (all, or its placement constraint's) could run for one user
    alone, counted fluidly per server."""
    servers = eligible_servers(demand)
    caps = capacities if servers is None else capacities[servers]
    d = np.asarray(demand)
    used = d > 0
    return float((caps[:, used] / d[used]).min(axis=1).sum())


class TSF(LeafPriorityPolicy[BackfillParams]):
    """Max-min fairness in weighted task shares (SC 2016), online."""

    name: ClassVar[str] = "tsf"
    description: ClassVar[str] = ("TSF: lowest task share (tasks / tasks it could run "
                                  "alone) first (SC'16)")

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self._caps = state.cluster.capacities
        self._per_task: dict[bytes, float] = {}  # demand -> 1 / h(demand)
        self._share = [0.0] * state.hierarchy.n_nodes
        self._weight = state.hierarchy.weights.tolist()

    def _unit(self, demand: np.ndarray) -> float:
        key = demand.tobytes()
        unit = self._per_task.get(key)
        if unit is None:
            h = tasks_alone(self._caps, demand)
            unit = self._per_task[key] = 1.0 / h if h > 0 else float("inf")
        return unit

    def key(self, leaf: int) -> float:
        return round(self._share[leaf] / self._weight[leaf], KEY_DECIMALS)

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        self._share[leaf] += self._unit(demand)
        self.leaf_changed(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._share[leaf] -= self._unit(demand)
        self.leaf_changed(leaf)
