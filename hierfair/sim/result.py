"""A finished (or stopped) run's records as tidy tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from hierfair.sim.ledger import Ledger, TaskState
from hierfair.sim.model import Hierarchy, shown
from hierfair.sim.recording import OUTCOMES, Recorder


@dataclass
class SimulationResult:
    """Everything one run recorded, as tidy tables."""

    tasks: pd.DataFrame
    jobs: pd.DataFrame
    allocations: pd.DataFrame
    utilization: pd.DataFrame
    decisions: pd.DataFrame
    attempts: pd.DataFrame
    preemptions: pd.DataFrame
    resources: tuple[str, ...]
    makespan: float
    workload_source: str
    wasted_work: float = 0.0  # task-seconds lost to preemptions, kills, failures
    #: the simulated time the run was stopped at with work left (``run(until=)``), else None
    stopped_at: float | None = None


def tables(ledger: Ledger, rec: Recorder, hierarchy: Hierarchy, resources: tuple[str, ...],
           source: str, wasted: float, stopped_at: float | None = None) -> SimulationResult:
    paths = np.array([shown(p) for p in hierarchy.paths], dtype=object)
    jobs = ledger.jobs
    task_job = ledger.column("task_job")
    n_tasks = task_job.size
    attempts = rec.attempts_frame(ledger.column("seq"), ledger.states(), ledger.column("server"),
                                  ledger.column("start"), ledger.column("finish"))
    tries = np.bincount(attempts["task"], minlength=n_tasks) if len(
        attempts) else np.zeros(n_tasks, dtype=np.int64)
    offset = np.frombuffer(ledger.offset, dtype=np.int64)
    finish = ledger.column("finish")
    tasks = pd.DataFrame({
        "task": np.arange(n_tasks),
        "job": task_job,
        "index": np.arange(n_tasks) - offset[task_job],
        "leaf": _names(paths, np.asarray(ledger.job_leaf, dtype=np.int64)[task_job], "str")
        if jobs else [],
        "server": ledger.column("server"),
        "start": ledger.column("start"),
        "finish": finish,
        "attempts": tries,
        "ran": ledger.column("ran"),
        "state": pd.Categorical.from_codes(ledger.states(), [s.name.lower() for s in TaskState]),
    })
    job_df = pd.DataFrame({
        "job": np.arange(len(jobs)),
        "name": [j.name for j in jobs],
        "leaf": [hierarchy.paths[j.leaf] for j in jobs],
        "tasks": [j.n_tasks for j in jobs],
        # when the job arrived: its submit time, or later if it waited for
        # another job (``after``); NaN if it never arrived
        "submit": ledger.column("job_arrival"),
        "after": [j.after for j in jobs],
        "first_start": ledger.column("job_first"),
        "finish": ledger.column("job_finish"),
        "preemptions": ledger.column("job_preempted"),
    })
    job_df["wait"] = job_df["first_start"] - job_df["submit"]
    job_df["completion"] = job_df["finish"] - job_df["submit"]
    alloc = rec.allocations.to_frame()
    nodes = alloc.pop("node").to_numpy()
    alloc.insert(1, "path", _names(paths, nodes, "str") if len(alloc) else [])
    attempts["outcome"] = pd.Categorical.from_codes(attempts["outcome"], OUTCOMES)
    preempt = rec.preemptions.to_frame()
    for col in ("victim", "beneficiary"):
        preempt[col] = [paths[i] if i >= 0 else "" for i in preempt[col]]
    done = finish[~np.isnan(finish)]
    return SimulationResult(
        tasks=tasks,
        jobs=job_df,
        allocations=alloc,
        utilization=rec.utilization.to_frame(),
        decisions=_decisions(rec.decisions.to_frame(), paths),
        attempts=attempts,
        preemptions=preempt,
        resources=resources,
        makespan=float(done.max()) if done.size else 0.0,
        workload_source=source,
        wasted_work=wasted,
        stopped_at=stopped_at,
    )


def _decisions(frame: pd.DataFrame, paths: np.ndarray) -> pd.DataFrame:
    """The chosen leaf by path, as in every other table (None: nothing placed)."""
    frame["leaf"] = _names(paths, frame["leaf"].to_numpy(), "string")
    return frame


def _names(paths: np.ndarray, nodes: np.ndarray, dtype: str) -> pd.api.extensions.ExtensionArray:
    """``paths[nodes]`` as a pandas string array (node -1: missing), taken in
    Arrow: a column per task or decision is millions of strings, and pandas'
    conversion of Python strings would cost more than the simulation's steps."""
    names = pa.array(paths.tolist(), type=pa.large_string())
    missing = nodes < 0
    index = pa.array(np.where(missing, 0, nodes), mask=missing if missing.any() else None)
    return pd.array(names.take(index), dtype=dtype)
