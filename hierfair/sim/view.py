"""What a policy may read about the present (``hierfair.sim.policy.SchedulerState``).

The simulator's read-only face: the clock, each node's allocation, the leaf
queues, whether a demand fits, running tasks.  It never shows the event queue
or the future.
"""

from __future__ import annotations

import numpy as np

from hierfair.sim.ledger import Ledger
from hierfair.sim.model import Job
from hierfair.sim.placement import Index
from hierfair.sim.usage import NodeUsage


class PolicyView:
    """The ``SchedulerState`` methods, over the simulator's ledger, usage and
    placement index (set by :class:`~hierfair.sim.loop.Simulator`)."""

    _jobs: tuple[Job, ...]
    _ledger: Ledger
    _index: Index
    _usage: NodeUsage
    _now: float
    @property
    def alloc(self) -> np.ndarray:
        return self._usage.alloc

    @property
    def running(self) -> np.ndarray:
        return self._usage.running

    def alloc_row(self, node: int) -> list[float]:
        return self._usage.rows[node]

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
        return self._ledger.pending[leaf]

    def head_job(self, leaf: int) -> Job | None:
        q = self._ledger.queues[leaf]
        return self._jobs[q[0]] if q else None

    def next_demand(self, leaf: int) -> np.ndarray | None:
        q = self._ledger.queues[leaf]
        return self._jobs[q[0]].demand if q else None

    def fits(self, demand: np.ndarray) -> bool:
        return self._index.choose(demand) is not None

    def running_tasks(self, leaf: int | None = None) -> list[int]:
        """Running task ids (of ``leaf``, or all), earliest started first."""
        tasks = self._ledger.running_tasks()
        if leaf is not None:
            led = self._ledger
            tasks = [t for t in tasks if led.job_leaf[led.task_job[t]] == leaf]
        return tasks

    def task_info(self, task: int) -> tuple[int, int, int, np.ndarray, float]:
        """``(job, leaf, server, demand, start)`` of a running task."""
        led = self._ledger
        job = self._jobs[led.task_job[task]]
        return job.id, job.leaf, led.server[task], job.demand, led.start[task]

    def server_free(self, server: int) -> np.ndarray:
        return self._index.free_of(server)

    def job_times(self, job: int) -> tuple[float, float, float]:
        """``(t_alloc, t_wait, ran)`` of a job up to now: time with at least one
        task running, time since submission with none running, and the wall
        time its tasks have run in all (task-seconds)."""
        return self._ledger.job_times(job, self._now)

    def last_job(self, leaf: int) -> int | None:
        """The job of the task ``leaf`` started most recently (None: never)."""
        job = self._ledger.leaf_last_job[leaf]
        return job if job >= 0 else None

    def completed_jobs(self) -> np.ndarray:
        """Completion times (finish - submit) of the jobs finished so far."""
        finish = self._ledger.column("job_finish")
        return (finish - self._ledger.column("job_arrival"))[~np.isnan(finish)]
