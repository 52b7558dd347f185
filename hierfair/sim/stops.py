"""How running tasks stop: they finish, or are interrupted (preempted, killed
with their server, failed) and wait again at their leaf.

A preemption with an *eviction latency* (``Interruptions.eviction_latency``,
or the job's own) is not instant: the task stops working at once (its work
is lost or checkpointed then) but keeps its server, as a terminating pod
does, in state EVICTING until the latency has passed; only then are its
resources released, the policy told (``on_task_finish``) and the task
queued again.  Evictions that complete at different times leave gaps in
which the room made goes to whoever the policy picks: Kueue #13662.  A
policy sees an evicting task among the running ones (``view.evicting``);
asking to preempt it again does nothing.

:class:`TaskStops` is the simulator's half that handles these transitions
(:class:`~hierfair.sim.loop.Simulator` derives from it).
"""

from __future__ import annotations

import heapq
from time import perf_counter_ns
from typing import TYPE_CHECKING, NamedTuple

from hierfair.sim.events import ARRIVAL, EVICTED
from hierfair.sim.ledger import EVICTING, FINISHED, PENDING
from hierfair.sim.loops import MAX_ATTEMPTS, Livelock
from hierfair.sim.model import shown
from hierfair.sim.recording import OUTCOMES

if TYPE_CHECKING:
    from hierfair.sim.loop import Simulator

    _Base = Simulator
else:
    _Base = object

_PREEMPTED = OUTCOMES.index("preempted")


class Eviction(NamedTuple):
    """A preempted task whose eviction is in flight."""

    left: float  # the work it will resume with
    beneficiary: int  # the leaf it was preempted for (-1: none named)
    job: int  # the beneficiary's job then (the policy's job_for; -1: none)
    since: float  # when it was preempted (it stopped working then)


class TaskStops(_Base):
    """Finishing, interrupting and evicting tasks; server outages."""

    def _stop(self, task: int, new: int, worked_until: float | None = None) -> int:
        """A running (or evicting) task stops (FINISHED or back to PENDING)
        and frees its server; returns its job.  ``worked_until``: when it
        stopped working, if before now (an eviction)."""
        led = self._ledger
        server = self.view.last_server = led.server[task]  # before: a finished task's
        job_id = led.stop(task, self._now, new, worked_until)  # columns may be given back
        leaf, need = led.job_leaf[job_id], self._need[job_id]
        self._index.release(server, need)
        self._usage.remove(leaf, need)
        self._dirty.add(leaf)
        return job_id

    def _finish(self, task: int) -> None:
        job_id = self._stop(task, FINISHED)
        self._rec.horizon = self._now  # utilisation rows before it may be folded
        job = self._jobs[job_id]
        t0 = perf_counter_ns()
        self.policy.on_task_finish(job.leaf, job.demand)
        if not self._ledger.job_left[job_id]:  # the job is done
            self.policy.on_job_completion(job)
            for waiting in self._released_by.get(job_id, ()):
                heapq.heappush(self._events, (max(self._now, self._jobs[waiting].submit),
                                              ARRIVAL, waiting, 0))
        self._overhead_ns += perf_counter_ns() - t0

    def _work_left(self, task: int) -> tuple[float, float]:
        """What an attempt stopped now leaves to do, and the work it loses."""
        led = self._ledger
        elapsed = self._now - led.start[task]
        if self._mode.mode == "checkpoint":
            return max(0.0, led.left[task] - elapsed / led.factor[task]) + self._mode.overhead, 0.0
        return led.left[task], elapsed

    def _interrupt(self, task: int, outcome: str, beneficiary: int = -1) -> float:
        """Stop a running task early and queue it again (or, for a preemption
        with an eviction latency, start its eviction); returns the lost work."""
        led = self._ledger
        if led.state[task] == EVICTING:  # killed while terminating: it is gone now,
            self._evicted(task, swap=False)  # and its server with it: no swap
            return 0.0
        job_id = led.task_job[task]
        job = self._jobs[job_id]
        left, lost = self._work_left(task)
        self._wasted += lost
        now = self._now
        if outcome == "preempted":
            led.job_preempted[job_id] += 1
            self._rec.preemptions.append(now, task, job_id, job.leaf, beneficiary, lost)
            self._loops.preempted(job.leaf)
            latency = (job.eviction_latency if job.eviction_latency is not None
                       else self._mode.eviction_latency)
            if latency > 0 and not self._manual:  # hand-stepped replays: at once
                led.evict(task)
                # the job the room is for, as the policy names it now (by the
                # time the eviction completes its choice may have moved on)
                queue = led.queues[beneficiary] if beneficiary >= 0 else None
                self._evictions[task] = Eviction(
                    left, beneficiary, self._next_job(beneficiary) if queue else -1, now)
                heapq.heappush(self._events, (now + latency, EVICTED, task, led.attempt[task]))
                return lost
        self._stop(task, PENDING)
        self._rec.cut_short(led.seq[task], task, led.server[task], led.start[task], now,
                            OUTCOMES.index(outcome))
        self._requeue(task, job_id, left, outcome)
        return lost

    def _evicted(self, task: int, swap: bool = True) -> None:
        """An eviction completes: the task frees its server and waits again;
        the job it was preempted for starts a task if it still waits and now
        fits (``swap``; not when the server went down with the task)."""
        led = self._ledger
        eviction = self._evictions.pop(task)
        job_id = self._stop(task, PENDING, eviction.since)
        self._rec.cut_short(led.seq[task], task, led.server[task], led.start[task],
                            self._now, _PREEMPTED)
        self._requeue(task, job_id, eviction.left, "preempted")
        leaf, job = eviction.beneficiary, eviction.job
        if (swap and job >= 0 and job in led.queues[leaf]
                and self._index.fits(self._jobs[job].demand)):
            self._begin(leaf, self._overhead_ns, job)
            self._overhead_ns = 0

    def _requeue(self, task: int, job_id: int, left: float, outcome: str) -> None:
        led = self._ledger
        led.requeue(task, job_id, left)
        if led.attempt[task] >= MAX_ATTEMPTS:
            raise Livelock(f"livelock: task {task} (job {job_id}, leaf "
                           f"{shown(self.hierarchy.paths[led.job_leaf[job_id]])}) was stopped "
                           f"{MAX_ATTEMPTS} times without finishing, the last at simulated "
                           f"time {self._now:g} ({outcome}); the run would never end")
        job = self._jobs[job_id]
        self._notify(self.policy.on_task_finish, job.leaf, job.demand)

    # -- faults --------------------------------------------------------------
    def _server_down(self, server: int) -> None:
        """An outage starts; overlapping outages keep the server down until
        the last one ends."""
        self._down[server] += 1
        if self._down[server] > 1:
            return
        led = self._ledger
        for task in sorted(led.on_server[server], key=led.seq.__getitem__):
            self._interrupt(task, "killed")
        self._index.set_down(server)

    def _server_up(self, server: int) -> None:
        self._down[server] -= 1
        if self._down[server] > 0:
            return
        self._index.set_up(server)
        if self._faults.mtbf:
            self._faults.next_failure(self._events, server, self._now)

