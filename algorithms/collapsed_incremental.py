"""Collapsed hierarchies, incrementally: the re-flattening references' decisions per root path.

Source: H-DRF paper §3.2 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``)
and the MCH letter, §III and §IV-B
(``../shared/papers/mch-multiresource-collapsed-hierarchies.txt``).

Flattening policies rank the demanding leaves by ``share / flat weight``,
the flat weight a product of per-edge factors along the leaf's path.  The
readable references (:class:`~hierfair.algorithms.collapsed.FlatteningPolicy`
and its subclasses) re-flatten the whole tree whenever a leaf starts or stops
demanding.  :class:`IncrementalFlattening` makes the same decisions, byte for
byte, keeping per node what the weights are built from and a lower bound of
the keys below: a leaf's change updates its root path only, and ``select``
searches best-first from the root.  ``collapsed``, ``collapsed-cpu`` and
``collapsed-mem`` (:mod:`hierfair.algorithms.collapsed`) and ``mch``
(:mod:`hierfair.algorithms.mch`) are its subclasses.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import ClassVar, Generic

import numpy as np
from pydantic import BaseModel

from hierfair.sim.policy import BackfillParams, BasePolicy, P, PolicyView
from hierfair.sim.shares import inverse_totals

_INF = float("inf")


class IncrementalFlattening(BasePolicy[P], Generic[P]):
    """The reference's decisions without re-flattening: the demanding leaf
    with the smallest ``(key, index)`` whose next task fits, where ``key =
    round(share / flat weight, 12)`` and the flat weight is the float product
    the reference computes along the leaf's path.

    * Per node, subclasses keep what the flat weights are built from (the sum
      of the demanding children's weights; MCH's generated demand) and an
      *aggregate*: about ``min(share / weight below this node)`` over the
      eligible leaves under it.  A leaf's notification recomputes its root
      path only, bottom-up, and stops at the first node where nothing changed.
    * :meth:`select` searches best-first from the root: a node's children
      enter a frontier heap keyed by ``(lower bound, pre-order index)``;
      leaves by their exact key, from the flat-weight prefix carried down with
      the reference's own float operations.  The first leaf popped is the
      reference's minimum: every other leaf is bounded below by an entry still
      in the heap, and pre-order makes a subtree's index a lower bound too.
    * A bound is ``aggregate / prefix`` shrunk by a relative margin covering
      the rounding of both float paths, then rounded like the key (rounding is
      monotone).  So leaves with equal keys usually get a bound equal to their
      key, and ties resolve by index without visiting every tied leaf.

    Parking follows :class:`~hierfair.sim.policy.LeafPriorityPolicy`: a leaf whose
    task does not fit is skipped until resources are released or the leaf
    changes.  Parked leaves leave the aggregates lazily -- only when a later
    search in the same release epoch would otherwise meet them again -- since
    a release (the common next event) brings them all back.
    """

    Params: ClassVar[type[BaseModel]] = BackfillParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        n = h.n_nodes
        self._kids = h.children
        self._parent: list[int] = h.parent.tolist()
        self._w: list[float] = h.weights.tolist()
        self._is_leaf = [not kids for kids in h.children]
        total = state.cluster.total
        self._inv = inverse_totals(total)
        self._invl: list[float] = self._inv.tolist()
        # Relative error of aggregate / prefix against the exact key: a few
        # roundings per level on each side; 16 per level is ample.
        self._margin = 1.0 - (16 * int(h.depth.max()) + 32) * 2.0 ** -53
        self._share = [0.0] * n
        self._dem = [False] * n  # demanding (leaf: pending > 0; node: any leaf below)
        self._parked = [0] * n  # 1: parked, still in aggregates; 2: taken out of them
        self._to_park: list[int] = []
        self._taken_out: list[int] = []
        self._park_epoch = state.release_epoch
        self._backfill = bool(getattr(self.params, "backfill", True))
        # Next demands of the demanding leaves, counted by value: when none of
        # them fits, select can answer None without visiting every leaf.
        self._kind: list[bytes] = [b""] * n
        self._kinds: dict[bytes, tuple[np.ndarray, int]] = {}

    # -- what subclasses define ----------------------------------------------
    root_prefix: ClassVar[float] = 1.0

    def share(self, leaf: int) -> float:
        """Dominant share (weighted DRF)."""
        return max(a * i for a, i in zip(self.state.alloc[leaf].tolist(), self._invl))

    def _update_leaf(self, leaf: int) -> None:
        """Refresh the leaf's own entries from the state (share is current)."""
        raise NotImplementedError

    def _set_leaf(self, leaf: int) -> None:
        """Set the leaf's aggregate from its share and eligibility."""
        raise NotImplementedError

    def _recompute(self, node: int) -> bool:
        """Recompute an internal node from its children; True if its parent
        must be recomputed too."""
        raise NotImplementedError

    def _live(self, node: int) -> bool:
        """Some eligible leaf is at or under ``node``."""
        raise NotImplementedError

    def _child_prefix(self, node: int, child: int, prefix: float) -> float:
        raise NotImplementedError

    def _key(self, leaf: int, prefix: float) -> float:
        """The reference's exact key of an eligible leaf."""
        raise NotImplementedError

    def _bound(self, node: int, prefix: float) -> float:
        """A lower bound on the keys of the eligible leaves under ``node``."""
        raise NotImplementedError

    # -- shared machinery -----------------------------------------------------
    def _eligible(self, leaf: int) -> bool:
        return self._dem[leaf] and not self._parked[leaf]

    def _settle(self, leaves: Iterable[int]) -> None:
        """Recompute the ancestors of ``leaves`` bottom-up (pre-order: a
        child's index is above its parent's), stopping where nothing changed."""
        parent = self._parent
        queued = {parent[leaf] for leaf in leaves}
        heap = [-p for p in queued]
        heapq.heapify(heap)
        while heap:
            node = -heapq.heappop(heap)
            if self._recompute(node) and node:
                p = parent[node]
                if p not in queued:
                    queued.add(p)
                    heapq.heappush(heap, -p)

    def _count_kind(self, leaf: int) -> None:
        kinds = self._kinds
        old = self._kind[leaf]
        if old:
            demand, count = kinds[old]
            if count > 1:
                kinds[old] = (demand, count - 1)
            else:
                del kinds[old]
        demand = self.state.next_demand(leaf)
        new = demand.tobytes() if demand is not None else b""
        if new:
            kinds[new] = (demand, kinds[new][1] + 1 if new in kinds else 1)
        self._kind[leaf] = new

    def leaf_changed(self, leaf: int) -> None:
        self._count_kind(leaf)
        self._share[leaf] = self.share(leaf)
        self._parked[leaf] = 0  # changed: worth trying again (as the reference re-pushes it)
        self._update_leaf(leaf)
        self._set_leaf(leaf)
        self._settle((leaf,))

    def _sync_parking(self) -> None:
        parked = self._parked
        epoch = self.state.release_epoch
        if epoch != self._park_epoch:  # released: every parked task may fit now
            self._park_epoch = epoch
            back = [leaf for leaf in self._taken_out if parked[leaf] == 2]
            for leaf in self._to_park:
                parked[leaf] = 0
            for leaf in back:
                parked[leaf] = 0
                self._set_leaf(leaf)
            self._to_park.clear()
            self._taken_out.clear()
            self._settle(back)
        elif self._to_park:  # same epoch: keep them out of this search
            out = [leaf for leaf in self._to_park if parked[leaf] == 1]
            for leaf in out:
                parked[leaf] = 2
                self._set_leaf(leaf)
            self._taken_out += out
            self._to_park.clear()
            self._settle(out)

    def select(self) -> int | None:
        self._sync_parking()
        state = self.state
        kids, is_leaf, parked = self._kids, self._is_leaf, self._parked
        push, pop = heapq.heappush, heapq.heappop
        frontier: list[tuple[float, int, float]] = [(-_INF, 0, self.root_prefix)]
        first_miss = True
        while frontier:
            _, node, prefix = pop(frontier)
            if is_leaf[node]:
                demand = state.next_demand(node)
                if demand is not None and state.fits(demand):
                    return node
                if not self._backfill:
                    return None
                parked[node] = 1
                self._to_park.append(node)
                if first_miss:  # the reference would park every leaf, in vain
                    first_miss = False
                    if not any(state.fits(d) for d, _ in self._kinds.values()):
                        return None
                continue
            for c in kids[node]:
                if not self._live(c) or parked[c]:
                    continue
                p = self._child_prefix(node, c, prefix)
                push(frontier, (self._key(c, p) if is_leaf[c] else self._bound(c, p), c, p))
        return None
