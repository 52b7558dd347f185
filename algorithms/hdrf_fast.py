"""Dynamic H-DRF, incremental: ``hdrf``'s default reading at the cost of one path.

Source: H-DRF §3.4, Algorithms 2-4 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``),
in the ``literal-frozen`` reading that :class:`~hierfair.algorithms.hdrf.DynamicHDRF`
(``hdrf``) uses by default and specifies readably (docs/algorithms.md, "hdrf").
This module computes the same decisions -- the same leaf at every decision,
bit for bit -- without recomputing the whole tree per decision.

What a decision of the reference needs, and how it is kept here:

* **Algorithm 3's rescaled consumption** ``U`` and dominant share ``s`` of
  every node.  A node's ``U`` depends only on its children's ``U``, ``s`` and
  two flags (in the set ``A`` below it; demanding below it), so it is stored
  per node and recomputed along the root paths of the leaves that changed
  (a task started or finished there, its queue changed), children before
  parents, with the reference's arithmetic in the reference's order
  (sequential sums in child order), so every float is identical.
* **Algorithm 2's ``Y`` and ``A``** (literal): ``Y`` is the support of the
  resources released since the round began, or of the free resources when no
  leaf of that ``A`` can place a task; a demanding leaf is in ``A`` when its
  demand's support lies in ``Y``.  Leaves are grouped by support; when ``Y``
  changes, only the groups whose membership flips are re-flagged (and their
  paths recomputed) -- the one case that costs more than a path.  Which ``Y``
  applies is decided by an existence probe before anything is re-flagged.
* **Algorithm 4's walk**: a depth-first search in (score, pre-order) order that
  enters only children with a leaf of ``A`` below; it returns the first leaf
  whose task fits, which is the leaf the reference's walk over "schedulable"
  children reaches.  Subtrees found to hold no fitting leaf are remembered
  until resources are released (free space only shrinks in between) or a leaf
  below changes; a subtree whose componentwise-smallest pending demand does
  not fit is skipped without a visit.

Cost per decision: O(depth * fan-out * m) for the changed paths and the walk,
plus the size of any group re-flagged when ``Y`` changes, plus the subtrees
first found blocked after a release.  :attr:`FastHDRF.stats` counts each.
tests/test_hdrf_fast.py runs both implementations on random instances and
asserts identical decision sequences.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from hierfair.algorithms.hdrf import TIE
from hierfair.sim.policy import BasePolicy, SchedulerState
from hierfair.sim.shares import dominant_share_of, inverse_totals
from hierfair.sim.treewalk import round_score

_INF = math.inf
def support(vector: list[float] | np.ndarray, floor: list[float]) -> int:
    """Bit j set when ``vector[j] > floor[j]``."""
    bits = 0
    for j, (v, f) in enumerate(zip(vector, floor)):
        if v > f:
            bits |= 1 << j
    return bits


class FastHDRF(BasePolicy):
    """``hdrf`` (literal-frozen reading), incremental; see the module docstring."""

    name: ClassVar[str] = "hdrf-fast"
    description: ClassVar[str] = ("dynamic H-DRF (hdrf's default reading), incremental: "
                                  "one root path per change; identical decisions")

    def attach(self, state: SchedulerState) -> None:
        super().attach(state)
        h = state.hierarchy
        n = h.n_nodes
        total = state.cluster.total
        self._m = m = len(total)
        self._n = n
        self._children = h.children
        self._parent = h.parent.tolist()
        self._w = h.weights.tolist()
        self._dominant = dominant_share_of(inverse_totals(total).tolist())
        self._floor = (TIE * total).tolist()  # a resource is in Y above this
        self._zeros = [0.0] * m  # a demand's support: its positive resources
        self._full = (1 << m) - 1
        # Algorithm 3's state per node (leaf rows: the leaf's own).
        self._U = [[0.0] * m for _ in range(n)]
        self._s = [0.0] * n
        self._q = [0.0] * n  # s / w
        self._score = [0.0] * n  # the walk's key: s / w rounded as the reference rounds
        self._inset = [False] * n  # a leaf of A below
        self._dem = [False] * n  # a demanding leaf below
        self._masks = [0] * n  # bit (1 << support) per demanding leaf below
        self._minvec: list[tuple[float, ...] | None] = [None] * n
        self._demand: list[np.ndarray | None] = [None] * n  # leaves' next demand
        self._support = [-1] * n  # leaves' demand support, -1 not demanding
        self._groups: dict[int, set[int]] = {}  # support -> demanding leaves
        self._allowed_by_Y: dict[int, int] = {}  # cache of _allowed, until groups change
        self._Y = self._full  # the Y the stored flags were computed for
        self._released = [0.0] * m  # Algorithm 2's W under churn
        self._dirty: set[int] = set()
        self._blocked: dict[int, set[int]] = {}  # allowed supports -> nodes with no fit
        self._epoch = state.release_epoch
        #: decisions, nodes recomputed, leaves re-flagged for a new Y, probes
        self.stats = {"decisions": 0, "recomputed": 0, "reflagged": 0, "probes": 0}

    # -- notifications -----------------------------------------------------------
    def leaf_changed(self, leaf: int) -> None:
        self._dirty.add(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._dirty.add(leaf)
        released = self._released
        for j, d in enumerate(demand.tolist()):
            released[j] += d

    # -- Algorithm 3, incrementally -------------------------------------------------
    def _refresh_leaf(self, leaf: int) -> None:
        """Re-read one leaf from the state: its consumption, queue and flags."""
        u = list(self.state.alloc_row(leaf))
        self._U[leaf] = u
        s = self._dominant(u)
        self._s[leaf] = s
        self._q[leaf] = s / self._w[leaf]
        self._score[leaf] = round_score(s / self._w[leaf])
        d = self.state.next_demand(leaf)
        old = self._support[leaf]
        if d is None:
            sup = -1
            self._minvec[leaf] = None
            self._masks[leaf] = 0
        else:
            dl = d.tolist()
            sup = support(dl, self._zeros)
            self._minvec[leaf] = tuple(dl)
            self._masks[leaf] = 1 << sup
        self._demand[leaf] = d
        if sup != old:
            self._allowed_by_Y.clear()
            if old >= 0:
                self._groups[old].discard(leaf)
            if sup >= 0:
                self._groups.setdefault(sup, set()).add(leaf)
            self._support[leaf] = sup
        self._dem[leaf] = sup >= 0
        self._inset[leaf] = sup >= 0 and not sup & ~self._Y

    def _recompute(self, v: int) -> None:
        """One internal node from its children: ``rescaled_shares`` for one node.
        (The first child's vector is taken as is where the reference adds it to
        zeros: the same floats, up to the sign of a zero, which no comparison
        sees.)"""
        kids = self._children[v]
        s, q, w, U = self._s, self._q, self._w, self._U
        inset, dem, masks, minvec = self._inset, self._dem, self._masks, self._minvec
        least = fallback = _INF
        any_in = any_dem = False
        bits = 0
        low = None
        for c in kids:
            if dem[c]:
                any_dem = True
                qc = q[c]
                if qc < fallback:
                    fallback = qc
                if inset[c]:
                    any_in = True
                    if qc < least:
                        least = qc
                bits |= masks[c]
                mv = minvec[c]
                low = mv if low is None else tuple(map(min, low, mv))
        if not any_in:
            least = fallback
        acc = None
        for c in kids:
            u = U[c]
            sc = s[c]
            if sc > 0 and least != _INF:
                k = least * w[c] / sc
                if k < 1.0:
                    u = [x * k for x in u]
            acc = u if acc is None else [a + x for a, x in zip(acc, u)]
        U[v] = acc
        sv = self._dominant(acc)  # type: ignore[arg-type]
        s[v] = sv
        q[v] = sv / w[v]
        self._score[v] = round_score(sv / w[v])
        inset[v] = any_in
        dem[v] = any_dem
        masks[v] = bits
        minvec[v] = low

    def _flush(self) -> None:
        """Re-read the dirty leaves and recompute their ancestors, children first
        (pre-order: a parent's index is below its children's)."""
        if not self._dirty:
            return
        parent = self._parent
        nodes: set[int] = set()
        blocked = list(self._blocked.values())
        for leaf in self._dirty:
            self._refresh_leaf(leaf)
            v = parent[leaf]
            for b in blocked:
                b.discard(leaf)
            while v >= 0 and v not in nodes:
                nodes.add(v)
                for b in blocked:
                    b.discard(v)
                v = parent[v]
        self._dirty.clear()
        for v in sorted(nodes, reverse=True):
            self._recompute(v)
        self.stats["recomputed"] += len(nodes)

    def _apply(self, Y: int) -> None:
        """Make ``Y`` the applied one: re-flag the groups whose membership flips."""
        old, self._Y = self._Y, Y
        for sup, leaves in self._groups.items():
            if (not sup & ~old) != (not sup & ~Y):
                self._dirty.update(leaves)
                self.stats["reflagged"] += len(leaves)
        self._flush()

    # -- Algorithm 4 ------------------------------------------------------------------
    def _allowed(self, Y: int) -> int:
        """Bit (1 << support) for every support of a demanding leaf inside ``Y``."""
        cached = self._allowed_by_Y.get(Y)
        if cached is not None:
            return cached
        bits = 0
        for sup, leaves in self._groups.items():
            if leaves and not sup & ~Y:
                bits |= 1 << sup
        self._allowed_by_Y[Y] = bits
        return bits

    def _find(self, allowed: int) -> int | None:
        """The first leaf, in the walk's (score, pre-order) order, whose support
        is allowed and whose next task fits."""
        blocked = self._blocked.setdefault(allowed, set())
        return self._visit(0, allowed, blocked, True)

    def _visit(self, v: int, allowed: int, blocked: set[int], check: bool) -> int | None:
        """Depth first from ``v``.  ``check``: first test whether the smallest
        pending demand below fits at all -- done at the root and on every
        backtrack (where subtrees that hold nothing placeable are met), not
        along the first path tried, which usually succeeds."""
        fits = self.state.fits
        kids = self._children[v]
        if not kids:
            if fits(self._demand[v]):  # type: ignore[arg-type]
                return v
            blocked.add(v)
            return None
        if check:
            low = self._minvec[v]
            if low is None or not fits(np.array(low)):
                blocked.add(v)
                return None
        masks, score = self._masks, self._score
        open_ = [(score[c], i, c) for i, c in enumerate(kids)
                 if masks[c] & allowed and c not in blocked]
        open_.sort()
        first = True
        for _, _, c in open_:
            found = self._visit(c, allowed, blocked, not first)
            if found is not None:
                return found
            first = False
        blocked.add(v)
        return None

    def select(self) -> int | None:
        state = self.state
        self._flush()
        if state.release_epoch != self._epoch:  # room was released: forget blocked
            self._epoch = state.release_epoch
            self._blocked.clear()
        leaf = None
        if self._dem[0]:
            # Algorithm 2: W is what was released; else, every free resource.
            for w in (self._released, state.free_total.tolist()):
                leaf = self._serve(support(w, self._floor))
                if leaf is not None:
                    break
        if leaf is None:  # the round is over: what was released is allocated
            self._released = [0.0] * self._m
        else:
            self.stats["decisions"] += 1
        return leaf

    def _serve(self, Y: int) -> int | None:
        """The walk's leaf under ``Y``, or None when no leaf of its ``A`` fits."""
        allowed = self._allowed(Y)
        if not allowed:
            return None
        if self._allowed(self._Y) != allowed:
            self.stats["probes"] += 1
            if self._find(allowed) is None:  # no need to re-flag for nothing
                return None
            self._apply(Y)
        else:
            self._Y = Y
        return self._find(allowed)
