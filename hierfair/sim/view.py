"""What a policy may read about the present: :class:`PolicyView`.

The simulator makes one view per run and hands it to the policy's ``attach``;
the policy never sees the simulator, the event queue or the future.  Every
attribute and method below is the whole of what a policy may read
(docs/extending.md, "What a policy sees").  It may not modify anything it
reads: the arrays are the simulator's own, shared for speed.

Three of the methods are bound straight to the data they read when the view
is made (``pending``, ``alloc_row``, ``fits``: policies call them once per
decision or more), so they are declared as typed attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from hierfair.errors import PolicyError
from hierfair.sim.ledger import EVICTING, WAITING, Ledger
from hierfair.sim.model import Cluster, Hierarchy, Job
from hierfair.sim.placement import Index
from hierfair.sim.usage import NodeUsage


class RunningTask(NamedTuple):
    """One running task, as :meth:`PolicyView.task_info` gives it (the
    fields in the order of the plain tuple it used to be)."""

    job: int
    leaf: int
    server: int
    demand: np.ndarray
    #: simulated time it started (this attempt)
    start: float


class JobTimes(NamedTuple):
    """A job's times up to now (:meth:`PolicyView.job_times`)."""

    #: time with at least one of its tasks running
    t_alloc: float
    #: time since its submission with none running
    t_wait: float
    #: the time its tasks have run in all (task-seconds)
    ran: float


