"""Google cluster-data 2011: jobs sampled from ``task_events`` parts.

Source: Google cluster-usage traces, clusterdata-2011-2 (Reiss, Wilkes,
Hellerstein, 2011; CC-BY 4.0).  Schema and provenance:
``../shared/traces/google-2011/PROVENANCE.md``.  Files are read from a path or
a data directory, never bundled.  The MCH letter's run-time comparison
schedules jobs sampled from this trace.

Per task: its CPU and memory request (normalised to the largest machine,
0-1; the last non-empty value of any of its events) and its run time: from
its last SCHEDULE to its last FINISH, when the FINISH comes after it (tasks
that never finish inside the files have no run time: dropped, or given
``missing_duration``).  Times 0 (before the window) and 2^63-1 (after it)
count as unknown.

Per job: its tasks with a run time; its per-task demand is the *median*
request of those tasks (our Job has one demand vector), times ``cpu_scale`` /
``mem_scale`` (default: the largest server's capacity of that resource, as the
trace normalises to the largest machine); its submit time is its first task
SUBMIT, or its SUBMIT in ``job_events`` files when given, relative to the
earliest job kept.  Jobs with no positive request are dropped.  ``sample: N``
keeps N jobs drawn by seed.  Jobs go to leaves by ``assign``: ``user`` (hash
of the trace's user; one user, one leaf) or ``random``.

``google-synthetic`` draws jobs from the marginal distributions of these
quantities, fitted to parts 00000-00001 (:data:`CALIBRATION`; regenerate with
``python -m hierfair.datasets.google FILE...``).  Its marginals are drawn
independently -- a simplification the source line of every report names.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import zlib
from dataclasses import replace
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, PositiveFloat, PositiveInt

from hierfair.datasets.base import BuildContext, RawJob, finalize, identify, resolve_traces
from hierfair.datasets.tables import read_table
from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Workload

TASK_COLUMNS = ("time", "missing", "job", "task", "machine", "event", "user", "sched_class",
                "priority", "cpu", "mem", "disk", "constraint")
JOB_COLUMNS = ("time", "missing", "job", "event", "user", "sched_class", "name", "logical")
SUBMIT, SCHEDULE, FINISH = 0, 1, 4
NEVER = 2**63 - 1
HOW_TO_GET = ("Google publishes clusterdata-2011-2 (500 parts per table) in its public cloud "
              "storage bucket clusterdata-2011-2; see ../shared/traces/google-2011/PROVENANCE.md.")


class Params(Strict):
    kind: Literal["google-2011"]
    files: list[str] = Field(min_length=1)  # task_events parts
    job_events: list[str] = []
    sample: PositiveInt | None = None
    cpu_scale: PositiveFloat | None = None
    mem_scale: PositiveFloat | None = None
    cpu_resource: str = "cpu"
    mem_resource: str = "mem"
    missing_duration: Literal["drop"] | PositiveFloat = "drop"
    max_tasks: PositiveInt | None = None
    assign: Literal["user", "random"] = "user"
    queues: list[str] | None = None
    on_bad_line: Literal["error", "skip"] = "error"
    #: When a file is missing: stop (none) or use google-synthetic instead.
    fallback: Literal["none", "synthetic"] = "none"


def read_task_events(path, on_bad_line: str = "error") -> tuple[pd.DataFrame, int]:
    frame, bad = read_table(path, TASK_COLUMNS, ",",
                            usecols=("time", "job", "task", "event", "user", "cpu", "mem"),
                            numeric=("time", "job", "task", "event", "cpu", "mem"),
                            required=("time", "job", "task", "event"),
                            nonnegative=("time", "job", "task", "event", "cpu", "mem"),
                            on_bad_line=on_bad_line)
    return frame.drop(columns="line"), bad


def job_table(events: pd.DataFrame, missing_duration: float | str = "drop") -> pd.DataFrame:
    """Per job: tasks, median CPU and memory request, median run time, submit, user."""
    ev = events
    known = (ev["time"] > 0) & (ev["time"] < NEVER)
    key = ["job", "task"]
    sched = ev[known & (ev["event"] == SCHEDULE)].groupby(key)["time"].max()
    fin = ev[known & (ev["event"] == FINISH)].groupby(key)["time"].max()
    req = ev.dropna(subset=["cpu", "mem"]).groupby(key)[["cpu", "mem"]].last()
    sub = ev[known & (ev["event"] == SUBMIT)].groupby("job")["time"].min()
    user = ev.groupby("job")["user"].first()
    tasks = req.join(sched.rename("scheduled"), how="left").join(fin.rename("finished"))
    run = (tasks["finished"] - tasks["scheduled"]) / 1e6
    run = run.where(run > 0)
    if missing_duration == "drop":
        tasks = tasks.assign(run=run).dropna(subset=["run"])
    else:
        tasks = tasks.assign(run=run.fillna(float(missing_duration)))
    jobs = tasks.groupby("job").agg(tasks=("run", "size"), cpu=("cpu", "median"),
                                    mem=("mem", "median"), duration=("run", "median"))
    jobs = jobs.join(sub.rename("submit") / 1e6).join(user)
    first_seen = ev[known].groupby("job")["time"].min() / 1e6
    jobs["submit"] = jobs["submit"].fillna(first_seen)
    return jobs[(jobs["cpu"] > 0) | (jobs["mem"] > 0)].dropna(subset=["submit"])


def build(p: Params, ctx: BuildContext) -> Workload:
    paths, missing = resolve_traces(p.files, "workload.files", ctx, HOW_TO_GET, p.fallback)
    event_paths: list = []
    if not missing:
        event_paths, missing = resolve_traces(p.job_events, "workload.job_events", ctx,
                                              HOW_TO_GET, p.fallback)
    if missing:
        synthetic = SyntheticParams(kind="google-synthetic", jobs=p.sample or 1000,
                                    cpu_scale=p.cpu_scale, mem_scale=p.mem_scale,
                                    cpu_resource=p.cpu_resource, mem_resource=p.mem_resource,
                                    queues=p.queues)
        wl = build_synthetic(synthetic, ctx)
        why = (f"Google file {missing} not found; google-synthetic generator stands in "
               f"({synthetic.jobs} jobs, fallback: synthetic)")
        return replace(wl, source=f"{wl.source} -- fallback: {missing} not found", fallback=why)
    jobs, skipped = _trace_jobs(_identity(paths), _identity(event_paths), p.on_bad_line,
                                p.missing_duration)
    jobs = jobs.copy()
    if p.sample is not None and p.sample < len(jobs):
        pick = ctx.rng().choice(len(jobs), size=p.sample, replace=False)
        jobs = jobs.iloc[np.sort(pick)]
    note = f", {skipped} bad lines skipped" if skipped else ""
    source = f"Google cluster-data 2011 {', '.join(p.files)} ({len(jobs)} jobs{note})"
    notes = [f"{skipped} bad lines skipped (on_bad_line: skip)"] if skipped else []
    inputs = identify([*paths, *event_paths], [*p.files, *p.job_events])
    return replace(_workload(jobs, p, ctx, source, rng_salt=1), inputs=inputs,
                   notes=tuple(notes), skipped_lines=skipped)


def _identity(paths: list) -> tuple[tuple[str, int, int], ...]:
    """Each file as (path, size, mtime): what the memo below is keyed by."""
    stats = [(str(path), os.stat(path)) for path in paths]
    return tuple((path, st.st_size, st.st_mtime_ns) for path, st in stats)


@functools.lru_cache(maxsize=4)
def _trace_jobs(files: tuple, events: tuple, on_bad_line: str,
                missing_duration: float | str) -> tuple[pd.DataFrame, int]:
    """The job table of some task_events parts (and job_events submits).

    Memoised per process by file identity: a spec's seeds and grid points
    sample from the same parts, and parsing them (~2.5 s per part) dominated
    validate and run.  A changed file has a new size or mtime, so a new key;
    callers get a copy, never the cached frame."""
    frames, skipped = [], 0
    for path, _, _ in files:
        frame, bad = read_task_events(path, on_bad_line)
        frames.append(frame)
        skipped += bad
    jobs = job_table(pd.concat(frames, ignore_index=True), missing_duration)
    if events:
        jobs, bad = _job_submits(jobs, [path for path, _, _ in events], on_bad_line)
        skipped += bad
    return jobs, skipped


def _job_submits(jobs: pd.DataFrame, paths: list, on_bad_line: str
                 ) -> tuple[pd.DataFrame, int]:
    times, skipped = [], 0
    for path in paths:
        frame, bad = read_table(path, JOB_COLUMNS, ",", usecols=("time", "job", "event"),
                                numeric=("time", "job", "event"), required=("time", "job"),
                                on_bad_line=on_bad_line)
        skipped += bad
        ok = (frame["event"] == SUBMIT) & (frame["time"] > 0) & (frame["time"] < NEVER)
        times.append(frame[ok].groupby("job")["time"].min() / 1e6)
    submit = pd.concat(times).groupby(level=0).min()
    return jobs.assign(submit=submit.reindex(jobs.index).fillna(jobs["submit"])), skipped


def _workload(jobs: pd.DataFrame, p: Params | SyntheticParams, ctx: BuildContext,
              source: str, rng_salt: int) -> Workload:
    cluster = ctx.cluster
    for r in (p.cpu_resource, p.mem_resource):
        if r not in cluster.resources:
            raise SpecError(f"the Google trace maps CPU and memory onto cluster resources; "
                            f"the cluster has {list(cluster.resources)}",
                            where="workload", value=r)
    biggest = cluster.capacities.max(axis=0)
    cpu_scale = p.cpu_scale or float(biggest[cluster.resources.index(p.cpu_resource)])
    mem_scale = p.mem_scale or float(biggest[cluster.resources.index(p.mem_resource)])
    leaves = p.queues or [ctx.hierarchy.paths[i] for i in ctx.hierarchy.leaves]
    if getattr(p, "assign", "random") == "user" and "user" in jobs:
        pick = [zlib.crc32(str(u).encode()) % len(leaves) for u in jobs["user"]]
    else:
        pick = ctx.rng(rng_salt).integers(0, len(leaves), len(jobs)).tolist()
    t0 = float(jobs["submit"].min()) if len(jobs) else 0.0
    cap = getattr(p, "max_tasks", None)
    raw = []
    for k, (job, row) in enumerate(jobs.iterrows()):
        n = int(row["tasks"]) if cap is None else min(int(row["tasks"]), cap)
        demand = {p.cpu_resource: float(row["cpu"]) * cpu_scale,
                  p.mem_resource: float(row["mem"]) * mem_scale}
        raw.append(RawJob(leaves[pick[k]], demand, np.full(n, float(row["duration"])),
                          float(row["submit"]) - t0, f"g{job}", f"{source}: job {job}"))
    return finalize(raw, cluster, ctx.hierarchy, source=source)


# -- google-synthetic ---------------------------------------------------------
#: Quantiles (0, 1/40, ..., 1) of per-job statistics of clusterdata-2011-2
#: task_events parts 00000-00001 (jobs with at least one finished task),
#: computed by ``python -m hierfair.datasets.google``.
CALIBRATION: dict[str, list[float]] = {
    "tasks": [
        1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
        1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0,
        3.0, 9.0, 15.0, 34.0, 86.0, 413.0, 2070.0
    ],
    "cpu": [
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.000625, 0.006248, 0.006248, 0.006248, 0.006248,
        0.006248, 0.006248, 0.0075, 0.009369, 0.009369, 0.0125, 0.0125, 0.0125, 0.0125, 0.0125,
        0.01874, 0.02499, 0.02499, 0.03125, 0.03125, 0.03125, 0.03125, 0.03125, 0.03125,
        0.03125, 0.04688, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.1938
    ],
    "mem": [
        1.5e-05, 0.000155, 0.000155, 0.000155, 0.000155, 0.000155, 0.000155, 0.001554, 0.001554,
        0.001554, 0.001972, 0.001987, 0.002331, 0.002796, 0.002796, 0.003109, 0.003975,
        0.004478, 0.004662, 0.004662, 0.004662, 0.006416, 0.007767, 0.00795, 0.01125, 0.01125,
        0.01244, 0.01244, 0.01244, 0.01347, 0.0159, 0.0159, 0.0159, 0.0159, 0.02386, 0.02545,
        0.0318, 0.03339, 0.04773, 0.06213, 0.1272
    ],
    "duration": [
        13.402153, 17.797852, 20.815512, 22.425797, 23.77632, 24.968016, 26.056949, 27.15421,
        28.425974, 29.649774, 30.677623, 33.025971, 34.995989, 37.836163, 42.873146, 52.25495,
        61.994084, 69.68269, 77.008066, 84.806377, 97.786547, 106.742804, 115.910674,
        126.330307, 146.750297, 163.364527, 177.97924, 191.012972, 209.618643, 229.338105,
        261.722634, 297.307768, 345.080679, 385.976166, 468.55428, 528.279355, 637.003729,
        734.000774, 1120.491269, 1800.196382, 7706.953267
    ],
}


class SyntheticParams(Strict):
    kind: Literal["google-synthetic"] = "google-synthetic"
    jobs: PositiveInt = 1000
    span: PositiveFloat = 3600.0  # submissions spread uniformly over this many seconds
    cpu_scale: PositiveFloat | None = None
    mem_scale: PositiveFloat | None = None
    cpu_resource: str = "cpu"
    mem_resource: str = "mem"
    max_tasks: PositiveInt | None = 1000
    queues: list[str] | None = None


def synthetic_size(p: SyntheticParams) -> tuple[int, int]:
    """Jobs and the expected number of tasks (the calibrated size quantiles, capped)."""
    cap = p.max_tasks or float("inf")
    mean = float(np.mean(np.minimum(CALIBRATION["tasks"], cap)))
    return p.jobs, int(p.jobs * mean) + 1


def _draw(rng: np.random.Generator, quantiles: list[float], n: int) -> np.ndarray:
    q = np.asarray(quantiles)
    return np.interp(rng.random(n), np.linspace(0, 1, len(q)), q)


def build_synthetic(p: SyntheticParams, ctx: BuildContext) -> Workload:
    rng = ctx.rng(2)
    c = CALIBRATION
    jobs = pd.DataFrame({
        "tasks": np.maximum(1, np.round(_draw(rng, c["tasks"], p.jobs))),
        "cpu": _draw(rng, c["cpu"], p.jobs),
        "mem": _draw(rng, c["mem"], p.jobs),
        "duration": np.maximum(1.0, _draw(rng, c["duration"], p.jobs)),
        "submit": np.sort(rng.uniform(0, p.span, p.jobs)),
    })
    jobs = jobs[(jobs["cpu"] > 0) | (jobs["mem"] > 0)]
    source = (f"google-synthetic generator (marginals fitted to clusterdata-2011-2 parts "
              f"00000-00001, drawn independently; seed {ctx.seed})")
    return _workload(jobs, p, ctx, source, rng_salt=3)


def calibrate(paths: list[str], points: int = 41) -> dict[str, list[float]]:
    frames = [read_task_events(path)[0] for path in paths]
    jobs = job_table(pd.concat(frames, ignore_index=True))
    qs = np.linspace(0, 1, points)
    return {col: [float(round(v, 6)) for v in np.quantile(jobs[col], qs)]
            for col in ("tasks", "cpu", "mem", "duration")}


if __name__ == "__main__":  # python -m hierfair.datasets.google FILE...
    print(json.dumps(calibrate(sys.argv[1:]), indent=1))
