"""Strategy-proofness by search, the audit's use: which liars, which budgets.

:func:`assess` searches misreports of one algorithm on one instance
(docs/properties.md, "Strategy-proofness by search"): single leaves, or
sibling groups (H-DRF §4.2: "users within an organization could collude"),
each with :func:`~hierfair.experiment.misreport_search.search`: exact static
H-DRF's searches first (shared by every algorithm), then the algorithm's own
on a few liar sets, seeded with static H-DRF's lie where it gains; a gain
with whole tasks is re-measured with tasks :data:`REFINE` times finer.  The
search itself, its budgets and results: :mod:`hierfair.experiment.misreport_search`
(re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hierfair.experiment.misreport_search import (  # noqa: F401 - re-exported
    DIGITS,
    FIRST_STEP,
    MIN_STEP,
    Budget,
    Declared,
    Evaluate,
    Liar,
    Result,
    _closeness,
    _draw,
    _pattern,
    _structured,
    evaluations_at_most,
    mix,
    search,
    seed_of,
)

if TYPE_CHECKING:  # a probe is passed in: this module builds none of its own kind
    from hierfair.experiment.probe import Probe

# -- the audit's use: which liars, which budgets, the fluid check ------------
#: A relative gain counted against an exact fluid allocation (static H-DRF's):
#: the allocation is exact to ~1e-9 and declarations are rounded to 1e-6, so
#: anything above 1e-4 is the mechanism's, not rounding (docs/properties.md).
FLUID_TOL = 1e-4
#: ... and a loss no larger than float noise leaves a member weakly better off
#: (whole tasks: one task either way)
LOSS = 1e-9
#: Whole-task gains are re-measured with every task cut into this many
#: (hierfair.audit.runner.FINER: the audit's "finer tasks").
REFINE = 10
#: Budgets per liar set: exact allocations cost ~1 ms, whole-task fills 1-20 ms.
EXACT = Budget(random=32, starts=2, local=48)
WHOLE = Budget(random=4, starts=1, local=8)
#: Groups: sibling leaves (H-DRF §4.2: "users within an organization could
#: collude"), the first ``GROUP`` demanding children of a node; exact
#: allocations try the first ``EXACT_GROUPS`` such groups in pre-order.
GROUP = 3
EXACT_GROUPS = 4


@dataclass(frozen=True)
class Assessment:
    """The best liar set found for one algorithm on one instance."""

    result: Result
    #: whole tasks, where the gain missed at the instance's grain: the best
    #: gain with tasks REFINE times finer, of the search's best declaration
    #: and exact static H-DRF's best for the same liars (None: an exact
    #: allocation, or no miss), and the declaration it came from
    fine: float | None
    fine_declared: dict[int, tuple[float, ...]] | None
    sets: int  # liar sets searched
    evaluations: int  # allocations computed, all sets (the fine ones included)


def assess(p: Probe, group: bool) -> Assessment | str:
    """Search misreports of ``p``'s algorithm: single leaves or sibling groups."""
    if len(p.useful()) < 2:
        return "fewer than two demanding leaves"
    exact = _exact(p, group)
    if p.algorithm.name == "static-hdrf":
        found = list(exact.values())
    else:
        found = [_run(p, s, EXACT if p.exact else WHOLE,
                      [exact[s].declared] if s in exact and exact[s].score > 0 else [])
                 for s in _whole_sets(p, group, exact)]
    if not found:
        return _nothing(group)
    fine = [_finer(p, r, exact.get(tuple(x.leaf for x in r.liars))) for r in found]
    k = max(range(len(found)), key=lambda k: (min(found[k].score, fine[k][0] - found[k].tol),
                                              found[k].score))
    value, declared, _ = fine[k]
    evaluations = sum(r.evaluations for r in found) + sum(n for _, _, n in fine)
    return Assessment(found[k], None if declared is None else value, declared, len(found),
                      evaluations)


def _nothing(group: bool) -> str:
    return ("no two demanding sibling leaves" if group
            else "no demanding leaf gets anything when truthful")


def _liar(p: Probe, leaf: int, truth: float) -> Liar:
    if p.exact:
        return Liar(leaf, p.demands[leaf], truth, FLUID_TOL, truth, LOSS)
    scale = max(truth, 1.0)  # whole tasks: one task of the truth's is granularity
    return Liar(leaf, p.demands[leaf], truth, 1.0 / scale, scale, 1.0 / scale)


def _run(p: Probe, members: tuple[int, ...], budget: Budget,
         seeds: list[dict[int, tuple[float, ...]]]) -> Result:
    truth = p.useful()

    def evaluate(declared: Declared) -> dict[int, float]:
        useful = p.useful(_lies(p, declared))
        return {i: useful[i] for i in declared}

    liars = [_liar(p, i, truth[i]) for i in members]
    seeds_ = [{i: np.asarray(v) for i, v in s.items()} for s in seeds]
    return search(liars, p.total, evaluate, budget, seed_of(_content(p), members), seeds_)


