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
* :class:`IncrementalFlattening` (in
  :mod:`hierfair.algorithms.collapsed_incremental`, shared with ``mch``) and
  the registered classes -- a leaf's change updates its root path only
  (O(depth x fan-out)); ``select`` finds the minimum by a best-first search
  from the root (see that class).
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic

import numpy as np
from pydantic import BaseModel

from hierfair.algorithms.collapsed_incremental import IncrementalFlattening
from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Cluster, Hierarchy
from hierfair.sim.policy import BasePolicy, LeafPriorityPolicy, P, PolicyView
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