class PolicyView:
    """The read-only face of one run, given to ``Policy.attach``.

    Nodes are numbered in pre-order (the root is 0; ``hierarchy`` says which
    are leaves, their parents, weights and paths).  Resources are numbered as
    ``cluster.resources`` lists them.
    """

    #: The tree of queues: ``is_leaf``, ``parent``, ``children``, ``weights``,
    #: ``paths``, ``leaves``, ``n_nodes`` (hierfair.sim.model.Hierarchy).
    hierarchy: Hierarchy
    #: The servers: ``resources``, ``capacities`` (servers x resources),
    #: ``total`` (their sum), ``n_servers``.
    cluster: Cluster
    #: Simulated time now, in seconds.
    now: float
    #: The server of the task being started or stopped, read in
    #: ``on_task_start`` and ``on_task_finish`` (-1 before the first): what
    #: a policy that keeps per-server accounts needs.
    last_server: int
    #: The policy's own random generator, seeded from the run's seed (a
    #: stream of its own: drawing from it changes no workload or fault).  A
    #: policy that draws from it gives the same schedule for the same seed,
    #: and needs no ``seed`` parameter of its own.
    rng: np.random.Generator
    #: Tasks waiting at ``leaf``; a leaf is *demanding* while this is > 0.
    pending: Callable[[int], int]
    #: ``alloc[node]`` as plain floats, for per-node arithmetic in Python
    #: (cheaper than a numpy row).
    alloc_row: Callable[[int], list[float]]
    #: Whether some server has room for ``demand`` now (a policy that
    #: brings its own placement index, ``make_index``, answers with it).
    fits: Callable[[np.ndarray], bool]

    def __init__(self, hierarchy: Hierarchy, cluster: Cluster,
                 jobs: Sequence[Job] | Mapping[int, Job],
                 ledger: Ledger, usage: NodeUsage, index: Index, rng: np.random.Generator
                 ) -> None:
        self.hierarchy, self.cluster, self.rng = hierarchy, cluster, rng
        self.now = 0.0  # the simulator moves it
        self.last_server = -1  # the simulator sets it before each task notification
        self._jobs, self._ledger, self._usage, self._index = jobs, ledger, usage, index
        self.pending = ledger.pending.__getitem__
        self.alloc_row = usage.rows.__getitem__
        self.fits = index.fits

    # -- allocations ----------------------------------------------------------
    @property
    def alloc(self) -> np.ndarray:
        """Resources allocated to every node (nodes x resources).  An
        internal node's row is the plain sum of its children's."""
        return self._usage.alloc

    @property
    def running(self) -> np.ndarray:
        """Running tasks per node (an internal node: the sum over its subtree)."""
        return self._usage.running

    # -- free capacity --------------------------------------------------------
    @property
    def free_total(self) -> np.ndarray:
        """Free capacity summed over the servers, per resource."""
        return self._index.free_total

    @property
    def saturated(self) -> np.ndarray:
        """Per resource: whether (almost) none is free anywhere."""
        return self._index.saturated

    def server_free(self, server: int) -> np.ndarray:
        """Free capacity of one server, per resource."""
        return self._index.free_of(server)

    @property
    def free(self) -> np.ndarray:
        """Free capacity of every server (servers x resources), a copy."""
        free = getattr(self._index, "free", None)
        if free is not None:
            return np.asarray(free)
        return np.array([self._index.free_of(i) for i in range(self.cluster.n_servers)])

    @property
    def release_epoch(self) -> int:
        """Increases whenever resources are released anywhere: between two
        equal values free space has only shrunk, so what did not fit still
        does not."""
        return self._index.release_epoch

    # -- pending work -----------------------------------------------------------
    def head_job(self, leaf: int) -> Job | None:
        """The job ``leaf`` serves next (FIFO over its jobs), None if none waits."""
        q = self._ledger.queues[leaf]
        return self._jobs[q[0]] if q else None

    def pending_jobs(self, leaf: int) -> list[int]:
        """The jobs of ``leaf`` with a pending task, in arrival order."""
        return list(self._ledger.queues[leaf])

    def job_pending(self, job: int) -> int:
        """How many tasks of ``job`` wait to start now (0 before it arrives;
        a task being evicted waits only once its eviction completes)."""
        led = self._ledger
        if led.job_arrival[job] != led.job_arrival[job]:  # NaN: not arrived
            return 0
        requeued = led.job_requeued.get(job)
        return (led.offset[job + 1] - led.offset[job] - led.job_next[job]
                + (len(requeued) if requeued else 0))

    def job(self, job: int) -> Job:
        """A job of the workload by id (its demand, priority, submit time)."""
        return self._jobs[job]

    def next_demand(self, leaf: int) -> np.ndarray | None:
        """Demand vector of the task ``leaf`` would run next."""
        q = self._ledger.queues[leaf]
        return self._jobs[q[0]].demand if q else None

    # -- running work (what preemptive policies read) ---------------------------
    def running_tasks(self, leaf: int | None = None) -> list[int]:
        """Running task ids (of ``leaf``, or all), earliest started first;
        tasks being evicted (:meth:`evicting`) are among them: they hold their
        servers until their eviction completes."""
        tasks = self._ledger.running_tasks()
        if leaf is not None:
            led = self._ledger
            tasks = [t for t in tasks if led.job_leaf[led.task_job[t]] == leaf]
        return tasks

    def evicting(self, task: int) -> bool:
        """Whether a running task was preempted and its eviction is in flight
        (``preemption.eviction_latency``): asking to preempt it again does nothing."""
        led = self._ledger
        return 0 <= task < led.n_tasks and led.state[task] == EVICTING

    def task_info(self, task: int) -> RunningTask:
        """What a running task is: its job, leaf, server, demand and start."""
        led = self._ledger
        # not arrived, never started, or finished and given back (a run with
        # no per-task table)
        if not 0 <= task < led.n_tasks or led.state[task] == WAITING or not led.has_columns(task):
            raise PolicyError(f"task {task} is not running (task_info is for running tasks)")
        job = self._jobs[led.task_job[task]]
        return RunningTask(job.id, job.leaf, led.server[task], job.demand,
                           led.start[task])

    def job_times(self, job: int) -> JobTimes:
        """A job's time with tasks running, time waiting, and task-seconds run."""
        return JobTimes(*self._ledger.job_times(job, self.now))

    def last_job(self, leaf: int) -> int | None:
        """The job of the task ``leaf`` started most recently (None: never)."""
        job = self._ledger.leaf_last_job[leaf]
        return job if job >= 0 else None

    def completed_jobs(self) -> np.ndarray:
        """Completion times (finish - submit) of the jobs finished so far."""
        finish = self._ledger.column("job_finish")
        return (finish - self._ledger.column("job_arrival"))[~np.isnan(finish)]
