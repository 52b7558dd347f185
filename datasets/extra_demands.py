"""Extra demands: give some of a workload's jobs a resource their source does
not ask for -- GPUs (or MICs) for a share of a trace's jobs or queues.

Traces name CPUs and memory only; H-DRF §5.2's Facebook experiment gives the
jobs of one leaf "1 GPU and no CPU".  Any workload kind accepts::

    workload:
      kind: google-2011
      files: [...]
      extra_demands:
        - {resource: gpu, amount: 1, queues: [n1/n12], replaces: [cpu]}  # every job there
        - {resource: gpu, amount: 2, share: 0.1}                         # 10 % of all jobs

Each entry picks jobs -- those of ``queues`` (leaf paths, or internal nodes
for every leaf below), and of those a seeded random ``share`` (the run seed;
every algorithm of a run sees the same choice) -- and sets ``resource`` to
``amount`` per task, zeroing the resources in ``replaces``.  Entries apply in
order.  A chosen job that then fits on no server is an error naming the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import Field, PositiveFloat, ValidationError

from hierfair.datasets.base import BuildContext
from hierfair.errors import SpecError, did_you_mean, from_pydantic
from hierfair.fields import Strict
from hierfair.sim.model import Workload

#: Salt of the random stream that picks jobs (independent of the kinds' own).
SALT = 7_000_417


class ExtraDemand(Strict):
    resource: str
    amount: PositiveFloat
    #: jobs of these nodes' leaves (default: every job)
    queues: list[str] | None = None
    #: of those, this fraction of jobs, picked at random per run seed
    share: float = Field(1.0, gt=0, le=1)
    #: resources the chosen jobs no longer ask for ("1 GPU and no CPU")
    replaces: list[str] = Field(default_factory=list)


def split(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[ExtraDemand]]:
    """The workload's own params, and its ``extra_demands:``."""
    params = dict(data)
    raw = params.pop("extra_demands", None)
    if raw is None:
        return params, []
    if not isinstance(raw, list):
        raise SpecError("a list of {resource, amount, queues?, share?, replaces?}",
                        where="workload.extra_demands", value=raw)
    out, problems = [], []
    for i, item in enumerate(raw):
        try:
            out.append(ExtraDemand.model_validate(item))
        except ValidationError as exc:
            problems.append(from_pydantic(exc, prefix=f"workload.extra_demands[{i}]",
                                          model=ExtraDemand))
    if problems:
        raise SpecError.combine(problems)
    return params, out


def apply(workload: Workload, extras: list[ExtraDemand], ctx: BuildContext) -> Workload:
    if not extras:
        return workload
    cluster, h = ctx.cluster, ctx.hierarchy
    rng = ctx.rng(SALT)
    jobs = list(workload.jobs)
    said = []
    for i, extra in enumerate(extras):
        where = f"workload.extra_demands[{i}]"
        for name in [extra.resource, *extra.replaces]:
            if name not in cluster.resources:
                raise SpecError("not a resource of the cluster;"
                                f"{did_you_mean(name, cluster.resources)} resources: "
                                f"{', '.join(cluster.resources)}",
                                where=where, value=name)
        leaves = None
        if extra.queues is not None:
            leaves = set()
            for q in extra.queues:
                if q not in h:
                    raise SpecError("no such node in the hierarchy;"
                                    + did_you_mean(q, h.paths[1:]), where=f"{where}.queues",
                                    value=q)
                node = h.index(q)
                leaves.update(x for x in range(node, int(h.subtree_end[node])) if h.is_leaf(x))
        chosen = [k for k, job in enumerate(jobs) if leaves is None or job.leaf in leaves]
        if extra.share < 1:  # one draw per candidate, so the choice is stable per seed
            chosen = [k for k, u in zip(chosen, rng.random(len(chosen))) if u < extra.share]
        r = cluster.resources.index(extra.resource)
        gone = [cluster.resources.index(x) for x in extra.replaces]
        for k in chosen:
            demand = jobs[k].demand.copy()
            demand[gone] = 0.0
            demand[r] = extra.amount
            if not cluster.fits_somewhere(demand):
                raise SpecError(f"gives job {jobs[k].name or jobs[k].id} a task that fits on "
                                "no server", where=where, value=dict(zip(cluster.resources,
                                                                         demand.tolist())))
            jobs[k] = replace(jobs[k], demand=demand)
        said.append(f"{extra.amount:g} {extra.resource} per task for {len(chosen)} jobs")
    return replace(workload, jobs=tuple(jobs),
                   source=f"{workload.source}; extra demands: {', '.join(said)}")
