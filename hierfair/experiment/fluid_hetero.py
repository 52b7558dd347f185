"""Independent fluid oracle: static allocations of divisible tasks on heterogeneous servers.

Written from the papers' definitions alone (no code of this project's algorithms or
simulator was read).  Every user is always backlogged (infinite demand) and tasks are
divisible, the papers' fluid setting.  Notation (shapes):

* ``C`` (S x m): capacity of server i in resource r, >= 0.
* ``D`` (N x m): per-task demand of user n, >= 0, every row with a positive entry.
* ``w`` (N,): weights, > 0 (default ones).
* ``E`` (N x S) bool: user n may place tasks on server i only where ``E[n, i]`` (default all).
* ``X`` (N x S): tasks of user n on server i; feasible when ``X >= 0``, ``X = 0`` off ``E`` and
  ``sum_n X[n, i] * D[n, r] <= C[i, r]``.  ``x_n = sum_i X[n, i]``.

Sources: only the papers' abstracts could be retrieved when this was written; the definitions
below follow the brief and the papers' notation as recalled, and section numbers are as recalled
(check them against the papers before citing).  Mechanisms:

* :func:`drfh` -- DRFH, Wang, Li, Liang, "Dominant Resource Fairness in Cloud Computing Systems
  with Heterogeneous Servers", INFOCOM 2014 (arXiv 1308.0083; TPDS 2015), Sec. III-IV: global
  dominant share ``G_n = x_n * max_r D[n, r] / Ctot_r`` with ``Ctot = C.sum(0)``; weighted
  max-min (leximin) of ``G_n / w_n``.
* :func:`tsf` -- TSF, Wang, Li, Liang, Li, "Multi-Resource Fair Sharing for Datacenter Jobs with
  Placement Constraints", SC 2016: task share ``x_n / (w_n * h_n)``, ``h_n = sum_i gamma[n, i]``
  (tasks n could run monopolising every server it is eligible for); leximin.
* :func:`per_server_drf` -- DRF (Ghodsi et al., NSDI 2011, Sec. 4) run on each server alone.
* :func:`psdsf` -- PS-DSF, Khamse-Ashari et al., arXiv 1611.00404 (TPDS version 1712.10114):
  virtual dominant share ``s[n, i] = x_n / (w_n * gamma[n, i])``; every server is max-min fair
  in ``s`` (per-server bottleneck condition, :func:`psdsf_condition`).  Computed by an iteration
  of our own (the paper's algorithm text was not available to us), see :func:`psdsf`.

Numerics: LPs are solved by HiGHS dual simplex (``scipy.optimize.linprog``, method
``"highs-ds"``) with primal/dual feasibility tolerances 1e-10 and presolve off (with these
tolerances HiGHS's presolve was seen to call feasible LPs infeasible), so an LP answer is a
vertex.  A user is frozen in progressive filling when it cannot exceed the common level ``t`` by
more than ``FREEZE_TOL * max(1, |t|)`` (1e-8 relative); a frozen user is then held at
``t - HOLD_SLACK * max(1, |t|)`` (1e-12 relative) so that every later LP has the previous
answer as a feasible point.  Levels come out within ~1e-9 relative of the exact leximin on
well-scaled inputs (a held slack can be amplified by the ratio of users' marginal rates).
No global state: every function is pure.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

FREEZE_TOL = 1e-8
HOLD_SLACK = 1e-12
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
          "presolve": False}


class FluidAllocation(NamedTuple):
    """``X`` (N x S) tasks per user and server, and the mechanism's ``levels``: (N,) for
    :func:`leximin`, :func:`drfh`, :func:`tsf`; (N x S) for :func:`per_server_drf` (per-server
    weighted dominant share) and :func:`psdsf` (weighted virtual dominant share, inf where
    ``gamma == 0``)."""

    X: Array
    levels: Array


# -- inputs and the quantities the papers define ---------------------------------------------
def _inputs(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None = None, E: ArrayLike | None = None
) -> tuple[Array, Array, Array, NDArray[np.bool_]]:
    Ca, Da = np.atleast_2d(np.asarray(C, float)), np.atleast_2d(np.asarray(D, float))
    if Ca.shape[1] != Da.shape[1]:
        raise ValueError(f"C has {Ca.shape[1]} resources, D has {Da.shape[1]}")
    if (Ca < 0).any() or (Da < 0).any() or not np.isfinite(Ca).all() or not np.isfinite(Da).all():
        raise ValueError("capacities and demands must be finite and >= 0")
    if not (Da > 0).any(axis=1).all():
        raise ValueError("every user's demand needs a positive entry")
    N, S = Da.shape[0], Ca.shape[0]
    wa = np.ones(N) if w is None else np.asarray(w, float).reshape(N)
    if not (wa > 0).all():
        raise ValueError("weights must be > 0")
    Ea = np.ones((N, S), bool) if E is None else np.asarray(E, bool).reshape(N, S)
    return Ca, Da, wa, Ea


def gamma(C: ArrayLike, D: ArrayLike, E: ArrayLike | None = None) -> Array:
    """``gamma[n, i] = min_{r: D[n,r] > 0} C[i, r] / D[n, r]``: the (real) number of tasks user
    n could run alone on server i (PS-DSF paper's gamma_{n,i}; TSF's per-machine monopoly
    count), 0 where not eligible."""
    Ca, Da, _, Ea = _inputs(C, D, None, E)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Da[:, None, :] > 0, Ca[None, :, :] / Da[:, None, :], np.inf)
    return np.where(Ea, ratio.min(axis=2), 0.0)


def global_dominant_shares(
    C: ArrayLike, D: ArrayLike, X: ArrayLike, w: ArrayLike | None = None
) -> Array:
    """DRFH's weighted global dominant share ``G_n / w_n = x_n max_r (D[n,r]/Ctot_r) / w_n``
    (DRFH Sec. III; 0 for a user needing a resource the whole pool lacks)."""
    Ca, Da, wa, _ = _inputs(C, D, w)
    return np.asarray(X, float).sum(axis=1) * _dominant_per_task(Ca, Da) / wa


def _dominant_per_task(C: Array, D: Array) -> Array:
    total = C.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(D > 0, D / total, 0.0)
    dom = share.max(axis=1)
    return np.where(np.isfinite(dom), dom, 0.0)


def task_shares(
    C: ArrayLike, D: ArrayLike, X: ArrayLike, w: ArrayLike | None = None,
    E: ArrayLike | None = None,
) -> Array:
    """TSF's weighted task share ``x_n / (w_n h_n)``, ``h_n = sum_i gamma[n, i]`` (0 if h_n = 0)."""
    _, _, wa, _ = _inputs(C, D, w, E)
    h = gamma(C, D, E).sum(axis=1)
    x = np.asarray(X, float).sum(axis=1)
    return np.divide(x, wa * h, out=np.zeros_like(x), where=h > 0)


