"""A finished (or stopped) run's records as tidy tables."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from hierfair.sim.ledger import FINISHED, RUNNING, Ledger, TaskState
from hierfair.sim.model import Hierarchy, job_columns, shown
from hierfair.sim.recording import OUTCOMES, Columns, Recorder

#: The tables of a run, in the order runs write them.
TABLES = ("jobs", "tasks", "allocations", "utilization", "decisions", "attempts",
          "preemptions")


class SimulationResult:
    """Everything one run recorded: its tables, each built when first read (a
    run of millions of tasks that keeps only ``jobs`` never builds the task
    or attempt tables), and the counts a summary needs without them."""

    tasks: pd.DataFrame
    jobs: pd.DataFrame
    allocations: pd.DataFrame
    utilization: pd.DataFrame
    decisions: pd.DataFrame
    attempts: pd.DataFrame
    preemptions: pd.DataFrame

    def __init__(self, builders: Mapping[str, Callable[[], pd.DataFrame]], *,
                 resources: tuple[str, ...], makespan: float, workload_source: str,
                 wasted_work: float = 0.0, stopped_at: float | None = None,
                 counts: Mapping[str, float] | None = None, schedule_digest: str = "",
                 loop: str = "",
                 utilization_integrals: Callable[[float], list[float]] | None = None,
                 streamed: frozenset[str] = frozenset()) -> None:
        self._builders = dict(builders)
        #: a run that held more utilisation rows than Recorder.FOLD: each
        #: resource's integral up to a time, over every row (None: it kept
        #: them all, in ``utilization``)
        self.utilization_integrals = utilization_integrals
        #: tables some rows of which left as the run went (to their files'
        #: row groups, or folded): only :meth:`rest` reads what stayed
        self.streamed = streamed
        self.resources = resources
        self.makespan = makespan
        self.workload_source = workload_source
        #: task-seconds lost to preemptions, kills, failures
        self.wasted_work = wasted_work
        #: the simulated time the run was stopped at with work left (``run(until=)``), else None
        self.stopped_at = stopped_at
        #: what hierfair.experiment.results.summarize reads besides jobs and utilization
        self.counts: dict[str, float] = dict(counts or {})
        #: what ran where and when (every task's server, start and finish),
        #: hashed: two runs with the same digest made the same schedule
        self.schedule_digest = schedule_digest
        #: why the run stopped in a preemption loop ("": it did not;
        #: hierfair.sim.loops), with ``stopped_at`` where
        self.loop = loop

    def rest(self, name: str) -> pd.DataFrame:
        """The rows of a streamed table that were still in memory at the end
        (of any other table: all of it)."""
        if name not in self.streamed:
            return getattr(self, name)
        return self._builders[name]()

    def let_go(self, name: str) -> None:
        """Forget table ``name`` (built or not; it was written to its file):
        its memory can go.  Reading it afterwards is an AttributeError."""
        self.__dict__.pop(name, None)
        self._builders.pop(name, None)

    def __getattr__(self, name: str) -> pd.DataFrame:
        builders = self.__dict__.get("_builders", {})
        if name not in builders:
            raise AttributeError(name)
        if name in self.__dict__.get("streamed", ()):
            raise ValueError(f"this run's {name} table left memory as it ran (to its file, "
                             "or folded when not kept): read .rest(name) for what stayed")
        table = builders.pop(name)()
        setattr(self, name, table)  # built once; later reads find the attribute
        return table


def tables(ledger: Ledger, rec: Recorder, hierarchy: Hierarchy, resources: tuple[str, ...],
           source: str, wasted: float, stopped_at: float | None = None,
           loop: str = "") -> SimulationResult:
    paths = shown_paths(hierarchy)

    def attempts_table() -> pd.DataFrame:
        frame = rec.attempts_frame(ledger.column("seq"), ledger.states(),
                                   ledger.column("server"), ledger.column("start"),
                                   ledger.column("finish"))
        frame["outcome"] = pd.Categorical.from_codes(frame["outcome"], OUTCOMES)
        return frame

    def preemptions_table() -> pd.DataFrame:
        frame = rec.preemptions.to_frame()
        for col in ("victim", "beneficiary"):
            frame[col] = [paths[i] if i >= 0 else "" for i in frame[col]]
        return frame

    return SimulationResult(
        {"tasks": lambda: _tasks(ledger, rec, paths),
         "jobs": lambda: _jobs(ledger, hierarchy),
         "allocations": lambda: frame_of("allocations", rec.allocations, paths),
         "utilization": lambda: rec.utilization.to_frame(),
         "decisions": lambda: _decisions(rec, paths),
         "attempts": attempts_table,
         "preemptions": preemptions_table},
        resources=resources,
        makespan=ledger.last_finish(),
        workload_source=source,
        wasted_work=wasted,
        stopped_at=stopped_at,
        counts=_counts(ledger, rec),
        schedule_digest=_schedule_digest(ledger),
        loop=loop,
        utilization_integrals=rec.integrals if rec.folded else None,
        streamed=frozenset(rec.streamed),
    )


def _schedule_digest(ledger: Ledger) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in ("server", "start", "finish", "attempt"):
        # every task's, the ones that never arrived at their initial values
        for chunk in ledger.digest_chunks(name):
            h.update(chunk)
    return h.hexdigest()


def _tasks(ledger: Ledger, rec: Recorder, paths: np.ndarray) -> pd.DataFrame:
    jobs = ledger.jobs
    task_job = ledger.column("task_job")
    n_tasks = task_job.size
    tried = rec.attempts.column("task")  # attempts cut short, and each started task's last
    tries = np.bincount(tried, minlength=n_tasks) if tried.size else np.zeros(n_tasks, np.int64)
    tries += ledger.states() >= RUNNING
    offset = np.frombuffer(ledger.offset, dtype=np.int64)
    return pd.DataFrame({
        "task": np.arange(n_tasks),
        "job": task_job,
        "index": np.arange(n_tasks) - offset[task_job],
        "leaf": _names(paths, np.asarray(ledger.job_leaf, dtype=np.int64)[task_job], "str")
        if jobs else [],
        "server": ledger.column("server"),
        "start": ledger.column("start"),
        "finish": ledger.column("finish"),
        "attempts": tries,
        "ran": ledger.column("ran"),
        "state": pd.Categorical.from_codes(ledger.states(), _state_names(ledger)),
    })


def _state_names(ledger: Ledger) -> list[str]:
    """The task states' names; "evicting" only when a run stopped with an
    eviction in flight (tables of every other run keep their categories)."""
    names = [s.name.lower() for s in TaskState]
    return names if ledger.evicting else names[:-1]


def _jobs(ledger: Ledger, hierarchy: Hierarchy) -> pd.DataFrame:
    jobs = ledger.jobs
    cols = job_columns(jobs)
    names = jobs.names() if hasattr(jobs, "names") else [j.name for j in jobs]
    # the columns as arrays (a list of two million ints is ~85 MB more at the
    # end of a run); with no jobs as empty lists, as before, so a table with
    # no rows keeps the dtypes pandas gives them (object in 2.x, float64 in 3.x)
    some = len(jobs) > 0
    frame = pd.DataFrame({
        "job": np.arange(len(jobs)),
        "name": names,
        "leaf": np.array(hierarchy.paths, dtype=object)[cols.leaf] if some else [],
        "tasks": cols.size if some else [],
        # when the job arrived: its submit time, or later if it waited for
        # another job (``after``); NaN if it never arrived
        "submit": ledger.column("job_arrival"),
        "after": cols.after if some else [],
        "first_start": ledger.column("job_first"),
        "finish": ledger.column("job_finish"),
        "preemptions": ledger.column("job_preempted"),
    })
    frame["wait"] = frame["first_start"] - frame["submit"]
    frame["completion"] = frame["finish"] - frame["submit"]
    return frame


def shown_paths(hierarchy: Hierarchy) -> np.ndarray:
    """Each node's path as the tables show it."""
    return np.array([shown(p) for p in hierarchy.paths], dtype=object)


