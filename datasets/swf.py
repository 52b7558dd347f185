"""Standard Workload Format (SWF) traces of the Parallel Workloads Archive.

An SWF file has one job per line with 18 whitespace-separated fields; lines
starting with ``;`` are header comments; -1 means unknown.  Fields used:
2 submit time (s), 4 run time (s), 5 allocated processors (8, requested,
when -1), 7 used memory and 10 requested memory (KB per processor; requested
preferred, used when -1), 12 user, 13 group, 15 queue.

Rules (parameters in brackets):

* a job becomes ``processors`` tasks of ``<cpu: cpu_per_processor, mem:
  memory in GB>`` lasting its run time; a job with no memory figure asks for
  ``default_mem_gb``;
* jobs with run time <= 0 or no processor count are dropped and counted (they
  never ran); processors above ``max_tasks`` are capped;
* the job goes to leaf ``leaves[id % L]`` where ``id`` is its ``by`` field
  (user, group or queue number) and ``leaves`` the hierarchy's leaves in
  pre-order (or ``queues``) -- one user (group, queue), one leaf.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import NonNegativeFloat, PositiveFloat, PositiveInt

from hierfair.datasets.base import (
    BuildContext,
    RawJob,
    finalize,
    identify,
    order_note,
    resolve_trace,
)
from hierfair.datasets.tables import read_table
from hierfair.fields import Strict
from hierfair.sim.model import Workload

FIELDS = ("job", "submit", "wait", "run", "procs", "cpu_used", "mem_used", "procs_req",
          "time_req", "mem_req", "status", "user", "group", "executable", "queue", "partition",
          "preceding", "think")
HOW_TO_GET = ("SWF logs are published by the Parallel Workloads Archive "
              "(cs.huji.ac.il/labs/parallel/workload).")


class Params(Strict):
    kind: Literal["swf"]
    file: str
    by: Literal["user", "group", "queue"] = "user"
    queues: list[str] | None = None
    cpu_per_processor: PositiveFloat = 1.0
    default_mem_gb: NonNegativeFloat = 1.0
    max_tasks: PositiveInt = 4096
    cpu_resource: str = "cpu"
    mem_resource: str = "mem"
    on_bad_line: Literal["error", "skip"] = "error"


def build(p: Params, ctx: BuildContext) -> Workload:
    path = resolve_trace(p.file, ctx, "workload.file", HOW_TO_GET)
    frame, bad = read_table(path, FIELDS, r"\s+", usecols=FIELDS, numeric=FIELDS,
                            required=FIELDS, comment=";", on_bad_line=p.on_bad_line,
                            compression="infer", ordered="submit")
    procs = frame["procs"].where(frame["procs"] > 0, frame["procs_req"])
    mem_kb = frame["mem_req"].where(frame["mem_req"] > 0, frame["mem_used"])
    ran = (frame["run"] > 0) & (procs > 0)
    leaves = p.queues or [ctx.hierarchy.paths[i] for i in ctx.hierarchy.leaves]
    raw = []
    for row, n, kb in zip(frame[ran].itertuples(), procs[ran], mem_kb[ran]):
        owner = int(getattr(row, p.by))
        queue = leaves[owner % len(leaves)] if owner >= 0 else leaves[0]
        mem = kb / (1024.0 * 1024.0) if kb > 0 else p.default_mem_gb
        demand = {p.cpu_resource: p.cpu_per_processor}
        if mem > 0:
            demand[p.mem_resource] = mem
        raw.append(RawJob(queue, demand, np.full(min(int(n), p.max_tasks), float(row.run)),
                          float(row.submit), f"swf{int(row.job)}",
                          f"{path.name}: line {row.line}"))
    dropped = int((~ran).sum())
    notes = [f"{dropped} jobs that never ran dropped"] if dropped else []
    if bad:
        notes.append(f"{bad} bad lines skipped")
    extra = f" ({'; '.join(notes)})" if notes else ""
    told = order_note(frame.attrs.get("out_of_order", 0), path.name)
    if bad:
        told.append(f"{bad} bad lines skipped (on_bad_line: skip)")
    return finalize(raw, ctx.cluster, ctx.hierarchy, source=f"SWF trace {p.file}{extra}",
                    inputs=identify([path], [p.file]), notes=told, skipped_lines=bad)
