"""What Volcano's two hierarchical plugins share: job bookkeeping, the Go
heap of the ``allocate`` action, and one session's queue pops.

Upstream: volcano-sh/volcano at ed72c7c8 (read through ``git show``;
../shared/research notes in docs/upstream/volcano.md).

* :class:`GoHeap` is Go's ``container/heap`` (``Push``/``Pop`` with ``up`` and
  ``down`` exactly as ``src/container/heap/heap.go``), keyed by a comparator
  that reads *current* values: an entry already in the heap is not moved when
  the values it was placed by change (the stale positions of
  ``pkg/scheduler/actions/allocate/allocate.go: allocateResources``).
* :class:`VolcanoSession` is the allocate action's loop
  (``allocate.go: allocateResources``, ``allocateResourcesForTasks``) without
  gang: a session opens at the first :meth:`select` of a cycle with every leaf
  queue that has a pending job pushed in pre-order (Go map order is random:
  we fix it), each pop gives the queue's first job in job order *one* task
  and re-pushes the queue, a job whose task does not fit (or is not
  allocatable) is dropped for the session, a queue with no job left is
  dropped; the session ends when the heap is empty.  Each simulator cycle
  (``cycles = True``: reclaim, then allocate, repeated while something
  happens) is one Volcano session.

Mapping onto hierfair: every hierfair leaf is a Volcano queue whose
``volcano.sh/hierarchy`` annotation is the leaf's path, the weights of the
path's nodes its ``hierarchy-weights``; every hierfair job under it is a
Volcano job (one PodGroup, minMember 0), which the drf plugin makes a leaf of
its tree.  Queue names are the leaves' pre-order positions (a spec lists
queues in the order of their Volcano names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic

import numpy as np

from hierfair.sim.model import Job
from hierfair.sim.policy import BasePolicy, P, PolicyView

#: Free room below this is none (hierfair's placement tolerance).
TOL = 1e-9


class GoHeap:
    """Go's ``container/heap`` over items with ``less(a, b)`` read at each
    comparison (so positions go stale when values change)."""

    def __init__(self, less: Callable[[Any, Any], bool]) -> None:
        self.items: list[Any] = []
        self.less = less

    def __len__(self) -> int:
        return len(self.items)

    def _less(self, i: int, j: int) -> bool:
        return self.less(self.items[i], self.items[j])

    def _swap(self, i: int, j: int) -> None:
        h = self.items
        h[i], h[j] = h[j], h[i]

    def _up(self, j: int) -> None:
        while True:
            i = (j - 1) // 2 if j > 0 else 0  # Go: (j-1)/2 truncates, so 0 for j = 0
            if i == j or not self._less(j, i):
                break
            self._swap(i, j)
            j = i

    def _down(self, i0: int, n: int) -> None:
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self._less(j2, j1):
                j = j2
            if not self._less(j, i):
                break
            self._swap(i, j)
            i = j

    def push(self, x: Any) -> None:
        self.items.append(x)
        self._up(len(self.items) - 1)

    def pop(self) -> Any:
        n = len(self.items) - 1
        self._swap(0, n)
        self._down(0, n)
        return self.items.pop()


def share_of(alloc: np.ndarray, total: np.ndarray) -> float:
    """``calculateShare``: max over the cluster's resources of
    ``helpers.Share(alloc_r, total_r)`` (0 when both are 0, 1 when only the
    total is)."""
    best = 0.0
    for a, t in zip(alloc.tolist(), total.tolist()):
        s = (1.0 if a > 0 else 0.0) if t <= 0 else a / t
        best = max(best, s)
    return best


class VolcanoSession(BasePolicy[P], Generic[P]):
    """The live jobs, their running tasks, and the allocate action's loop;
    subclasses give the queue order, the job order and ``allocatable``."""

    cycles: ClassVar[bool] = True
    #: Volcano clamps a weight below 1 to 1 (drf) or reads none (capacity).
    zero_weights: ClassVar[bool] = True

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        self.total = state.cluster.total.astype(float)
        self.live: dict[int, Job] = {}  # jobs submitted and not completed
        self.by_leaf: dict[int, list[int]] = {leaf: [] for leaf in h.leaves}
        self.run_count: dict[int, int] = {}
        self._recount = False
        self._session: GoHeap | None = None
        self._session_jobs: dict[int, list[int]] = {}
        self._repush: int | None = None
        self._next: int | None = None
        #: jobs whose tasks reclaim pipelined this cycle, in order (their
        #: tasks start first: Volcano counts them allocated already)
        self.pipelined: list[int] = []
        self.dirty = True
        self.paths = [h.path_from_root(v) for v in range(h.n_nodes)]

    # -- bookkeeping -------------------------------------------------------
    def on_job_arrival(self, job: Job) -> None:
        self.live[job.id] = job
        self.by_leaf[job.leaf].append(job.id)
        self.run_count.setdefault(job.id, 0)
        self.dirty = True

    def on_job_completion(self, job: Job) -> None:
        self.live.pop(job.id, None)
        if job.id in self.by_leaf[job.leaf]:
            self.by_leaf[job.leaf].remove(job.id)
        self.dirty = True

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        job = self.state.last_job(leaf)
        if job is not None and not self._recount:
            self.run_count[job] = self.run_count.get(job, 0) + 1
        if self.pipelined and job in self.pipelined:
            self.pipelined.remove(job)
        self.dirty = True

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._recount = True  # which job stopped: read from the running tasks
        self.dirty = True

    def counts(self) -> dict[int, int]:
        """Running tasks per live job (recounted after a task stopped)."""
        if self._recount:
            counts = dict.fromkeys(self.run_count, 0)
            for task in self.state.running_tasks():
                job = self.state.task_info(task).job
                counts[job] = counts.get(job, 0) + 1
            self.run_count = counts
            self._recount = False
        return self.run_count

    def job_alloc(self, job: int) -> np.ndarray:
        return self.counts().get(job, 0) * self.live[job].demand

    def pending_jobs(self, leaf: int) -> list[int]:
        return [j for j in self.state.pending_jobs(leaf) if j in self.live]

    # -- what subclasses define --------------------------------------------
    def refresh(self) -> None:
        """Recompute the shares the orders read (after any change)."""

    def queue_less(self, lq: int, rq: int) -> bool:
        raise NotImplementedError

    def job_key(self, job: int) -> Any:
        raise NotImplementedError

    def allocatable(self, leaf: int, demand: np.ndarray) -> bool:
        return True

    def use_heap(self) -> bool:
        return True

    def _fresh(self) -> None:
        if self.dirty:
            self.dirty = False
            self.refresh()

    def _less(self, lq: int, rq: int) -> bool:
        self._fresh()
        return self.queue_less(lq, rq)

    # -- the allocate action -----------------------------------------------
    def job_for(self, leaf: int) -> int | None:
        if self._next is not None and self.live.get(self._next) is not None \
                and self.live[self._next].leaf == leaf:
            return self._next
        for job in self.pipelined:
            if self.live[job].leaf == leaf and job in self.state.pending_jobs(leaf):
                return job
        return None

    def _open(self) -> None:
        heap = GoHeap(self._less)
        self._session_jobs = {}
        for leaf in self.by_leaf:
            jobs = self.pending_jobs(leaf)
            if jobs:
                self._session_jobs[leaf] = jobs
                heap.push(leaf)
        self._session = heap
        self._repush = None

    def _pop(self, heap: GoHeap) -> int:
        if self.use_heap():
            return heap.pop()
        # a fresh argmin (earliest queue on ties) instead of the stale heap
        best = 0
        for i in range(1, len(heap.items)):
            if self._less(heap.items[i], heap.items[best]):
                best = i
        return heap.items.pop(best)

    def select(self) -> int | None:
        state = self.state
        self._next = None
        while self.pipelined:  # reclaim's pipelined tasks bind first
            job = self.pipelined[0]
            if job in self.live and job in state.pending_jobs(self.live[job].leaf) \
                    and state.fits(self.live[job].demand):
                self._next = job
                return self.live[job].leaf
            self.pipelined.pop(0)
        if self._session is None:
            self._open()
        heap = self._session
        assert heap is not None
        if self._repush is not None:
            heap.push(self._repush)
            self._repush = None
        while len(heap):
            q = self._pop(heap)
            pending = set(self.pending_jobs(q))
            jobs = [j for j in self._session_jobs.get(q, []) if j in pending]
            self._session_jobs[q] = jobs
            if not jobs:
                continue  # dropped for the session
            self._fresh()
            job = min(jobs, key=self.job_key)
            demand = self.live[job].demand
            if state.fits(demand) and self.allocatable(q, demand):
                self._next = job
                self._repush = q
                return q
            jobs.remove(job)  # not re-pushed this session
            heap.push(q)
        self._session = None
        return None

    def preemptions(self) -> list[tuple[int, int]]:
        self._session = None  # a new cycle: a new session
        self.pipelined = []
        return self.reclaim()

    def reclaim(self) -> list[tuple[int, int]]:
        return []

    # -- helpers for reclaim -----------------------------------------------
    def evict_on_one_server(self, need: np.ndarray, free: dict[int, np.ndarray],
                            by_server: dict[int, list[int]]) -> tuple[int, list[int]] | None:
        """``reclaimForTask``'s last step: on the first server (in index order)
        whose free room plus its victims holds ``need`` (``ValidateVictims``),
        evict victims in the order given, one at a time, until it fits."""
        state = self.state
        for server in sorted(by_server):
            victims = by_server[server]
            room = free.setdefault(server, state.server_free(server).copy())
            gain = sum((state.task_info(t).demand for t in victims), np.zeros_like(need))
            if not np.all(room + gain >= need - TOL):
                continue
            taken: list[int] = []
            for task in victims:
                if np.all(room >= need - TOL):
                    break
                room += state.task_info(task).demand
                taken.append(task)
            room -= need
            return server, taken
        return None

    def starving(self, job: int) -> int:
        """Tasks of ``job`` to reclaim for: those pending (the ``priority``
        plugin's ``JobStarving``).  A leaf's pending count bounds it (the view
        gives pending counts per leaf)."""
        j = self.live[job]
        if job not in self.state.pending_jobs(j.leaf):
            return 0
        return max(0, min(self.state.pending(j.leaf), j.n_tasks - self.counts().get(job, 0)))