def virtual_dominant_shares(
    C: ArrayLike, D: ArrayLike, X: ArrayLike, w: ArrayLike | None = None,
    E: ArrayLike | None = None,
) -> Array:
    """PS-DSF's weighted virtual dominant share ``s[n, i] = x_n / (w_n gamma[n, i])`` (N x S);
    inf where ``gamma[n, i] == 0`` (server i cannot serve user n)."""
    _, _, wa, _ = _inputs(C, D, w, E)
    g = gamma(C, D, E)
    x = np.asarray(X, float).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(g > 0, x[:, None] / (wa[:, None] * g), np.inf)


def feasibility_violations(
    C: ArrayLike, D: ArrayLike, X: ArrayLike, E: ArrayLike | None = None, tol: float = 1e-7
) -> list[str]:
    """Broken feasibility constraints of ``X`` (empty when feasible, to ``tol`` relative)."""
    Ca, Da, _, Ea = _inputs(C, D, None, E)
    Xa = np.asarray(X, float)
    out = [f"X[{n},{i}] = {Xa[n, i]:.6g} < 0" for n, i in zip(*np.nonzero(Xa < -tol))]
    out += [f"X[{n},{i}] = {Xa[n, i]:.6g} on an ineligible server"
            for n, i in zip(*np.nonzero(~Ea & (np.abs(Xa) > tol)))]
    use = Xa.T @ Da  # (S x m)
    out += [f"server {i} resource {r}: use {use[i, r]:.9g} > capacity {Ca[i, r]:.9g}"
            for i, r in zip(*np.nonzero(use > Ca + tol * np.maximum(Ca, 1.0)))]
    return out


