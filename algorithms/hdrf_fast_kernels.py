"""The compiled kernels of ``hdrf-fast``: Algorithm 3 along root paths, Algorithm 4's walk.

Source: H-DRF §3.4, Algorithms 2-4 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``),
kept incrementally as :mod:`hierfair.algorithms.hdrf_fast` describes (its
docstring says what each part of a reference decision becomes).

The per-node state lives in two arrays, floats ``F`` and integers ``Z``, one
column per node; the row constants below lay them out.  :func:`set_leaf`
stores a changed leaf, :func:`flush` recomputes the paths above the changed
leaves (:func:`recompute`: the reference's ``rescaled_shares`` for one node,
operation for operation), :func:`walk` descends depth first until a leaf's
task fits.  Each kernel is a module-level function compiled by
:func:`hierfair.sim.jit.jit` (numba, cached on disk) or, without numba, run as
plain Python with the same floats.  :class:`~hierfair.algorithms.hdrf_fast.FastHDRF`
owns the arrays and calls the kernels; ``hierfair.algorithms.hdrf_fast``
re-exports every name here.
"""

from __future__ import annotations

import math

import numpy as np

from hierfair.sim.jit import jit
from hierfair.sim.placement import BRANCH, TOLERANCE

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
N_DIRTY, MARK_STAMP, N_RECOMPUTED, N_RES, WALKS, CHECKS, FLUSHES, KNOWN = range(8)
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
def set_inset(Z: np.ndarray, leaves: np.ndarray, inset: bool) -> None:
    """Re-flag demanding leaves whose only change is being in ``A`` or not (a
    new ``Y``), staged as :func:`set_leaf` stages: everything else it would
    store is unchanged, so one flag, not a re-read of each leaf in Python."""
    for i in range(leaves.shape[0]):
        leaf = leaves[i]
        Z[INSET, leaf] = inset
        if Z[STAGED, leaf] != Z[META, FLUSHES]:
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
def fits(free: np.ndarray, F: np.ndarray, first: int, v: int, m: int, top: np.ndarray,
         dirty: np.ndarray) -> bool:
    """Whether some server has room for the vector ``F[first:first + m, v]``:
    the placement index's test (:data:`hierfair.sim.placement.TOLERANCE`) on
    its array of free resources per server.  Servers are tested a block of
    ``BRANCH`` at a time, and a block none of whose servers has enough of
    some resource is skipped: ``top`` holds each block's per-resource
    maxima, taken again here when the index marked the block ``dirty`` (a
    full cluster otherwise costs a test of every server)."""
    n = free.shape[0]
    for b in range(top.shape[0]):
        lo = b * BRANCH
        hi = min(lo + BRANCH, n)
        if dirty[b]:
            for j in range(m):
                most = free[lo, j]
                for s in range(lo + 1, hi):
                    most = max(most, free[s, j])
                top[b, j] = most
            dirty[b] = 0
        for j in range(m):
            if top[b, j] < F[first + j, v] - TOLERANCE:
                break
        else:
            for s in range(lo, hi):
                for j in range(m):
                    if free[s, j] < F[first + j, v] - TOLERANCE:
                        break
                else:
                    return True
    return False


MEMO = 16  # fit answers remembered (a run has few distinct demands)
# What a walk keeps of the answers remembered before it (``keep``): the free
# space grew since (none), it only shrank (the vectors that fit nowhere), it
# is unchanged (all).
FORGET, FAILURES, ALL = 0, 1, 2


@jit
def fits_known(free: np.ndarray, F: np.ndarray, first: int, v: int, m: int,
               memo: np.ndarray, answers: np.ndarray, known: int, top: np.ndarray,
               dirty: np.ndarray) -> tuple[bool, int]:
    """:func:`fits`, answered from earlier answers when one decides it (an
    answer that fits, given on this very free space; one that fits nowhere,
    on this one or on one it has only shrunk from): a vector no smaller
    (componentwise) than one that fits nowhere fits nowhere, and one no
    larger than one that fits somewhere fits (the tolerance test is
    monotone).  A full cluster otherwise scans every server for each leaf
    and subtree a walk tries.  Returns the answer and how many answers are
    now remembered."""
    for k in range(known):
        if answers[k]:
            for j in range(m):
                if F[first + j, v] > memo[k, j]:
                    break
            else:
                return True, known
        else:
            for j in range(m):
                if F[first + j, v] < memo[k, j]:
                    break
            else:
                return False, known
    ok = fits(free, F, first, v, m, top, dirty)
    if known < MEMO:
        for j in range(m):
            memo[known, j] = F[first + j, v]
        answers[known] = ok
        known += 1
    return ok, known


@jit
def walk(F: np.ndarray, Z: np.ndarray, free: np.ndarray, allowed: int, slot: int,
         stamp: int, memo: np.ndarray, answers: np.ndarray, keep: int, top: np.ndarray,
         dirty: np.ndarray) -> int:
    """Flush, then the first leaf whose task fits, depth first from the root into the
    least (score, position) child with a leaf of ``A`` (``allowed`` supports)
    below that is not blocked (its ``BLOCKED + slot`` entry is not
    ``stamp``); -1 when none.  A leaf whose task does not fit, and a node
    whose children are all blocked, become blocked.  The reference's walk
    visits the same nodes in the same order; what it learns here only prunes:
    once a leaf has failed, the root and every child entered after a sibling
    ranked before it failed have their smallest pending demand tried first,
    and are blocked if it does not fit.  Fit answers are remembered in
    ``memo``/``answers`` (``Z[META, KNOWN]`` of them) across walks, as far as
    ``keep`` says the free space allows."""
    flush(F, Z)
    m = Z[META, N_RES]
    low, need = U0 + m, U0 + 2 * m
    row = BLOCKED + slot
    walk_id = Z[META, WALKS] + 1
    Z[META, WALKS] = walk_id
    Z[OK, 0] = walk_id  # no doubt about the root until a leaf fails
    failures = 0
    known = 0
    if keep == ALL:
        known = Z[META, KNOWN]
    elif keep == FAILURES:
        for k in range(Z[META, KNOWN]):
            if not answers[k]:
                memo[known] = memo[k]
                answers[known] = False
                known += 1
    v = 0
    while True:
        if Z[row, v] == stamp:
            if v == 0:
                Z[META, KNOWN] = known
                return -1
            v = Z[PARENT, v]
            continue
        lo, hi = Z[KID_PTR, v], Z[KID_PTR, v + 1]
        if lo == hi:
            ok, known = fits_known(free, F, need, v, m, memo, answers, known, top,
                                   dirty)
            if ok:
                Z[META, KNOWN] = known
                return v
            Z[row, v] = stamp
            Z[FAILED, v] = walk_id
            if failures == 0:
                Z[OK, 0] = 0
            failures += 1
            continue
        if Z[OK, v] != walk_id:
            Z[META, CHECKS] += 1
            ok = False
            if Z[HASMIN, v]:
                ok, known = fits_known(free, F, low, v, m, memo, answers, known,
                                       top, dirty)
            if ok:
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
