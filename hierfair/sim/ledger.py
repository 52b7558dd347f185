"""The task and job ledger: who waits where, who runs where, and since when.

Tasks move through an explicit state machine::

    WAITING --arrival--> PENDING --start--> RUNNING --finish--> FINISHED
                            ^                  |   |
                            +--preempt / kill--+   | preempt, with an eviction latency
                            |                      v
                            +------evicted----- EVICTING (holds its server, does no work)

A leaf serves its jobs first-in-first-out: the next task of a leaf is the
oldest pending task (re-queued ones first) of the oldest job that still has
one.  Per-task and per-job columns are ``array.array``s of machine numbers:
compact for millions of tasks, and read and written as plain Python scalars
on the per-task path (a numpy scalar costs more than the arithmetic).
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Iterator
from enum import IntEnum

import numpy as np

from hierfair.errors import PolicyError
from hierfair.sim.model import Job


class TaskState(IntEnum):
    WAITING = 0  # its job has not arrived yet
    PENDING = 1  # queued at its leaf
    RUNNING = 2
    FINISHED = 3
    EVICTING = 4  # preempted, still holding its server until its eviction completes


WAITING, PENDING, RUNNING, FINISHED, EVICTING = (int(s) for s in TaskState)

_NAN = float("nan")

#: Per-task columns with a fixed value until the task arrives (the others:
#: ``state`` WAITING, ``left`` its duration, ``task_job`` its job).
_TASK_FILL = {"server": ("q", -1), "start": ("d", _NAN), "finish": ("d", _NAN),
              "seq": ("q", -1), "factor": ("d", 1.0), "attempt": ("q", 0), "ran": ("d", 0.0)}
_PER_TASK = frozenset(("task_job", "left", *_TASK_FILL))


def _filled(code: str, value: float, n: int) -> array:
    return array(code, [value]) * n


class Ledger:
    """Per-task and per-job state, leaf queues and what runs on each server."""

    def __init__(self, jobs: tuple[Job, ...], n_nodes: int, n_servers: int) -> None:
        for i, job in enumerate(jobs):
            if job.id != i:
                raise ValueError("workload jobs must be numbered 0..n-1 in order")
        self.jobs = jobs
        n_jobs = len(jobs)
        sizes = [j.n_tasks for j in jobs]
        self.offset = array("q", [0])
        for size in sizes:
            self.offset.append(self.offset[-1] + size)
        n_tasks = self.offset[-1]
        self.n_tasks = n_tasks
        self.job_leaf = [j.leaf for j in jobs]
        # -- per task: allocated as jobs arrive (:meth:`_grow`), not for the
        # whole workload -- a week's trace may hold millions of tasks that
        # arrive after a run's stop; :meth:`column` and :meth:`states` give
        # every task, the rest with what a task that never arrived holds.
        self.task_job = array("q")
        self.state = bytearray()  # TaskState values
        self.server = array("q")
        self.start = array("d")
        self.finish = array("d")
        self.seq = array("q")  # order of the last start
        self.left = array("d")  # work still to do
        self.factor = array("d")  # slowdown of the current attempt
        self.attempt = array("q")
        self.ran = array("d")  # wall time spent running, all attempts
        self._grown = 0  # jobs whose tasks have columns (a prefix of the job ids)
        self.started = 0
        self.unfinished = n_tasks
        self.evicting = 0  # tasks in EVICTING
        # -- per job
        self.job_next = _filled("q", 0, n_jobs)
        self.job_requeued: dict[int, deque[int]] = {}
        self.job_queued = bytearray(n_jobs)
        self.job_left = array("q", sizes)
        self.job_first = _filled("d", _NAN, n_jobs)
        self.job_finish = _filled("d", _NAN, n_jobs)
        self.job_arrival = _filled("d", _NAN, n_jobs)
        self.job_running = _filled("q", 0, n_jobs)
        self.job_alloc = _filled("d", 0.0, n_jobs)  # time with >= 1 task running
        self.job_alloc_since = _filled("d", _NAN, n_jobs)
        self.job_preempted = _filled("q", 0, n_jobs)
        self.job_ran = _filled("d", 0.0, n_jobs)  # task-seconds of ended attempts
        self.job_start_sum = _filled("d", 0.0, n_jobs)  # sum of running tasks' start times
        # -- per leaf and server
        self.queues: list[list[int]] = [[] for _ in range(n_nodes)]  # job ids, ascending
        self.pending = [0] * n_nodes
        self.leaf_last_job = [-1] * n_nodes
        self.on_server: list[set[int]] = [set() for _ in range(n_servers)]

    def transition(self, task: int, old: int, new: int) -> None:
        state = self.state
        if state[task] != old:
            raise PolicyError(f"task {task}: illegal transition "
                              f"{TaskState(state[task]).name} -> {TaskState(new).name}")
        state[task] = new

    def states(self) -> np.ndarray:
        """Every task's state (WAITING for the ones that never arrived)."""
        return np.concatenate([np.frombuffer(bytes(self.state), dtype=np.int8),
                               np.zeros(self.n_tasks - len(self.state), dtype=np.int8)])

    # -- queues ----------------------------------------------------------------
    def _grow(self, job_id: int) -> None:
        """Give every task up to ``job_id``'s last its columns (in place: the
        simulator holds references to them), and a quarter more with 64k
        tasks to spare: growing a job at a time would cost ten times more an
        arrival (jobs of one task), and a task with columns before its job
        arrives holds the values of one that has none."""
        first = self._grown
        if job_id < first:
            return
        want = min(self.n_tasks, len(self.state) + len(self.state) // 4 + (1 << 16))
        # the job holding task want - 1, if its columns end further
        job_id = max(job_id, bisect.bisect_right(self.offset, want - 1) - 1)
        jobs = self.jobs[first:job_id + 1]
        n = self.offset[job_id + 1] - self.offset[first]
        self.state.extend(bytes(n))
        for name, (code, value) in _TASK_FILL.items():
            getattr(self, name).extend(_filled(code, value, n))
        self.left.extend(array("d", np.concatenate([j.durations for j in jobs])
                               .astype(np.float64).tobytes()))
        self.task_job.extend(array("q", np.repeat(np.arange(first, job_id + 1, dtype=np.int64),
                                                  [j.n_tasks for j in jobs]).tobytes()))
        self._grown = job_id + 1

    def arrive(self, job_id: int, now: float) -> None:
        self._grow(job_id)
        lo, hi = self.offset[job_id], self.offset[job_id + 1]
        if self.state[lo:hi].count(WAITING) != hi - lo:
            raise PolicyError(f"job {job_id} arrived twice")
        self.state[lo:hi] = bytes([PENDING]) * (hi - lo)
        self.job_arrival[job_id] = now
        self.pending[self.job_leaf[job_id]] += hi - lo
        self._enqueue(job_id)

    def _enqueue(self, job_id: int) -> None:
        if not self.job_queued[job_id]:
            bisect.insort(self.queues[self.job_leaf[job_id]], job_id)
            self.job_queued[job_id] = 1

    # -- running ---------------------------------------------------------------
    def launch(self, job_id: int, leaf: int, server: int, now: float) -> int:
        """Start the job's next pending task (re-queued ones first) on
        ``server``; returns the task."""
        requeued = self.job_requeued.get(job_id) if self.job_requeued else None
        if requeued:
            task = requeued.popleft()
            drained = not requeued and (self.offset[job_id] + self.job_next[job_id]
                                        == self.offset[job_id + 1])
        else:
            task = self.offset[job_id] + self.job_next[job_id]
            self.job_next[job_id] += 1
            drained = task + 1 == self.offset[job_id + 1]
        if drained:  # the job has no pending task left
            queue = self.queues[leaf]
            queue.pop(bisect.bisect_left(queue, job_id))
            self.job_queued[job_id] = 0
        if self.state[task] != PENDING:
            self.transition(task, PENDING, RUNNING)  # raises
        self.state[task] = RUNNING
        running = self.job_running[job_id]
        if not running:
            self.job_alloc_since[job_id] = now
            if self.job_first[job_id] != self.job_first[job_id]:  # NaN: its first start
                self.job_first[job_id] = now
        self.job_running[job_id] = running + 1
        self.job_start_sum[job_id] += now
        self.leaf_last_job[leaf] = job_id
        self.pending[leaf] -= 1
        self.server[task] = server
        self.start[task] = now
        self.seq[task] = self.started
        self.started += 1
        self.on_server[server].add(task)
        return task

    def stop(self, task: int, now: float, new: int, worked_until: float | None = None) -> int:
        """A running task stops: finishes (``new`` FINISHED) or goes back to
        wait (PENDING); an evicting one goes back to wait when its eviction
        completes (``worked_until``: when it stopped working; ``ran`` counts
        work, not the eviction).  Returns its job; a finished job has
        ``job_left`` 0."""
        state = self.state
        if state[task] != RUNNING:
            if state[task] != EVICTING or new != PENDING:
                self.transition(task, RUNNING, new)  # raises
            self.evicting -= 1
        state[task] = new
        job_id = self.task_job[task]
        self.on_server[self.server[task]].discard(task)
        start = self.start[task]
        worked = (now if worked_until is None else worked_until) - start
        self.ran[task] += worked
        self.job_ran[job_id] += worked
        self.job_start_sum[job_id] -= start
        running = self.job_running[job_id] = self.job_running[job_id] - 1
        if not running:
            self.job_alloc[job_id] += now - self.job_alloc_since[job_id]
        if new == FINISHED:
            self.finish[task] = now
            self.left[task] = 0.0
            self.unfinished -= 1
            left = self.job_left[job_id] = self.job_left[job_id] - 1
            if not left:
                self.job_finish[job_id] = now
        return job_id

    def evict(self, task: int) -> None:
        """A running task is preempted but keeps its server until its eviction
        completes (:meth:`stop` then); its finish event is now stale."""
        self.transition(task, RUNNING, EVICTING)
        self.evicting += 1

    def requeue(self, task: int, job_id: int, work_left: float) -> None:
        """A stopped task waits again with ``work_left``; its pending finish
        event is now stale (the attempt number moved on)."""
        self.left[task] = work_left
        self.attempt[task] += 1
        self.job_requeued.setdefault(job_id, deque()).append(task)
        self.pending[self.job_leaf[job_id]] += 1
        self._enqueue(job_id)

    # -- queries ---------------------------------------------------------------
    def running_tasks(self) -> list[int]:
        """Running task ids, earliest started first."""
        return sorted((t for tasks in self.on_server for t in tasks), key=self.seq.__getitem__)

    def job_times(self, job: int, now: float) -> tuple[float, float, float]:
        alloc = self.job_alloc[job]
        running = self.job_running[job]
        if running > 0:
            alloc += now - self.job_alloc_since[job]
        alive = now - self.job_arrival[job]
        ran = self.job_ran[job] + running * now - self.job_start_sum[job]
        return alloc, max(0.0, alive - alloc), ran

    def column(self, name: str) -> np.ndarray:
        """A copy of a per-task or per-job column as numpy (per task: every
        task's, the ones that never arrived with their initial values)."""
        col = getattr(self, name)
        values = np.frombuffer(col, dtype=np.int64 if col.typecode == "q" else np.float64)
        if name not in _PER_TASK:
            return values.copy()
        return np.concatenate([values, self.unarrived(name)])

    def unarrived_chunks(self, name: str, size: int = 1 << 20) -> Iterator[bytes]:
        """:meth:`unarrived`'s bytes a bounded piece at a time (a fixed value
        repeats: one piece is made once)."""
        if name not in _TASK_FILL:
            yield self.unarrived(name).tobytes()
            return
        left = self.n_tasks - len(self.state)
        code, value = _TASK_FILL[name]
        piece = np.full(min(left, size), value,
                        dtype=np.int64 if code == "q" else np.float64).tobytes()
        width = 8
        while left > 0:
            n = min(left, size)
            yield piece if n * width == len(piece) else piece[:n * width]
            left -= n

    def unarrived(self, name: str) -> np.ndarray:
        """A per-task column's values for the tasks without columns yet."""
        jobs = self.jobs[self._grown:]
        if name == "left":
            return (np.concatenate([j.durations for j in jobs]).astype(np.float64) if jobs
                    else np.zeros(0))
        if name == "task_job":
            return np.repeat(np.arange(self._grown, len(self.jobs), dtype=np.int64),
                             [j.n_tasks for j in jobs])
        code, value = _TASK_FILL[name]
        return np.full(self.n_tasks - len(self.state), value,
                       dtype=np.int64 if code == "q" else np.float64)

    def placements(self, n_resources: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The running tasks' leaves, servers and demands (one row a task)."""
        server, job = self.column("server"), self.column("task_job")
        tasks = self.running_tasks()
        jobs = [self.jobs[job[t]] for t in tasks]
        return (np.array([j.leaf for j in jobs], dtype=np.int64),
                np.array([server[t] for t in tasks], dtype=np.int64),
                np.array([np.asarray(j.demand) for j in jobs],
                         dtype=np.float64).reshape(len(tasks), n_resources))
