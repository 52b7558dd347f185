"""Kueue's preemption under fair sharing, as coded.

Source: kubernetes-sigs/kueue at ff69552e, ``pkg/scheduler/preemption/
preemption.go`` (``findCandidates``, ``fairPreemptions``,
``runFirstFsStrategy``, ``runSecondFsStrategy``, ``fillBackWorkloads``),
``preemption/fairsharing/ordering.go`` (``nextTarget``) and
``preemption/common/ordering.go`` (``CandidatesOrdering``).

A preemptor in ClusterQueue P may evict admitted workloads of its own CQ
(``within_cluster_queue``) and of other CQs that borrow a resource it needs
(``reclaim_within_cohort``).  Target CQs are taken from the root down along
the highest DRS; a victim in another CQ is allowed by a *strategy* comparing
the DRS of the two almost-LCAs (the nodes just below the common ancestor),
with the preemptor's workload counted in:

* S2-a ``LessThanOrEqualToFinalShare``: DRS(P side) <= DRS(target side
  after the victim leaves);
* S2-b ``LessThanInitialShare``: DRS(P side) < DRS(target side before),
  at most one victim per CQ, over the candidates S2-a passed over.

While the preemptor stays within its nominal quota the DRS check is
bypassed (the ``FairSharingPreemptWithinNominal`` gate, on by default).
Victims are taken until the preemptor fits, then put back, last but one
first, while it still fits (fill-back).  The result is all or nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from hierfair.algorithms.kueue_quota import DRS, SLACK, QuotaTree, compare_drs


class Candidate(NamedTuple):
    """An admitted workload (a running task) that could be evicted."""

    task: int
    leaf: int
    priority: int
    start: float
    demand: np.ndarray
    #: its place in the order tasks were started (later: larger)
    started: int
    #: its eviction is in flight (``preemption.eviction_latency``)
    evicting: bool = False


class Preemptor(NamedTuple):
    leaf: int
    request: np.ndarray
    priority: int
    submit: float
    #: resources on which it needs preemption to fit
    resources: tuple[int, ...]


#: A strategy: (preemptor's DRS, target's before, target's after) -> allowed.
Strategy = Callable[[DRS, DRS, DRS], bool]


def satisfies(policy: str, candidate: Candidate, preemptor: Preemptor, submit: float) -> bool:
    """``SatisfiesPreemptionPolicy`` (``submit``: the candidate's creation)."""
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return (candidate.priority < preemptor.priority
                or (candidate.priority == preemptor.priority and preemptor.submit < submit))
    return False  # Never


def ordering(c: Candidate, preemptor_leaf: int) -> tuple:
    """``CandidatesOrdering`` (try first = smallest): already evicted (its
    eviction in flight: taking it again costs nothing), another CQ's before
    the preemptor's own, lower priority, more recently admitted.  Kueue's
    admission times have 1-s resolution and then its random UIDs decide;
    here the later admitted goes first, by start order."""
    return (not c.evicting, c.leaf == preemptor_leaf, c.priority, -c.start, -c.started)


class FairPreemption:
    """One ``fairPreemptions`` call on a copy of the CQs' usage."""

    def __init__(self, tree: QuotaTree, cq_usage: np.ndarray, preemptor: Preemptor,
                 candidates: list[Candidate], within_nominal_gate: bool,
                 zero_weight_ratio: bool, random_ties: np.random.Generator | None = None
                 ) -> None:
        self.tree = tree
        #: before PR #6764 a DRS tie between target CQs went to whichever Go's
        #: set order gave last (``drs >= highestCqDrs``): uniformly at random
        self.random_ties = random_ties
        self.p = preemptor
        self.u = cq_usage.copy()
        self.u[preemptor.leaf] += preemptor.request  # SimulateUsageAddition
        self.cands = sorted(candidates, key=lambda c: ordering(c, preemptor.leaf))
        self.compare = lambda a, b: compare_drs(a, b, zero_weight_ratio)
        need = list(preemptor.resources)
        total = tree.usage(self.u)
        self.within_nominal = within_nominal_gate and bool(
            np.all(total[preemptor.leaf][need] <= tree.nominal[preemptor.leaf][need] + SLACK))
        self.targets: list[Candidate] = []

    # -- the snapshot -----------------------------------------------------------
    def _remove(self, c: Candidate) -> None:
        self.u[c.leaf] -= c.demand

    def _restore(self, c: Candidate) -> None:
        self.u[c.leaf] += c.demand

    def _drs(self, node: int) -> DRS:
        return self.tree.drs(node, self.tree.usage(self.u))

    def fits(self) -> bool:
        """``fitsFS``: the request fits what the preemptor's CQ may take
        once its own simulated addition is taken out."""
        leaf, request = self.p.leaf, self.p.request
        self.u[leaf] -= request
        room = self.tree.available(leaf, self.tree.usage(self.u))
        self.u[leaf] += request
        need = request > 0
        return bool(np.all(request[need] <= room[need] + SLACK))

    # -- target order -------------------------------------------------------------
    def _next_target(self, node: int, queues: dict[int, list[Candidate]],
                     pruned: set[int]) -> int | None:
        """``nextTarget``: from ``node`` down along the highest DRS."""
        tree, h = self.tree, self.tree.hierarchy
        best_q: tuple[int, DRS] | None = None
        best_k: tuple[int, DRS] | None = None
        ties = 0  # CQs tied at best_q's DRS so far (random_ties)
        for child in h.children[node]:
            if child in pruned:
                continue
            d = self._drs(child)
            if h.is_leaf(child):
                if (not d.borrowing and child != self.p.leaf) or not queues.get(child):
                    pruned.add(child)
                elif best_q is None:
                    best_q, ties = (child, d), 1
                elif self.random_ties is not None:  # reservoir: each tied CQ alike
                    c = self.compare(d, best_q[1])
                    ties = 1 if c > 0 else ties + 1 if c == 0 else ties
                    if c > 0 or (c == 0 and self.random_ties.random() * ties < 1):
                        best_q = (child, d)
                else:
                    c = self.compare(d, best_q[1])
                    first = ordering(queues[child][0], self.p.leaf)
                    if c > 0 or (c == 0 and first < ordering(queues[best_q[0]][0], self.p.leaf)):
                        best_q = (child, d)
            elif not d.borrowing and not tree.is_ancestor(child, self.p.leaf):
                pruned.add(child)
            elif best_k is None or self.compare(d, best_k[1]) >= 0:  # ties: the later
                best_k = (child, d)
        if best_q is None and best_k is None:
            pruned.add(node)
            return None
        if best_k is not None and (best_q is None or self.compare(best_k[1], best_q[1]) >= 0):
            return self._next_target(best_k[0], queues, pruned)
        assert best_q is not None
        return best_q[0]

    def _targets(self, queues: dict[int, list[Candidate]]):  # type: ignore[no-untyped-def]
        """``Iter``: target CQs, re-chosen after every removal."""
        pruned: set[int] = set()
        while 0 not in pruned:
            target = self._next_target(0, queues, pruned)
            if target is not None:
                yield target

    def _take(self, c: Candidate) -> bool:
        self._remove(c)
        self.targets.append(c)
        return self.fits()

    # -- the strategies -----------------------------------------------------------
    def first(self, allowed: Strategy) -> tuple[bool, dict[int, list[Candidate]]]:
        """``runFirstFsStrategy``: whether it fits, and the candidates passed over."""
        queues: dict[int, list[Candidate]] = {}
        for c in self.cands:
            queues.setdefault(c.leaf, []).append(c)
        retry: dict[int, list[Candidate]] = {}
        for target in self._targets(queues):
            queue = queues[target]
            if target == self.p.leaf or self.within_nominal:  # no DRS check
                if self._take(queue.pop(0)):
                    return True, retry
                continue
            mine, theirs = self.tree.almost_lcas(self.p.leaf, target)
            p_new, t_old = self._drs(mine), self._drs(theirs)
            if p_new.weighted == np.inf and t_old.weighted != np.inf:
                retry.setdefault(target, []).extend(queue)
                queue.clear()
                continue
            while queue:
                c = queue.pop(0)
                self._remove(c)
                t_new = self._drs(theirs)
                self._restore(c)
                if allowed(p_new, t_old, t_new):
                    if self._take(c):
                        return True, retry
                    break
                retry.setdefault(target, []).append(c)
        return False, retry

    def second(self, retry: dict[int, list[Candidate]]) -> bool:
        """``runSecondFsStrategy`` (S2-b): at most one victim per CQ."""
        for target in self._targets(retry):
            mine, theirs = self.tree.almost_lcas(self.p.leaf, target)
            passes = self.compare(self._drs(mine), self._drs(theirs)) < 0
            c = retry[target].pop(0)
            if passes and self._take(c):
                return True
            retry[target] = []  # DropQueue
        return False

    def fill_back(self) -> list[Candidate]:
        """``fillBackWorkloads``: put victims back, last but one first,
        while the preemptor still fits."""
        for i in range(len(self.targets) - 2, -1, -1):
            c = self.targets[i]
            self._restore(c)
            if self.fits():
                del self.targets[i]
            else:
                self._remove(c)
        return self.targets


def fair_preemptions(tree: QuotaTree, cq_usage: np.ndarray, preemptor: Preemptor,
                     candidates: list[Candidate], strategies: list[str],
                     within_nominal_gate: bool = True,
                     zero_weight_ratio: bool = True,
                     random_ties: np.random.Generator | None = None) -> list[Candidate]:
    """The victims that let ``preemptor`` in, or [] (never a partial set)."""
    if not candidates:
        return []
    run = FairPreemption(tree, cq_usage, preemptor, candidates, within_nominal_gate,
                         zero_weight_ratio, random_ties)
    compare = run.compare
    rules: dict[str, Strategy] = {
        "S2-a": lambda p, old, new: compare(p, new) <= 0,
        "S2-b": lambda p, old, new: compare(p, old) < 0,
    }
    fits, retry = run.first(rules[strategies[0]])
    if not fits and len(strategies) > 1:
        fits = run.second(retry)
    return run.fill_back() if fits else []
