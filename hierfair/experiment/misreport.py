"""Strategy-proofness by search: the misreport that gains a liar the most.

A liar declares a demand ``d'`` instead of its true ``d``; the bundle the
mechanism gives it runs ``min over r with d_r > 0 of A_r / d_r`` true tasks
(its *useful* tasks); its gain is ``useful(lie) / useful(truth) - 1``.  A
group gains when every member is weakly better off and one strictly (H-DRF
§4.2's definition).  Declarations are *mixes*: ``v`` in ``[0, 1]^m``, max 1,
declared as ``d' = v * mu * total`` with ``mu`` the true task's dominant share
(the declared task is as big as the true one, only the mix differs; static
H-DRF ignores scale, H-DRF §4).

:func:`search`, deterministic given its seed: (1) the truth, a single liar's
fixed lies (each used resource doubled and halved, each unused one added at
the dominant level and at half of it) and any seeds given; (2)
``budget.random`` random declarations -- uniform on the simplex, the truth's
mix perturbed log-normally (sigma 0.5, nothing added), or that plus unused
resources at up to half the dominant level, in turn; in groups a member stays
truthful with probability 1/4; (3) a coordinate pattern search from the
``budget.starts`` best (each entry of ``v`` +- a step from 1/4 halving to
1/256, renormalised to max 1; first improvement), ``budget.local``
evaluations each at most.  It maximises the best member's gain beyond the
tolerance among declarations leaving every member weakly better off.
:func:`assess` is the audit's use of it (docs/properties.md, "Strategy-
proofness by search").
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # a probe is passed in: this module builds none of its own kind
    from hierfair.experiment.probe import Probe

#: The local search's first and smallest steps (in units of the dominant entry).
FIRST_STEP = 0.25
MIN_STEP = 1 / 256
#: Declarations are rounded to this many decimals of ``v`` (cache keys, witnesses).
DIGITS = 6

Declared = dict[int, np.ndarray]  # leaf -> declared per-task demand (resource units)
#: declared vectors of the liars -> each liar's useful tasks
Evaluate = Callable[[Declared], dict[int, float]]


@dataclass(frozen=True)
class Budget:
    """Evaluations per liar set: random directions, local searches, and each
    local search's cap.  At most ``candidates + random + starts * local``."""

    random: int
    starts: int
    local: int

    @property
    def most(self) -> int:
        return self.random + self.starts * self.local


@dataclass(frozen=True)
class Liar:
    leaf: int
    demand: np.ndarray  # true per-task demand, resource units
    truth: float  # useful tasks when everyone tells the truth
    tol: float  # a relative gain up to this is granularity or rounding, not a gain
    scale: float  # denominator of the relative gain (the truth's tasks, at least a floor)
    slack: float  # a relative loss up to this still leaves the liar "weakly better off"


@dataclass(frozen=True)
class Result:
    liars: tuple[Liar, ...]
    declared: dict[int, tuple[float, ...]]  # best declaration per liar
    gains: dict[int, float]  # relative gain per liar at the best declaration
    score: float  # the best gain beyond the tolerance (<= 0: holds)
    evaluations: int

    @property
    def tol(self) -> float:
        """The group's tolerance: its most lenient member's."""
        return max(x.tol for x in self.liars)

    @property
    def gain(self) -> float:
        """The largest member's gain (the group's, if all are weakly better off)."""
        return max(self.gains.values())


def seed_of(*parts: object) -> int:
    """A stable 63-bit seed from the parts' text (the instance's content, not
    Python's per-process hash)."""
    text = repr(parts).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def mix(demand: np.ndarray, total: np.ndarray) -> tuple[np.ndarray, float]:
    """A demand as ``(v, mu)``: shares of the total scaled to max 1, and the
    dominant share."""
    share = np.divide(demand, total, out=np.zeros(len(demand)), where=total > 0)
    mu = float(share.max(initial=0.0))
    return (share / mu if mu > 0 else share), mu


