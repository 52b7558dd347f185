"""The DFF letter's CPU-MIC cluster and five jobs (DFF §4.1, Table 1).

Cluster (``cluster: {kind: cpu-mic}``): 7 nodes, each with 48 CPU threads
(2 Xeon E5-2670 x 24 threads: 336 in all), 136 GB of memory and 3 MICs (21 in
all).  ``heterogeneity`` is the CPU-thread : MIC ratio (16 in the letter);
sweeping it (4 ... 32) changes the MICs per node to ``48 / heterogeneity``
(fractional MIC capacity is allowed: it is a share of a device pool).
``pooled: true`` merges the nodes into one server -- the letter's algorithms
work on cluster totals, and a 2-MIC task on a 3-MIC node strands one MIC.

Workload (``workload: {kind: cpu-mic}``): Table 1's jobs on the Fig. 1 tree
(``hierarchy: {kind: paper, figure: dff-fig1}``), all submitted at 0.  Task
durations are not in the letter: ``duration`` gives every task the same
length (60 s by default) and ``durations`` one per job.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, PositiveFloat, PositiveInt

from hierfair.datasets.base import BuildContext, RawJob, finalize
from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Cluster, Workload
from hierfair.sim.placement_rules import Placement

#: Table 1: (node, <CPU, Memory, MIC>, tasks).
TABLE1 = (
    ("n1/n11", (4, 4, 0), 300),
    ("n2/n21", (4, 3, 0), 370),
    ("n3/n31", (2, 4, 0), 260),
    ("n3/n32", (1, 4, 2), 180),
    ("n4/n41", (1, 3, 2), 280),
)
RESOURCES = ("cpu", "mem", "mic")


class ClusterParams(Strict):
    kind: Literal["cpu-mic"]
    nodes: PositiveInt = 7
    cpu_per_node: PositiveFloat = 48
    mem_per_node: PositiveFloat = 136
    heterogeneity: PositiveFloat = 16.0
    pooled: bool = False
    placement: Placement = "first-fit"
    #: ``cluster.headroom``, as for servers written out; validated (and used) by
    #: hierfair.experiment.spec (HeadroomSpec): here only so the schema shows it.
    headroom: str | dict[str, Any] | None = None


def cluster_size(p: ClusterParams) -> int:
    return 1 if p.pooled else p.nodes


def build_cluster(p: ClusterParams) -> Cluster:
    node = [p.cpu_per_node, p.mem_per_node, p.cpu_per_node / p.heterogeneity]
    caps = np.tile(node, (p.nodes, 1))
    if p.pooled:
        return Cluster(RESOURCES, caps.sum(axis=0, keepdims=True), ("pool",))
    return Cluster(RESOURCES, caps, tuple(f"node{i}" for i in range(p.nodes)))


class WorkloadParams(Strict):
    kind: Literal["cpu-mic"]
    duration: PositiveFloat = 60.0
    durations: list[PositiveFloat] | None = Field(None, min_length=5, max_length=5)
    #: Scale every job's task count (e.g. 0.1 for a quick run).
    task_scale: PositiveFloat = 1.0


def workload_size(p: WorkloadParams) -> tuple[int, int]:
    return len(TABLE1), sum(max(1, round(tasks * p.task_scale)) for *_, tasks in TABLE1)


def build_workload(p: WorkloadParams, ctx: BuildContext) -> Workload:
    if tuple(ctx.cluster.resources) != RESOURCES:
        raise SpecError(f"the cpu-mic jobs need resources {list(RESOURCES)}",
                        where="cluster.resources", value=list(ctx.cluster.resources))
    raw = []
    for i, (queue, demand, tasks) in enumerate(TABLE1):
        n = max(1, round(tasks * p.task_scale))
        length = p.durations[i] if p.durations else p.duration
        raw.append(RawJob(queue, dict(zip(RESOURCES, map(float, demand))), np.full(n, length),
                          0.0, f"job{i + 1}", f"workload (Table 1 job {i + 1})"))
    return finalize(raw, ctx.cluster, ctx.hierarchy, source="DFF letter Table 1 (cpu-mic)")
