"""A deterministic discrete-event simulator of a shared cluster.

Time jumps from event to event.  Two kinds of event exist: a job *arrives* at
its leaf, and a task *finishes* on its server.  All events that share a
timestamp are applied first (finishes before arrivals, then by task or job
id), and only then does the scheduling loop run: it asks the policy for the
next leaf to serve, places that leaf's next task on a server, and repeats
until the policy answers ``None``.  Nothing depends on hash order or the wall
clock, so the same inputs always give the same schedule.

Tasks move through an explicit state machine::

    WAITING --arrival--> PENDING --start--> RUNNING --finish--> FINISHED

(preemption and failures will add RUNNING -> PENDING).  A leaf serves its
jobs first-in-first-out: the next task of a leaf is the next pending task of
the oldest job that still has one.

The simulator records, in columnar buffers: every task's server, start and
finish; every job's submit, first start and finish; each node's allocation at
every change point; cluster utilisation at every change point; and the wall
time of every scheduling decision (``perf_counter_ns`` around the policy's
``select`` plus the policy's own bookkeeping in the notifications since the
previous decision, so lazy and eager recomputation are charged alike).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from time import monotonic, perf_counter_ns

import numpy as np
import pandas as pd

from hierfair.errors import PolicyError
from hierfair.model import Cluster, Hierarchy, Job, Workload
from hierfair.placement import Placement, ServerIndex
from hierfair.policy import BasePolicy
from hierfair.recorder import Columns


class RunTimeout(Exception):
    """The run passed its wall-clock deadline (``Simulator(deadline=...)``)."""


class TaskState(IntEnum):
    WAITING = 0  # its job has not arrived yet
    PENDING = 1  # queued at its leaf
    RUNNING = 2
    FINISHED = 3


_WAITING, _PENDING, _RUNNING, _FINISHED = (int(s) for s in TaskState)

# Event kinds; the value orders events that share a timestamp.
_FINISH, _ARRIVAL = 0, 1


@dataclass
class SimulationResult:
    """Everything one run recorded, as tidy tables."""

    tasks: pd.DataFrame
    jobs: pd.DataFrame
    allocations: pd.DataFrame
    utilization: pd.DataFrame
    decisions: pd.DataFrame
    resources: tuple[str, ...]
    makespan: float
    workload_source: str


class Simulator:
    """Runs one policy on one cluster, hierarchy and workload."""

    def __init__(
        self,
        cluster: Cluster,
        hierarchy: Hierarchy,
        workload: Workload,
        policy: BasePolicy,
        placement: Placement = "first-fit",
        deadline: float | None = None,
    ) -> None:
        self.cluster = cluster
        self.hierarchy = hierarchy
        self.workload = workload
        self.policy = policy
        self._jobs = workload.jobs
        for i, job in enumerate(self._jobs):
            if job.id != i:
                raise ValueError("workload jobs must be numbered 0..n-1 in order")
        self._index = (policy.make_index(cluster, placement)
                       or ServerIndex(cluster.capacities, placement))
        n_nodes, m = hierarchy.n_nodes, cluster.n_resources
        self.alloc = np.zeros((n_nodes, m))
        self.running = np.zeros(n_nodes, dtype=np.int64)
        self._pending = np.zeros(n_nodes, dtype=np.int64)
        self._queue: list[deque[int]] = [deque() for _ in range(n_nodes)]
        self._path = [np.array([node, *hierarchy.ancestors(node)]) for node in range(n_nodes)]
        self._now = 0.0

        sizes = np.array([j.n_tasks for j in self._jobs], dtype=np.int64)
        self._offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n_tasks = int(self._offset[-1])
        self._task_job = np.repeat(np.arange(len(self._jobs)), sizes)
        self._task_state = bytearray(n_tasks)  # TaskState values; bytearray: fast scalar access
        self._task_server = np.full(n_tasks, -1, dtype=np.int64)
        self._task_start = np.full(n_tasks, np.nan)
        self._task_finish = np.full(n_tasks, np.nan)
        self._task_seq = np.full(n_tasks, -1, dtype=np.int64)
        self._started = 0
        self._job_next = np.zeros(len(self._jobs), dtype=np.int64)
        self._job_left = sizes.copy()
        self._job_first = np.full(len(self._jobs), np.nan)
        self._job_finish = np.full(len(self._jobs), np.nan)

        self._events: list[tuple[float, int, int]] = []
        self._dirty: set[int] = set()
        self._overhead_ns = 0  # policy notification time not yet charged to a decision
        res = cluster.resources
        self._rec_alloc = Columns([("time", "d"), ("node", "q"), ("tasks", "q")]
                                  + [(r, "d") for r in res])
        self._rec_util = Columns([("time", "d")] + [(r, "d") for r in res])
        self._rec_decision = Columns([("time", "d"), ("leaf", "q"), ("latency_ns", "q")])
        self._last_util: tuple[float, ...] | None = None
        self._manual = False
        self._deadline = deadline  # a time.monotonic() value
        self._ticks = 0
        policy.attach(self)

    # -- SchedulerState (read by policies) -----------------------------------
    @property
    def now(self) -> float:
        return self._now

    @property
    def free_total(self) -> np.ndarray:
        return self._index.free_total

    @property
    def saturated(self) -> np.ndarray:
        return self._index.saturated

    @property
    def release_epoch(self) -> int:
        return self._index.release_epoch

    def pending(self, leaf: int) -> int:
        return int(self._pending[leaf])

    def head_job(self, leaf: int) -> Job | None:
        q = self._queue[leaf]
        return self._jobs[q[0]] if q else None

    def next_demand(self, leaf: int) -> np.ndarray | None:
        q = self._queue[leaf]
        return self._jobs[q[0]].demand if q else None

    def fits(self, demand: np.ndarray) -> bool:
        return self._index.fits(demand)

    # -- running -------------------------------------------------------------
    def run(self) -> SimulationResult:
        """Simulate until every task has finished (or nothing more can run)."""
        if self._manual:
            raise RuntimeError("this simulator was stepped by hand; build a new one to run")
        for job in self._jobs:
            heapq.heappush(self._events, (job.submit, _ARRIVAL, job.id))
        events = self._events
        while events:
            self._tick()
            now = events[0][0]
            self._now = now
            while events and events[0][0] == now:
                _, kind, key = heapq.heappop(events)
                if kind == _FINISH:
                    self._finish(key)
                else:
                    self._arrive(key)
            self._schedule()
            self._record_step()
        return self.result()

    def _tick(self) -> None:
        """Count work; every 1024 ticks, stop if past the deadline."""
        self._ticks += 1
        if self._deadline is not None and not self._ticks & 1023 and monotonic() > self._deadline:
            raise RunTimeout(f"time ran out at simulated time {self._now:g}")

    # Manual stepping, used by `hierfair allocate` to replay the papers' static
    # examples: everything arrives at once, then tasks finish one at a time.
    def submit_all(self) -> None:
        """Every job arrives now; then schedule until nothing more fits."""
        self._manual = True
        for job in self._jobs:
            self._arrive(job.id)
        self._schedule()
        self._record_step()

    def finish_earliest(self) -> bool:
        """The earliest-started running task finishes; then schedule again.

        Returns False when no task is running.
        """
        self._manual = True
        running = np.flatnonzero(self._states() == _RUNNING)
        if running.size == 0:
            return False
        self._now += 1.0  # one churn step per unit of (fictitious) time
        task = int(running[np.argmin(self._task_seq[running])])
        self._finish(task)
        self._schedule()
        self._record_step()
        return True

    # -- transitions ---------------------------------------------------------
    def _set_state(self, task: int, old: int, new: int) -> None:
        state = self._task_state
        if state[task] != old:
            raise PolicyError(f"task {task}: illegal transition "
                              f"{TaskState(state[task]).name} -> {TaskState(new).name}")
        state[task] = new

    def _states(self) -> np.ndarray:
        return np.frombuffer(bytes(self._task_state), dtype=np.int8)

    def _arrive(self, job_id: int) -> None:
        job = self._jobs[job_id]
        lo, hi = int(self._offset[job_id]), int(self._offset[job_id + 1])
        if self._task_state[lo:hi].count(_WAITING) != hi - lo:
            raise PolicyError(f"job {job_id} arrived twice")
        self._task_state[lo:hi] = bytes([_PENDING]) * (hi - lo)
        self._pending[job.leaf] += job.n_tasks
        self._queue[job.leaf].append(job_id)
        t0 = perf_counter_ns()
        self.policy.on_job_arrival(job)
        self._overhead_ns += perf_counter_ns() - t0

    def _start(self, leaf: int) -> int:
        """Start ``leaf``'s next task on the server placement picks."""
        queue = self._queue[leaf]
        if not queue:
            raise PolicyError(f"policy selected leaf {self.hierarchy.paths[leaf]!r}, "
                              "which has no pending task")
        job_id = queue[0]
        job = self._jobs[job_id]
        server = self._index.choose(job.demand)
        if server is None:
            raise PolicyError(f"policy selected leaf {self.hierarchy.paths[leaf]!r}, "
                              "whose next task fits on no server")
        task = int(self._offset[job_id] + self._job_next[job_id])
        self._set_state(task, _PENDING, _RUNNING)
        self._job_next[job_id] += 1
        if self._job_next[job_id] == job.n_tasks:
            queue.popleft()
        if np.isnan(self._job_first[job_id]):
            self._job_first[job_id] = self._now
        self._pending[leaf] -= 1
        self._task_server[task] = server
        self._task_start[task] = self._now
        self._task_seq[task] = self._started
        self._started += 1
        self._index.allocate(server, job.demand)
        path = self._path[leaf]
        self.alloc[path] += job.demand
        self.running[path] += 1
        self._dirty.add(leaf)
        duration = float(job.durations[task - self._offset[job_id]])
        duration *= self._index.duration_factor(server)
        heapq.heappush(self._events, (self._now + duration, _FINISH, task))
        return task

    def _finish(self, task: int) -> None:
        self._set_state(task, _RUNNING, _FINISHED)
        job_id = int(self._task_job[task])
        job = self._jobs[job_id]
        self._task_finish[task] = self._now
        self._index.release(int(self._task_server[task]), job.demand)
        path = self._path[job.leaf]
        self.alloc[path] -= job.demand
        self.running[path] -= 1
        self._dirty.add(job.leaf)
        self._job_left[job_id] -= 1
        t0 = perf_counter_ns()
        self.policy.on_task_finish(job.leaf, job.demand)
        if self._job_left[job_id] == 0:
            self._job_finish[job_id] = self._now
            self.policy.on_job_completion(job)
        self._overhead_ns += perf_counter_ns() - t0

    def _schedule(self) -> None:
        policy = self.policy
        record = self._rec_decision.append
        while True:
            self._tick()
            t0 = perf_counter_ns()
            leaf = policy.select()
            spent = perf_counter_ns() - t0 + self._overhead_ns
            self._overhead_ns = 0
            if leaf is None:
                record(self._now, -1, spent)
                return
            task = self._start(leaf)
            demand = self._jobs[self._task_job[task]].demand
            t0 = perf_counter_ns()
            policy.on_task_start(leaf, demand)
            record(self._now, leaf, spent + perf_counter_ns() - t0)

    # -- recording -----------------------------------------------------------
    def _record_step(self) -> None:
        if self._dirty:
            nodes: set[int] = set()
            for leaf in self._dirty:
                nodes.update(self._path[leaf].tolist())
            self._dirty.clear()
            rec = self._rec_alloc.append
            for node in sorted(nodes):
                rec(self._now, node, int(self.running[node]), *self.alloc[node].tolist())
        total = self._index.total
        util = tuple(((total - self._index.free_total) / np.where(total > 0, total, 1)).tolist())
        if util != self._last_util:
            self._rec_util.append(self._now, *util)
            self._last_util = util

    def result(self) -> SimulationResult:
        paths = np.array(self.hierarchy.paths, dtype=object)
        jobs = self._jobs
        tasks = pd.DataFrame({
            "task": np.arange(self._task_job.size),
            "job": self._task_job,
            "index": np.arange(self._task_job.size) - self._offset[self._task_job],
            "leaf": paths[[jobs[j].leaf for j in self._task_job]] if jobs else [],
            "server": self._task_server,
            "start": self._task_start,
            "finish": self._task_finish,
            "state": pd.Categorical.from_codes(self._states(), [s.name.lower() for s in TaskState]),
        })
        job_df = pd.DataFrame({
            "job": np.arange(len(jobs)),
            "name": [j.name for j in jobs],
            "leaf": [self.hierarchy.paths[j.leaf] for j in jobs],
            "tasks": [j.n_tasks for j in jobs],
            "submit": [j.submit for j in jobs],
            "first_start": self._job_first,
            "finish": self._job_finish,
        })
        job_df["wait"] = job_df["first_start"] - job_df["submit"]
        job_df["completion"] = job_df["finish"] - job_df["submit"]
        alloc = self._rec_alloc.to_frame()
        alloc.insert(1, "path", paths[alloc.pop("node").to_numpy()] if len(alloc) else [])
        dec = self._rec_decision.to_frame()
        finished = self._task_finish[~np.isnan(self._task_finish)]
        return SimulationResult(
            tasks=tasks,
            jobs=job_df,
            allocations=alloc,
            utilization=self._rec_util.to_frame(),
            decisions=dec,
            resources=self.cluster.resources,
            makespan=float(finished.max()) if finished.size else 0.0,
            workload_source=self.workload.source,
        )
