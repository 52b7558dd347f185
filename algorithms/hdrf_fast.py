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
* **Algorithm 4's walk**: depth first, at each node into the child with the
  least (score, position) that has a leaf of ``A`` below and is not known to
  be blocked; it returns the first leaf whose task fits, which is the leaf the
  reference's walk over "schedulable" children reaches.  Subtrees found to
  hold no fitting leaf are remembered until resources are released (free
  space only shrinks in between) or a leaf below changes; once a leaf has
  failed, a subtree whose componentwise-smallest pending demand does not fit
  is skipped without a visit.  Whether a vector fits somewhere is asked of
  the free space once: the answer is remembered (a run has few distinct
  demands), and one that fits nowhere stays so until room is released, so
  on a full cluster a walk does not scan every server per leaf it tries.

The per-node state lives in two arrays (floats, ints: one column per node)
that three kernels (:mod:`hierfair.algorithms.hdrf_fast_kernels`, re-exported
here; compiled with numba by :mod:`hierfair.sim.jit`) read and write:
:func:`set_leaf` stores a changed leaf, :func:`flush` recomputes the paths
above the changed leaves, :func:`walk` descends until it needs to know
whether a demand fits -- which only the simulator's placement index answers,
so the walk returns the node and this class asks.  The policy's own
bookkeeping (``Y``, the support groups, which subtrees are blocked for which
``A``) stays in Python.

