"""Preemptive DRF (PDRF): dominant share blended with run time, with preemption.

Source: Agarwal and Yadav, *Scheduling Algorithm for Clusters with Resource
Hogs and Mice* (``../shared/papers/pdrf-preemptive-drf.md``), "Approach".

Priority (lower first, as in DRF): ``p * (DRF dominant share) + (1 - p) * t``
with ``t`` the total time the job has executed, across allocations.  A
waiting job preempts a running one when ``t_wait > alpha * t_alloc`` and the
running job's run time exceeds ``min(average finish time / queue length,
beta)``.

Our readings (docs/algorithms.md, "pdrf"):

* The "user" is a leaf; its priority uses the leaf's weighted dominant share
  and the ``t`` of the job it serves next (its head job).
* ``t`` is in task-seconds, normalised by the largest ``t`` among the
  demanding leaves, so it lies in [0, 1] like a dominant share (0 when no one
  has run yet).
* ``t_alloc`` / ``t_wait``: the time since submission the job had at least
  one task running / none running.
* "Average finish time of jobs": mean completion time (finish - submit) of
  the jobs completed so far (``beta`` alone until one has); "queue length":
  the number of demanding leaves.
* Preemption, when enabled, helps one waiting job per scheduling round: the
  lowest-priority demanding leaf whose next task does not fit and whose head
  job satisfies the ``alpha`` rule.  Victims are the running leaves of
  higher priority whose job ran longer than the threshold, highest priority
  first; their most recently started tasks are stopped, on one server, until
  the waiting task fits there, and the waiting task starts in their place.
  A task is never preempted in the instant it started (else two waiting jobs
  could swap back and forth forever without time moving).

With ``p = 1`` and ``preempt: false`` PDRF is DRF: the same choices, ties
broken the same way (tested schedule for schedule).

Cost per decision: O(n) over the leaves (priorities change with time).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, NonNegativeFloat

from hierfair.fields import Strict
from hierfair.sim.policy import BasePolicy, PolicyView, room_on_one_server, running_by_leaf
from hierfair.sim.shares import inverse_totals

KEY_DECIMALS = 12


class PDRFParams(Strict):
    p: float = Field(0.5, ge=0, le=1)
    alpha: NonNegativeFloat = 2.0
    beta: NonNegativeFloat = 60.0
    preempt: bool = True


class PDRF(BasePolicy[PDRFParams]):
    """Preemptive DRF over the leaves (hierarchy ignored, like ``drf``)."""

    name: ClassVar[str] = "pdrf"
    description: ClassVar[str] = ("preemptive DRF: p * dominant share + (1 - p) * run time, "
                                  "preempting for long-waiting jobs (PDRF proposal)")
    Params: ClassVar[type[Strict]] = PDRFParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        total = state.cluster.total
        self._inv = inverse_totals(total)
        self._weight = state.hierarchy.weights
        self._leaves = list(state.hierarchy.leaves)

    def priorities(self) -> dict[int, float]:
        """Priority of every leaf that is demanding or holds tasks (lower is
        served first); ``t`` is normalised over these leaves."""
        state, p = self.state, self.params.p
        jobs: dict[int, int] = {}
        for leaf in self._leaves:
            if state.pending(leaf) > 0:
                jobs[leaf] = state.head_job(leaf).id
            elif state.running[leaf] > 0:
                jobs[leaf] = state.last_job(leaf)
        ran = {leaf: state.job_times(job)[2] for leaf, job in jobs.items()} if p < 1 else {}
        top = max(ran.values(), default=0.0)
        out = {}
        for leaf in jobs:
            share = float((state.alloc[leaf] * self._inv).max()) / self._weight[leaf]
            t = ran[leaf] / top if p < 1 and top > 0 else 0.0
            out[leaf] = round(p * share + (1 - p) * t, KEY_DECIMALS)
        return out

    def select(self) -> int | None:
        state = self.state
        best: tuple[float, int] | None = None  # (priority, leaf): ties go to the lower leaf
        for leaf, key in self.priorities().items():
            demand = state.next_demand(leaf)
            if demand is not None and (best is None or (key, leaf) < best) and state.fits(demand):
                best = (key, leaf)
        return None if best is None else best[1]

    def preemptions(self) -> list[tuple[int, int]]:
        prm = self.params
        if not prm.preempt:
            return []
        state = self.state
        prio = self.priorities()
        demanding = [leaf for leaf in prio if state.pending(leaf) > 0]
        waiting = sorted((prio[leaf], leaf) for leaf in demanding
                         if not state.fits(state.next_demand(leaf)))
        if not waiting:
            return []
        done = state.completed_jobs()
        threshold = (min(float(done.mean()) / max(1, len(demanding)), prm.beta) if done.size
                     else prm.beta)
        for key, leaf in waiting:
            t_alloc, t_wait, _ = state.job_times(state.head_job(leaf).id)
            if t_wait <= prm.alpha * t_alloc:
                continue
            plan = self._victims(leaf, key, prio, threshold)
            if plan:
                return plan
        return []

    def _victims(self, leaf: int, key: float, prio: dict[int, float],
                 threshold: float) -> list[tuple[int, int]]:
        """Tasks to stop, on one server, so that ``leaf``'s next task fits."""
        state = self.state
        need = state.next_demand(leaf)
        # victims: more served than the waiting leaf, running long enough
        victims = [v for v in prio if v != leaf and prio[v] > key and state.running[v] > 0
                   and state.job_times(state.last_job(v))[0] > threshold]
        if not victims:
            return []
        by_leaf = running_by_leaf(state)
        order = sorted(victims, key=lambda v: (-prio[v], v))  # most served first
        # most recently started first: least work lost
        tasks = (t for v in order for t in reversed(by_leaf.get(v, [])))
        return [(t, leaf) for t in room_on_one_server(state, need, tasks)]
