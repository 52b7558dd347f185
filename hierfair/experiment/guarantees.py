"""What each queue got against what its weights promise, over a run.

The question an operator asks of a scheduler: *did a queue that wanted more
ever get less than its share?*  A leaf's **guarantee** is its weighted share
of the cluster (H-DRF §2.1's hierarchical share guarantee:
``Hierarchy.weighted_shares``), in dominant-share units.  From a run's
detail tables, per leaf:

* **backlogged**: time with a task of it waiting (a job arrived, a task not
  started, or stopped and queued again);
* **below guarantee**: backlogged time in which one more of its tasks would
  still have kept it within its guarantee (dominant share + its smallest
  task's <= guarantee): it waited for room its share promised, a whole-task
  reading of the guarantee;
* **longest starvation**: the longest stretch backlogged with nothing running.

Reads jobs, tasks, attempts and allocations (a spec that drops one of them
gets no numbers: the report says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from hierfair.sim.model import shown

#: The outcomes after which a task waits again.
_REQUEUED = ("preempted", "killed", "failed")
TABLES = ("jobs", "tasks", "attempts", "allocations")


class LeafGuarantee(NamedTuple):
    leaf: str
    guarantee: float
    backlogged: float
    below: float
    longest_starvation: float


def _steps(times: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A step function from (time, change) events: change times and the
    value from each on."""
    order = np.argsort(times, kind="stable")
    t, d = times[order], deltas[order]
    keep = np.r_[t[1:] != t[:-1], True]  # the last change of each instant
    return t[keep], np.cumsum(d)[keep]


def _at(t_change: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The step function's value at each grid time (0 before its first change)."""
    i = np.searchsorted(t_change, grid, side="right") - 1
    return np.where(i >= 0, values[np.maximum(i, 0)] if len(values) else 0.0, 0.0)


def leaf_guarantees(run_dir: Path, exp, seed: int,  # noqa: ANN001
                    end: float) -> list[LeafGuarantee]:
    """Per leaf of ``exp``'s hierarchy, its guarantee and how the run treated
    it, from the run's tables in ``run_dir`` up to time ``end`` (``seed``:
    the run's, which built its workload)."""
    h, cluster = exp.hierarchy, exp.cluster
    jobs = pd.read_parquet(run_dir / "jobs.parquet")
    tasks = pd.read_parquet(run_dir / "tasks.parquet", columns=["task", "job"])
    attempts = pd.read_parquet(run_dir / "attempts.parquet")
    alloc = pd.read_parquet(run_dir / "allocations.parquet")
    inv = np.where(cluster.total > 0, 1.0 / np.where(cluster.total > 0, cluster.total, 1), 0)
    share_of = h.weighted_shares()
    workload = exp.workload(seed)
    job_leaf = jobs.set_index("job")["leaf"]
    attempts = attempts.merge(tasks, on="task")
    attempts["leaf"] = attempts["job"].map(job_leaf)
    out = []
    for leaf in h.leaves:
        path = shown(h.paths[leaf])
        mine = jobs[(jobs["leaf"] == path) & jobs["submit"].notna()]
        if mine.empty:
            continue
        tries = attempts[attempts["leaf"] == path]
        again = tries[tries["outcome"].isin(_REQUEUED)]
        times = np.concatenate([mine["submit"], tries["start"], again["end"]]).astype(float)
        deltas = np.concatenate([mine["tasks"], -np.ones(len(tries)), np.ones(len(again))])
        t_wait, waiting = _steps(times, deltas)
        rows = alloc[alloc["path"] == path]
        shares = (rows[list(cluster.resources)].to_numpy(float) * inv).max(axis=1) \
            if len(rows) else np.zeros(0)
        t_alloc, running = rows["time"].to_numpy(float), rows["tasks"].to_numpy(float)
        grid = np.unique(np.r_[t_wait, t_alloc, end])
        grid = grid[grid <= end]
        span = np.diff(np.r_[grid, end])
        backlog = _at(t_wait, waiting, grid) > 0
        share = _at(t_alloc, shares, grid)
        busy = _at(t_alloc, running, grid)
        smallest = min(float((np.asarray(workload.jobs[int(j)].demand) * inv).max())
                       for j in mine["job"])
        guarantee = float(share_of[leaf])
        below = backlog & (share + smallest <= guarantee + 1e-9)
        starving = backlog & (busy == 0)
        out.append(LeafGuarantee(path, guarantee, float(span[backlog].sum()),
                                 float(span[below].sum()), _longest(grid, span, starving)))
    return out


def _longest(grid: np.ndarray, span: np.ndarray, flag: np.ndarray) -> float:
    """The longest run of consecutive flagged intervals, in time."""
    best = cur = 0.0
    for s, f in zip(span.tolist(), flag.tolist()):
        cur = cur + s if f else 0.0
        best = max(best, cur)
    return best
