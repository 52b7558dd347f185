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
  is skipped without a visit.

The per-node state lives in two arrays (floats, ints: one column per node)
that three kernels (:mod:`hierfair.sim.jit`; compiled with numba) read and
write: :func:`set_leaf` stores a changed leaf, :func:`flush` recomputes the
paths above the changed leaves, :func:`walk` descends until it needs to know
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

import math
from operator import add
from typing import ClassVar

import numpy as np

from hierfair.algorithms.hdrf import TIE
from hierfair.sim.jit import jit
from hierfair.sim.model import Cluster
from hierfair.sim.placement import TOLERANCE, Placement, ServerIndex
from hierfair.sim.policy import BasePolicy, NoParams, PolicyView
from hierfair.sim.shares import inverse_totals

# -- the node arrays ---------------------------------------------------------
# Floats F[row, node]: share, share / weight, the walk's score (share /
# weight rounded as the reference rounds), weight; then m rows each of the
# rescaled consumption U, the componentwise-smallest pending demand below
# (minvec), a leaf's next demand; and 1 / R_j in the first m columns of the
# last row.
S, Q, SCORE, W, U0 = 0, 1, 2, 3, 4
# Integers (Z for ℤ) Z[row, node]: parent, children (CSR: offsets, then the
# children in order), demanding below, a leaf of A below, has a minvec, the
# supports of demanding leaves below (one bit per support seen), the walk
# that entered the node without doubt (first choice, or its minvec found to
# fit), the walk that found it blocked, the leaves changed since the last
# flush (each staged once: the flush count that staged it), a mark per flush,
# a buffer of the nodes to recompute, counters; then BLOCKED rows: per slot
# (one per A in use) the stamp that marks a node blocked.
(PARENT, KID_PTR, KIDS, DEM, INSET, HASMIN, MASK, OK, FAILED, DIRTY, STAGED, MARK, BUF,
 META) = range(14)
BLOCKED = 14
SLOTS = 8  # distinct A remembered at once (usually one or two)
# META columns
N_DIRTY, MARK_STAMP, N_RECOMPUTED, N_RES, WALKS, CHECKS, FLUSHES = range(7)
SCORE_SCALE = 1e12  # hierfair.sim.treewalk.SCORE_DECIMALS


@jit
def round_score(x: float) -> float:
    """``np.round(x, 12)`` (the reference's score rounding): scale, round half
    to even, scale back; ``inf`` passes (:func:`hierfair.sim.treewalk.round_score`)."""
    if x < math.inf:
        return np.rint(x * SCORE_SCALE) / SCORE_SCALE
    return x


@jit
def store_share(F: np.ndarray, v: int, m: int) -> None:
    """Node ``v``'s dominant share from its ``U`` (the max over resources, the
    first maximum kept, as ``max()``), the share over the weight, the score."""
    inv = 4 + 3 * m
    share = 0.0
    for j in range(m):
        x = F[U0 + j, v] * F[inv, j]
        if j == 0 or x > share:
            share = x
    F[S, v] = share
    F[Q, v] = share / F[W, v]
    F[SCORE, v] = round_score(share / F[W, v])


@jit
def set_leaf(F: np.ndarray, Z: np.ndarray, leaf: int, row: tuple, demand: np.ndarray,
             demanding: bool, inset: bool, bit: int) -> None:
    """Store a changed leaf: its consumption ``row``, next ``demand`` and
    flags, and stage it for :func:`flush`."""
    m = Z[META, N_RES]
    for j in range(m):
        F[U0 + j, leaf] = row[j]
    store_share(F, leaf, m)
    Z[DEM, leaf] = demanding
    Z[INSET, leaf] = inset
    Z[HASMIN, leaf] = demanding
    Z[MASK, leaf] = bit if demanding else 0
    if demanding:
        for j in range(m):
            F[U0 + m + j, leaf] = demand[j]
            F[U0 + 2 * m + j, leaf] = demand[j]
    if Z[STAGED, leaf] != Z[META, FLUSHES]:  # staged once until the next flush
        Z[STAGED, leaf] = Z[META, FLUSHES]
        k = Z[META, N_DIRTY]
        Z[DIRTY, k] = leaf
        Z[META, N_DIRTY] = k + 1


@jit
def recompute(F: np.ndarray, Z: np.ndarray, v: int) -> None:
    """One internal node from its children (the reference's ``rescaled_shares``
    for one node, operation for operation)."""
    m = Z[META, N_RES]
    low = U0 + m
    lo, hi = Z[KID_PTR, v], Z[KID_PTR, v + 1]
    least = fallback = math.inf
    any_in = any_dem = has_low = False
    bits = 0
    for t in range(lo, hi):
        c = Z[KIDS, t]
        if Z[DEM, c]:
            any_dem = True
            qc = F[Q, c]
            if qc < fallback:
                fallback = qc
            if Z[INSET, c]:
                any_in = True
                if qc < least:
                    least = qc
            bits |= Z[MASK, c]
            for j in range(m):  # componentwise min, the first kept on ties (as min())
                x = F[low + j, c]
                if not has_low or x < F[low + j, v]:
                    F[low + j, v] = x
            has_low = True
    if not any_in:
        least = fallback
    for t in range(lo, hi):
        c = Z[KIDS, t]
        sc = F[S, c]
        k = 1.0
        scaled = False
        if sc > 0 and least != math.inf:
            k = least * F[W, c] / sc
            scaled = k < 1.0
        for j in range(m):
            x = F[U0 + j, c]
            if scaled:
                x = x * k
            F[U0 + j, v] = x if t == lo else F[U0 + j, v] + x
    store_share(F, v, m)
    Z[INSET, v] = any_in
    Z[DEM, v] = any_dem
    Z[MASK, v] = bits
    Z[HASMIN, v] = has_low