# -- the shared engine: leximin (progressive filling) by LP -----------------------------------
def _lp(c: Array, A: Array, b: Array, n_free: int = 0) -> Array:
    """Minimise ``c @ v`` s.t. ``A v <= b``, first variables >= 0, last ``n_free`` free."""
    bounds = [(0, None)] * (len(c) - n_free) + [(None, None)] * n_free
    from scipy.optimize import linprog  # here: 0.4 s of every command's start-up

    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs-ds", options=_HIGHS)
    if res.status != 0:
        raise RuntimeError(f"LP failed: {res.message}")
    return np.asarray(res.x, float)


def leximin(
    levels: ArrayLike, C: ArrayLike, D: ArrayLike, E: ArrayLike | None = None,
    offset: ArrayLike | None = None,
) -> FluidAllocation:
    """Leximin (progressive filling) allocation for per-user levels affine in X:
    ``level_n(X) = sum_i levels[n, i] * X[n, i] + offset[n]`` (offset default 0).

    Round k: maximise the common level t of the unfrozen users (capacities; frozen users keep
    ``level >= frozen value``); then freeze every unfrozen user that cannot exceed
    ``t + FREEZE_TOL * max(1, |t|)`` -- tested by an LP maximising its own level with the other
    unfrozen users held at ``>= t`` (skipped for users already above that in the round's LP
    answer).  Finally, among allocations keeping every user at its frozen level, maximise total
    tasks ``sum X`` (one last LP); when that optimum is not unique (e.g. DRFH/TSF, whose levels
    fix only each user's total) the returned X is HiGHS's vertex, so compare totals or levels,
    not placements.  The returned levels are recomputed from the returned X.
    """
    Ca, Da, _, Ea = _inputs(C, D, None, E)
    a = np.where(Ea, np.asarray(levels, float), 0.0)
    N, S = Ea.shape
    b0 = np.zeros(N) if offset is None else np.asarray(offset, float).reshape(N)
    pairs = np.argwhere(Ea)  # one LP variable per eligible (user, server)
    P = len(pairs)
    if P == 0:
        return FluidAllocation(np.zeros((N, S)), b0.copy())
    L = np.zeros((N, P))  # level_n = L[n] @ v + b0[n]
    L[pairs[:, 0], np.arange(P)] = a[pairs[:, 0], pairs[:, 1]]
    A_cap = np.zeros((S * Ca.shape[1], P))
    for k, (n, i) in enumerate(pairs):
        A_cap[i * Ca.shape[1]:(i + 1) * Ca.shape[1], k] = Da[n]
    keep = np.abs(A_cap).sum(axis=1) > 0
    A_cap, b_cap = A_cap[keep], Ca.reshape(-1)[keep]

    frozen = np.full(N, np.nan)

    def held(rows: NDArray[np.bool_], value: Array) -> tuple[Array, Array]:
        return -L[rows], b0[rows] - value  # level_n >= value_n

    while np.isnan(frozen).any():
        free = np.isnan(frozen)
        Af, bf = held(~free, frozen[~free])
        # max t: variables (v, t); -L[n] v + t <= b0[n] for free n
        A = np.vstack([np.hstack([A_cap, np.zeros((len(b_cap), 1))]),
                       np.hstack([Af, np.zeros((len(bf), 1))]),
                       np.hstack([-L[free], np.ones((free.sum(), 1))])])
        bvec = np.concatenate([b_cap, bf, b0[free]])
        sol = _lp(np.r_[np.zeros(P), -1.0], A, bvec, n_free=1)
        t, v = sol[-1], sol[:-1]
        bar = t + FREEZE_TOL * max(1.0, abs(t))
        newly = []
        for n in np.flatnonzero(free):
            if L[n] @ v + b0[n] > bar:
                continue  # already above t in a feasible allocation: cannot be frozen
            others = free.copy()
            others[n] = False
            Ao, bo = held(others, np.full(others.sum(), t))
            best = L[n] @ _lp(-L[n], np.vstack([A_cap, Af, Ao]), np.r_[b_cap, bf, bo]) + b0[n]
            if best <= bar:
                newly.append(n)
        if not newly:
            raise RuntimeError(f"progressive filling made no progress at t = {t!r}")
        frozen[newly] = t - HOLD_SLACK * max(1.0, abs(t))
    Af, bf = held(np.ones(N, bool), frozen)
    v = _lp(-np.ones(P), np.vstack([A_cap, Af]), np.r_[b_cap, bf])
    X = np.zeros((N, S))
    X[pairs[:, 0], pairs[:, 1]] = np.maximum(v, 0.0)
    return FluidAllocation(X, (a * X).sum(axis=1) + b0)


