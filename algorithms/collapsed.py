"""Collapsed hierarchies: flatten the tree into leaf weights, then share flat.

Source: H-DRF paper §3.2 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``)
and, for the single-resource variants C-CH and M-CH, the MCH letter §IV-B
(``../shared/papers/mch-multiresource-collapsed-hierarchies.txt``).

A leaf's flat weight is the product, along its path, of each node's weight
over the total weight of its demanding siblings (itself included) -- its
hierarchical share guarantee.  The weights are recomputed whenever a leaf
starts or stops demanding.  ``collapsed`` then runs weighted DRF over the
leaves; ``collapsed-cpu`` / ``collapsed-mem`` run single-resource weighted
fair sharing on that one resource's share (the MCH letter's C-CH and M-CH).

Flattening is exact for one resource and wrong for several: dovetailing
children "punish" their parent (§3.2: with n1,1 demanding <1,1>, n2 ends with
1/3 instead of 1/2).

Two implementations give the same decisions, byte for byte:

* :class:`FlatteningPolicy` and its ``*Reference`` subclasses -- the readable
  one: re-flatten the whole tree (O(n)) and re-key every leaf in a heap
  whenever a leaf starts or stops demanding.  Not registered; kept as the
  specification the differential tests compare against.
* :class:`IncrementalFlattening` and the registered classes -- a leaf's change
  updates its root path only (O(depth x fan-out)); ``select`` finds the
  minimum by a best-first search from the root (see that class).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any, ClassVar, Generic

import numpy as np
from pydantic import BaseModel

from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Cluster, Hierarchy
from hierfair.sim.policy import BackfillParams, BasePolicy, LeafPriorityPolicy, P, PolicyView
from hierfair.sim.shares import inverse_totals
from hierfair.sim.treewalk import round_score  # monotone: the lower bounds rely on it

_INF = float("inf")


def collapsed_weights(h: Hierarchy, demanding: np.ndarray) -> np.ndarray:
    """Per node: product along the path of ``w / sum(w of demanding siblings)``.

    A non-demanding node is given the weight it would have if it joined.
    """
    flat = np.ones(h.n_nodes)
    w = h.weights
    for node in range(h.n_nodes):
        kids = h.children[node]
        if not kids:
            continue
        active = sum(w[c] for c in kids if demanding[c])
        for c in kids:
            flat[c] = flat[node] * w[c] / (active if demanding[c] else active + w[c])
    return flat


class FlatteningPolicy(LeafPriorityPolicy[P], Generic[P]):
    """Weighted sharing over the leaves with weights derived from the tree.

    The weights depend on which leaves demand what; :meth:`signature` says what
    they depend on, and when it changes every demanding leaf is re-keyed.
    """

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        self._leaves = list(h.leaves)
        self._signature: Any = None
        self._flat = np.ones(h.n_nodes)
        total = state.cluster.total
        self._inv = inverse_totals(total)
        self._parents = [np.array(h.ancestors(leaf), dtype=np.int64) for leaf in range(h.n_nodes)]

    def signature(self) -> Any:
        return tuple(self.state.pending(leaf) > 0 for leaf in self._leaves)

    def flat_weights(self) -> np.ndarray:
        raise NotImplementedError

    def leaf_changed(self, leaf: int) -> None:
        sig = self.signature()
        if sig != self._signature:
            self._signature = sig
            self._flat = self.flat_weights()
            for other in self._leaves:
                super().leaf_changed(other)
        else:
            super().leaf_changed(leaf)

    def share(self, leaf: int) -> float:
        return float((self.state.alloc[leaf] * self._inv).max())

    def key(self, leaf: int) -> float:
        return round(self.share(leaf) / self._flat[leaf], 12)

    def demanding_nodes(self) -> np.ndarray:
        state = self.state
        flags = np.zeros(state.hierarchy.n_nodes, dtype=bool)
        for leaf in self._leaves:
            if state.pending(leaf) > 0:
                flags[leaf] = True
                flags[self._parents[leaf]] = True
        return flags



class CollapsedReference(FlatteningPolicy[P], Generic[P]):
    """H-DRF §3.2: collapsed weights, then weighted DRF (dominant shares)."""

    name: ClassVar[str] = "collapsed"
    description: ClassVar[str] = ("collapsed hierarchy: flattened weights + weighted DRF "
                                  "(H-DRF §3.2); dovetailing punishes parents")

    def flat_weights(self) -> np.ndarray:
        return collapsed_weights(self.state.hierarchy, self.demanding_nodes())


class SingleResourceParams(Strict):
    resource: str


class CPUParams(SingleResourceParams):
    resource: str = "cpu"


class MemParams(SingleResourceParams):
    resource: str = "mem"


class SingleResource(BasePolicy[SingleResourceParams]):
    """MCH letter §IV-B "C-CH"/"M-CH": collapsed weights, fair sharing on one
    resource's share only (the other resources are ignored when ranking).
    A mixin: put it before a collapsed policy."""

    name: ClassVar[str] = "collapsed-single"
    description: ClassVar[str] = "collapsed hierarchy, single-resource fair sharing"
    default_resource: ClassVar[str] = "cpu"
    Params: ClassVar[type[BaseModel]] = CPUParams
    _inv: np.ndarray

    @classmethod
    def check(cls, params: SingleResourceParams, cluster: Cluster) -> None:
        resource = params.resource
        if resource not in cluster.resources:
            raise SpecError(f"{cls.name} shares one resource, and the cluster has "
                            f"{list(cluster.resources)}", where="params.resource",
                            value=resource)

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self._j = state.cluster.resources.index(self.params.resource)

    def share(self, leaf: int) -> float:
        return float(self.state.alloc[leaf, self._j] * self._inv[self._j])


class CollapsedSingleReference(SingleResource, CollapsedReference[SingleResourceParams]):
    pass


class CollapsedCPUReference(CollapsedSingleReference):
    name: ClassVar[str] = "collapsed-cpu"
    description: ClassVar[str] = ("collapsed hierarchy, fair sharing on CPU share only "
                                  "(MCH letter's C-CH)")


class CollapsedMemReference(CollapsedSingleReference):
    name: ClassVar[str] = "collapsed-mem"
    description: ClassVar[str] = ("collapsed hierarchy, fair sharing on memory share only "
                                  "(MCH letter's M-CH)")
    Params = MemParams


# -- incremental implementation ----------------------------------------------
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


class Collapsed(IncrementalFlattening[P], Generic[P]):
    """H-DRF §3.2 collapsed weights + weighted DRF, incrementally.

    Per node: ``active`` (the sum of the demanding children's weights, summed
    in child order like the reference) and ``loc``, about the minimum over
    eligible leaves below of ``share / prod(w / active)`` along the way down.
    A leaf's flat weight is ``prefix * w / active`` per edge from the root.
    """

    name: ClassVar[str] = CollapsedReference.name
    description: ClassVar[str] = CollapsedReference.description

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        n = state.hierarchy.n_nodes
        self._active: list[float] = [0.0] * n
        self._loc = [_INF] * n

    def _update_leaf(self, leaf: int) -> None:
        self._dem[leaf] = self.state.pending(leaf) > 0

    def _set_leaf(self, leaf: int) -> None:
        self._loc[leaf] = self._share[leaf] if self._eligible(leaf) else _INF

    def _recompute(self, node: int) -> bool:
        w, dem, loc = self._w, self._dem, self._loc
        active: float = 0  # like the reference's sum(): 0 + w is exactly w
        best = _INF
        for c in self._kids[node]:
            if dem[c]:
                active += w[c]
                if loc[c] < _INF:
                    best = min(best, loc[c] / w[c])
        new = best * active if best < _INF else _INF
        demanding = active > 0
        changed = new != loc[node] or demanding != dem[node]
        self._active[node], loc[node], dem[node] = active, new, demanding
        return changed

    def _live(self, node: int) -> bool:
        return self._loc[node] < _INF

    def _child_prefix(self, node: int, child: int, prefix: float) -> float:
        return prefix * self._w[child] / self._active[node]

    def _key(self, leaf: int, prefix: float) -> float:
        return round_score(self._share[leaf] / prefix)

    def _bound(self, node: int, prefix: float) -> float:
        return round_score(self._loc[node] / prefix * self._margin)


class CollapsedSingle(SingleResource, Collapsed[SingleResourceParams]):
    pass


class CollapsedCPU(CollapsedSingle):
    name: ClassVar[str] = CollapsedCPUReference.name
    description: ClassVar[str] = CollapsedCPUReference.description


class CollapsedMem(CollapsedSingle):
    name: ClassVar[str] = CollapsedMemReference.name
    description: ClassVar[str] = CollapsedMemReference.description
    Params = MemParams