Cost per decision: O(depth * fan-out * m) for the changed paths and the walk,
compiled, plus the size of any group re-flagged when ``Y`` changes, plus one
round trip per leaf or subtree first found blocked after a release.
:attr:`FastHDRF.stats` counts each.  tests/test_hdrf_fast.py runs both
implementations on random instances and asserts identical decision sequences,
with the kernels compiled and as plain Python.
"""

from __future__ import annotations

from operator import add
from typing import ClassVar

import numpy as np

from hierfair.algorithms.hdrf_fast_kernels import (  # noqa: F401 - kernels, layout: re-exported
    ALL,
    BLOCKED,
    BUF,
    CHECKS,
    DEM,
    DIRTY,
    FAILED,
    FAILURES,
    FLUSHES,
    FORGET,
    HASMIN,
    INSET,
    KID_PTR,
    KIDS,
    KNOWN,
    MARK,
    MARK_STAMP,
    MASK,
    MEMO,
    META,
    N_DIRTY,
    N_RECOMPUTED,
    N_RES,
    OK,
    PARENT,
    SCORE,
    SCORE_SCALE,
    SLOTS,
    STAGED,
    U0,
    WALKS,
    Q,
    S,
    W,
    fits,
    flush,
    recompute,
    round_score,
    set_inset,
    set_leaf,
    store_share,
    walk,
)
from hierfair.algorithms.hdrf_static import TIE
from hierfair.sim.model import Cluster
from hierfair.sim.placement import Placement, ServerIndex
from hierfair.sim.policy import BasePolicy, NoParams, PolicyView
from hierfair.sim.shares import inverse_totals


def support(vector: list[float], floor: list[float]) -> int:
    """Bit j set when ``vector[j] > floor[j]``."""
    bits = 0
    bit = 1
    for v, f in zip(vector, floor):
        if v > f:
            bits |= bit
        bit <<= 1
    return bits


class FastHDRF(BasePolicy[NoParams]):
    """``hdrf`` (literal-frozen reading), incremental; see the module docstring."""

    name: ClassVar[str] = "hdrf-fast"
    description: ClassVar[str] = ("dynamic H-DRF (hdrf's default reading), incremental: "
                                  "one root path per change; identical decisions")

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        n = h.n_nodes
        total = state.cluster.total
        self._m = m = len(total)
        width = max(n + 1, m, KNOWN + 1)
        self._F = F = np.zeros((5 + 3 * m, width))
        F[W, :n] = h.weights
        F[4 + 3 * m, :m] = inverse_totals(total)
        self._Z = Z = np.zeros((BLOCKED + SLOTS, width), dtype=np.int64)
        Z[PARENT, :n] = h.parent
        kids = [c for v in range(n) for c in h.children[v]]
        Z[KIDS, :len(kids)] = kids
        Z[KID_PTR, :n + 1] = np.cumsum([0] + [len(h.children[v]) for v in range(n)])
        Z[META, N_RES] = m
        Z[META, FLUSHES] = 1
        self._floor = (TIE * total).tolist()  # a resource is in Y above this
        self._zeros = [0.0] * m  # a demand's support: its positive resources
        self._none = np.zeros(m)  # the demand row of a leaf that demands nothing
        self._support = [-1] * n  # leaves' demand support, -1 not demanding
        self._support_of: dict[bytes, int] = {}  # demand bytes -> support
        self._bits: dict[int, int] = {}  # support -> its bit in MASK
        self._groups: dict[int, set[int]] = {}  # support -> demanding leaves
        self._allowed_by_Y: dict[int, int] = {}  # cache of _allowed, until groups change
        self._Y = (1 << m) - 1  # the Y the stored flags were computed for (all)
        self._released = [0.0] * m  # Algorithm 2's W under churn
        self._dirty: set[int] = set()
        self._epoch = state.release_epoch
        self._slots: dict[int, int] = {}  # A (allowed supports) -> its BLOCKED row
        self._slot_stamp = [0] * SLOTS  # current stamp per slot (0: never blocked)
        self._slot_epoch = [-1] * SLOTS  # the release epoch the stamp belongs to
        self._stamps = 0
        self._counts = {"decisions": 0, "reflagged": 0, "probes": 0}
        self._memo = np.zeros((MEMO, m))  # fit answers on the free space (walk)
        self._answers = np.zeros(MEMO, dtype=np.bool_)
        self._keep: int | None = FORGET  # what the next walk keeps of them (None: decide)
        self._memo_epoch = -1  # the release epoch of the last walk's answers
        self._warm(h.leaves[0])

    def _warm(self, leaf: int) -> None:
        """Load (or compile) the kernels here, before the run, and not inside
        the first decision's measured time (~0.3 s from numba's disk cache, a
        few seconds on a fresh machine): refresh a leaf as it is (nothing
        yet), recompute its path, walk for no leaf (slot 0, stamp 0 counts as
        blocked, which no real walk uses).  Demands are read-only arrays in
        workloads, another compiled signature than the writable zeros of a
        leaf without demand: both are loaded (the read-only one cost the first
        decision ~1 s in mch-fig5)."""
        self._refresh_leaf(leaf)
        none = self._none.copy()
        none.flags.writeable = False
        set_leaf(self._F, self._Z, leaf, tuple(self.state.alloc_row(leaf)), none, False, False, 0)
        set_inset(self._Z, np.zeros(0, np.int64), False)
        walk(self._F, self._Z, self._free, 0, 0, 0, self._memo, self._answers, FORGET,
             self._block_top, self._block_dirty)

    def make_index(self, cluster: Cluster, placement: Placement) -> ServerIndex:
        """The usual index, keeping its free resources as an array too: the
        walk tests fits itself, compiled (a test per node would otherwise be
        a round trip to Python)."""
        index = ServerIndex(cluster.capacities, placement, mirror=True)
        self._free = index.mirror
        assert index.mirror_dirty is not None
        self._block_dirty = index.mirror_dirty  # blocks of the mirror changed since a walk looked
        self._block_top = np.zeros((len(self._block_dirty), len(cluster.resources)))  # maxima
        self._free_total = index.free_total_row  # Algorithm 2's W when nothing was released
        return index

    @property
    def stats(self) -> dict[str, int]:
        """Decisions, nodes recomputed, leaves re-flagged for a new Y, probes,
        and subtrees whose smallest demand the walk tried."""
        return {**self._counts, "recomputed": int(self._Z[META, N_RECOMPUTED]),
                "checks": int(self._Z[META, CHECKS])}

    # -- notifications -----------------------------------------------------------
    def leaf_changed(self, leaf: int) -> None:
        self._dirty.add(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._dirty.add(leaf)
        self._released = list(map(add, self._released, demand.tolist()))

    # -- Algorithm 3, incrementally -------------------------------------------------
    def _refresh_leaf(self, leaf: int) -> None:
        """Re-read one leaf from the state: its consumption, queue and flags."""
        d = self.state.next_demand(leaf)
        old = self._support[leaf]
        if d is None:
            sup = -1
        else:
            key = d.tobytes()
            sup = self._support_of.get(key, -1)
            if sup < 0:
                sup = self._support_of[key] = support(d.tolist(), self._zeros)
        if sup != old:
            self._allowed_by_Y.clear()
            if old >= 0:
                self._groups[old].discard(leaf)
            if sup >= 0:
                self._groups.setdefault(sup, set()).add(leaf)
            self._support[leaf] = sup
        if sup < 0:
            set_leaf(self._F, self._Z, leaf, tuple(self.state.alloc_row(leaf)), self._none,
                     False, False, 0)
        else:
            set_leaf(self._F, self._Z, leaf, tuple(self.state.alloc_row(leaf)), d, True,
                     not sup & ~self._Y, self._bits.get(sup) or self._bit(sup))

    def _bit(self, sup: int) -> int:
        """The MASK bit of a demand support (63 distinct supports at most)."""
        bit = self._bits.get(sup)
        if bit is None:
            if len(self._bits) >= 63:
                raise ValueError("hdrf-fast: more than 63 distinct demand supports")
            bit = self._bits[sup] = 1 << len(self._bits)
        return bit

    def _stage(self) -> None:
        """Re-read the dirty leaves; the walk recomputes their ancestors first."""
        if not self._dirty:
            return
        for leaf in self._dirty:
            self._refresh_leaf(leaf)
        self._dirty.clear()

    def _apply(self, Y: int) -> None:
        """Make ``Y`` the applied one: re-flag the groups whose membership flips
        (a leaf not otherwise changed keeps all but its flag: set in a kernel)."""
        old, self._Y = self._Y, Y
        for sup, leaves in self._groups.items():
            inset = not sup & ~Y
            if (not sup & ~old) != inset and leaves:
                set_inset(self._Z, np.fromiter(leaves, np.int64, len(leaves)), inset)
                self._counts["reflagged"] += len(leaves)
        self._stage()

    # -- Algorithm 4 ------------------------------------------------------------------
    def _allowed(self, Y: int) -> int:
        """The MASK bits of every support of a demanding leaf inside ``Y``."""
        cached = self._allowed_by_Y.get(Y)
        if cached is not None:
            return cached
        bits = 0
        for sup, leaves in self._groups.items():
            if leaves and not sup & ~Y:
                bits |= self._bit(sup)
        self._allowed_by_Y[Y] = bits
        return bits

    def _slot(self, allowed: int) -> tuple[int, int]:
        """The BLOCKED row of ``A`` and its stamp for this release epoch (a
        new stamp forgets every node blocked before)."""
        slot = self._slots.get(allowed)
        if slot is None:
            if len(self._slots) == SLOTS:  # too many A: forget them all
                self._slots.clear()
                self._slot_epoch = [-1] * SLOTS
            slot = self._slots[allowed] = len(self._slots)
            self._slot_epoch[slot] = -1
        if self._slot_epoch[slot] != self._epoch:
            self._stamps += 1
            self._slot_stamp[slot] = self._stamps
            self._slot_epoch[slot] = self._epoch
        return slot, self._slot_stamp[slot]

    def _find(self, allowed: int) -> int | None:
        """The first leaf, in the walk's (score, pre-order) order, whose support
        is allowed and whose next task fits."""
        slot, stamp = self._slot(allowed)
        keep = self._keep
        if keep is None:  # the select's first walk: what fit nowhere at the last
            # walk still does if no room was released since (the free space
            # only shrank); what fitted may not
            keep = FAILURES if self._epoch == self._memo_epoch else FORGET
        leaf = walk(self._F, self._Z, self._free, allowed, slot, stamp, self._memo,
                    self._answers, keep, self._block_top, self._block_dirty)
        self._keep = ALL  # the free space changes only after select returns
        self._memo_epoch = self._epoch
        return None if leaf < 0 else leaf

    def select(self) -> int | None:
        self._stage()
        self._epoch = self.state.release_epoch  # room was released: blocked stamps renew
        self._keep = None  # fit answers: the first walk decides what it keeps
        # Algorithm 2: W is what was released; else, every free resource.
        released = self._released
        leaf = self._serve(support(released, self._floor) if any(released) else 0)
        if leaf is None:
            leaf = self._serve(support(self._free_total(), self._floor))
        if leaf is None:  # the round is over: what was released is allocated
            self._released = [0.0] * self._m
        else:
            self._counts["decisions"] += 1
        return leaf

    def _serve(self, Y: int) -> int | None:
        """The walk's leaf under ``Y``, or None when no leaf of its ``A`` fits."""
        allowed = self._allowed(Y)
        if not allowed:
            return None
        if self._allowed(self._Y) != allowed:
            self._counts["probes"] += 1
            if self._find(allowed) is None:  # no need to re-flag for nothing
                return None
            self._apply(Y)
        else:
            self._Y = Y
        return self._find(allowed)
