"""Explicit job lists, and the checks every workload kind's jobs go through.

::

    workload:
      jobs:
        - {queue: ads/prod, tasks: 100, demand: {cpu: 1, mem: 4}, duration: 10, submit: 0}
        - {queue: dev, tasks: 3, demand: {cpu: 3, mem: 1}, duration: [5, 7, 9]}

``queue`` is a leaf's slash path; ``demand`` is per task (a resource left out
means 0); ``duration`` is one number for every task or a list with one per
task; ``submit`` defaults to 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from hierfair.errors import SpecError
from hierfair.model import Cluster, Hierarchy, Job, Workload
from hierfair.spec_base import Strict


class JobSpec(Strict):
    queue: str
    tasks: PositiveInt = 1
    demand: dict[str, NonNegativeFloat]
    duration: PositiveFloat | list[PositiveFloat]
    submit: NonNegativeFloat = 0.0
    name: str | None = None


class Params(Strict):
    kind: Literal["jobs"] = "jobs"
    jobs: list[JobSpec] = Field(min_length=1)


@dataclass(frozen=True)
class RawJob:
    """A job as a workload kind produces it, before checking against the spec."""

    queue: str
    demand: dict[str, float]
    durations: Sequence[float] | np.ndarray
    submit: float = 0.0
    name: str = ""
    where: str = ""  # where it came from (field path or file:line), for messages


def build(params: Params, cluster: Cluster, hierarchy: Hierarchy, seed: int,
          source: str) -> Workload:
    raw = []
    for i, j in enumerate(params.jobs):
        where = f"workload.jobs[{i}]"
        durations = j.duration if isinstance(j.duration, list) else [j.duration] * j.tasks
        if len(durations) != j.tasks:
            raise SpecError(f"needs one duration per task ({j.tasks})",
                            where=f"{where}.duration", value=len(durations))
        raw.append(RawJob(j.queue, j.demand, durations, j.submit, j.name or f"job{i}", where))
    return finalize(raw, cluster, hierarchy, source="explicit job list")


def finalize(raw: Sequence[RawJob], cluster: Cluster, hierarchy: Hierarchy,
             source: str) -> Workload:
    """Check jobs against the cluster and hierarchy, then number them in
    arrival order (submit time; listed order breaks ties)."""
    jobs = []
    for r in raw:
        if r.queue not in hierarchy:
            raise SpecError("no such queue in the hierarchy", where=f"{r.where}.queue",
                            value=r.queue)
        leaf = hierarchy.index(r.queue)
        if not hierarchy.is_leaf(leaf):
            below = range(leaf, int(hierarchy.subtree_end[leaf]))
            under = [hierarchy.paths[x] for x in below if hierarchy.is_leaf(x)]
            raise SpecError(f"is an internal node; jobs go to leaves such as {under[:3]}",
                            where=f"{r.where}.queue", value=r.queue)
        for res in r.demand:
            if res not in cluster.resources:
                raise SpecError(f"unknown resource; the cluster has {list(cluster.resources)}",
                                where=f"{r.where}.demand.{res}", value=res)
        demand = cluster.vector(r.demand)
        if not (demand > 0).any():
            raise SpecError("a task must demand some resource", where=f"{r.where}.demand",
                            value=dict(r.demand))
        if not cluster.fits_somewhere(demand):
            biggest = cluster.capacities.max(axis=0)
            raise SpecError(
                "a task of this job fits on no server (largest server capacity per "
                f"resource: {dict(zip(cluster.resources, biggest.tolist()))})",
                where=f"{r.where}.demand", value=dict(r.demand))
        demand.setflags(write=False)
        durations = np.asarray(r.durations, dtype=np.float64)
        jobs.append((float(r.submit), leaf, demand, durations, r.name))
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][0])  # stable: listed order on ties
    return Workload(
        jobs=tuple(Job(id=k, leaf=jobs[i][1], submit=jobs[i][0], demand=jobs[i][2],
                       durations=jobs[i][3], name=jobs[i][4]) for k, i in enumerate(order)),
        source=source,
    )