@jit
def flush(F: np.ndarray, Z: np.ndarray) -> int:
    """Recompute every ancestor of the staged leaves, children first (a
    parent's pre-order index is below its children's), and forget that they
    or the staged leaves were blocked; returns how many nodes."""
    n_dirty = Z[META, N_DIRTY]
    if n_dirty == 0:
        return 0
    Z[META, FLUSHES] += 1
    mark = Z[META, MARK_STAMP] + 1
    Z[META, MARK_STAMP] = mark
    count = 0
    for i in range(n_dirty):
        v = Z[DIRTY, i]
        for k in range(SLOTS):
            Z[BLOCKED + k, v] = 0
        v = Z[PARENT, v]
        while v >= 0 and Z[MARK, v] != mark:
            Z[MARK, v] = mark
            for k in range(SLOTS):
                Z[BLOCKED + k, v] = 0
            Z[BUF, count] = v
            count += 1
            v = Z[PARENT, v]
    Z[META, N_DIRTY] = 0
    nodes = np.sort(Z[BUF, :count])
    for i in range(count - 1, -1, -1):
        recompute(F, Z, nodes[i])
    Z[META, N_RECOMPUTED] += count
    return count


@jit
def fits(free: np.ndarray, F: np.ndarray, first: int, v: int, m: int) -> bool:
    """Whether some server has room for the vector ``F[first:first + m, v]``:
    the placement index's test (:data:`hierfair.sim.placement.TOLERANCE`) on
    its array of free resources per server."""
    for s in range(free.shape[0]):
        for j in range(m):
            if free[s, j] < F[first + j, v] - TOLERANCE:
                break
        else:
            return True
    return False


@jit
def walk(F: np.ndarray, Z: np.ndarray, free: np.ndarray, allowed: int, slot: int,
         stamp: int) -> int:
    """Flush, then the first leaf whose task fits, depth first from the root into the
    least (score, position) child with a leaf of ``A`` (``allowed`` supports)
    below that is not blocked (its ``BLOCKED + slot`` entry is not
    ``stamp``); -1 when none.  A leaf whose task does not fit, and a node
    whose children are all blocked, become blocked.  The reference's walk
    visits the same nodes in the same order; what it learns here only prunes:
    once a leaf has failed, the root and every child entered after a sibling
    ranked before it failed have their smallest pending demand tried first,
    and are blocked if it does not fit."""
    flush(F, Z)
    m = Z[META, N_RES]
    low, need = U0 + m, U0 + 2 * m
    row = BLOCKED + slot
    walk_id = Z[META, WALKS] + 1
    Z[META, WALKS] = walk_id
    Z[OK, 0] = walk_id  # no doubt about the root until a leaf fails
    failures = 0
    v = 0
    while True:
        if Z[row, v] == stamp:
            if v == 0:
                return -1
            v = Z[PARENT, v]
            continue
        lo, hi = Z[KID_PTR, v], Z[KID_PTR, v + 1]
        if lo == hi:
            if fits(free, F, need, v, m):
                return v
            Z[row, v] = stamp
            Z[FAILED, v] = walk_id
            if failures == 0:
                Z[OK, 0] = 0
            failures += 1
            continue
        if Z[OK, v] != walk_id:
            Z[META, CHECKS] += 1
            if Z[HASMIN, v] and fits(free, F, low, v, m):
                Z[OK, v] = walk_id
            else:
                Z[row, v] = stamp
                Z[FAILED, v] = walk_id
                continue
        best = failed = -1
        best_score = failed_score = math.inf
        for t in range(lo, hi):
            c = Z[KIDS, t]
            if Z[MASK, c] & allowed:
                score = F[SCORE, c]
                if Z[row, c] != stamp:
                    if best < 0 or score < best_score:  # ties: the earlier child
                        best, best_score = c, score
                elif Z[FAILED, c] == walk_id and (failed < 0 or score < failed_score):
                    failed, failed_score = c, score
        if best < 0:
            Z[row, v] = stamp
            Z[FAILED, v] = walk_id
            continue
        # entered in doubt only after a sibling ranked before it failed
        if failed < 0 or failed_score > best_score or (failed_score == best_score
                                                        and failed > best):
            Z[OK, best] = walk_id
        v = best


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
        width = max(n + 1, m, FLUSHES + 1)
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
        walk(self._F, self._Z, self._free, 0, 0, 0)

    def make_index(self, cluster: Cluster, placement: Placement) -> ServerIndex:
        """The usual index, keeping its free resources as an array too: the
        walk tests fits itself, compiled (a test per node would otherwise be
        a round trip to Python)."""
        index = ServerIndex(cluster.capacities, placement, mirror=True)
        self._free = index.mirror
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
        """Make ``Y`` the applied one: re-flag the groups whose membership flips."""
        old, self._Y = self._Y, Y
        for sup, leaves in self._groups.items():
            if (not sup & ~old) != (not sup & ~Y):
                self._dirty.update(leaves)
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
        leaf = walk(self._F, self._Z, self._free, allowed, slot, stamp)
        return None if leaf < 0 else leaf

    def select(self) -> int | None:
        self._stage()
        self._epoch = self.state.release_epoch  # room was released: blocked stamps renew
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