# -- mechanisms -------------------------------------------------------------------------------
def drfh(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None = None, E: ArrayLike | None = None
) -> FluidAllocation:
    """DRFH (INFOCOM 2014 Sec. IV, weighted as in the TPDS version): leximin of
    ``G_n / w_n``, ``G_n = x_n * max_r D[n, r] / Ctot_r`` (pool totals, eligibility honoured).
    Levels: ``G / w``."""
    Ca, Da, wa, Ea = _inputs(C, D, w, E)
    coef = (_dominant_per_task(Ca, Da) / wa)[:, None] * Ea
    return leximin(coef, Ca, Da, Ea)


def tsf(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None = None, E: ArrayLike | None = None
) -> FluidAllocation:
    """TSF (SC 2016): leximin of task shares ``x_n / (w_n h_n)``, ``h_n = sum_i gamma[n, i]``
    over eligible servers (a user with ``h_n = 0`` stays at level 0). Levels: task shares."""
    Ca, Da, wa, Ea = _inputs(C, D, w, E)
    h = gamma(Ca, Da, Ea).sum(axis=1)
    inv = np.divide(1.0, wa * h, out=np.zeros(len(h)), where=h > 0)
    return leximin(inv[:, None] * Ea, Ca, Da, Ea)


def per_server_drf(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None = None, E: ArrayLike | None = None
) -> FluidAllocation:
    """DRF (NSDI 2011 Sec. 4, with its weighted variant) on each server independently: on server i,
    leximin of ``X[n, i] * max_r D[n, r] / C[i, r] / w_n = X[n, i] / (w_n gamma[n, i])`` among
    eligible users.  Levels (N x S): those per-server weighted dominant shares (0 off E)."""
    Ca, Da, wa, Ea = _inputs(C, D, w, E)
    g = gamma(Ca, Da, Ea)
    X = np.zeros(Ea.shape)
    lev = np.zeros(Ea.shape)
    for i in range(Ca.shape[0]):
        coef = np.divide(1.0, wa * g[:, i], out=np.zeros(len(wa)), where=g[:, i] > 0)
        res = leximin(coef[:, None], Ca[i:i + 1], Da, (Ea[:, i] & (g[:, i] > 0))[:, None])
        X[:, i], lev[:, i] = res.X[:, 0], res.levels
    return FluidAllocation(X, lev)


def server_fill(cap: ArrayLike, D: ArrayLike, a: ArrayLike, offset: ArrayLike) -> Array:
    """Exact event-driven progressive filling on one server with offsets (PS-DSF's per-server
    step): user n (``a[n] > 0``) has level ``(offset[n] + x[n]) / a[n]``; the water level t
    rises, every unfrozen user with ``offset/a < t`` holding ``x = a t - offset``; when a
    resource saturates, every unfrozen user needing it freezes (also those still above t with
    ``x = 0``).  Users with ``a[n] <= 0`` get 0.  Returns x (N,)."""
    capa, Da = np.asarray(cap, float), np.asarray(D, float)
    aa, off = np.asarray(a, float), np.asarray(offset, float)
    x = np.zeros(len(aa))
    unfrozen = aa > 0
    start = np.where(unfrozen, off / np.where(unfrozen, aa, 1.0), np.inf)
    used = np.zeros(len(capa))  # use by frozen users
    t = start[unfrozen].min() if unfrozen.any() else 0.0
    while unfrozen.any():
        wet = unfrozen & (start <= t)
        cur = used + (aa[wet] * t - off[wet]) @ Da[wet]
        rate = aa[wet] @ Da[wet]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_sat = np.where(rate > 0, t + (capa - cur) / rate, np.inf)
        t_next = start[unfrozen & ~wet].min(initial=np.inf)
        t_hit = t_sat.min()
        if t_next < t_hit:
            t = t_next
            continue
        t = t_hit
        full = t_sat <= t + 1e-12 * max(1.0, abs(t))
        x[wet] = np.maximum(aa[wet] * t - off[wet], 0.0)
        stop = unfrozen & (Da[:, full] > 0).any(axis=1)
        used += x[stop & wet] @ Da[stop & wet]
        unfrozen &= ~stop
    return x


