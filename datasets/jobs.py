"""Explicit job lists written in the spec.

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

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_serializer

from hierfair.datasets.base import BuildContext, RawJob, finalize
from hierfair.errors import SpecError
from hierfair.fields import Amount, Label, PositiveTime, Strict, Time
from hierfair.sim.model import Workload


class JobSpec(Strict):
    queue: str
    tasks: PositiveInt = 1
    demand: dict[str, Amount]
    duration: PositiveTime | list[PositiveTime]
    submit: Time = 0.0
    name: str | None = None
    #: Server labels its tasks need (placement constraints; the leaf's too).
    requires: list[Label] = Field(default_factory=list)
    #: Its priority: production schedulers admit higher first and preempt
    #: lower first (Kueue, Volcano, YuniKorn); the others ignore it.
    priority: int = Field(0, ge=-(2**31), le=2**31 - 1)
    #: Seconds its preempted tasks keep their servers before they are gone
    #: (overrides ``preemption.eviction_latency``; evictions that complete at
    #: different times, Kueue #13662).
    eviction_latency: Time | None = None

    @model_serializer(mode="wrap")
    def _no_latency_left_out(self, handler: Any) -> Any:
        # a job without one dumps as before, so earlier results keep their keys
        out = handler(self)
        if out.get("eviction_latency", 0) is None:
            del out["eviction_latency"]
        return out


class Params(Strict):
    kind: Literal["jobs"] = "jobs"
    jobs: list[JobSpec] = Field(min_length=1)


def size(params: Params) -> tuple[int, int]:
    return len(params.jobs), sum(j.tasks for j in params.jobs)


def build(params: Params, ctx: BuildContext) -> Workload:
    raw = []
    for i, j in enumerate(params.jobs):
        where = f"workload.jobs[{i}]"
        durations = j.duration if isinstance(j.duration, list) else [j.duration] * j.tasks
        if len(durations) != j.tasks:
            raise SpecError(f"needs one duration per task ({j.tasks})",
                            where=f"{where}.duration", value=len(durations))
        raw.append(RawJob(j.queue, j.demand, durations, j.submit, j.name or f"job{i}", where,
                          frozenset(j.requires), j.priority, j.eviction_latency))
    return finalize(raw, ctx.cluster, ctx.hierarchy, source="explicit job list")
