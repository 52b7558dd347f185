"""The task and job ledger: who waits where, who runs where, and since when.

Tasks move through an explicit state machine::

    WAITING --arrival--> PENDING --start--> RUNNING --finish--> FINISHED
                            ^                  |   |
                            +--preempt / kill--+   | preempt, with an eviction latency
                            |                      v
                            +------evicted----- EVICTING (holds its server, does no work)

A leaf serves its jobs first-in-first-out: the next task of a leaf is the
oldest pending task (re-queued ones first) of the oldest job that still has
one.  Per-task columns are memoryviews of machine numbers over memory that
costs nothing until a task starts (its state, a byte, from its job's
arrival), and that a run keeping no per-task table gives back once no task
of a block that started is unfinished (:mod:`~hierfair.sim.taskstore`);
per-job columns are ``array.array``s.  Both
are read and written as plain Python scalars on the per-task path (a numpy
scalar costs more than the arithmetic).
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from enum import IntEnum

import numpy as np

from hierfair.errors import PolicyError
from hierfair.sim.model import Job, job_columns
from hierfair.sim.taskstore import DIGESTED, PAGE_SHIFT, TaskColumns


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
_PER_TASK = {"task_job": "q", "state": "B", "left": "d",
             **{name: code for name, (code, _) in _TASK_FILL.items()}}
_BLANK = {name: value for name, (_, value) in _TASK_FILL.items()}
#: A block with waiting tasks retires only this many blocks behind the newest
#: arrivals: 2^18 tasks, ~20 MB of columns (one that is being served would
#: come back at each wave of starts: measured, 4 times a block a day).
RETIRE_LAG = 16


def _filled(code: str, value: float, n: int) -> array:
    return array(code, [value]) * n


class Ledger:
    """Per-task and per-job state, leaf queues and what runs on each server."""

    def __init__(self, jobs: Sequence[Job], n_nodes: int, n_servers: int,
                 retire: bool = False, spill_dir: str | None = None,
                 block_shift: int | None = None) -> None:
        """``retire``: give back a block of tasks' memory once all of it has
        finished (a run that keeps no per-task table); its digested columns
        go to an unnamed file in ``spill_dir`` (None: the system's temporary
        folder).  ``block_shift``: log2 of a block's tasks (tests)."""
        if not hasattr(jobs, "columns"):  # a JobTable numbers its jobs itself
            for i, job in enumerate(jobs):
                if job.id != i:
                    raise ValueError("workload jobs must be numbered 0..n-1 in order")
        self.jobs = jobs
        n_jobs = len(jobs)
        cols = job_columns(jobs)
        sizes = cols.size.tolist()
        self.offset = array("q", [0])
        self.offset.extend(np.cumsum(cols.size, dtype=np.int64).tolist())
        n_tasks = self.offset[-1]
        self.n_tasks = n_tasks
        self.job_leaf = cols.leaf.tolist()
        # -- per task: a slot for every task, a page of them written at the
        # first start among them (:meth:`_ready`); :meth:`column` and
        # :meth:`states` give every task, the ones without columns with what
        # a task that never started holds.
        store = self._store = TaskColumns(n_tasks, _PER_TASK, _BLANK, ("state", FINISHED),
                                          spill_dir=spill_dir,
                                          **({} if block_shift is None else {"shift": block_shift}))
        views = store.views
        self.task_job = views["task_job"]
        self.state = views["state"]  # TaskState values
        self.server = views["server"]
        self.start = views["start"]
        self.finish = views["finish"]
        self.seq = views["seq"]  # order of the last start
        self.left = views["left"]  # work still to do
        self.factor = views["factor"]  # slowdown of the current attempt
        self.attempt = views["attempt"]
        self.ran = views["ran"]  # wall time spent running, all attempts
        #: past this task nothing is written: every column reads its initial value
        #: (before it, so do pages where no task started: column, digest_chunks)
        self.filled = 0
        self._retire = retire
        self._lag_checked = 0  # blocks before it were looked at as they fell behind (arrive)
        #: of the finished tasks: how many started after their job arrived, and the last finish
        self.done_waited = 0
        self.done_last = -math.inf
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
        filled = self.filled
        out = np.zeros(self.n_tasks, dtype=np.int8)
        out[:filled] = self._store.arrays["state"][:filled]  # (kept when a block retires)
        return out

    # -- queues ----------------------------------------------------------------
    def _ready(self, task: int) -> None:
        """Give the page of a task starting for the first time its columns:
        a task's first start writes them, not its job's arrival, so a queue
        of a hundred million waiting tasks holds a byte each (their state).
        A task with columns before its job arrives holds the values of one
        that has none.  A retired block comes back first."""
        store = self._store
        if store.retired[task >> store.shift]:
            self._unretire(task >> store.shift)
        page = task >> PAGE_SHIFT
        if store.ready[page]:
            return
        lo, hi = store.page_bounds(page)
        self._fill(lo, hi)
        store.ready[page] = 1
        self.filled = max(self.filled, hi)

    def _fill(self, lo: int, hi: int) -> None:
        """Tasks ``[lo, hi)``'s columns (all but their states) as a task
        that never started holds them."""
        cols = self._store.arrays  # state: WAITING is 0, what unwritten memory reads
        for name, (_, value) in _TASK_FILL.items():
            cols[name][lo:hi] = value
        first = bisect.bisect_right(self.offset, lo) - 1  # the jobs it holds tasks of
        last = bisect.bisect_right(self.offset, hi - 1) - 1
        jobs, base = self.jobs, self.offset[first]
        cols["left"][lo:hi] = np.concatenate([jobs[k].durations for k in range(first, last + 1)]
                                             )[lo - base:hi - base]
        cols["task_job"][lo:hi] = np.repeat(
            np.arange(first, last + 1, dtype=np.int64),
            np.diff(np.clip(np.frombuffer(self.offset, dtype=np.int64)[first:last + 2], lo, hi)))
        # no work left for a task that finished before its block went (and came back)
        cols["left"][lo:hi][cols["state"][lo:hi] == FINISHED] = 0.0

    def arrive(self, job_id: int, now: float) -> None:
        lo, hi = self.offset[job_id], self.offset[job_id + 1]
        if self.state[lo:hi].tobytes().count(WAITING) != hi - lo:
            raise PolicyError(f"job {job_id} arrived twice")
        self.state[lo:hi] = bytes([PENDING]) * (hi - lo)
        self.filled = max(self.filled, hi)
        if self._retire:
            self._retire_fallen_behind(now)
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
        else:  # its first start
            task = self.offset[job_id] + self.job_next[job_id]
            self.job_next[job_id] += 1
            drained = task + 1 == self.offset[job_id + 1]
            store = self._store
            if not store.ready[task >> PAGE_SHIFT] or store.retired[task >> store.shift]:
                self._ready(task)
            if self._retire:
                store.active[task >> store.shift] += 1
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
            if start > self.job_arrival[job_id] + 1e-9:  # what the summary counts
                self.done_waited += 1
            self.done_last = now  # (events in time order)
            left = self.job_left[job_id] = self.job_left[job_id] - 1
            if not left:
                self.job_finish[job_id] = now
            if self._retire:
                store = self._store
                block = task >> store.shift
                active = store.active[block] = store.active[block] - 1
                done = store.done[block] = store.done[block] + 1
                # no task of it that started is left: its memory goes if all
                # finished, or if it is RETIRE_LAG blocks behind the newest
                # arrivals (a queue that fell behind; a block being served
                # now would come back at its next start)
                if not active and (done == store.size[block]
                                   or block + RETIRE_LAG < self.filled >> store.shift):
                    store.retire(block, now)
        return job_id

    def _retire_fallen_behind(self, now: float) -> None:
        """Blocks just fallen RETIRE_LAG behind the newest arrivals, holding
        finished tasks and none running, retire: :meth:`stop` looks only at a
        block's last finish, and one near the front then kept its pages for
        as long as its waiting tasks waited (docs/simulator.md)."""
        store = self._store
        end = (self.filled >> store.shift) - RETIRE_LAG
        for block in range(self._lag_checked, end):
            if store.done[block] and not store.active[block] and not store.retired[block]:
                store.retire(block, now)
        self._lag_checked = max(self._lag_checked, end)

    def _unretire(self, block: int) -> None:
        """A task of a retired block is starting: the block is live again,
        and its pages get columns as their tasks start (:meth:`_ready`), as
        a fresh block's -- one task of a queue that fell days behind holds a
        page, not its block's 32.  Its finished tasks' digested values stay
        in the spill file (:meth:`TaskColumns.unretire`).  A block smaller
        than a page kept its page's flag (other blocks' tasks are there): its
        own slots come back now."""
        store = self._store
        if store.shift < PAGE_SHIFT:
            lo, hi = store.bounds(block)
            self._fill(lo, hi)
        store.unretire(block)

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
        task's, the ones that never started with their initial values)."""
        if name not in _PER_TASK:
            col = getattr(self, name)
            return np.frombuffer(col, dtype=np.int64 if col.typecode == "q" else np.float64).copy()
        store = self._store
        if store.ever_retired and name not in (*DIGESTED, "task_job"):
            raise ValueError(f"the tasks' {name!r} column was given back as they finished "
                             "(a run that keeps no tasks or attempts table)")
        if name == "task_job":  # known from the jobs alone
            return np.repeat(np.arange(len(self.jobs), dtype=np.int64),
                             np.diff(np.frombuffer(self.offset, dtype=np.int64)))
        out = store.restored(name, self.n_tasks)
        if name in DIGESTED:  # blank where no columns, then the spill file's records
            return out
        # a page without columns holds initial values (a run that never retired)
        blank = ~store.ready_mask(0, self.n_tasks)
        if name == "left":  # a waiting task's work is its duration
            out[blank] = np.concatenate([j.durations for j in self.jobs] or [np.zeros(0)])[blank]
        else:
            out[blank] = _TASK_FILL[name][1]
        return out

    def digest_chunks(self, name: str) -> Iterator[bytes]:
        """A per-task column's bytes, every task's (retired blocks read back,
        the never started at their initial values), a bounded piece at a time."""
        yield from self._store.chunks(name)

    def has_columns(self, task: int) -> bool:
        """Whether ``task``'s columns are in memory: on a page where a task
        started, in a block not given back."""
        store = self._store
        if not store.ready[task >> PAGE_SHIFT] or store.retired[task >> store.shift]:
            return False
        # a task that finished before its block went and came back: in the spill file
        return not (self.state[task] == FINISHED and math.isnan(self.finish[task]))

    @property
    def retired(self) -> int:
        """Tasks whose memory was given back (all finished)."""
        return self._store.n_retired

    def last_finish(self) -> float:
        """When the last task finished (0 if none did)."""
        return self.done_last if self.done_last > -math.inf else 0.0

    def held_tasks(self) -> Iterator[np.ndarray]:
        """The tasks of ``[0, filled)`` that hold their columns (on a page
        that has them, not retired), in order, a bounded chunk at a time."""
        return self._store.held(self.filled)

    def placements(self, n_resources: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The running tasks' leaves, servers and demands (one row a task)."""
        tasks = self.running_tasks()
        jobs = [self.jobs[self.task_job[t]] for t in tasks]
        return (np.array([j.leaf for j in jobs], dtype=np.int64),
                np.array([self.server[t] for t in tasks], dtype=np.int64),
                np.array([np.asarray(j.demand) for j in jobs],
                         dtype=np.float64).reshape(len(tasks), n_resources))
