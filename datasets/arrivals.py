"""Load: how fast the jobs of any workload arrive.

A trace played at its own pace on a simulated cluster of another size may
never contend for it (every scheduler then gives the same schedule, and an
experiment tests nothing).  ``arrivals:`` in any workload rescales the
submit times, keeping their order and the first arrival::

    workload:
      kind: swim
      files: [FB-2009_samples_24_times_1hr_0.tsv]
      arrivals: {compress: 20}          # every gap between arrivals / 20
    workload:
      kind: google-2011
      ...
      arrivals: {offered_load: 0.9}     # gaps scaled so the offered load is 0.9

*Offered load* is the work the jobs bring per second of their arrival span,
against the cluster's capacity, for the resource where that ratio is
highest::

    offered_load = max_r  sum_jobs(tasks * demand_r * mean duration)
                          / (capacity_r * (last submit - first submit))

Above 1 the cluster cannot keep up over the span and queues grow; well below
1 jobs rarely wait (unless they arrive in bursts).  A workload whose jobs all
arrive at once has no span, so ``offered_load`` cannot be set for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import Field, ValidationError, model_validator

from hierfair.errors import SpecError, from_pydantic
from hierfair.fields import MAX_TIME, Strict
from hierfair.sim.jobtable import JobTable
from hierfair.sim.model import Cluster, Job, Workload, job_columns


class Arrivals(Strict):
    #: Divide every gap between arrivals by this (2: twice as fast).
    compress: float | None = Field(None, gt=0, le=1e9)
    #: Scale the gaps so that the offered load (module docstring) is this.
    offered_load: float | None = Field(None, gt=0, le=1e6)
    #: Closed loop: each leaf submits its next job only when its previous one
    #: finishes (H-DRF §5.2), and not before the job's own submit time.
    sequential: bool = False

    @model_validator(mode="after")
    def _one(self) -> Arrivals:
        if self.compress is not None and self.offered_load is not None:
            raise ValueError("give one of compress or offered_load")
        if self.compress is None and self.offered_load is None and not self.sequential:
            raise ValueError("give one of compress or offered_load, or sequential: true")
        if self.sequential and self.offered_load is not None:
            raise ValueError("offered_load needs open arrivals (sequential ones depend on "
                             "the schedule)")
        return self


def split(data: Mapping[str, Any]) -> tuple[dict[str, Any], Arrivals | None]:
    """The workload's own params, and its ``arrivals:`` if any."""
    params = dict(data)
    raw = params.pop("arrivals", None)
    if raw is None:
        return params, None
    try:
        return params, Arrivals.model_validate(raw)
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="workload.arrivals", model=Arrivals) from None


def offered_load(workload: Workload, cluster: Cluster) -> float:
    """The workload's offered load on ``cluster`` (module docstring); inf when
    every job arrives at once, 0 for no jobs."""
    if not workload.jobs:
        return 0.0
    work = np.zeros(cluster.n_resources)
    for job in workload.jobs:  # (a JobTable's jobs made one at a time)
        work += job.demand * float(job.durations.sum())
    submits = job_columns(workload.jobs).submit
    span = float(submits.max()) - float(submits.min())
    if span <= 0:
        return float("inf")
    return float(np.max(work / (cluster.total * span)))


def _sequential(workload: Workload) -> Workload:
    """Each job waits for the previous job of its leaf (in arrival order)."""
    last: dict[int, int] = {}
    cols = job_columns(workload.jobs)
    after = np.empty(len(cols.leaf), dtype=np.int64)
    for job, leaf in enumerate(cols.leaf.tolist()):
        after[job] = last.get(leaf, -1)
        last[leaf] = job
    jobs = (workload.jobs.with_columns(after=after) if isinstance(workload.jobs, JobTable)
            else tuple(replace(job, after=int(a)) for job, a in zip(workload.jobs, after)))
    return replace(workload, jobs=jobs,
                   source=f"{workload.source}; each leaf's jobs in sequence")


def apply(workload: Workload, arrivals: Arrivals | None, cluster: Cluster) -> Workload:
    """``workload`` with its arrival gaps rescaled as ``arrivals`` says."""
    if arrivals is None:
        return workload
    if arrivals.sequential:
        workload = _sequential(workload)
    if arrivals.compress is None and arrivals.offered_load is None:
        return workload
    if arrivals.compress is not None:
        scale, what = 1.0 / arrivals.compress, f"compressed x{arrivals.compress:g}"
    else:
        load = offered_load(workload, cluster)
        if not np.isfinite(load) or load <= 0:
            raise SpecError("the jobs all arrive at once (or there are none): their gaps "
                            "cannot be scaled to an offered load",
                            where="workload.arrivals.offered_load",
                            value=arrivals.offered_load)
        scale = load / arrivals.offered_load
        what = f"scaled x{scale:.4g} to offered load {arrivals.offered_load:g}"
    cols = job_columns(workload.jobs)
    t0 = float(cols.submit.min()) if len(cols.submit) else 0.0
    submits = t0 + (cols.submit - t0) * scale  # each the same float as one at a time
    if isinstance(workload.jobs, JobTable):
        jobs: Sequence[Job] = workload.jobs.with_columns(submit=submits)
    else:
        jobs = tuple(replace(job, submit=s) for job, s in zip(workload.jobs, submits.tolist()))
    last = float(submits.max()) if len(submits) else 0.0
    if last > MAX_TIME:
        raise SpecError(f"stretches the last arrival to {last:.4g} s, past the limit of "
                        f"{MAX_TIME:g} s", where="workload.arrivals",
                        value=arrivals.model_dump(exclude_none=True))
    return replace(workload, jobs=jobs, source=f"{workload.source}; arrivals {what}")
