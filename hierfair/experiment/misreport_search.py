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
The audit's use of it: :mod:`hierfair.experiment.misreport`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

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
