"""A deterministic discrete-event simulator of a shared cluster.

Time jumps from event to event: a job *arrives* at its leaf; a task
*finishes* (or *fails*) on its server; a server goes *down* or comes back
*up*.  All events that share a timestamp are applied first (finishes, task
failures, server failures, repairs, arrivals, then by id), and only then
does the scheduling loop run: the policy may first ask to preempt running
tasks; then the simulator asks it for the next leaf to serve, places that
leaf's next task on a server, and repeats until the policy answers ``None``.
Nothing depends on hash order or the wall clock, so the same inputs always
give the same schedule.

Tasks move through an explicit state machine::

    WAITING --arrival--> PENDING --start--> RUNNING --finish--> FINISHED
                            ^                  |
                            +--preempt / kill--+

A task that is preempted, killed with its server, or fails goes back to
PENDING at its leaf.  Under ``restart`` its work is lost (counted as wasted
work); under ``checkpoint`` it resumes with the work left, plus a fixed
restore ``overhead``.  A leaf serves its jobs first-in-first-out: the next
task of a leaf is the oldest pending task (re-queued ones first) of the
oldest job that still has one.

The simulator records, in columnar buffers: every task attempt (server,
start, end, outcome); every task's last start and finish; every job's
submit, first start and finish; each node's allocation at every change
point; cluster utilisation at every change point; every preemption (time,
task, victim and beneficiary leaf, lost work); and the wall time of every
scheduling decision (``perf_counter_ns`` around the policy's ``select`` plus
the policy's own bookkeeping in the notifications since the previous
decision, so lazy and eager recomputation are charged alike).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from time import monotonic, perf_counter_ns
from typing import Literal

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
_FINISH, _TASK_FAIL, _DOWN, _UP, _ARRIVAL = range(5)

#: How an attempt ended (attempts.parquet ``outcome``).
OUTCOMES = ("running", "finished", "preempted", "killed", "failed")


@dataclass(frozen=True)
class Interruptions:
    """What happens to a task that stops before finishing."""

    mode: Literal["restart", "checkpoint"] = "restart"
    overhead: float = 0.0  # checkpoint: seconds added to resume


@dataclass(frozen=True)
class Faults:
    """Server failures (explicit and/or by MTBF) and task failures."""

    #: (server index, time it goes down, seconds until repaired or None: never)
    outages: tuple[tuple[int, float, float | None], ...] = ()
    mtbf: float | None = None  # mean time between failures of each server
    repair: float = 60.0  # seconds a failed server stays down (MTBF failures)
    task_failure: float = 0.0  # probability that a task attempt fails
    seed: int = 0


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
        interruptions: Interruptions | None = None,
        faults: Faults | None = None,
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
        self._mode = interruptions or Interruptions()
        self._faults = faults or Faults()
        n_nodes, m = hierarchy.n_nodes, cluster.n_resources
        self.alloc = np.zeros((n_nodes, m))
        self.running = np.zeros(n_nodes, dtype=np.int64)
        self._pending = np.zeros(n_nodes, dtype=np.int64)
        self._queue: list[list[int]] = [[] for _ in range(n_nodes)]  # job ids, ascending
        self._path = [np.array([node, *hierarchy.ancestors(node)]) for node in range(n_nodes)]
        self._now = 0.0

        n_jobs = len(self._jobs)
        sizes = np.array([j.n_tasks for j in self._jobs], dtype=np.int64)
        self._offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n_tasks = int(self._offset[-1])
        self._task_job = np.repeat(np.arange(n_jobs), sizes)
        self._task_state = bytearray(n_tasks)  # TaskState values; bytearray: fast scalar access
        self._task_server = np.full(n_tasks, -1, dtype=np.int64)
        self._task_start = np.full(n_tasks, np.nan)
        self._task_finish = np.full(n_tasks, np.nan)
        self._task_seq = np.full(n_tasks, -1, dtype=np.int64)
        self._task_left = (np.concatenate([j.durations for j in self._jobs]).astype(float)
                           if n_jobs else np.zeros(0))  # work still to do
        self._task_factor = np.ones(n_tasks)  # slowdown of the current attempt
        self._task_attempt = np.zeros(n_tasks, dtype=np.int64)
        self._task_ran = np.zeros(n_tasks)  # wall time spent running, all attempts
        self._started = 0
        self._unfinished = n_tasks
        self._job_next = np.zeros(n_jobs, dtype=np.int64)
        self._job_requeued: dict[int, deque[int]] = {}
        self._job_queued = np.zeros(n_jobs, dtype=bool)
        self._job_left = sizes.copy()
        self._job_first = np.full(n_jobs, np.nan)
        self._job_finish = np.full(n_jobs, np.nan)
        self._job_arrival = np.full(n_jobs, np.nan)
        self._released_by: dict[int, list[int]] = {}  # job -> jobs waiting for it
        for job in workload.jobs:
            if job.after >= 0:
                self._released_by.setdefault(job.after, []).append(job.id)
        self._job_running = np.zeros(n_jobs, dtype=np.int64)
        self._job_alloc = np.zeros(n_jobs)  # time with >= 1 task running
        self._job_alloc_since = np.full(n_jobs, np.nan)
        self._job_preempted = np.zeros(n_jobs, dtype=np.int64)
        self._job_ran = np.zeros(n_jobs)  # task-seconds of ended attempts
        self._job_start_sum = np.zeros(n_jobs)  # sum of running tasks' start times
        self._leaf_last_job = np.full(n_nodes, -1, dtype=np.int64)
        self._server_tasks: list[set[int]] = [set() for _ in range(cluster.n_servers)]
        self._down = np.zeros(cluster.n_servers, dtype=np.int64)  # outages in progress
        self._wasted = 0.0

        self._events: list[tuple[float, int, int, int]] = []
        self._dirty: set[int] = set()
        self._overhead_ns = 0  # policy notification time not yet charged to a decision
        res = cluster.resources
        self._rec_alloc = Columns([("time", "d"), ("node", "q"), ("tasks", "q")]
                                  + [(r, "d") for r in res])
        self._rec_util = Columns([("time", "d")] + [(r, "d") for r in res])
        self._rec_decision = Columns([("time", "d"), ("leaf", "q"), ("latency_ns", "q")])
        self._rec_attempt = Columns([("task", "q"), ("server", "q"), ("start", "d"),
                                     ("end", "d"), ("outcome", "q")])
        self._rec_preempt = Columns([("time", "d"), ("task", "q"), ("job", "q"),
                                     ("victim", "q"), ("beneficiary", "q"), ("lost", "d")])
        self._attempt_row = np.full(n_tasks, -1, dtype=np.int64)
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

    def running_tasks(self, leaf: int | None = None) -> list[int]:
        """Running task ids (of ``leaf``, or all), earliest started first."""
        tasks = [t for s in self._server_tasks for t in s]
        if leaf is not None:
            tasks = [t for t in tasks if self._jobs[self._task_job[t]].leaf == leaf]
        return sorted(tasks, key=lambda t: self._task_seq[t])

    def task_info(self, task: int) -> tuple[int, int, int, np.ndarray, float]:
        """``(job, leaf, server, demand, start)`` of a running task."""
        job = self._jobs[int(self._task_job[task])]
        return (job.id, job.leaf, int(self._task_server[task]), job.demand,
                float(self._task_start[task]))

    def server_free(self, server: int) -> np.ndarray:
        return np.asarray(self._index.free[server])

    def job_times(self, job: int) -> tuple[float, float, float]:
        """``(t_alloc, t_wait, ran)`` of a job up to now: time with at least one
        task running, time since submission with none running, and the wall
        time its tasks have run in all (task-seconds)."""
        alloc = self._job_alloc[job]
        running = self._job_running[job]
        if running > 0:
            alloc += self._now - self._job_alloc_since[job]
        alive = self._now - self._job_arrival[job]
        ran = self._job_ran[job] + running * self._now - self._job_start_sum[job]
        return float(alloc), float(max(0.0, alive - alloc)), float(ran)

    def last_job(self, leaf: int) -> int | None:
        """The job of the task ``leaf`` started most recently (None: never)."""
        job = int(self._leaf_last_job[leaf])
        return job if job >= 0 else None

    def completed_jobs(self) -> np.ndarray:
        """Completion times (finish - submit) of the jobs finished so far."""
        done = ~np.isnan(self._job_finish)
        return (self._job_finish - self._job_arrival)[done]

    # -- running -------------------------------------------------------------
    def run(self) -> SimulationResult:
        """Simulate until every task has finished (or nothing more can run)."""
        if self._manual:
            raise RuntimeError("this simulator was stepped by hand; build a new one to run")
        events = self._events
        for job in self._jobs:
            if job.after < 0:  # the others arrive when the job they wait for finishes
                heapq.heappush(events, (job.submit, _ARRIVAL, job.id, 0))
        self._plan_faults()
        while events and self._unfinished:
            self._tick()
            now = events[0][0]
            self._now = now
            while events and events[0][0] == now:
                _, kind, key, attempt = heapq.heappop(events)
                if kind == _FINISH:
                    if attempt == self._task_attempt[key]:
                        self._finish(key)
                elif kind == _TASK_FAIL:
                    if attempt == self._task_attempt[key]:
                        self._interrupt(key, outcome="failed")
                elif kind == _DOWN:
                    self._server_down(key)
                elif kind == _UP:
                    self._server_up(key)
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

    def _notify(self, call, *args) -> None:  # noqa: ANN001 - a policy callback
        t0 = perf_counter_ns()
        call(*args)
        self._overhead_ns += perf_counter_ns() - t0

    def _enqueue(self, job_id: int) -> None:
        if not self._job_queued[job_id]:
            bisect.insort(self._queue[self._jobs[job_id].leaf], job_id)
            self._job_queued[job_id] = True

    def _arrive(self, job_id: int) -> None:
        job = self._jobs[job_id]
        lo, hi = int(self._offset[job_id]), int(self._offset[job_id + 1])
        if self._task_state[lo:hi].count(_WAITING) != hi - lo:
            raise PolicyError(f"job {job_id} arrived twice")
        self._task_state[lo:hi] = bytes([_PENDING]) * (hi - lo)
        self._job_arrival[job_id] = self._now
        self._pending[job.leaf] += job.n_tasks
        self._enqueue(job_id)
        self._notify(self.policy.on_job_arrival, job)

    def _next_task(self, job_id: int) -> int:
        """Take the job's next pending task: re-queued ones first."""
        requeued = self._job_requeued.get(job_id)
        if requeued:
            task = requeued.popleft()
        else:
            task = int(self._offset[job_id] + self._job_next[job_id])
            self._job_next[job_id] += 1
        if not requeued and self._job_next[job_id] == self._jobs[job_id].n_tasks:
            queue = self._queue[self._jobs[job_id].leaf]
            queue.pop(bisect.bisect_left(queue, job_id))
            self._job_queued[job_id] = False
        return task

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
        task = self._next_task(job_id)
        self._set_state(task, _PENDING, _RUNNING)
        if np.isnan(self._job_first[job_id]):
            self._job_first[job_id] = self._now
        if self._job_running[job_id] == 0:
            self._job_alloc_since[job_id] = self._now
        self._job_running[job_id] += 1
        self._job_start_sum[job_id] += self._now
        self._leaf_last_job[leaf] = job_id
        self._pending[leaf] -= 1
        self._task_server[task] = server
        self._task_start[task] = self._now
        self._task_seq[task] = self._started
        self._started += 1
        self._index.allocate(server, job.demand)
        self._server_tasks[server].add(task)
        path = self._path[leaf]
        self.alloc[path] += job.demand
        self.running[path] += 1
        self._dirty.add(leaf)
        factor = self._index.duration_factor(server)
        self._task_factor[task] = factor
        duration = float(self._task_left[task]) * factor
        self._attempt_row[task] = len(self._rec_attempt)
        self._rec_attempt.append(task, server, self._now, np.nan, 0)
        attempt = int(self._task_attempt[task])
        p_fail = self._faults.task_failure
        if p_fail > 0:
            draw = np.random.default_rng([self._faults.seed, task, attempt]).random(2)
            if draw[0] < p_fail:
                heapq.heappush(self._events,
                               (self._now + draw[1] * duration, _TASK_FAIL, task, attempt))
                return task
        heapq.heappush(self._events, (self._now + duration, _FINISH, task, attempt))
        return task

    def _stop(self, task: int) -> tuple[int, Job]:
        """Bookkeeping shared by finishing and interrupting a running task."""
        job_id = int(self._task_job[task])
        job = self._jobs[job_id]
        server = int(self._task_server[task])
        self._index.release(server, job.demand)
        self._server_tasks[server].discard(task)
        path = self._path[job.leaf]
        self.alloc[path] -= job.demand
        self.running[path] -= 1
        self._dirty.add(job.leaf)
        self._task_ran[task] += self._now - self._task_start[task]
        self._job_ran[job_id] += self._now - self._task_start[task]
        self._job_start_sum[job_id] -= self._task_start[task]
        self._job_running[job_id] -= 1
        if self._job_running[job_id] == 0:
            self._job_alloc[job_id] += self._now - self._job_alloc_since[job_id]
        return job_id, job

    def _finish(self, task: int) -> None:
        self._set_state(task, _RUNNING, _FINISHED)
        job_id, job = self._stop(task)
        self._task_finish[task] = self._now
        self._task_left[task] = 0.0
        self._end_attempt(task, "finished")
        self._unfinished -= 1
        self._job_left[job_id] -= 1
        t0 = perf_counter_ns()
        self.policy.on_task_finish(job.leaf, job.demand)
        if self._job_left[job_id] == 0:
            self._job_finish[job_id] = self._now
            self.policy.on_job_completion(job)
            for waiting in self._released_by.get(job_id, ()):
                heapq.heappush(self._events, (max(self._now, self._jobs[waiting].submit),
                                              _ARRIVAL, waiting, 0))
        self._overhead_ns += perf_counter_ns() - t0

    def _end_attempt(self, task: int, outcome: str) -> None:
        row = self._attempt_row[task]
        self._rec_attempt.set(row, "end", self._now)
        self._rec_attempt.set(row, "outcome", OUTCOMES.index(outcome))

    def _interrupt(self, task: int, outcome: str, beneficiary: int = -1) -> float:
        """Stop a running task early and queue it again; returns the lost work."""
        self._set_state(task, _RUNNING, _PENDING)
        job_id, job = self._stop(task)
        elapsed = self._now - self._task_start[task]
        if self._mode.mode == "checkpoint":
            done = elapsed / self._task_factor[task]
            self._task_left[task] = max(0.0, self._task_left[task] - done) + self._mode.overhead
            lost = 0.0
        else:
            lost = elapsed
        self._wasted += lost
        self._task_attempt[task] += 1  # its pending finish event is now stale
        self._end_attempt(task, outcome)
        self._job_requeued.setdefault(job_id, deque()).append(task)
        self._pending[job.leaf] += 1
        self._enqueue(job_id)
        if outcome == "preempted":
            self._job_preempted[job_id] += 1
            self._rec_preempt.append(self._now, task, job_id, job.leaf, beneficiary, lost)
        self._notify(self.policy.on_task_finish, job.leaf, job.demand)
        return lost

    # -- faults --------------------------------------------------------------
    def _plan_faults(self) -> None:
        f = self._faults
        for server, at, repair in f.outages:
            heapq.heappush(self._events, (at, _DOWN, server, 0))
            if repair is not None:
                heapq.heappush(self._events, (at + repair, _UP, server, 0))
        if f.mtbf:
            for server in range(self.cluster.n_servers):
                self._next_failure(server, 0.0)

    def _next_failure(self, server: int, after: float) -> None:
        rng = np.random.default_rng([self._faults.seed, server, int(after * 1e6)])
        at = after + float(rng.exponential(self._faults.mtbf))
        heapq.heappush(self._events, (at, _DOWN, server, 0))
        heapq.heappush(self._events, (at + self._faults.repair, _UP, server, 0))

    def _server_down(self, server: int) -> None:
        """An outage starts; overlapping outages keep the server down until
        the last one ends."""
        self._down[server] += 1
        if self._down[server] > 1:
            return
        for task in sorted(self._server_tasks[server], key=lambda t: self._task_seq[t]):
            self._interrupt(task, outcome="killed")
        self._index.set_down(server)

    def _server_up(self, server: int) -> None:
        self._down[server] -= 1
        if self._down[server] > 0:
            return
        self._index.set_up(server)
        if self._faults.mtbf:
            self._next_failure(server, self._now)

    # -- scheduling ------------------------------------------------------------
    def _schedule(self) -> None:
        """Preempt what the policy asks and start the beneficiary's task in the
        room made (a preemption is a swap, or the room could go to someone
        else and the policy would ask again forever); then place tasks until
        the policy says stop; repeat while it keeps asking (bounded)."""
        for _ in range(len(self._task_state) + 1):
            t0 = perf_counter_ns()
            requests = self.policy.preemptions()
            self._overhead_ns += perf_counter_ns() - t0
            for task, beneficiary in requests:
                if self._task_state[task] != _RUNNING:
                    raise PolicyError(f"policy asked to preempt task {task}, "
                                      "which is not running")
                self._interrupt(task, outcome="preempted", beneficiary=beneficiary)
            swapped = 0
            for leaf in dict.fromkeys(b for _, b in requests if b >= 0):
                demand = self.next_demand(leaf)
                if demand is not None and self._index.fits(demand):
                    self._begin(leaf, self._overhead_ns)
                    self._overhead_ns = 0
                    swapped += 1
            self._place()
            if not requests or not swapped:
                return

    def _begin(self, leaf: int, spent: int) -> None:
        """Start ``leaf``'s next task and record the decision (``spent`` ns so far)."""
        task = self._start(leaf)
        demand = self._jobs[self._task_job[task]].demand
        t0 = perf_counter_ns()
        self.policy.on_task_start(leaf, demand)
        self._rec_decision.append(self._now, leaf, spent + perf_counter_ns() - t0)

    def _place(self) -> None:
        """Ask the policy for leaves until it answers None."""
        policy = self.policy
        while True:
            self._tick()
            t0 = perf_counter_ns()
            leaf = policy.select()
            spent = perf_counter_ns() - t0 + self._overhead_ns
            self._overhead_ns = 0
            if leaf is None:
                self._rec_decision.append(self._now, -1, spent)
                return
            self._begin(leaf, spent)

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
        used = self.alloc[0]
        util = tuple((used / np.where(total > 0, total, 1)).tolist())
        if util != self._last_util:
            self._rec_util.append(self._now, *util)
            self._last_util = util

    def result(self) -> SimulationResult:
        paths = np.array(self.hierarchy.paths, dtype=object)
        jobs = self._jobs
        attempts = self._rec_attempt.to_frame()
        tries = np.bincount(attempts["task"], minlength=self._task_job.size) if len(
            attempts) else np.zeros(self._task_job.size, dtype=np.int64)
        tasks = pd.DataFrame({
            "task": np.arange(self._task_job.size),
            "job": self._task_job,
            "index": np.arange(self._task_job.size) - self._offset[self._task_job],
            "leaf": paths[[jobs[j].leaf for j in self._task_job]] if jobs else [],
            "server": self._task_server,
            "start": self._task_start,
            "finish": self._task_finish,
            "attempts": tries,
            "ran": self._task_ran,
            "state": pd.Categorical.from_codes(self._states(), [s.name.lower() for s in TaskState]),
        })
        job_df = pd.DataFrame({
            "job": np.arange(len(jobs)),
            "name": [j.name for j in jobs],
            "leaf": [self.hierarchy.paths[j.leaf] for j in jobs],
            "tasks": [j.n_tasks for j in jobs],
            # when the job arrived: its submit time, or later if it waited for
            # another job (``after``); NaN if it never arrived
            "submit": self._job_arrival,
            "after": [j.after for j in jobs],
            "first_start": self._job_first,
            "finish": self._job_finish,
            "preemptions": self._job_preempted,
        })
        job_df["wait"] = job_df["first_start"] - job_df["submit"]
        job_df["completion"] = job_df["finish"] - job_df["submit"]
        alloc = self._rec_alloc.to_frame()
        alloc.insert(1, "path", paths[alloc.pop("node").to_numpy()] if len(alloc) else [])
        attempts["outcome"] = pd.Categorical.from_codes(attempts["outcome"], OUTCOMES)
        preempt = self._rec_preempt.to_frame()
        for col in ("victim", "beneficiary"):
            preempt[col] = [paths[i] if i >= 0 else "" for i in preempt[col]]
        finished = self._task_finish[~np.isnan(self._task_finish)]
        return SimulationResult(
            tasks=tasks,
            jobs=job_df,
            allocations=alloc,
            utilization=self._rec_util.to_frame(),
            decisions=self._rec_decision.to_frame(),
            attempts=attempts,
            preemptions=preempt,
            resources=self.cluster.resources,
            makespan=float(finished.max()) if finished.size else 0.0,
            workload_source=self.workload.source,
            wasted_work=self._wasted,
        )
