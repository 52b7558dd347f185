"""Tests of the independent fluid oracle (hierfair.experiment.fluid_hetero).

Worked examples are derived by hand in the comments (or are published numbers, cited); the
property tests check each mechanism against its paper's definition with code written here,
independently of the module (own LPs, own water-filling, own share formulas).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from hierfair.experiment import fluid_hetero as fh

# DRFH paper's two-server example (as given in the issue): s1 = <2 CPU, 12 GB>,
# s2 = <12 CPU, 2 GB>; u1 tasks <0.2 CPU, 1 GB>, u2 <1 CPU, 0.2 GB>.
C2 = np.array([[2.0, 12.0], [12.0, 2.0]])
D2 = np.array([[0.2, 1.0], [1.0, 0.2]])


def close(a, b, tol=1e-7):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=tol)


# -- hand-derived and published examples -------------------------------------------------------
def test_gamma_two_server_example():
    # u1 on s1: min(2/0.2, 12/1) = 10; on s2: min(12/0.2, 2/1) = 2; u2 symmetric.
    close(fh.gamma(C2, D2), [[10, 2], [2, 10]])
    close(fh.gamma(C2, D2, [[True, False], [True, True]]), [[10, 0], [2, 10]])
    # a resource the user needs but the server lacks -> 0; a resource it does not need is ignored
    close(fh.gamma([[4, 0], [4, 4]], [[1, 1], [1, 0]]), [[0, 4], [4, 4]])


def test_drfh_two_server_example():
    # Pool totals <14 CPU, 14 GB>: each user's dominant share per task is 1/14, so DRFH
    # equalises x1 = x2. Dual bound: 2.5 x (s1 CPU) + 2.5 x (s2 GB) gives
    # 0.5 x1 + 2.5 a2 + 2.5 b1 + 0.5 x2 <= 10 (a2 = u1 on s2, b1 = u2 on s1), so
    # x1 = x2 <= 10 with a2 = b1 = 0: u1 10 tasks on s1, u2 10 on s2, G = 10/14 = 5/7.
    res = fh.drfh(C2, D2)
    close(res.X, [[10, 0], [0, 10]])
    close(res.levels, [5 / 7, 5 / 7])
    close(fh.global_dominant_shares(C2, D2, res.X), [5 / 7, 5 / 7])


def test_per_server_drf_two_server_example():
    # s1: per-task dominant shares u1 max(0.2/2, 1/12) = 0.1, u2 max(1/2, 0.2/12) = 0.5;
    # 0.1 a = 0.5 b and CPU 0.2 a + b = 2 -> b = 1, a = 5 (GB 5.2 <= 12). s2 mirrors: u1 1, u2 5.
    res = fh.per_server_drf(C2, D2)
    close(res.X, [[5, 1], [1, 5]])
    close(res.X.sum(axis=1), [6, 6])
    close(res.levels, [[0.5, 0.5], [0.5, 0.5]])


def test_tsf_two_server_example():
    # h1 = 10 + 2 = 12 = h2, so TSF also equalises x1 = x2 and the bound above gives 10 each,
    # placed as in DRFH (a2 = b1 = 0 forced by the positive dual prices); task share 10/12.
    res = fh.tsf(C2, D2)
    close(res.X, [[10, 0], [0, 10]])
    close(res.levels, [5 / 6, 5 / 6])


def test_psdsf_two_server_example():
    # s[n,i] = x_n / gamma[n,i]. Claim X = [[10, 0], [0, 10]]: s = [[1, 5], [5, 1]].
    # s1: CPU saturated (0.2*10 = 2); u1 is its only user -> u1 bottlenecked; u2 needs CPU and
    # its s = 5 >= u1's 1 -> bottlenecked. s2 mirrors with GB. Gauss-Seidel from 0 reaches it:
    # sweep 1, s1 alone is DRF (5, 1); s2 with offsets (5, 1): u2 rises from 0.1, u1 sits at 2.5,
    # GB saturates at u2 = 10 (level 1.1 < 2.5) -> (0, 10); sweep 2, s1 with offsets (0, 10):
    # u1 alone fills CPU, 10 tasks; nothing moves after.
    # It is the only PS-DSF allocation here: GB can never fill on s1 (a1 <= 10 with CPU 2) nor
    # CPU on s2, so CPU is everyone's bottleneck on s1 and GB on s2; users sharing a bottleneck
    # need equal s (x1 = 5 x2 on s1, x2 = 5 x1 on s2), and each of the 9 who-runs-where cases
    # other than (u1 alone on s1, u2 alone on s2) contradicts a capacity or an s comparison.
    res = fh.psdsf(C2, D2)
    close(res.X, [[10, 0], [0, 10]])
    close(res.levels, [[1, 5], [5, 1]])
    assert fh.psdsf_condition(C2, D2, None, None, res.X) == []
    # per-server DRF's (5,1 | 1,5) is not PS-DSF: on s1 u1 (s = 0.6) shares CPU with u2
    # (s = 3) and GB is not saturated; s2 mirrors.
    bad = fh.psdsf_condition(C2, D2, None, None, [[5, 1], [1, 5]])
    assert len(bad) == 2 and bad[0].startswith("server 0: user 0") and "server 1: user 1" in bad[1]
    with pytest.raises(RuntimeError, match="did not converge"):
        fh.psdsf(C2, D2, max_sweeps=1)  # sweep 1 moves X, so one sweep cannot confirm


def test_psdsf_definition_admits_several_allocations():
    # Found by random search, checked by hand: s0 <4,3>, s1 = s2 = <1,2>; u0 <3,2> on s1, s2;
    # u1 <0,3> on s1, s2; u2 <3,0> on s0, s1. gamma: u0 1/3, 1/3; u1 2/3, 2/3; u2 4/3, 1/3.
    # In both X below every server is saturated where it binds; on s1 and s2 u0 and u1 tie at
    # s = 1.5 on the full GB, and u2 (s = 4.25 or 4.5) has the largest s on s1's full CPU.
    # Both meet the definition, yet u2 gets 17/12 in one and 3/2 in the other: compare a
    # simulation's output with psdsf_condition, not with psdsf's X.
    C = [[4, 3], [1, 2], [1, 2]]
    D = [[3, 2], [0, 3], [3, 0]]
    E = [[False, True, True], [False, True, True], [True, True, False]]
    one = [[0, 1 / 4, 1 / 4], [0, 1 / 2, 1 / 2], [4 / 3, 1 / 12, 0]]
    two = [[0, 1 / 6, 1 / 3], [0, 5 / 9, 4 / 9], [4 / 3, 1 / 6, 0]]
    assert fh.psdsf_condition(C, D, None, E, one) == []
    assert fh.psdsf_condition(C, D, None, E, two) == []
    assert fh.psdsf_condition(C, D, None, E, [[0, 1 / 4, 1 / 4], [0, 1 / 2, 1 / 2],
                                             [4 / 3, 0, 0]])  # s1's CPU no longer full
    X = fh.psdsf(C, D, E=E).X
    assert fh.psdsf_condition(C, D, None, E, X) == []


def test_weighted_two_server_example():
    w = [2.0, 1.0]
    # DRFH, levels x1/28 and x2/14 -> x1 = 2k, x2 = k. Dual: prices 25/11 (s1 CPU), 5/11
    # (s2 GB) certify k <= 60/11 with b1 = 0; u1 fills s1 (a1 = 10), s2 GB: a2 + 0.2 k = 2.
    # Neither can rise alone: 5*(s1 CPU) + (s2 GB) gives x1 + 0.2 x2 <= 12, and
    # x2 <= 12 - 0.2 a1 - 5 a2 with a1 <= 10 gives x2 <= 60 - 5 x1.
    res = fh.drfh(C2, D2, w)
    close(res.X, [[10, 10 / 11], [0, 60 / 11]])
    close(res.levels, [30 / 77, 30 / 77])
    # TSF: h1 = h2 = 12, so the same ratio x1 = 2 x2 and the same allocation; shares 5/11.
    res = fh.tsf(C2, D2, w)
    close(res.X.sum(axis=1), [120 / 11, 60 / 11])
    close(res.levels, [5 / 11, 5 / 11])
    # PS-DSF, s = [[x1/20, x1/4], [x2/2, x2/10]]. On s2 both users positive would need equal
    # s on saturated GB: (10 + a2)/4 = b2/10 -> b2 > 10, impossible; so only u2 (u1 alone there
    # would leave u2 at s = 0 below it): b2 = 10. On s1 likewise x1/20 = x2/2 needs x1 >= 100:
    # only u1, a1 = 10. The weights do not move PS-DSF off (10, 10) here.
    res = fh.psdsf(C2, D2, w)
    close(res.X, [[10, 0], [0, 10]])
    # per-server DRF: s1 a/20 = b/2, 0.2 a + b = 2 -> b = 2/3, a = 20/3; s2 u1 share/task 0.5,
    # u2 0.1: a/4 = b/10, a + 0.2 b = 2 -> a = 4/3, b = 10/3. Totals 8 and 4.
    res = fh.per_server_drf(C2, D2, w)
    close(res.X, [[20 / 3, 4 / 3], [2 / 3, 10 / 3]])


def test_placement_constraint_example():
    # Two servers <4, 4>, both users <1, 1>; u1 may use s1 only. gamma = [[4, 0], [4, 4]].
    C, D, E = [[4, 4], [4, 4]], [[1, 1], [1, 1]], [[True, False], [True, True]]
    # DRFH: both dominant shares x/8; x1 = x2 <= 4 (u1 capped by s1 and 8 tasks in all).
    close(fh.drfh(C, D, E=E).X, [[4, 0], [0, 4]])
    # TSF: h1 = 4, h2 = 8; x1/4 = x2/8 = t with x1 + x2 <= 8 -> t = 2/3: x = (8/3, 16/3),
    # u1's 8/3 on s1 forces u2's 4/3 there and 4 on s2.
    res = fh.tsf(C, D, E=E)
    close(res.X, [[8 / 3, 0], [4 / 3, 4]])
    close(res.levels, [2 / 3, 2 / 3])
    # PS-DSF: s2 serves u2 only -> 4. s1: u1 at x1/4 rises from 0, u2 sits at (4 + b1)/4 >= 1;
    # s1 fills when x1 = 4 (level 1): u1 4, u2 0, both bottlenecked (ties allowed).
    res = fh.psdsf(C, D, E=E)
    close(res.X, [[4, 0], [0, 4]])
    assert fh.psdsf_condition(C, D, None, E, res.X) == []
    # per-server DRF: s1 split 2/2, s2 all u2: totals (2, 6).
    close(fh.per_server_drf(C, D, E=E).X, [[2, 0], [2, 4]])


def test_single_server_is_drf_published_example():
    # DRF paper (Ghodsi et al., NSDI 2011, Sec. 4): <9 CPU, 18 GB>, A <1 CPU, 4 GB>,
    # B <3 CPU, 1 GB>: A gets 3 tasks, B 2, dominant shares 2/3 each. On one server DRFH,
    # TSF (h = gamma = 1/dominant share), per-server DRF and PS-DSF are all DRF.
    C, D = [[9, 18]], [[1, 4], [3, 1]]
    for mech in (fh.drfh, fh.tsf, fh.per_server_drf, fh.psdsf):
        close(mech(C, D).X, [[3], [2]])
    close(fh.drfh(C, D).levels, [2 / 3, 2 / 3])


def test_feasibility_violations_bite():
    assert fh.feasibility_violations(C2, D2, [[10, 0], [0, 10]]) == []
    out = fh.feasibility_violations(C2, D2, [[11, 0], [0, -1]])  # s1 CPU 2.2 > 2
    assert any("< 0" in s for s in out) and any("server 0 resource 0" in s for s in out)
    out = fh.feasibility_violations(C2, D2, [[1, 1], [0, 0]], [[True, False], [True, True]])
    assert out == ["X[0,1] = 1 on an ineligible server"]


def test_ineligible_everywhere_user_gets_nothing():
    E = [[False, False], [True, True]]
    for mech in (fh.drfh, fh.tsf, fh.per_server_drf, fh.psdsf):
        X = mech(C2, D2, E=E).X
        close(X[0], [0, 0])
        assert X[1].sum() > 1  # the other user is not held down by the stuck one


# -- independent checkers ----------------------------------------------------------------------
def own_drfh_levels(C, D, w, X):
    share = np.where(D > 0, D / C.sum(axis=0), 0.0).max(axis=1)
    return X.sum(axis=1) * share / w


def own_tsf_levels(C, D, w, E, X):
    h = np.array([sum(min(C[i, r] / D[n, r] for r in range(D.shape[1]) if D[n, r] > 0)
                      for i in range(C.shape[0]) if E[n, i]) for n in range(D.shape[0])])
    return np.where(h > 0, X.sum(axis=1) / (w * np.where(h > 0, h, 1)), 0.0)


# tight tolerances: a level held 1e-7 low can free enough of a resource for another user to gain
# far more (amplification ~1e4 seen with tiny demands); presolve off, since with these
# tolerances HiGHS's presolve was seen to call feasible LPs infeasible
EXACT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
         "presolve": False}


def maxmin_violations(C, D, E, coef, L, tol=1e-6):
    """Max-min fairness (= leximin on a convex set): user n's level sum_i coef[n] X[n, i]
    cannot be raised above L[n] while every other user at or below L[n] keeps its level."""
    N, S = E.shape
    idx = [(n, i) for n in range(N) for i in range(S) if E[n, i]]
    if not idx:
        return []
    cap = np.array([[D[n, r] if i == ii else 0.0 for (n, i) in idx]
                    for ii in range(S) for r in range(D.shape[1])])
    lev = np.array([[coef[n] if n == nn else 0.0 for (n, _) in idx] for nn in range(N)])
    bad = []
    for n in range(N):
        low = [m for m in range(N) if m != n and L[m] <= L[n] + tol]
        A = np.vstack([cap] + [-lev[m] for m in low])
        b = np.r_[C.reshape(-1), [-(L[m] - 1e-12 * max(1.0, L[m])) for m in low]]
        res = linprog(-lev[n], A_ub=A, b_ub=b, bounds=(0, None), method="highs", options=EXACT)
        assert res.status == 0
        if -res.fun > L[n] + tol * max(1.0, L[n]):
            bad.append((n, L[n], -res.fun))
    return bad


def envy(C, D, w, E, X, tol=1e-6):
    """DRFH envy-freeness (weighted): user i could run no more tasks with (w_i/w_j) A_j, where
    A_j = X[j, l] * D[j] on each server l (only servers i may use), than it runs with its own."""
    out = []
    for i in range(len(D)):
        for j in range(len(D)):
            if i == j:
                continue
            need = D[i] > 0
            could = sum((X[j, l] * D[j, need] / D[i, need]).min()
                        for l in range(C.shape[0]) if E[i, l])
            if w[i] / w[j] * could > X[i].sum() + tol * max(1.0, X[i].sum()):
                out.append((i, j))
    return out


def brute_drf_one_server(c, D, w, elig):
    """Textbook DRF water-filling on one server: dominant shares x_n max_r D/c / w_n rise together;
    when a resource fills, every user needing it stops."""
    need_missing = ((D > 0) & (c == 0)).any(axis=1)
    ds = np.where(need_missing, np.inf,
                  np.where(D > 0, D / np.where(c > 0, c, 1), 0).max(axis=1))
    active = elig & ~need_missing
    x, used, t = np.zeros(len(D)), np.zeros(len(c)), 0.0
    while active.any():
        per_level = w[active] / ds[active]  # tasks per unit of level
        rate = per_level @ D[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(rate > 0, (c - used - t * rate) / rate, np.inf)
        t += room.min()
        full = room <= room.min() + 1e-12
        x[active] = t * per_level
        stop = active & (D[:, full] > 0).any(axis=1)
        used += x[stop] @ D[stop]
        active &= ~stop
    return x


def test_checkers_can_fail():
    w, E = np.ones(2), np.ones((2, 2), bool)
    psd = np.array([[5.0, 1.0], [1.0, 5.0]])  # per-server DRF, not DRFH
    coef = np.full(2, 1 / 14)
    assert maxmin_violations(C2, D2, E, coef, own_drfh_levels(C2, D2, w, psd))
    assert not maxmin_violations(C2, D2, E, coef, own_drfh_levels(C2, D2, w, fh.drfh(C2, D2).X))
    # u1 idle, u2 with 2 tasks on s1 holding <2 CPU, 0.4 GB>: u1 could run 0.4 tasks there.
    assert envy(C2, D2, w, E, np.array([[0.0, 0.0], [2.0, 0.0]])) == [(0, 1)]
    assert envy(C2, D2, w, E, np.array([[1.0, 0.0], [2.0, 0.0]])) == []  # 0.4 < 1: no envy


# -- properties on random small instances ------------------------------------------------------
@st.composite
def clusters(draw, servers=(2, 4), constrained=True):
    S = draw(st.integers(*servers))
    N = draw(st.integers(2, 4))
    m = draw(st.integers(2, 3))
    C = np.array(draw(st.lists(st.lists(st.integers(0, 10), min_size=m, max_size=m),
                               min_size=S, max_size=S)), float)
    C[0] += C.sum(axis=0) == 0  # every resource exists somewhere in the pool
    row = st.lists(st.integers(0, 6), min_size=m, max_size=m).filter(lambda r: sum(r) > 0)
    D = np.array(draw(st.lists(row, min_size=N, max_size=N)), float) / 2
    w = np.array(draw(st.lists(st.integers(1, 3), min_size=N, max_size=N)), float)
    E = np.ones((N, S), bool)
    if constrained:
        E = np.array(draw(st.lists(st.lists(st.booleans(), min_size=S, max_size=S),
                                   min_size=N, max_size=N)), bool)
    return C, D, w, E


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_all_mechanisms_feasible(inst):
    C, D, w, E = inst
    for mech in (fh.drfh, fh.tsf, fh.per_server_drf, fh.psdsf):
        X = mech(C, D, w, E).X
        assert fh.feasibility_violations(C, D, X, E, tol=1e-7) == [], mech.__name__


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_drfh_is_weighted_maxmin_fair_and_envy_free(inst):
    C, D, w, E = inst
    res = fh.drfh(C, D, w, E)
    L = own_drfh_levels(C, D, w, res.X)
    close(res.levels, L, 1e-8)
    coef = np.where(D > 0, D / C.sum(axis=0), 0.0).max(axis=1) / w
    assert maxmin_violations(C, D, E, coef, L) == []
    assert envy(C, D, w, E, res.X) == []


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_tsf_is_weighted_maxmin_fair(inst):
    C, D, w, E = inst
    res = fh.tsf(C, D, w, E)
    L = own_tsf_levels(C, D, w, E, res.X)
    close(res.levels, L, 1e-8)
    h = fh.gamma(C, D, E).sum(axis=1)
    coef = np.where(h > 0, 1 / (w * np.where(h > 0, h, 1)), 0.0)
    assert maxmin_violations(C, D, E, coef, L) == []


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_psdsf_meets_its_definition(inst):
    C, D, w, E = inst
    res = fh.psdsf(C, D, w, E)
    assert fh.psdsf_condition(C, D, w, E, res.X, tol=1e-7) == []


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_per_server_drf_matches_brute_water_filling(inst):
    C, D, w, E = inst
    X = fh.per_server_drf(C, D, w, E).X
    for i in range(C.shape[0]):
        close(X[:, i], brute_drf_one_server(C[i], D, w, E[:, i]), 1e-7)


@settings(max_examples=30, deadline=None)
@given(clusters(servers=(1, 1)))
def test_one_server_all_mechanisms_agree(inst):
    C, D, w, E = inst
    want = brute_drf_one_server(C[0], D, w, E[:, 0])
    for mech in (fh.drfh, fh.tsf, fh.per_server_drf, fh.psdsf):
        close(mech(C, D, w, E).X[:, 0], want, 1e-7)


@settings(max_examples=30, deadline=None)
@given(clusters(servers=(1, 1), constrained=False),
       st.lists(st.integers(0, 8), min_size=4, max_size=4))
def test_server_fill_is_leximin_with_offsets(inst, offs):
    # PS-DSF's per-server step (event-driven) against the LP engine with the same offsets.
    C, D, w, _ = inst
    g = fh.gamma(C, D)[:, 0]
    a = w * g
    off = np.array(offs[:len(w)], float) / 2
    x = fh.server_fill(C[0], D, a, off)
    lp = fh.leximin(np.where(g > 0, 1 / np.where(g > 0, a, 1), 0)[:, None], C, D,
                    (g > 0)[:, None], offset=np.where(g > 0, off / np.where(g > 0, a, 1), 0))
    close(x, lp.X[:, 0], 1e-7)