def search(liars: Sequence[Liar], total: np.ndarray, evaluate: Evaluate, budget: Budget,
           seed: int, seeds: Iterable[Declared] = ()) -> Result:
    """The declaration of ``liars`` with the largest excess gain found (see
    the module docstring); ``evaluate`` answers useful tasks per liar."""
    total = np.asarray(total, dtype=float)
    have = total > 0
    rng = np.random.default_rng(seed)
    tol = max(x.tol for x in liars)
    base = {x.leaf: mix(x.demand, total) for x in liars}
    cache: dict[tuple, float] = {}
    gains_of: dict[tuple, dict[int, float]] = {}

    def key(vs: dict[int, np.ndarray]) -> tuple:
        return tuple((i, tuple(np.round(vs[i], DIGITS))) for i in sorted(vs))

    def declared(vs: dict[int, np.ndarray]) -> Declared:
        """The demands declared; an entry at the truth's is the true one,
        exactly (a rounding-level difference can tip a whole-task fill)."""
        return {i: np.where(vs[i] == truth[i], demand[i], vs[i] * base[i][1] * total)
                for i in vs}

    def score(vs: dict[int, np.ndarray]) -> float:
        k = key(vs)
        if k not in cache:
            useful = evaluate(declared(vs))
            gains = {x.leaf: (useful[x.leaf] - x.truth) / x.scale for x in liars}
            gains_of[k] = gains
            loss = min(gains[x.leaf] + x.slack for x in liars)
            cache[k] = max(gains.values()) - tol if loss >= 0 else -2.0 + loss
        return cache[k]

    def normal(v: np.ndarray) -> np.ndarray | None:
        v = np.where(have, np.clip(v, 0.0, None), 0.0)
        top = v.max(initial=0.0)
        return None if top <= 0 else np.round(v / top, DIGITS)

    truth = {x.leaf: np.round(base[x.leaf][0], DIGITS) for x in liars}
    demand = {x.leaf: np.asarray(x.demand, dtype=float) for x in liars}
    points: list[dict[int, np.ndarray]] = [truth]
    for vs in _structured(liars, truth, have):
        points.append(vs)
    for lie in seeds:
        vs = {i: normal(mix(np.asarray(lie[i], dtype=float), total)[0]) if i in lie
              else truth[i] for i in truth}
        if all(v is not None for v in vs.values()):
            points.append(vs)
    for k in range(budget.random):
        vs = {}
        for n, x in enumerate(liars):
            v = None
            if len(liars) == 1 or rng.random() >= 0.25:
                v = normal(_draw(rng, truth[x.leaf], have, (k + n) % 3))
            vs[x.leaf] = truth[x.leaf] if v is None else v
        points.append(vs)

    # the truth scores -tol; every point is scored once (cache)
    ranked = sorted(((score(vs), n, vs) for n, vs in enumerate(points)),
                    key=lambda t: (-t[0], t[1]))
    starts, seen = [], set()
    for s, _, vs in ranked:
        if len(starts) == budget.starts:
            break
        if s > -2.0 and key(vs) not in seen:
            starts.append(vs)
            seen.add(key(vs))
    for vs in starts:
        _pattern(vs, score, normal, have, budget.local)

    best = max(cache, key=lambda k: (cache[k], _closeness(k, truth)))
    said = declared({i: np.array(v) for i, v in best})
    declared_best = {i: tuple(float(v) for v in np.round(said[i], 9)) for i in said}
    return Result(tuple(liars), declared_best, gains_of[best], cache[best], len(cache))


def _closeness(k: tuple, truth: dict[int, np.ndarray]) -> float:
    """Ties go to the declaration nearest the truth (the smallest lie)."""
    return -sum(float(np.abs(np.array(v) - truth[i]).sum()) for i, v in k)


def _structured(liars: Sequence[Liar], truth: dict[int, np.ndarray],
                have: np.ndarray) -> list[dict[int, np.ndarray]]:
    """A single liar's fixed lies: a used resource doubled or halved, an
    unused one added at the dominant level or at half of it."""
    if len(liars) != 1:
        return []
    (x,) = liars
    v0, out = truth[x.leaf], []
    for r in np.flatnonzero(have):
        for f in ((2.0, 0.5) if v0[r] > 0 else (1.0, 0.5)):
            v = v0.copy()
            v[r] = v[r] * f if v0[r] > 0 else f
            out.append({x.leaf: np.round(v / v.max(), DIGITS)})
    return out


def _draw(rng: np.random.Generator, v0: np.ndarray, have: np.ndarray, kind: int) -> np.ndarray:
    """One random declaration: 0 uniform on the simplex, 1 the truth's mix
    perturbed (nothing added), 2 perturbed with unused resources added."""
    m = len(v0)
    if kind == 0:
        v = np.zeros(m)
        v[have] = rng.dirichlet(np.ones(int(have.sum())))
        return v
    v = v0 * np.exp(0.5 * rng.standard_normal(m))
    if kind == 2:
        unused = have & (v0 <= 0)
        v[unused] = 0.5 * rng.random(int(unused.sum())) * (rng.random(int(unused.sum())) < 0.5)
    return v


def _pattern(start: dict[int, np.ndarray], score: Callable[[dict], float],
             normal: Callable[[np.ndarray], np.ndarray | None], have: np.ndarray,
             cap: int) -> None:
    """Coordinate pattern search from ``start`` (results land in the score's cache)."""
    current, now = dict(start), score(start)
    coords = [(i, int(r)) for i in sorted(start) for r in np.flatnonzero(have)]
    step, used = FIRST_STEP, 0
    while step >= MIN_STEP - 1e-12 and used < cap:
        improved = False
        for i, r in coords:
            for sign in (1.0, -1.0):
                if used >= cap:
                    break
                v = current[i].copy()
                v[r] = min(1.0, v[r] + sign * step) if sign > 0 else max(0.0, v[r] - step)
                if sign > 0 and current[i][r] >= 1.0:  # already the dominant entry:
                    v = current[i] - step * (np.arange(len(v)) != r)  # shrink the others
                v = normal(v)
                if v is None or np.array_equal(v, current[i]):
                    continue
                cand = {**current, i: v}
                used += 1
                s = score(cand)
                if s > now + 1e-12:
                    current, now, improved = cand, s, True
        if not improved:
            step /= 2
    return None


def evaluations_at_most(liars: int, m: int, budget: Budget, seeds: int = 0) -> int:
    """The cap on evaluations of one search: the truth, the fixed lies, the
    seeds, the random directions and the local searches."""
    return 1 + (2 * m if liars == 1 else 0) + seeds + budget.most


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
        weakly = all(g >= -x.slack for g, x in zip(gains, r.liars))
        value = max(gains) if weakly else min(gains)  # a member worse off: its loss
        if value > best[0]:
            best = (value, declared)
    return best[0], best[1], len(cands) + 1
