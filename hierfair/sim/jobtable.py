"""A workload's jobs as columns: each :class:`~hierfair.sim.model.Job` made when read.

A generated workload can hold millions of jobs: H-DRF §5.3.2 at the paper's
scale is about a million jobs a week per unit of offered load, ~130 tasks
each.  As ``Job`` objects with their durations that is ~2 kB a job (measured:
1.27 GB for 500,000 jobs) before the first event, most of it for jobs that
arrive days later or, past ``stop_at``, never.  A :class:`JobTable` keeps per
job its leaf, submit time, task count, predecessor and demand (one shared,
read-only vector per distinct demand: a generator has a handful), and asks
its ``durations`` function for a job's durations only when that job is read.
The function must give the same array every time (a generator keeps where
in its random stream each job's durations start: datasets/facebook.py).

The simulator reads jobs through :attr:`JobTable.by_id`, a dict of the jobs
made so far (C-speed lookups on the per-task path) that forgets them all
once it holds :data:`KEEP` -- jobs are values, made again the same when asked.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import overload

import numpy as np

from hierfair.sim.model import Job, JobColumns

#: Jobs :attr:`JobTable.by_id` holds before it starts again: heads of queues
#: are read again and again, and a job with its durations is ~1.5 kB on
#: average (16k of them added 18 MB over a week's run: measured).
KEEP = 1 << 12


class _Made(dict[int, Job]):
    """Jobs by id, made on first read; cleared when full."""

    def __init__(self, make: Callable[[int], Job], n: int) -> None:
        super().__init__()
        self._make, self._n = make, n

    def __missing__(self, job: int) -> Job:
        if not 0 <= job < self._n:
            raise KeyError(job)
        if len(self) >= KEEP:
            self.clear()
        made = self[job] = self._make(job)
        return made


class JobTable(Sequence[Job]):
    """Jobs numbered 0..n-1 in arrival order, held as :class:`JobColumns`."""

    def __init__(self, columns: JobColumns, durations: Callable[[int], np.ndarray],
                 name: str = "{}") -> None:
        """``durations(job)``: that job's task durations (float64, its
        ``size`` of them); ``name``: a format for a job's name from its id."""
        self.columns = columns
        self._durations = durations
        self._name = name
        self.by_id = _Made(self._make, len(columns.size))

    def __getstate__(self) -> dict:  # sent to a worker without the jobs made so far
        return {**self.__dict__, "by_id": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.by_id = _Made(self._make, len(self.columns.size))

    def _make(self, job: int) -> Job:
        c = self.columns
        durations = self._durations(job)
        durations.setflags(write=False)
        return Job(id=job, leaf=int(c.leaf[job]), submit=float(c.submit[job]),
                   demand=c.demand[job], durations=durations,
                   name=self._name.format(job), after=int(c.after[job]))

    def __len__(self) -> int:
        return len(self.columns.size)

    @overload
    def __getitem__(self, i: int) -> Job: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Job, ...]: ...
    def __getitem__(self, i: int | slice) -> Job | tuple[Job, ...]:
        if isinstance(i, slice):
            return tuple(self.by_id[k] for k in range(*i.indices(len(self))))
        k = operator.index(i)
        if not -len(self) <= k < len(self):
            raise IndexError(f"job {k} out of range ({len(self)} jobs)")
        return self.by_id[k % len(self)]

    def __iter__(self) -> Iterator[Job]:
        for k in range(len(self)):  # made, not kept: a pass over every job holds one
            yield self.by_id.get(k) or self._make(k)

    def names(self) -> list[str]:
        return [self._name.format(k) for k in range(len(self))]

    def with_columns(self, **changes: np.ndarray) -> JobTable:
        """The same jobs with some columns replaced (submit times rescaled,
        predecessors set)."""
        return JobTable(replace_columns(self.columns, **changes), self._durations, self._name)


def replace_columns(columns: JobColumns, **changes: np.ndarray) -> JobColumns:
    out = columns._replace(**changes)
    for col in out[:-1]:  # demand is a list of shared read-only vectors
        col.setflags(write=False)
    return out