def frame_of(name: str, cols: Columns, paths: np.ndarray) -> pd.DataFrame:
    """A recorded table's rows (all, or a row group's) as its file holds them."""
    frame = cols.to_frame()
    if name == "allocations":
        nodes = frame.pop("node").to_numpy()
        frame.insert(1, "path", _names(paths, nodes, "str") if len(frame) else [])
    elif name == "decisions":
        frame["leaf"] = _names(paths, frame["leaf"].to_numpy(), "string")
    return frame


def _counts(ledger: Ledger, rec: Recorder) -> dict[str, float]:
    """What a summary needs from the task, attempt and decision tables,
    from the ledger's and recorder's arrays in place (no table built)."""
    # waited: started after its job arrived, or never started.  Finished
    # tasks were tallied as they finished; of the rest, those with columns
    # (on pages where a task started, not retired) are read here, and the
    # others never started
    state = np.frombuffer(ledger.state, dtype=np.uint8)
    start = np.frombuffer(ledger.start, dtype=np.float64)
    task_job = np.frombuffer(ledger.task_job, dtype=np.int64)
    arrival = np.frombuffer(ledger.job_arrival, dtype=np.float64)
    waited = held_unfinished = 0
    for held in ledger.held_tasks():
        unfinished = held[state[held] != FINISHED]
        began = start[unfinished]
        waited += int(np.count_nonzero(np.isnan(began)
                                       | (began > arrival[task_job[unfinished]] + 1e-9)))
        held_unfinished += len(unfinished)
    waited += ledger.unfinished - held_unfinished + ledger.done_waited
    finished = ledger.n_tasks - ledger.unfinished
    outcomes = rec.attempts.column("outcome")
    latency = rec.latency
    out: dict[str, float] = {
        "tasks": ledger.n_tasks,
        "tasks_unfinished": ledger.n_tasks - finished,
        "tasks_waited": waited,
        "preemptions": len(rec.preemptions),
        # churn: the most times one job was preempted, and when the last
        # preemption was (after it, only arrivals and finishes move tasks)
        "preemptions_max_job": max(ledger.job_preempted, default=0),
        "last_preemption": (float(rec.preemptions.column("time")[-1])
                            if len(rec.preemptions) else 0.0),
        "kills": int(np.count_nonzero(outcomes == OUTCOMES.index("killed"))),
        "task_failures": int(np.count_nonzero(outcomes == OUTCOMES.index("failed"))),
        "decisions": latency.count,
        "placements": latency.count - rec.unplaced,
    }
    if latency.count:
        p50, p99 = latency.percentiles([50, 99])
        total = latency.total()
        out.update(latency_mean_ns=total / latency.count, latency_p50_ns=p50,
                   latency_p99_ns=p99, scheduling_seconds=total / 1e9)
    else:
        out.update(latency_mean_ns=float("nan"), latency_p50_ns=float("nan"),
                   latency_p99_ns=float("nan"), scheduling_seconds=0.0)
    return out


def _decisions(rec: Recorder, paths: np.ndarray) -> pd.DataFrame:
    """The chosen leaf by path, as in every other table (None: nothing placed)."""
    if not rec.keep_decisions:
        raise ValueError("this run kept no decisions table (Simulator(record_decisions=False))")
    return frame_of("decisions", rec.decisions, paths)


def _names(paths: np.ndarray, nodes: np.ndarray, dtype: str) -> pd.api.extensions.ExtensionArray:
    """``paths[nodes]`` as a pandas string array (node -1: missing), taken in
    Arrow: a column per task or decision is millions of strings, and pandas'
    conversion of Python strings would cost more than the simulation's steps."""
    names = pa.array(paths.tolist(), type=pa.large_string())
    missing = nodes < 0
    index = pa.array(np.where(missing, 0, nodes), mask=missing if missing.any() else None)
    return pd.array(names.take(index), dtype=dtype)
