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

Cost: O(n) to recompute weights and rebuild the heap on a demand change;
O(log n) per decision otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from hierfair.errors import SpecError
from hierfair.model import Cluster, Hierarchy
from hierfair.policy import LeafPriorityPolicy, SchedulerState
from hierfair.spec_base import Strict


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


class FlatteningPolicy(LeafPriorityPolicy):
    """Weighted sharing over the leaves with weights derived from the tree.

    The weights depend on which leaves demand what; :meth:`signature` says what
    they depend on, and when it changes every demanding leaf is re-keyed.
    """

    def attach(self, state: SchedulerState) -> None:
        super().attach(state)
        h = state.hierarchy
        self._leaves = list(h.leaves)
        self._signature: Any = None
        self._flat = np.ones(h.n_nodes)
        total = state.cluster.total
        self._inv = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
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


class Collapsed(FlatteningPolicy):
    """H-DRF §3.2: collapsed weights, then weighted DRF (dominant shares)."""

    name: ClassVar[str] = "collapsed"
    description: ClassVar[str] = ("collapsed hierarchy: flattened weights + weighted DRF "
                                  "(H-DRF §3.2); dovetailing punishes parents")

    def flat_weights(self) -> np.ndarray:
        return collapsed_weights(self.state.hierarchy, self.demanding_nodes())


class SingleResourceParams(Strict):
    resource: str


class CollapsedSingle(Collapsed):
    """MCH letter §IV-B "C-CH"/"M-CH": collapsed weights, fair sharing on one
    resource's share only (the other resources are ignored when ranking)."""

    name: ClassVar[str] = "collapsed-single"
    description: ClassVar[str] = "collapsed hierarchy, single-resource fair sharing"
    default_resource: ClassVar[str] = "cpu"

    class Params(SingleResourceParams):
        resource: str = "cpu"

    @classmethod
    def check(cls, params: BaseModel, cluster: Cluster) -> None:
        resource = params.resource  # type: ignore[attr-defined]
        if resource not in cluster.resources:
            raise SpecError(f"{cls.name} shares one resource, and the cluster has "
                            f"{list(cluster.resources)}", where="params.resource",
                            value=resource)

    def attach(self, state: SchedulerState) -> None:
        super().attach(state)
        self._j = state.cluster.resources.index(self.params.resource)  # type: ignore[attr-defined]

    def share(self, leaf: int) -> float:
        return float(self.state.alloc[leaf, self._j] * self._inv[self._j])


class CollapsedCPU(CollapsedSingle):
    name: ClassVar[str] = "collapsed-cpu"
    description: ClassVar[str] = ("collapsed hierarchy, fair sharing on CPU share only "
                                  "(MCH letter's C-CH)")


class CollapsedMem(CollapsedSingle):
    name: ClassVar[str] = "collapsed-mem"
    description: ClassVar[str] = ("collapsed hierarchy, fair sharing on memory share only "
                                  "(MCH letter's M-CH)")

    class Params(SingleResourceParams):
        resource: str = "mem"
