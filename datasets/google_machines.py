"""The Google 2011 cell's machine mix, as a cluster preset.

The 2011 trace (clusterdata-2011) normalises every machine's CPU and memory
to the largest machine of the cell, and its machine_events table holds ten
(CPU, memory) configurations.  No machine_events file ships with the traces
here, so the proportions are the ones tabulated from its "add" events in
public analyses (``../shared/research/google-2011-machines.md``; DRFH's
evaluation, TPDS 2015 Table I, lists the same ten with counts that differ in
the second decimal).  This preset uses the shares below.

``servers: N`` machines are split by the largest-remainder rule (each
configuration gets the floor of its share of N, the leftovers go to the
largest remainders, ties to the earlier row), so small clusters keep the
common machines and drop the rare ones.  Machines are listed configuration
by configuration, in the table's order (first-fit fills the half-size
machines first).  Task demands in the 2011 trace are normalised the same
way, so they fit these capacities as they are.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import PositiveInt

from hierfair.fields import Strict
from hierfair.sim.model import Cluster
from hierfair.sim.placement_rules import Placement

RESOURCES = ("cpu", "mem")

#: (CPU, memory, percent of machines), google-2011-machines.md.
MACHINES: tuple[tuple[float, float, float], ...] = (
    (0.50, 0.50, 53.47),
    (0.50, 0.25, 30.74),
    (0.50, 0.75, 7.95),
    (1.00, 1.00, 6.32),
    (0.25, 0.25, 0.99),
    (0.50, 0.12, 0.43),
    (0.50, 0.03, 0.04),
    (0.50, 0.97, 0.03),
    (1.00, 0.50, 0.02),
    (0.50, 0.06, 0.01),
)


class ClusterParams(Strict):
    kind: Literal["google-2011-machines"]
    #: Machines in all (the cell had about 12,500).
    servers: PositiveInt = 100
    placement: Placement = "first-fit"
    #: ``cluster.headroom``, validated by hierfair.experiment.spec (HeadroomSpec).
    headroom: str | dict[str, Any] | None = None


def counts(n: int) -> list[int]:
    """Machines of each configuration among ``n``, by largest remainder."""
    shares = np.array([p for *_, p in MACHINES])
    exact = shares / shares.sum() * n
    out = np.floor(exact).astype(int)
    order = sorted(range(len(MACHINES)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:n - int(out.sum())]:
        out[i] += 1
    return out.tolist()


def cluster_size(p: ClusterParams) -> int:
    return p.servers


def build_cluster(p: ClusterParams) -> Cluster:
    rows, names = [], []
    for (cpu, mem, _), k in zip(MACHINES, counts(p.servers)):
        for j in range(k):
            rows.append((cpu, mem))
            names.append(f"c{cpu:g}-m{mem:g}-{j}")
    return Cluster(RESOURCES, np.array(rows, dtype=np.float64), tuple(names))