def _lies(p: Probe, declared: Declared | dict[int, tuple[float, ...]]) -> tuple:
    """The probe's ``lies``: the members not telling the truth (a truthful
    declaration is the truthful fill, answered from its cache)."""
    paths = p.exp.hierarchy.paths
    return tuple((paths[i], tuple(float(v) for v in declared[i])) for i in sorted(declared)
                 if not np.array_equal(declared[i], p.demands[i]))


def _content(p: Probe) -> tuple:
    """The instance up to scale (the same for its finer-task copy): the seed's text."""
    h = p.exp.hierarchy
    mixes = tuple(tuple(np.round(mix(p.demands[i], p.total)[0], 9).tolist())
                  for i in range(h.n_nodes))
    return tuple(h.paths), tuple(float(w) for w in h.weights), mixes


def _candidates(p: Probe, group: bool) -> list[tuple[int, ...]]:
    """Liar sets: every leaf that gets something (single), or the first
    ``GROUP`` such children of every node with two or more (groups)."""
    truth = p.useful()
    ok = [i for i in sorted(truth) if truth[i] > 0 or not p.exact]
    if not group:
        return [(i,) for i in ok]
    h, out = p.exp.hierarchy, []
    for v in range(h.n_nodes):
        kids = [c for c in h.children[v] if c in ok]
        if len(kids) >= 2:
            out.append(tuple(kids[:GROUP]))
    return out


def _exact(p: Probe, group: bool) -> dict[tuple[int, ...], Result]:
    """Exact static H-DRF's searches on this experiment (shared by all
    algorithms): every single leaf, or the first EXACT_GROUPS sibling groups,
    groups seeded with their members' best single lies."""
    def make() -> dict[tuple[int, ...], Result]:
        q = p if p.algorithm.name == "static-hdrf" else type(p)(p.exp, "static-hdrf")
        sets = _candidates(q, group)
        if not group:
            return {s: _run(q, s, EXACT, []) for s in sets}
        single = _exact(p, False)
        out = {}
        for s in sets[:EXACT_GROUPS]:
            alone = [single[(i,)].declared for i in s if (i,) in single]
            seeds = [{k: v for d in alone for k, v in d.items()}, *alone]
            out[s] = _run(q, s, EXACT, seeds)
        return out
    return p.shared(f"misreport-exact-{group}", make)


def _whole_sets(p: Probe, group: bool, exact: dict[tuple[int, ...], Result]
                ) -> list[tuple[int, ...]]:
    """Whole tasks: the leaves with the lowest and the highest dominant share
    when truthful and exact static H-DRF's best liar (single); exact static
    H-DRF's best group, else the first (groups)."""
    sets = _candidates(p, group)
    if not sets:
        return []
    best = max(exact.values(), key=lambda r: r.score, default=None)
    gainer = tuple(x.leaf for x in best.liars) if best is not None and best.score > 0 else None
    if group:
        return [gainer if gainer in sets else sets[0]]
    dom = p.fill().dominant
    order = sorted((s[0] for s in sets), key=lambda i: (dom[i], i))
    picked = {(order[0],), (order[-1],)} | ({gainer} if gainer in sets else set())
    return sorted(picked)


def _finer(p: Probe, r: Result, seed: Result | None) -> tuple[float, dict | None, int]:
    """A whole-task miss re-measured with tasks REFINE times finer: the search's
    best declaration, and exact static H-DRF's best for the same liars where it
    gains.  The best of them -- the largest member gain if every member is
    weakly better off, else the worst member's loss --, its declaration, and
    the allocations computed (-inf, None, 0: an exact allocation, or no miss)."""
    if p.exact or r.score <= 0:
        return -math.inf, None, 0
    cands = [r.declared]
    if seed is not None and seed.score > 0 and seed.declared != r.declared:
        cands.append(seed.declared)
    truth = p.useful(finer=REFINE)
    best: tuple[float, dict | None] = (-math.inf, None)
    for declared in cands:
        useful = p.useful(_lies(p, declared), finer=REFINE)
        gains = [(useful[x.leaf] - truth[x.leaf]) / max(truth[x.leaf], 1.0) for x in r.liars]
        # worse off: by more than one task of the finer size, not of the whole one
        weakly = all(g >= -x.slack / REFINE for g, x in zip(gains, r.liars))
        value = max(gains) if weakly else min(gains)  # a member worse off: its loss
        if value > best[0]:
            best = (value, declared)
    return best[0], best[1], len(cands) + 1
