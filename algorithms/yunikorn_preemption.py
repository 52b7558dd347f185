"""YuniKorn's preemption (the ``Preemptor``), as its code behaves.

Concept.  When an ask of a leaf queue fits neither its queue's headroom (the
``max`` quotas on its path) nor any node, and has waited the queue's
``preemption.delay`` (30 s by default), YuniKorn looks for running
allocations to preempt -- but only so far as it keeps every queue at or above
its *guaranteed* resources, and only for an ask whose own queue is under its
guarantee once the ask is added::

    victims: allocations of other leaves (never the ask's own), below the
    fence root, of priority <= the ask's (offsets applied), in leaves above
    their guarantee; taken newest first while the victim's queue stays over
    its guarantee and the ask's queue stays under its own.

Upstream: apache/yunikorn-core be3bb487, ``pkg/scheduler/objects/
preemption.go`` (``TryPreemption``, ``checkPreemptionQueueGuarantees``,
``initWorkingState``, ``calculateVictimsByNode``, ``tryNodes``,
``checkPreemptionPredicates``, ``calculateAdditionalVictims``,
``QueuePreemptionSnapshot.GetPreemptableResource`` /
``GetRemainingGuaranteedResource``, ``sortVictimsForPreemption``,
``compareAllocationLess``, ``isAskQueueUnderGuaranteed``,
``isVictimQueueOverGuaranteed``), ``queue.go`` (``FindEligiblePreemptionVictims``,
``findEligiblePreemptionVictims``, ``findPreemptionFenceRoot``,
``prunePreemptionSnapshots``, ``GetMaxResource``, ``getHeadRoom``) and
``pkg/common/resources/resources.go`` (the helpers below, Go semantics: a
``None`` is Go's nil ``*Resource``, a missing type reads 0).  The reading,
line by line: docs/upstream/yunikorn-preemption.md.

Not modelled: opt-out (``allowPreemptSelf``) and originator allocations (all
victims score alike), the preemption/priority *fence* policies and
``preemption.policy: disabled``, required-node and quota-change preemption,
the shim's predicate plugin (its predicates here: the ask's placement
constraints and the node's capacity; then the first node by (start index,
node) wins, as ``checkPreemptionPredicates`` does without one).  Under an
eviction latency a task in flight is no victim (``IsPreempted``) and its
queues count it as preempting (allocated - preempting, as upstream).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hierfair.algorithms.yunikorn_queues import (  # noqa: F401 - re-exported
    QueueTree,
    Snapshot,
    Victim,
    find_victims,
    victim_order,
)
from hierfair.algorithms.yunikorn_resources import (
    Res,
    add,
    sub_eliminate_negative,
    fit_in,
    strictly_ge,
    equals_or_empty,
    strictly_only_existing,
    is_ask_queue_under_guaranteed,
    is_victim_queue_over_guaranteed,
)


# -- the preemptor ---------------------------------------------------------------------
@dataclass
class Outcome:
    """What ``TryPreemption`` decided: victims and the node, or why not."""

    victims: list[Victim]
    node: int = -1
    reason: str = ""  # upstream's allocation-log message when it fails


class Preemptor:
    """One ``TryPreemption`` for one ask (module docstring)."""

    def __init__(self, tree: QueueTree, leaf: int, ask: dict[str, float], priority: int,
                 node_free: Sequence[dict[str, float]],
                 node_fits: Callable[[int], bool], nodes_tried: bool) -> None:
        self.tree, self.leaf, self.ask = tree, leaf, ask
        self.snaps = find_victims(tree, leaf, ask, priority)
        self.node_free, self.node_fits, self.nodes_tried = node_free, node_fits, nodes_tried
        self.queue_of = {v.task: v.queue for s in self.snaps.values() for v in s.victims}

    def duplicate(self) -> dict[int, Snapshot]:
        cache: dict[int, Snapshot] = {}
        for n in sorted(self.snaps):
            self.snaps[n].duplicate(cache)
        return cache

    def _leaves(self, queues: dict[int, Snapshot]) -> list[Snapshot]:
        return [queues[n] for n in sorted(queues) if queues[n].victims]

    def check_queue_guarantees(self) -> bool:
        """``checkPreemptionQueueGuarantees``: the ask fits its queue's remaining
        guarantee already, or does once some victims (all, at most) are gone."""
        queues = self.duplicate()
        current = queues[self.leaf]
        old = current.remaining_guaranteed()
        if old is not None and fit_in(old, self.ask, skip_undef=True, actual=True):
            return True
        current.add_allocation(self.ask)
        for s in self._leaves(queues):
            for v in s.victims:
                s.remove_allocation(v.res)
                remaining = current.remaining_guaranteed()
                if remaining is not None and is_ask_queue_under_guaranteed(self.ask, remaining):
                    return True
        return False

    def _may_take(self, s: Snapshot, v: Victim) -> tuple[bool, Res]:
        """Remove ``v`` from its queue: whether that queue stays over its
        guarantee (the victim check of every pass); the remaining before."""
        remaining = s.remaining_guaranteed()
        s.remove_allocation(v.res)
        ok = strictly_ge(s.preemptable(), {}) and (
            remaining is None or is_victim_queue_over_guaranteed(self.ask, remaining))
        return ok, remaining

    def _shift(self, s: Snapshot, ask_q: Snapshot, v: Victim) -> tuple[str, Res]:
        """Move ``v``'s resources from its queue to the ask's, in the
        snapshots (both passes of ``calculateVictimsByNode`` and
        ``calculateAdditionalVictims`` do): "skip" (put back) if its queue
        would not stay over its guarantee, "stop" (put back) if the ask's
        queue could not take it, else "took"; and the ask queue's remaining
        guarantee before."""
        ok, _ = self._may_take(s, v)
        if not ok:
            s.add_allocation(v.res)
            return "skip", None
        before = ask_q.remaining_guaranteed()
        if before is not None and fit_in(before, v.res, True, True):
            ask_q.add_allocation(v.res)
            return "took", before
        s.add_allocation(v.res)
        return "stop", before

    def victims_by_node(self, free: dict[str, float], candidates: list[Victim]
                        ) -> tuple[int, list[Victim] | None]:
        """``calculateVictimsByNode``: (index of the first victim after which the
        ask fits, the ordered victims); (-1, []) if it fits already, (-1, None)
        if the node cannot help."""
        if fit_in(free, self.ask):
            return -1, []
        queues = self.duplicate()
        ask_q = queues[self.leaf]
        available = dict(free)
        head: list[Victim] = []
        tail: list[Victim] = []
        for v in candidates:  # first pass: useful victims first, guarantees kept
            s = queues[v.queue]
            how, _ = self._shift(s, ask_q, v)
            if how == "skip":
                continue
            if how == "stop":
                break
            shortfall = sub_eliminate_negative(self.ask, available)
            if equals_or_empty(shortfall, sub_eliminate_negative(self.ask, add(available, v.res))):
                ask_q.remove_allocation(v.res)
                s.add_allocation(v.res)
                tail.append(v)
            else:
                available = add(available, v.res)
                head.append(v)
        head += tail
        if not head:
            return -1, None
        queues = self.duplicate()
        available = dict(free)
        results: list[Victim] = []
        index = -1
        for v in head:  # second pass: the order is fixed; guarantees checked again
            s = queues[v.queue]
            ok, _ = self._may_take(s, v)
            if not ok:
                s.add_allocation(v.res)
                continue
            available = add(available, v.res)
            if index < 0 and fit_in(available, self.ask):
                index = len(results)
            results.append(v)
        return (index, results) if index >= 0 else (-1, None)

    def try_nodes(self) -> tuple[int, list[Victim]] | None:
        """``initWorkingState`` + ``tryNodes`` + ``checkPreemptionPredicates``
        with no predicate plugin: the node with the lowest start index, then
        the lowest id; its victims up to that index."""
        by_node: dict[int, list[Victim]] = {}
        for s in self._leaves(self.snaps):
            for v in s.victims:
                by_node.setdefault(v.node, []).append(v)
        checks = []
        for node, free in enumerate(self.node_free):
            if not self.node_fits(node):  # FitInNode: its capacity cannot hold the ask
                continue
            candidates = sorted(by_node.get(node, []), key=victim_order)
            index, victims = self.victims_by_node(free, candidates)
            if victims is not None and (victims or not self.nodes_tried):
                checks.append((index, node, victims))
        if not checks:
            return None
        index, node, victims = min(checks, key=lambda c: (c[0], c[1]))
        return node, victims[:index + 1]

    def additional_victims(self, chosen: list[Victim]) -> tuple[list[Victim], bool]:
        """``calculateAdditionalVictims``: victims anywhere, newest first, while
        they bring the ask's queue toward its guarantee; ok if it ends under it."""
        queues = self.duplicate()
        ask_q = queues[self.leaf]
        seen = {v.task for v in chosen}
        for v in chosen:
            queues[v.queue].remove_allocation(v.res)
        pool = sorted((v for s in self._leaves(self.snaps) for v in s.victims
                       if v.task not in seen), key=victim_order)
        out: list[Victim] = []
        for v in pool:
            s = queues[v.queue]
            how, before = self._shift(s, ask_q, v)
            if how == "skip":
                continue
            if how == "stop":
                break
            if not equals_or_empty(before, ask_q.remaining_guaranteed()):
                out.append(v)
            else:
                ask_q.remove_allocation(v.res)
                s.add_allocation(v.res)
        if out:
            final = ask_q.remaining_guaranteed()
            return out, final is not None and is_ask_queue_under_guaranteed(self.ask, final)
        return [], True

    def run(self) -> Outcome:
        """``TryPreemption``."""
        if not self.check_queue_guarantees():
            return Outcome([], reason="PreemptionDoesNotGuarantee")
        found = self.try_nodes()
        if found is None:
            return Outcome([], reason="no node")
        node, victims = found
        extra, ok = self.additional_victims(victims)
        if not ok:
            return Outcome([], reason="not enough preempted")
        victims = victims + extra
        if not victims:
            return Outcome([], reason="no victims")
        fits = fit_in(self.node_free[node], self.ask)
        final: list[Victim] = []
        total: dict[str, float] = {}
        for v in victims:
            if not fits and v.node != node:
                continue
            if strictly_only_existing(self.ask, total, or_equal=False):
                final.append(v)
            total = add(total, v.res)
        if strictly_only_existing(self.ask, total, or_equal=False):
            return Outcome([], reason="PreemptionShortfall")
        return Outcome(final, node)
