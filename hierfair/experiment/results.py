"""From one simulation's records to the numbers a comparison reports.

A run's *summary* is one row: makespan, time-averaged utilisation of each
resource, job wait and completion times, and decision-latency statistics.
Decision latencies are wall-clock measurements and so the only columns that
differ between two runs of the same spec and seed (see
:data:`WALL_CLOCK_COLUMNS`).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.experiment.stats import time_average
from hierfair.sim import SimulationResult

#: Columns of runs.parquet that measure the machine, not the schedule.
WALL_CLOCK_COLUMNS: tuple[str, ...] = (
    "latency_mean_ns",
    "latency_p50_ns",
    "latency_p99_ns",
    "scheduling_seconds",
    "started_at",
    "finished_at",
    "wall_seconds",
    "host",
)


#: H-DRF Table 1's Facebook bins: "mice" have at most 19 tasks, "hogs" 500 or more.
MICE_MAX_TASKS = 19
HOGS_MIN_TASKS = 500


def summarize(result: SimulationResult, mice_max_tasks: int = MICE_MAX_TASKS,
              hogs_min_tasks: int = HOGS_MIN_TASKS) -> dict[str, float | int | str]:
    """The metrics of one run, as a flat mapping (one row of runs.parquet)."""
    out: dict[str, float | int | str] = {"makespan": result.makespan}
    # utilisation over the run: to the last finish, or to where it was stopped
    stopped = result.stopped_at
    out["stopped_at"] = float("nan") if stopped is None else stopped
    end = result.makespan if stopped is None else stopped
    integrals = result.utilization_integrals  # a run too long to keep its rows
    if integrals is not None:  # time_average's sum over every row, to the bit
        totals = integrals(end) if end > 0 else [0.0] * len(result.resources)
        for r, total in zip(result.resources, totals, strict=True):
            out[f"util_{r}"] = float(np.float64(total) / end) if end > 0 else total
    else:
        util = result.utilization
        for r in result.resources:
            out[f"util_{r}"] = time_average(util["time"].to_numpy(), util[r].to_numpy(), end)
    jobs = result.jobs
    out["jobs"] = len(jobs)
    counts = result.counts  # from the run's arrays: no task, attempt or decision table built
    out["tasks"] = int(counts["tasks"])
    out["tasks_unfinished"] = int(counts["tasks_unfinished"])
    # A task waited if it started after its job arrived (or never started): a
    # run where none did never contended for the cluster, and cannot tell
    # schedulers apart (the report says so).
    out["tasks_waited"] = int(counts["tasks_waited"])
    out["contended"] = bool(counts["tasks_waited"])
    out["wait_mean"] = float(jobs["wait"].mean()) if len(jobs) else float("nan")
    out["completion_mean"] = float(jobs["completion"].mean()) if len(jobs) else float("nan")
    mice = jobs[jobs["tasks"] <= mice_max_tasks]
    hogs = jobs[jobs["tasks"] >= hogs_min_tasks]
    out["mice"] = len(mice)
    out["wait_median_mice"] = float(mice["wait"].median()) if len(mice) else float("nan")
    out["hogs"] = len(hogs)
    out["wait_median_hogs"] = float(hogs["wait"].median()) if len(hogs) else float("nan")
    for key in ("preemptions", "kills", "task_failures", "preemptions_max_job"):
        out[key] = int(counts[key])
    out["last_preemption"] = float(counts["last_preemption"])
    # a run stopped in a preemption loop (hierfair.sim.loops): why, in one line
    out["loop"] = result.loop
    out["looped"] = int(bool(result.loop))  # what a claim can compare
    out["wasted_work"] = result.wasted_work
    out["decisions"] = int(counts["decisions"])
    out["placements"] = int(counts["placements"])
    for key in ("latency_mean_ns", "latency_p50_ns", "latency_p99_ns"):
        out[key] = float(counts[key])
    # the MCH letter's "total run time" (§IV-B): every decision's time summed
    out["scheduling_seconds"] = float(counts["scheduling_seconds"])
    # claims comparing schedulers whose schedules are identical are untestable
    out["schedule_digest"] = result.schedule_digest
    return out


_TMP_SEP = "~"


@contextmanager
def atomic_path(path: Path) -> Iterator[str]:
    """A temporary path beside ``path`` that replaces it only once fully written,
    so a killed process leaves the old file or the new one, never half of one.

    The temporary name carries the writer's host and pid so that
    :func:`remove_stale_temporaries` can tell an abandoned file from one being
    written right now.
    """
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def temporary_name(path: Path) -> str:
    """A new temporary's name beside ``path`` (its folder made): hidden, and
    naming its writer's host and pid (:func:`remove_stale_temporaries`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not mkstemp: its files are private (0600); results should get the umask.
    owner = _TMP_SEP.join((socket.gethostname(), str(os.getpid()), uuid.uuid4().hex[:8]))
    return str(path.with_name(f".{path.name}{_TMP_SEP}{owner}.tmp"))


def remove_stale_temporaries(folder: Path) -> int:
    """Delete temporary files under ``folder`` whose writer on this host is dead.

    A SIGKILL between writing a temporary and renaming it leaves the temporary
    behind; the published file is intact, the temporary is litter.  Files from
    other hosts (Dask workers on a shared file system) and from live processes
    are left alone.  Returns how many were removed.
    """
    host = socket.gethostname()
    removed = 0
    for tmp in folder.rglob(f".*{_TMP_SEP}*.tmp"):
        parts = tmp.name[:-len(".tmp")].rsplit(_TMP_SEP, 3)
        if len(parts) != 4 or parts[1] != host or not parts[2].isdigit():
            continue
        if not _alive(int(parts[2])):
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    # a killed process stays a zombie until its parent reaps it: dead all the same
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def written_by_us(path: Path, mark: str) -> bool:
    """Whether ``path`` carries ``mark`` near its start -- a file hierfair
    wrote, which it may rewrite or remove; anything else is the user's."""
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as f:
            return mark in f.read(2000)
    except OSError:
        return False


def write_text(text: str, path: Path) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)
