"""SWIM Facebook workloads: a day of MapReduce jobs from bytes to tasks.

Source: SWIM (Statistical Workload Injector for MapReduce, UC Berkeley),
``workloadSuite/FB-2009_*`` and ``FB-2010_*``: each file is a synthesized day
(24 one-hour samples) of Facebook Hadoop jobs.  Provenance, licence and format:
``../shared/traces/PROVENANCE.md``.  Files are read from a path or a data
directory, never bundled.

Each row is ``job id, submit s, gap s, map input bytes, shuffle bytes, reduce
output bytes``.  SWIM gives no tasks, durations, CPU or memory; our rules
(every number a parameter):

* map tasks = ``ceil(input / block_mb)`` (HDFS blocks, 128 MB), at least 1;
  reduce tasks = ``ceil(shuffle / reduce_mb)`` (1 GB each), none without
  shuffle; both capped at ``max_tasks``;
* a map task runs ``task_overhead_s + (input / maps) / map_mb_s``; a reduce
  task ``task_overhead_s + ((shuffle + output) / reduces) / reduce_mb_s``;
* a job becomes a map job and, if it shuffles, a reduce job submitted at the
  same time (no stage barrier is modelled), with ``map_demand`` and
  ``reduce_demand`` per task;
* jobs go to leaves by ``assign``: ``random`` (seeded), ``round-robin`` in file
  order, or ``hash`` of the job id (the same job, the same leaf, whatever the
  seed), over ``queues`` (default: every leaf);
* ``files`` are concatenated, each next day shifted by 86,400 s; ``repeat: 7``
  plays the list seven times: a week from one day.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from hierfair.datasets import facebook
from hierfair.datasets.base import (
    BuildContext,
    RawJob,
    finalize,
    identify,
    order_note,
    resolve_traces,
)
from hierfair.datasets.tables import read_table
from hierfair.fields import Strict
from hierfair.sim.model import Workload

COLUMNS = ("job", "submit", "gap", "map_input_bytes", "shuffle_bytes", "reduce_output_bytes",
           "input_path", "extra1", "extra2")
NUMERIC = ("submit", "gap", "map_input_bytes", "shuffle_bytes", "reduce_output_bytes")
DAY = 86_400.0
MB = 1024.0 * 1024.0
HOW_TO_GET = ("SWIM's FB-2009/FB-2010 day files are in the SWIMProjectUCB/SWIM repository, "
              "folder workloadSuite/ (see ../shared/traces/PROVENANCE.md).")


class Params(Strict):
    kind: Literal["swim"]
    files: list[str] = Field(min_length=1)
    repeat: PositiveInt = Field(1, le=366)  # days played; a year at most
    limit: PositiveInt | None = None  # first N jobs of each file
    block_mb: PositiveFloat = 128.0
    reduce_mb: PositiveFloat = 1024.0
    map_mb_s: PositiveFloat = 50.0
    reduce_mb_s: PositiveFloat = 20.0
    task_overhead_s: NonNegativeFloat = 2.0
    max_tasks: PositiveInt = 2000
    map_demand: dict[str, NonNegativeFloat] = {"cpu": 1.0, "mem": 1.0}
    reduce_demand: dict[str, NonNegativeFloat] = {"cpu": 1.0, "mem": 1.5}
    assign: Literal["random", "round-robin", "hash"] = "random"
    queues: list[str] | None = None
    on_bad_line: Literal["error", "skip"] = "error"
    #: When a file is missing: stop (none) or generate facebook-bins jobs
    #: (``fallback_jobs`` of them over a day, on the same queues) instead.
    fallback: Literal["none", "synthetic"] = "none"
    fallback_jobs: PositiveInt = 500


def read_swim(path, limit: int | None = None, on_bad_line: str = "error"
              ) -> tuple[pd.DataFrame, int]:
    """One SWIM file as a frame of (job, submit, gap, bytes...) and skipped rows."""
    frame, skipped = read_table(path, COLUMNS, "\t", usecols=COLUMNS[:6], numeric=NUMERIC,
                                required=("job", *NUMERIC), nonnegative=NUMERIC,
                                on_bad_line=on_bad_line, ordered="submit")
    return (frame.head(limit) if limit else frame), skipped


def build(p: Params, ctx: BuildContext) -> Workload:
    leaves = p.queues or [ctx.hierarchy.paths[i] for i in ctx.hierarchy.leaves]
    rng = ctx.rng()
    raw: list[RawJob] = []
    skipped = 0
    day = 0
    paths, missing = resolve_traces(p.files, "workload.files", ctx, HOW_TO_GET, p.fallback)
    if missing:
        return _fallback(p, ctx, leaves, missing)
    notes: list[str] = []
    for _ in range(p.repeat):
        for path in paths:
            frame, bad = read_swim(path, p.limit, p.on_bad_line)
            if day < len(paths):  # the same file played again says nothing new
                notes += order_note(frame.attrs.get("out_of_order", 0), path.name)
            skipped += bad
            raw.extend(_jobs(frame, p, day * DAY, leaves, rng, path.name))
            day += 1
    note = f", {skipped} bad lines skipped" if skipped else ""
    source = f"SWIM trace {', '.join(p.files)} x{p.repeat} ({len(raw)} stage jobs{note})"
    if skipped:
        notes.append(f"{skipped} bad lines skipped (on_bad_line: skip)")
    return finalize(raw, ctx.cluster, ctx.hierarchy, source=source,
                    inputs=identify(paths, p.files), notes=notes, skipped_lines=skipped)


def _fallback(p: Params, ctx: BuildContext, leaves: list[str], missing: str) -> Workload:
    days = p.repeat * len(p.files)
    jobs = min(p.fallback_jobs, p.limit or p.fallback_jobs) * days
    params = facebook.Params(kind="facebook-bins", jobs=jobs, gpu_queues=[],
                             large_queues=leaves, small_queues=leaves,
                             max_tasks=min(p.max_tasks, 1500), interarrival=DAY * days / jobs)
    wl = facebook.build(params, ctx)
    why = (f"SWIM file {missing} not found; facebook-bins generator stands in "
           f"({jobs} jobs, fallback: synthetic)")
    return replace(wl, source=f"{wl.source} -- fallback: SWIM file {missing} not found",
                   fallback=why)


def _jobs(frame: pd.DataFrame, p: Params, offset: float, leaves: list[str],
          rng: np.random.Generator, file: str) -> list[RawJob]:
    inp = frame["map_input_bytes"].to_numpy() / MB
    shuffle = frame["shuffle_bytes"].to_numpy() / MB
    out = frame["reduce_output_bytes"].to_numpy() / MB
    maps = np.clip(np.ceil(inp / p.block_mb), 1, p.max_tasks).astype(int)
    reduces = np.clip(np.ceil(shuffle / p.reduce_mb), 0, p.max_tasks).astype(int)
    map_s = p.task_overhead_s + inp / maps / p.map_mb_s
    reduce_s = p.task_overhead_s + (shuffle + out) / np.maximum(reduces, 1) / p.reduce_mb_s
    ids = frame["job"].tolist()
    if p.assign == "random":
        pick = rng.integers(0, len(leaves), len(ids))
    elif p.assign == "round-robin":
        pick = np.arange(len(ids)) % len(leaves)
    else:
        pick = np.array([zlib.crc32(j.encode()) % len(leaves) for j in ids])
    submit = frame["submit"].to_numpy() + offset
    lines = frame["line"].tolist()
    jobs = []
    for i, job in enumerate(ids):
        queue, where = leaves[pick[i]], f"{file}: line {lines[i]}"
        jobs.append(RawJob(queue, p.map_demand, np.full(maps[i], map_s[i]), submit[i],
                           f"{job}-map", where))
        if reduces[i]:
            jobs.append(RawJob(queue, p.reduce_demand, np.full(reduces[i], reduce_s[i]),
                               submit[i], f"{job}-reduce", where))
    return jobs
