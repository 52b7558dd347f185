"""The event loop: applies events, asks the policy, starts and stops tasks.

Time jumps from event to event (:mod:`hierfair.sim.events`).  All events that
share a timestamp are applied first, and only then does the scheduling loop
run: the policy may first ask to preempt running tasks; then the simulator
asks it for the next leaf to serve, places that leaf's next task on a server,
and repeats until the policy answers ``None``.  Nothing depends on hash order
or the wall clock, so the same inputs always give the same schedule.

A task that is preempted, killed with its server, or fails goes back to
PENDING at its leaf.  Under ``restart`` its work is lost (counted as wasted
work); under ``checkpoint`` it resumes with the work left, plus a fixed
restore ``overhead``.

The wall time of every scheduling decision is recorded: ``perf_counter_ns``
around the policy's ``select`` plus the policy's own bookkeeping in the
notifications since the previous decision, so lazy and eager recomputation
are charged alike.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable
from operator import truediv
from time import monotonic, perf_counter_ns
from typing import Any

import numpy as np
import pandas as pd

from hierfair.errors import PolicyError
from hierfair.sim.events import (
    ARRIVAL,
    DOWN,
    EVICTED,
    FINISH,
    TASK_FAIL,
    UP,
    WAKE,
    Event,
    Faults,
)
from hierfair.sim.ledger import EVICTING, RUNNING, Ledger
from hierfair.sim.loops import (  # noqa: F401 - MAX_ATTEMPTS re-exported
    MAX_ATTEMPTS,
    Interruptions,
    Livelock,
    LoopWatch,
    RunTimeout,
)
from hierfair.sim.model import Cluster, Hierarchy, Job, Workload, job_columns
from hierfair.sim.placement import Index, Placement, ServerIndex
from hierfair.sim.policy import BasePolicy
from hierfair.sim.server_choice import (
    asks_preemptions,
    index_for,
    named_job,
    named_server,
    takes,
)
from hierfair.sim.recording import Columns, Recorder
from hierfair.sim.stepping import HandStepping
from hierfair.sim.stops import Eviction, TaskStops
from hierfair.sim.result import SimulationResult, frame_of, shown_paths, tables
from hierfair.sim.usage import NodeUsage
from hierfair.sim.view import PolicyView
from hierfair.sim.watch import Standing, Watch


#: Spawn key of the policy's random stream (PolicyView.rng): a spawn key,
#: not more entropy, so that no seed list of the faults' draws gives its stream.
_POLICY_STREAM = 0x9011C7


class Simulator(TaskStops, HandStepping):
    """Runs one policy on one cluster, hierarchy and workload.  The policy
    sees the run through :attr:`view` alone (:class:`~hierfair.sim.view.PolicyView`)."""

    def __init__(self, cluster: Cluster, hierarchy: Hierarchy, workload: Workload,
                 policy: BasePolicy, placement: Placement = "first-fit",
                 deadline: float | None = None, interruptions: Interruptions | None = None,
                 faults: Faults | None = None, record_allocations: bool = True,
                 seed: int = 0, watch: Watch | None = None,
                 record_decisions: bool = True, record_utilization: bool = True,
                 retire_finished: bool = False, spill_dir: str | None = None,
                 table_sink: Callable[[str, pd.DataFrame], None] | None = None) -> None:
        self.cluster = cluster
        self.hierarchy = hierarchy
        self.workload = workload
        self.policy = policy
        #: jobs by id (a JobTable's are made when read, and forgotten again)
        self._jobs = getattr(workload.jobs, "by_id", workload.jobs)
        self._ledger = Ledger(workload.jobs, hierarchy.n_nodes, cluster.n_servers,
                              retire=retire_finished, spill_dir=spill_dir)
        self._index: Index = index_for(policy, cluster, placement, workload, seed)
        #: the policy's own choice of server, if it makes one (None: placement's)
        self._server_for = named_server(policy)
        self._job_for = named_job(policy)  # the policy's choice of job (None: FIFO)
        self._cycles = bool(getattr(policy, "cycles", False))  # read once, not per instant
        self._preempts = asks_preemptions(policy)  # read once too
        self._usage = NodeUsage(hierarchy, cluster.n_resources)
        # a kept table past Recorder.FOLD rows goes to table_sink a row group at a time
        self._table_sink = table_sink
        self._rec = Recorder(cluster.resources, keep_decisions=record_decisions,
                             keep_utilization=record_utilization,
                             sink=self._emit if table_sink else None, spill_dir=spill_dir)
        self._mode = interruptions or Interruptions()
        self._faults = faults or Faults()
        self._task_failures = self._faults.task_failure > 0
        cols = job_columns(workload.jobs)
        needs: dict[int, tuple[float, ...]] = {}  # one tuple a shared demand vector
        self._need = [needs.get(id(d)) or needs.setdefault(id(d), tuple(d.tolist()))
                      for d in cols.demand]  # plain floats
        self._released_by: dict[int, list[int]] = {}  # job -> jobs waiting for it
        for job in np.flatnonzero(cols.after >= 0).tolist():
            self._released_by.setdefault(int(cols.after[job]), []).append(job)
        self._scale = [t if t > 0 else 1 for t in self._index.total.tolist()]
        # ServerIndex never slows a task down; policies' own indexes may.
        self._uniform = type(self._index) is ServerIndex
        self._now = 0.0
        self._down = [0] * cluster.n_servers  # outages in progress
        self._wasted = 0.0
        self._events: list[Event] = []
        self._dirty: set[int] = set()  # leaves whose allocation changed this step
        self._record_allocations = record_allocations  # allocations.parquet (~5 rows a task)
        self._overhead_ns = 0  # policy notification time not yet charged to a decision
        self._manual = False
        # the deadline (a time.monotonic() value) and progress reports, if any
        self._watch = watch or (Watch(deadline) if deadline is not None else None)
        self._until: float | None = None
        self._ticks = 0
        self._stopped_at: float | None = None  # run(until=) stopped with work left
        self._loops = LoopWatch()
        self._evictions: dict[int, Eviction] = {}  # task -> its eviction in flight
        #: the policy's wake_at, if it has its own (None: it never asks)
        self._wake_at = (policy.wake_at if getattr(type(policy), "wake_at", BasePolicy.wake_at)
                         is not BasePolicy.wake_at else None)
        self._wakes: set[float] = set()  # wake-up times in the event heap
        self._arrived = 0  # arrivals and faults so far: what a loop must not see
        self._faulted = 0
        #: What the policy reads; its random numbers come from the run's seed
        #: (a stream of their own: drawing them changes no workload or fault).
        self.view = PolicyView(hierarchy, cluster, self._jobs, self._ledger, self._usage,
                               self._index, np.random.default_rng(np.random.SeedSequence(
                                   seed, spawn_key=(_POLICY_STREAM,))))
        policy.attach(self.view)

    # -- running -------------------------------------------------------------
    def run(self, until: float | None = None) -> SimulationResult:
        """Simulate until every task has finished (or nothing more can run),
        or, with ``until``, up to that simulated time (later events stay unrun)."""
        if self._manual:
            raise RuntimeError("this simulator was stepped by hand; build a new one to run")
        events, led = self._events, self._ledger
        # Arrivals wait in submit order and enter the event heap only at their
        # instant: the heap holds what runs, not the whole future (a trace may
        # have millions of jobs).  Jobs with ``after`` arrive when the job
        # they wait for finishes.
        cols = job_columns(self.workload.jobs)
        ids = np.flatnonzero(cols.after < 0)
        ids = ids[np.argsort(cols.submit[ids], kind="stable")]
        times, ids = array("d", cols.submit[ids].tobytes()), array("q", ids.tobytes())
        n_arrivals, a = len(ids), 0
        self._faults.plan(events, self.cluster.n_servers)
        attempt, state = led.attempt, led.state
        self._until = until
        while (events or a < n_arrivals) and led.unfinished:
            self._tick()
            now = events[0][0] if events else math.inf
            if a < n_arrivals and times[a] <= now:
                now = times[a]
                while a < n_arrivals and times[a] == now:
                    heapq.heappush(events, (now, ARRIVAL, ids[a], 0))
                    a += 1
            if until is not None and now > until:
                self._stopped_at = until
                break
            self._now = self.view.now = now
            try:  # a livelock (one task stopped MAX_ATTEMPTS times) stops the run as a loop
                while events and events[0][0] == now:
                    _, kind, key, tried = heapq.heappop(events)
                    if kind == FINISH:
                        if tried == attempt[key] and state[key] == RUNNING:  # not evicting
                            self._finish(key)
                    elif kind == TASK_FAIL:
                        if tried == attempt[key] and state[key] == RUNNING:
                            self._faulted += 1
                            self._interrupt(key, "failed")
                    elif kind == DOWN:
                        self._faulted += 1
                        self._server_down(key)
                    elif kind == UP:
                        self._faulted += 1
                        self._server_up(key)
                    elif kind == ARRIVAL:
                        self._arrive(key)
                    elif kind == EVICTED:
                        # not killed with its server meanwhile (nor finished
                        # since, and given back: its slots read zero)
                        if tried == attempt[key] and state[key] == EVICTING:
                            self._evicted(key)
                    else:  # WAKE: the policy asked for a round now
                        self._wakes.discard(now)
                self._schedule()
                if self._wake_at is not None:
                    self._ask_wake()
            except Livelock as exc:
                self._loops.stop(str(exc), now)
            self._record_step()
            if self._loops.reason:
                self._stopped_at = now
                break
        return self.result()

    def _ask_wake(self) -> None:
        """Queue the round the policy asks for (``wake_at``): only while a
        task waits and one runs, the only state a later round can change
        without an event (a wake-up with nothing running would repeat forever)."""
        assert self._wake_at is not None
        t = self._wake_at()
        if (t is not None and self._now < t < math.inf and t not in self._wakes
                and self._usage.tasks[0] and any(self._ledger.pending)):
            self._wakes.add(t)
            heapq.heappush(self._events, (t, WAKE, 0, 0))

    def _tick(self) -> None:
        """Count work; every 1024 ticks, look at the clock (:mod:`~hierfair.sim.watch`)."""
        self._ticks += 1
        watch = self._watch
        if watch is not None and not self._ticks & 1023 and monotonic() > watch.due:
            self._overdue()

    def _overdue(self) -> None:
        """Past the deadline (raises) or time for a progress report."""
        assert self._watch is not None
        led = self._ledger
        self._watch.overdue(Standing(self._now, self._until, led.n_tasks - led.unfinished,
                                     led.n_tasks))

    # -- transitions ---------------------------------------------------------
    def _notify(self, call: Callable[..., Any], *args: Any) -> None:
        t0 = perf_counter_ns()
        call(*args)
        self._overhead_ns += perf_counter_ns() - t0

    def _arrive(self, job_id: int) -> None:
        self._arrived += 1
        self._ledger.arrive(job_id, self._now)
        self._notify(self.policy.on_job_arrival, self._jobs[job_id])

    def _start(self, leaf: int, job_id: int = -1) -> Job:
        """Start ``leaf``'s next task (of ``job_id``, if named) on the server
        placement picks; returns its job."""
        led = self._ledger
        queue = led.queues[leaf]
        if not queue:
            raise PolicyError(f"policy selected leaf {self.hierarchy.paths[leaf]!r}, "
                              "which has no pending task")
        if job_id < 0:
            job_id = self._next_job(leaf)
        job = self._jobs[job_id]
        index = self._index
        server = self._server_for(leaf, job.demand) if self._server_for else None
        if server is None:
            server = index.choose(job.demand)
            if server is None:
                raise PolicyError(f"policy selected leaf {self.hierarchy.paths[leaf]!r}, "
                                  "whose next task fits on no server")
        elif not takes(index, server, job.demand):
            raise PolicyError(f"policy placed leaf {self.hierarchy.paths[leaf]!r}'s next "
                              f"task on server {server!r}, which has no room for it or "
                              "which it may not use")
        self.view.last_server = server
        now = self._now
        task = led.launch(job_id, leaf, server, now)
        need = self._need[job_id]
        index.allocate(server, need)
        self._usage.add(leaf, need)
        self._dirty.add(leaf)
        if self._uniform:  # every task runs at the speed it asked for
            duration = led.left[task]
        else:
            factor = led.factor[task] = index.duration_factor(server)
            duration = led.left[task] * factor
        attempt = led.attempt[task]
        heapq.heappush(self._events, self._faults.attempt_end(task, attempt, now, duration)
                       if self._task_failures else (now + duration, FINISH, task, attempt))
        return job

    def _next_job(self, leaf: int) -> int:
        """The job whose task ``leaf`` starts next: the policy's choice, or FIFO."""
        queue = self._ledger.queues[leaf]
        job = self._job_for(leaf) if self._job_for else None
        if job is None:
            return queue[0]
        if job not in queue:
            raise PolicyError(f"policy named job {job} for leaf "
                              f"{self.hierarchy.paths[leaf]!r}, which has no pending task of it")
        return job

    # -- scheduling ------------------------------------------------------------
    def _schedule(self) -> None:
        """Preempt what the policy asks and start the beneficiary's task in the
        room made (a preemption is a swap, or the room could go to someone
        else and the policy would ask again forever); then place tasks until
        the policy says stop; repeat while it keeps asking (bounded)."""
        cycles = self._cycles
        for _ in range((4 if cycles else 1) * (self._ledger.n_tasks + 1)):
            if self._preempts:
                t0 = perf_counter_ns()
                requests = self.policy.preemptions()
                self._overhead_ns += perf_counter_ns() - t0
            else:
                requests = []
            if requests and self._evictions:  # already being evicted: nothing to do
                requests = [(t, b) for t, b in requests if t not in self._evictions]
            for task, beneficiary in requests:
                state = self._ledger.state
                if not 0 <= task < self._ledger.n_tasks or state[task] != RUNNING:
                    raise PolicyError(f"policy asked to preempt task {task}, "
                                      "which is not running")
                self._interrupt(task, "preempted", beneficiary)
            swapped = 0
            for leaf in dict.fromkeys(b for _, b in requests if b >= 0):
                queue = self._ledger.queues[leaf]
                if queue and self._index.fits(self._jobs[self._next_job(leaf)].demand):
                    self._begin(leaf, self._overhead_ns)
                    self._overhead_ns = 0
                    swapped += 1
            placed = self._place()
            if requests and self._loops.check(self._ledger, self.hierarchy, self._now,
                                              self._arrived + self._faulted,
                                              len(self._rec.preemptions)):
                return
            if cycles:  # admission cycles: run them until one does nothing
                if not requests and not placed:
                    return
            elif not requests or not swapped:
                return

    def _begin(self, leaf: int, spent: int, job: int = -1) -> None:
        """Start ``leaf``'s next task (of ``job``, if named) and record the
        decision (``spent`` ns so far)."""
        demand = self._start(leaf, job).demand
        t0 = perf_counter_ns()
        self.policy.on_task_start(leaf, demand)
        self._rec.decision(self._now, leaf, spent + perf_counter_ns() - t0)

    def _place(self) -> int:
        """Ask the policy for leaves until it answers None (:meth:`_begin`
        and :meth:`_tick` written out: this loop runs once per task);
        returns how many tasks started."""
        select, started = self.policy.select, self.policy.on_task_start
        decision, watch = self._rec.decision, self._watch
        # decisions.parquet's columns, appended to directly
        times, leaves, spans = self._rec.decision_columns
        placed = 0
        while True:
            self._ticks += 1
            if watch is not None and not self._ticks & 1023 and monotonic() > watch.due:
                self._overdue()
            t0 = perf_counter_ns()
            leaf = select()
            spent = perf_counter_ns() - t0 + self._overhead_ns
            self._overhead_ns = 0
            if leaf is None:
                decision(self._now, -1, spent)
                return placed
            placed += 1
            demand = self._start(leaf).demand
            t0 = perf_counter_ns()
            started(leaf, demand)
            spans.append(spent + perf_counter_ns() - t0)
            times.append(self._now)
            leaves.append(leaf)

    # -- recording -----------------------------------------------------------
    def _record_step(self) -> None:
        usage = self._usage
        if self._dirty:
            if self._record_allocations:
                paths = usage.paths
                nodes = sorted({node for leaf in self._dirty for node in paths[leaf]})
                self._rec.allocation_rows(self._now, nodes, usage.tasks, usage.rows)
            self._dirty.clear()
        self._rec.utilization_row(self._now, tuple(map(truediv, usage.rows[0], self._scale)))
        self._rec.bound()

    def _emit(self, name: str, rows: Columns) -> None:
        assert self._table_sink is not None
        self._table_sink(name, frame_of(name, rows, shown_paths(self.hierarchy)))

    def placements(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The running tasks' leaves, servers and demands (one row a task)."""
        return self._ledger.placements(self.cluster.n_resources)

    def result(self) -> SimulationResult:
        return tables(self._ledger, self._rec, self.hierarchy, self.cluster.resources,
                      self.workload.source, self._wasted, self._stopped_at, self._loops.reason)
