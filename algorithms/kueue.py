"""Kueue's fair sharing, as its code behaves: admission cycles, a tournament
on dominant resource shares of borrowed quota, and preemption strategies.

Source: kubernetes-sigs/kueue at ff69552e (2026-08-23): ``pkg/scheduler/
scheduler.go`` (``schedule``, ``nominate``, ``processEntry``),
``pkg/scheduler/fair_sharing_iterator.go`` (``computeDRS``, ``runTournament``,
``entryComparer.less``), ``pkg/cache/queue/cluster_queue.go`` (queue order,
requeueing); the quota tree in :mod:`hierfair.algorithms.kueue_quota`,
preemption in :mod:`hierfair.algorithms.kueue_preemption`.  Every rule as
read, and every simplification, is in docs/algorithms.md ("kueue").

Kueue admits *workloads* against *quota*: a ClusterQueue (a leaf) owns a
nominal quota and may borrow what its cohort (an internal node; the root is
the root cohort) does not use.  Fair sharing orders the queues by the DRS of
what they borrow (:func:`~hierfair.algorithms.kueue_quota.compare_drs`),
weighted; a weight of 0 means "only what the others leave".

One **cycle** (:meth:`Kueue.preemptions`, the simulator runs cycles until one
does nothing, ``cycles``):

1. each CQ offers one head: its sticky preemptor if it has one, else its
   pending workload of highest priority, earliest created (BestEffortFIFO);
   a head that could not be admitted waits (inadmissible) until quota is
   released anywhere in the tree;
2. every head is nominated against the cycle's starting usage: it fits its
   CQ's available quota, needs preemption (with its victims), or cannot fit;
3. heads are taken by a tournament from the root: at each cohort the child
   whose DRS, with the head's usage added, is lowest wins (a subtree that
   would not borrow first; then priority, then creation); each head is
   then processed on the cycle's running snapshot: admitted if it fits,
   its victims evicted if it preempts (it becomes its CQ's sticky head and
   is admitted in a later cycle), parked if neither.

A workload here is one task of a job (the job's tasks are alike: same
priority and creation time).  An eviction completes after the run's (or
the job's) ``eviction_latency``; until then the victim holds its quota and
is a candidate taken first at no cost ("already evicted").  A tree without
quotas gets what its weights promise (``Hierarchy.with_implied_quotas``:
each leaf's weighted share of the cluster as its nominal quota); capacity no
nominal quota accounts for is the root cohort's own.
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar, Literal, NamedTuple

import numpy as np
from pydantic import Field

from hierfair.algorithms.kueue_preemption import (
    Candidate,
    Preemptor,
    fair_preemptions,
    satisfies,
)
from hierfair.algorithms.kueue_quota import DRS, SLACK, QuotaTree, compare_drs
from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Hierarchy
from hierfair.sim.policy import BasePolicy, PolicyView

Within = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
Reclaim = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"]


class CQPreemption(Strict):
    """A ClusterQueue's ``spec.preemption`` (Kueue's defaults: all Never)."""

    within_cluster_queue: Within = "Never"
    reclaim_within_cohort: Reclaim = "Never"
    #: Only whether it is Never matters under fair sharing (``canPreemptWhileBorrowing``).
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"


class KueueParams(Strict):
    #: Per ClusterQueue (leaf path), its preemption policies.
    preemption: dict[str, CQPreemption] = Field(default_factory=dict)
    #: For the leaves ``preemption`` does not name.
    default_preemption: CQPreemption = CQPreemption()
    #: ``fairSharing.preemptionStrategies`` (none configured: both).
    strategies: list[Literal["S2-a", "S2-b"]] = Field(["S2-a", "S2-b"], min_length=1,
                                                      max_length=2)
    #: Feature gate FairSharingPreemptWithinNominal (on by default since 0.17).
    preempt_within_nominal: bool = True
    #: Feature gate FairSharingPrioritizeNonBorrowing (on by default since 0.17).
    prioritize_non_borrowing: bool = True
    #: How two zero-weight borrowers compare: by their unweighted ratio (since
    #: PR #6925), or as equal (before it: both MaxInt; the loop of #6774).
    zero_weight_ties: Literal["ratio", "equal"] = "ratio"
    #: Feature gate PrioritizePreemptorWorkloads (0.20, alpha, off by
    #: default; Kueue #13662): a preemptor waiting for its victims' evictions
    #: wins the tournament and keeps its quota reserved, so a workload
    #: evicted earlier cannot be readmitted in the gap.
    prioritize_preemptors: bool = False
    #: How a DRS tie between target ClusterQueues is broken in ``nextTarget``:
    #: by ``CandidatesOrdering`` of their first candidates (PR #6764), or at
    #: random, as Go's set order did before it (the run's seeded stream).
    target_ties: Literal["ordering", "random"] = "ordering"


class Head(NamedTuple):
    leaf: int
    job: int
    request: np.ndarray
    priority: int
    submit: float


class Nomination(NamedTuple):
    mode: Literal["fit", "preempt", "nofit"]
    targets: tuple[Candidate, ...] = ()


class Kueue(BasePolicy[KueueParams]):
    """Admission cycles with fair sharing (module docstring)."""

    name: ClassVar[str] = "kueue"
    description: ClassVar[str] = ("Kueue fair sharing as coded (ff69552e): admission cycles, "
                                  "DRS of borrowed quota, preemption strategies S2-a/S2-b")
    Params = KueueParams
    zero_weights: ClassVar[bool] = True
    cycles: ClassVar[bool] = True

    @classmethod
    def check_hierarchy(cls, params: KueueParams, hierarchy: Hierarchy) -> None:
        leaves = {hierarchy.paths[x] for x in hierarchy.leaves}
        for path in params.preemption:
            if path not in leaves:
                raise SpecError("no such ClusterQueue (leaf) in the hierarchy",
                                where=f"params.preemption.{path}", value=path)

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        cluster = state.cluster
        h = state.hierarchy.with_implied_quotas(cluster.resources, cluster.total)
        self.tree = QuotaTree(h, cluster.resources, cluster.total)
        self._leaves = list(h.leaves)
        self._policy = [self.params.preemption.get(h.paths[x], self.params.default_preemption)
                        for x in range(h.n_nodes)]
        self._ratio = self.params.zero_weight_ties == "ratio"
        self._admit: deque[tuple[int, int]] = deque()
        self._job = -1  # the job select() just named, for job_for
        self._inadmissible: set[int] = set()  # jobs parked until quota is released
        self._sticky: dict[int, int] = {}  # CQ -> its preemptor waiting for victims

    # -- notifications ------------------------------------------------------------
    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._inadmissible.clear()  # quota released: parked heads may try again

    # -- the contract ---------------------------------------------------------------
    def select(self) -> int | None:
        state = self.state
        while self._admit:
            leaf, job = self._admit.popleft()
            if job in state.pending_jobs(leaf) and state.fits(state.job(job).demand):
                if self._sticky.get(leaf) == job:
                    del self._sticky[leaf]
                self._job = job
                return leaf
        return None

    def job_for(self, leaf: int) -> int | None:
        # only for the leaf select() just named (the simulator may ask of another)
        return self._job if self._job in self.state.pending_jobs(leaf) else None

    def preemptions(self) -> list[tuple[int, int]]:
        """One admission cycle: its victims now, its admissions through select()."""
        self._admit.clear()
        admit, victims = self._cycle()
        self._admit.extend(admit)
        evicting = self.state.evicting
        return [(c.task, -1) for c in victims if not evicting(c.task)]  # in flight: issued

    # -- one cycle ---------------------------------------------------------------------
    def _usage(self) -> np.ndarray:
        u = np.zeros_like(self.tree.nominal)
        alloc = self.state.alloc
        u[self._leaves] = alloc[self._leaves]
        return u

    def _head(self, leaf: int) -> Head | None:
        """The CQ's head: its sticky preemptor, else the pending job of
        highest priority, earliest created (BestEffortFIFO's order)."""
        job_of = self.state.job
        pending = [j for j in self.state.pending_jobs(leaf) if j not in self._inadmissible]
        if not pending:
            return None
        sticky = self._sticky.get(leaf)
        job = sticky if sticky in pending else min(
            pending, key=lambda j: (-job_of(j).priority, job_of(j).submit, j))
        j = job_of(job)
        return Head(leaf, job, np.asarray(j.demand, dtype=float), j.priority, j.submit)

    def _cycle(self) -> tuple[list[tuple[int, int]], list[Candidate]]:
        heads = [hd for leaf in self._leaves if (hd := self._head(leaf)) is not None]
        if not heads:
            return [], []
        start = self._usage()
        nominated = {hd.leaf: self._nominate(hd, start) for hd in heads}
        snapshot = start.copy()
        preempted: dict[int, Candidate] = {}
        admit: list[tuple[int, int]] = []
        victims: list[Candidate] = []
        remaining = {hd.leaf: hd for hd in heads}
        while remaining:
            head = self._tournament(remaining, snapshot)
            del remaining[head.leaf]
            nom = nominated[head.leaf]
            if any(t.task in preempted for t in nom.targets):
                # RecomputeAssignmentUponPreemptionTargetsOverlap: nominate again
                # with the victims already claimed gone
                without = self._without(snapshot, preempted.values())
                nom = self._nominate(head, without, claimed=set(preempted))
                if nom.mode == "fit":  # DeferredFit: its quota is held, admitted later
                    snapshot[head.leaf] += head.request
                    self._sticky[head.leaf] = head.job  # requeued as PendingPreemption
                    continue
            if nom.mode == "nofit" or (nom.mode == "preempt" and not nom.targets):
                self._park(head, snapshot, nom)
                continue
            if any(t.task in preempted for t in nom.targets):
                continue  # FailedAfterNomination: tried again next cycle
            room = self.tree.available(head.leaf, self.tree.usage(
                self._without(snapshot, [*preempted.values(), *nom.targets])))
            need = head.request > 0
            if not np.all(head.request[need] <= room[need] + SLACK):
                continue
            snapshot[head.leaf] += head.request
            preempted.update((t.task, t) for t in nom.targets)
            if nom.mode == "preempt":
                victims.extend(nom.targets)
                self._sticky[head.leaf] = head.job
            else:
                admit.append((head.leaf, head.job))
        return admit, victims

    @staticmethod
    def _without(u: np.ndarray, gone: object) -> np.ndarray:
        out = u.copy()
        for c in gone:  # type: ignore[attr-defined]
            out[c.leaf] -= c.demand
        return out

    def _park(self, head: Head, snapshot: np.ndarray, nom: Nomination) -> None:
        """A head that cannot fit, or finds no victims, waits for released
        quota; one that found none keeps its quota reserved in this cycle
        unless its CQ may reclaim from anyone (``reserveCapacityForUnreclaimablePreempt``)."""
        self._inadmissible.add(head.job)
        waiting = self.params.prioritize_preemptors and self._sticky.get(head.leaf) == head.job
        if nom.mode == "preempt" and (self._policy[head.leaf].reclaim_within_cohort != "Any"
                                      or waiting):
            u = self.tree.usage(snapshot)
            nominal = self.tree.nominal[head.leaf]
            borrowing = self.tree.borrowing_with(head.leaf, u, head.request)
            snapshot[head.leaf] += (head.request if borrowing else np.maximum(
                0.0, np.minimum(head.request, nominal - u[head.leaf])))

    # -- nomination ---------------------------------------------------------------------
    def _nominate(self, head: Head, cq_usage: np.ndarray,
                  claimed: frozenset[int] | set[int] = frozenset()) -> Nomination:
        """Fit, preempt (with victims, maybe none) or no fit, per resource
        (``fitsResourceQuota``); the worst resource decides."""
        tree, leaf, request = self.tree, head.leaf, head.request
        u = tree.usage(cq_usage)
        room = tree.available(leaf, u)
        policy = self._policy[leaf]
        can_preempt_borrowing = (policy.borrow_within_cohort != "Never"
                                 or policy.reclaim_within_cohort != "Never")
        short: list[int] = []
        for r in np.flatnonzero(request > 0).tolist():
            if request[r] > tree.potential[leaf][r] + SLACK:
                return Nomination("nofit")
            if request[r] <= room[r] + SLACK:
                continue
            one = np.zeros_like(request)
            one[r] = request[r]
            if (tree.nominal[leaf][r] >= request[r] or self._may_reclaim(leaf, u, one)
                    or can_preempt_borrowing):
                short.append(r)
            else:
                return Nomination("nofit")
        if not short:
            return Nomination("fit")
        preemptor = Preemptor(leaf, request, head.priority, head.submit, tuple(short))
        return Nomination("preempt", tuple(fair_preemptions(
            tree, cq_usage, preemptor, self._candidates(preemptor, u, claimed),
            self.params.strategies,
            self.params.preempt_within_nominal, self._ratio,
            self.state.rng if self.params.target_ties == "random" else None)))

    def _may_reclaim(self, leaf: int, u: np.ndarray, request: np.ndarray) -> bool:
        """``FindHeightOfLowestSubtreeThatFits`` is below the root: some node
        on the way up would not borrow with the request."""
        return any(not self.tree.borrowing_with(n, u, request)
                   for n in reversed(self.tree.paths[leaf][1:]))

    def _candidates(self, p: Preemptor, u: np.ndarray,
                    claimed: frozenset[int] | set[int] = frozenset()) -> list[Candidate]:
        """``findCandidates``: admitted workloads of the preemptor's CQ its
        ``within_cluster_queue`` allows, and of CQs borrowing a resource it
        needs that its ``reclaim_within_cohort`` allows; not those already
        claimed as victims in this cycle (out of the snapshot)."""
        state, tree = self.state, self.tree
        policy = self._policy[p.leaf]
        need = list(p.resources)
        out = []
        for rank, task in enumerate(state.running_tasks()):  # earliest started first
            if task in claimed:
                continue
            job, leaf, _, demand, start = state.task_info(task)
            if not np.any(np.asarray(demand)[need] > 0):
                continue
            j = state.job(job)
            c = Candidate(task, leaf, j.priority, start, np.asarray(demand, dtype=float), rank,
                          state.evicting(task))
            if leaf == p.leaf:
                ok = satisfies(policy.within_cluster_queue, c, p, j.submit)
            else:
                borrowing = np.any(u[leaf][need] > tree.nominal[leaf][need] + SLACK)
                ok = bool(borrowing) and satisfies(policy.reclaim_within_cohort, c, p, j.submit)
            if ok:
                out.append(c)
        return out

    # -- the tournament -------------------------------------------------------------------
    def _tournament(self, heads: dict[int, Head], snapshot: np.ndarray) -> Head:
        """``runTournament`` from the root, each head's DRS computed with its
        own usage added (``computeDRS``)."""
        tree = self.tree
        drs: dict[tuple[int, int], DRS] = {}
        for leaf, head in heads.items():
            u = snapshot.copy()
            u[leaf] += head.request
            total = tree.usage(u)
            path = tree.paths[leaf]
            for depth in range(len(path) - 1):  # the DRS of each cohort's child on the path
                drs[(path[depth], leaf)] = tree.drs(path[depth + 1], total)

        sticky = self._sticky if self.params.prioritize_preemptors else {}
        wants = {leaf: frozenset(np.flatnonzero(h.request > 0).tolist())
                 for leaf, h in heads.items()}  # the resources each head requests

        def less(a: Head, b: Head, cohort: int) -> bool:
            pa, pb = sticky.get(a.leaf) == a.job, sticky.get(b.leaf) == b.job
            if pa != pb:  # PrioritizePreemptorWorkloads: a waiting preemptor first
                return pa
            da, db = drs[(cohort, a.leaf)], drs[(cohort, b.leaf)]
            if self.params.prioritize_non_borrowing:
                ba = bool(da.borrowed & wants[a.leaf])
                bb = bool(db.borrowed & wants[b.leaf])
                if ba != bb:
                    return not ba
            c = compare_drs(da, db, self._ratio)
            if c:
                return c < 0
            if a.priority != b.priority:
                return a.priority > b.priority
            return (a.submit, a.job) < (b.submit, b.job)

        def run(node: int) -> Head | None:
            best: Head | None = None
            for child in tree.hierarchy.children[node]:
                cur = heads.get(child) if tree.hierarchy.is_leaf(child) else run(child)
                if cur is not None and (best is None or less(cur, best, node)):
                    best = cur
            return best

        winner = run(0)
        assert winner is not None
        return winner
