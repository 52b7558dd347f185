"""YuniKorn's queues as its preemptor sees them: the running allocations
that may be victims, the per-queue snapshots (``QueuePreemptionSnapshot``),
the fence root and the eligible victims (``queue.go``:
``findPreemptionFenceRoot``, ``FindEligiblePreemptionVictims``), at
apache/yunikorn-core be3bb487.  The preemptor itself is
:mod:`hierfair.algorithms.yunikorn_preemption`; the reading,
docs/upstream/yunikorn-preemption.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from hierfair.algorithms.yunikorn_resources import (
    Res,
    _clone,
    is_empty,
    add,
    sub_only_existing,
    component_wise_min,
    component_wise_min_only_existing,
    merge_if_not_present,
    strictly_ge,
    strictly_only_existing,
    match_any,
)


class Victim(NamedTuple):
    """A running allocation (here: a task) that may be preempted."""

    task: int
    queue: int  # its leaf
    node: int  # its server
    res: dict[str, float]
    priority: int
    #: the ask's creation time (here: its job's submission)
    create: float
    start: float


def victim_order(v: Victim) -> tuple[float, float, int]:
    """``compareAllocationLess`` / ``sortVictimsForPreemption`` with every
    victim allowing preemption and none an originator: newest first.  Upstream
    breaks exact ties by Go map order; here the later start, then the later
    task, goes first (a guess)."""
    return (-v.create, -v.start, -v.task)


@dataclass
class Snapshot:
    """``QueuePreemptionSnapshot``."""

    node: int
    path: str  # dotted, "root.a.b": the ask-queue test is a string prefix
    leaf: bool
    allocated: dict[str, float]
    guaranteed: Res
    max: Res
    parent: Snapshot | None = None
    preempting: Res = None
    victims: list[Victim] = field(default_factory=list)
    #: the ask's queue -- always the *original* snapshot, also in copies
    #: (``Duplicate`` copies the pointer)
    ask_queue: Snapshot | None = None

    def duplicate(self, cache: dict[int, Snapshot]) -> Snapshot:
        if self.node in cache:
            return cache[self.node]
        parent = self.parent.duplicate(cache) if self.parent is not None else None
        copy = Snapshot(self.node, self.path, self.leaf, dict(self.allocated),
                        _clone(self.guaranteed), _clone(self.max), parent,
                        _clone(self.preempting), self.victims, self.ask_queue)
        cache[self.node] = copy
        return copy

    def add_allocation(self, res: Res) -> None:
        s: Snapshot | None = self
        while s is not None:
            s.allocated = add(s.allocated, res)
            s = s.parent

    def remove_allocation(self, res: Res) -> None:
        s: Snapshot | None = self
        while s is not None:
            for k, v in (res or {}).items():  # SubFrom
                s.allocated[k] = s.allocated.get(k, 0) - v
            s = s.parent

    def preemptable(self) -> Res:
        """``GetPreemptableResource``: usage above the guarantee, per type,
        capped by the parent's (only this queue's types)."""
        if is_empty(self.allocated):
            return None
        parent = self.parent.preemptable() if self.parent is not None else None
        actual = sub_only_existing(sub_only_existing(self.allocated, self.preempting),
                                   self.guaranteed) or {}
        over = {k: v for k, v in actual.items() if v > 0}
        if not over:
            return over
        return component_wise_min_only_existing(over, parent)

    def remaining_guaranteed(self) -> Res:
        """``GetRemainingGuaranteedResource``: guaranteed - used, min with the
        parent's; None where no guarantee is set on the path; None also for an
        ancestor of the ask queue with a guarantee set while the ask queue is
        short of its own (the preemption-storm rule)."""
        parent = self.parent.remaining_guaranteed() if self.parent is not None else None
        if is_empty(parent) and is_empty(self.guaranteed):
            return None
        used = sub_only_existing(self.allocated, self.preempting)
        remaining = sub_only_existing(self.guaranteed, used)
        aq = self.ask_queue
        if aq is not None:
            if aq.path == self.path and not is_empty(remaining):
                return merge_if_not_present(remaining, parent)
            aq_remaining = sub_only_existing(
                _clone(aq.guaranteed), sub_only_existing(dict(aq.allocated), aq.preempting))
            if (not is_empty(remaining) and aq.path.startswith(self.path)
                    and not is_empty(aq_remaining)):
                return None
        return component_wise_min(remaining, parent)


# -- the tree the preemptor sees ------------------------------------------------------
@dataclass(frozen=True)
class QueueTree:
    """The queues, in pre-order (0 is the root), as the preemptor reads them."""

    parent: Sequence[int]
    children: Sequence[Sequence[int]]
    paths: Sequence[str]  # dotted: "root", "root.a", ...
    allocated: Sequence[dict[str, float]]
    guaranteed: Sequence[Res]
    max: Sequence[Res]  # the root's: the cluster size
    offset: Sequence[int]  # priority offsets
    #: running allocations per leaf
    running: Mapping[int, Sequence[Victim]]
    #: resources of tasks being evicted, per queue and its ancestors
    #: (``IncPreemptingResource`` walks up); empty: none
    preempting: Mapping[int, dict[str, float]] = field(default_factory=dict)

    def is_leaf(self, n: int) -> bool:
        return not self.children[n]

    def max_resource(self, n: int) -> Res:
        """``GetMaxResource``: componentwise min of the maxima on the path."""
        limit: Res = None
        for m in self.path_from_root(n):
            own = self.max[m]
            limit = _clone(own) if limit is None else (limit if own is None else
                                                       component_wise_min(limit, own))
        return limit

    def path_from_root(self, n: int) -> list[int]:
        out = [n]
        while self.parent[out[-1]] >= 0:
            out.append(self.parent[out[-1]])
        return out[::-1]

    def headroom(self, n: int) -> Res:
        """``getHeadRoom``: max - allocated on the path (types of max only), min."""
        room: Res = None
        for m in self.path_from_root(n):
            if self.max[m] is None:
                continue
            own = sub_only_existing(self.max[m], self.allocated[m])
            room = own if room is None else component_wise_min(own, room)
        return room


def fence_root(tree: QueueTree, leaf: int, ask: dict[str, float], priority: int
               ) -> tuple[int, dict[int, int]]:
    """``findPreemptionFenceRoot``: up from the ask's queue to the first that is
    the root, or would exceed its max with the ask; each queue's priority
    (ask priority plus the offsets on the way up) by node."""
    prio: dict[int, int] = {}
    n, current = leaf, priority
    while True:
        current += tree.offset[n]
        prio[n] = current
        limit = tree.max_resource(n)
        over = bool(limit) and not strictly_only_existing(
            limit, add(tree.allocated[n], ask), or_equal=True)
        if tree.parent[n] < 0 or over:
            return n, prio
        n = tree.parent[n]


def find_victims(tree: QueueTree, leaf: int, ask: dict[str, float], priority: int
                 ) -> dict[int, Snapshot]:
    """``FindEligiblePreemptionVictims`` (pruned): snapshots by node; leaves
    carry their potential victims."""
    fence, prio = fence_root(tree, leaf, ask, priority)
    snaps: dict[int, Snapshot] = {}

    def snap(n: int) -> Snapshot:
        if n not in snaps:
            p = tree.parent[n]
            snaps[n] = Snapshot(n, tree.paths[n], tree.is_leaf(n), dict(tree.allocated[n]),
                                _clone(tree.guaranteed[n]), _clone(tree.max[n]),
                                snap(p) if p >= 0 else None,
                                _clone(tree.preempting.get(n)), ask_queue=snaps.get(leaf))
        return snaps[n]

    ask_snap = snap(leaf)
    for n in tree.path_from_root(leaf)[1:]:  # every queue on the ask's path but the root
        snaps[n].ask_queue = ask_snap

    def walk(n: int, p: int) -> None:
        if n == leaf:
            return
        if tree.is_leaf(n):
            s = snap(n)
            remaining = s.remaining_guaranteed()
            if remaining is not None and strictly_ge(remaining, {}):
                del snaps[n]  # within its guarantee: no victims
                return
            s.victims = [v for v in tree.running.get(n, ())
                         if match_any(ask, v.res) and v.priority <= p]
            if not s.victims:
                del snaps[n]
            return
        for c in tree.children[n]:
            walk(c, prio.get(c, p - tree.offset[c]))

    walk(fence, prio[fence])
    return snaps
