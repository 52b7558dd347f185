"""YuniKorn's asks that preempt: when an ask that has waited its queue's
``preemption.delay`` fits neither the headroom nor any node, the walk asks
the preemptor (:mod:`hierfair.algorithms.yunikorn_preemption`) for victims.

Upstream: apache/yunikorn-core be3bb487, ``application.go``
(``tryAllocate`` / ``tryPreemption``, ``CheckPreconditions``: the delay,
``preemptAttemptFrequency``, one trigger per ask), ``queue.go``
(``TryAllocate``'s walk, ``maxPreemptionsPerQueue``).  The reading:
docs/upstream/yunikorn-preemption.md.  :class:`AskPreemption` is the part of
``yunikorn-fair`` (:mod:`hierfair.algorithms.yunikorn_fair`) that does it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hierfair.algorithms.yunikorn_preemption import Outcome, Preemptor, QueueTree, Victim
from hierfair.algorithms.yunikorn_resources import add, fit_in
from hierfair.sim.model import Job, eligible_servers

if TYPE_CHECKING:
    from hierfair.algorithms.yunikorn_fair import YuniKornFair

    _Base = YuniKornFair
else:
    _Base = object


class AskPreemption(_Base):
    """Preemption for ``yunikorn-fair`` (``params.preemption``): the walk,
    the preconditions, the victims, the swap and the wake-ups."""

    def job_for(self, leaf: int) -> int | None:
        job = self._swap.get(leaf)
        if job is not None and job in self.state.pending_jobs(leaf):
            return job  # the task the preemption made room for (the swap)
        return super().job_for(leaf)

    def on_task_start(self, leaf: int, demand: Any) -> None:
        job = self.state.last_job(leaf)
        self._triggered.discard(job)  # type: ignore[arg-type]
        if self._swap.get(leaf) == job:
            del self._swap[leaf]
        super().on_task_start(leaf, demand)

    def _preconditions(self, job: Job) -> bool:
        """``CheckPreconditions``: not triggered yet, older than the delay,
        not checked within the attempt frequency; a pass marks the check."""
        now, p = self.state.now, self.params
        if (job.id in self._triggered or now < job.submit + p.preemption_delay
                or now < self._checked.get(job.id, -float("inf")) + p.attempt_frequency):
            return False
        self._checked[job.id] = now
        return True

    def preemptions(self) -> list[tuple[int, int]]:
        """One ``TryAllocate`` walk: the first ask that fits ends it (select()
        starts it); an ask that fits no node or not the headroom may preempt
        (at most ``max_attempts`` per leaf), and its victims end it."""
        if not self.params.preemption:
            return []
        state = self.state
        self._swap.clear()
        for leaf in self._walk_leaves():
            attempts = self.params.max_attempts
            jobs = [self._jobs[j] for j in state.pending_jobs(leaf)]
            for job in self.app_order(leaf, jobs):
                ask = self._dict(job.demand)
                room = not self.params.headroom or self._in_headroom(leaf, ask)
                if room and state.fits(job.demand):
                    return []  # an allocation comes first
                if attempts == 0 or not self._preconditions(job):
                    continue
                attempts -= 1
                out = self.try_preemption(leaf, job, ask, nodes_tried=room)
                if out.victims:
                    self._triggered.add(job.id)
                    self._swap[leaf] = job.id
                    return [(v.task, leaf) for v in out.victims]
        return []

    def try_preemption(self, leaf: int, job: Job, ask: dict[str, float],
                       nodes_tried: bool) -> Outcome:
        """``Preemptor.TryPreemption`` on the simulator's present."""
        state, h, cluster = self.state, self.state.hierarchy, self.state.cluster
        running: dict[int, list[Victim]] = {}
        preempting: dict[int, dict[str, float]] = {}
        for task in state.running_tasks():
            info = state.task_info(task)
            if state.evicting(task):  # already preempted: no victim (IsPreempted), but
                for n in h.path_from_root(info.leaf):  # its queues' preempting resource
                    preempting[n] = add(preempting.get(n, {}), self._dict(info.demand))
                continue
            j = self._jobs[info.job]
            running.setdefault(info.leaf, []).append(Victim(
                task, info.leaf, info.server, self._dict(info.demand), j.priority, j.submit,
                info.start))
        tree = QueueTree([int(p) for p in h.parent], h.children, self._names,
                         [self._dict(state.alloc_row(n)) for n in range(h.n_nodes)],
                         self._guar, self._max, list(h.priorities), running, preempting)
        free = [self._dict(state.server_free(i), keep_zero=True)
                for i in range(cluster.n_servers)]
        caps = [self._dict(c, keep_zero=True) for c in cluster.capacities]
        allowed = eligible_servers(job.demand)  # the ask's predicates: its constraints

        def fits(i: int) -> bool:
            return (allowed is None or bool(allowed[i])) and fit_in(caps[i], ask)

        return Preemptor(tree, leaf, ask, job.priority, free, fits,
                         nodes_tried).run()

    def wake_at(self) -> float | None:
        """The next time a waiting ask passes its delay or may be checked again."""
        if not self.params.preemption:
            return None
        state, p = self.state, self.params
        times = [max(self._jobs[j].submit + p.preemption_delay,
                     self._checked.get(j, -float("inf")) + p.attempt_frequency)
                 for leaf in state.hierarchy.leaves for j in state.pending_jobs(leaf)
                 if j not in self._triggered]
        later = [t for t in times if t > state.now]
        return min(later) if later else None