def psdsf(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None = None, E: ArrayLike | None = None,
    max_sweeps: int = 10_000, tol: float = 1e-12,
) -> FluidAllocation:
    """PS-DSF allocation (arXiv 1611.00404 Sec. III; 1712.10114): a fixed point X at which each
    server i is max-min fair in ``s[n, i] = x_n / (w_n gamma[n, i])`` given the users' tasks
    elsewhere.  Our own iteration (Gauss-Seidel best response): start from X = 0; sweep the
    servers in index order, replacing column i by :func:`server_fill` with
    ``a = w * gamma[:, i]`` and ``offset = x_n - X[n, i]`` (eligible users with gamma > 0).
    Converged when a sweep changes no entry by more than ``tol * max(1, max X)``; raises
    RuntimeError after ``max_sweeps``.  If several PS-DSF allocations exist, this returns the
    one this iteration reaches: test other outputs with :func:`psdsf_condition`."""
    Ca, Da, wa, Ea = _inputs(C, D, w, E)
    g = gamma(Ca, Da, Ea)
    X = np.zeros(Ea.shape)
    for _ in range(max_sweeps):
        before = X.copy()
        for i in range(Ca.shape[0]):
            a = np.where(g[:, i] > 0, wa * g[:, i], 0.0)
            X[:, i] = server_fill(Ca[i], Da, a, X.sum(axis=1) - X[:, i])
        if np.abs(X - before).max(initial=0.0) <= tol * max(1.0, X.max(initial=0.0)):
            return FluidAllocation(X, virtual_dominant_shares(Ca, Da, X, wa, Ea))
    raise RuntimeError(f"PS-DSF iteration did not converge in {max_sweeps} sweeps")


def psdsf_condition(
    C: ArrayLike, D: ArrayLike, w: ArrayLike | None, E: ArrayLike | None, X: ArrayLike,
    tol: float = 1e-6,
) -> list[str]:
    """Violations of the PS-DSF definition in X (empty when X is PS-DSF), from the paper's
    per-server bottleneck form: X is feasible and, for every server i and every user n with
    ``E[n, i]`` and ``gamma[n, i] > 0``, some resource r with ``D[n, r] > 0`` is saturated at
    server i and ``s[n, i] >= s[m, i]`` for every user m running tasks on i that need r
    (``X[m, i] > 0``, ``D[m, r] > 0``) -- i.e. n cannot get more of server i without taking from
    a user whose virtual dominant share there is no larger.  ``tol`` is relative (saturation,
    share comparison, and "running tasks" as a fraction of gamma)."""
    Ca, Da, wa, Ea = _inputs(C, D, w, E)
    Xa = np.asarray(X, float)
    out = feasibility_violations(Ca, Da, Xa, Ea, tol)
    g = gamma(Ca, Da, Ea)
    s = virtual_dominant_shares(Ca, Da, Xa, wa, Ea)
    for i in range(Ca.shape[0]):
        use = Xa[:, i] @ Da
        saturated = use >= Ca[i] - tol * np.maximum(Ca[i], 1.0)
        running = (g[:, i] > 0) & (Xa[:, i] > tol * g[:, i])
        for n in np.flatnonzero(Ea[:, i] & (g[:, i] > 0)):
            reasons = []
            for r in np.flatnonzero(Da[n] > 0):
                if not saturated[r]:
                    reasons.append(f"r{r} not saturated ({use[r]:.6g} < {Ca[i, r]:.6g})")
                    continue
                on_r = running & (Da[:, r] > 0)
                above = on_r & (s[:, i] > s[n, i] + tol * np.maximum(1.0, s[n, i]))
                if not above.any():
                    break  # r is a bottleneck for n at server i
                reasons.append(f"r{r} saturated but users {np.flatnonzero(above).tolist()} "
                               f"on it have larger s")
            else:
                out.append(f"server {i}: user {n} (s = {s[n, i]:.6g}) has no bottleneck: "
                           + "; ".join(reasons))
    return out
