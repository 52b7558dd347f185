"""The server index against a brute-force scan."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.sim.placement import PLACEMENTS, ServerIndex, first_room

caps = st.integers(1, 40).flatmap(
    lambda n: st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3),
                       min_size=n, max_size=n))
ops = st.lists(st.tuples(st.lists(st.integers(0, 4), min_size=3, max_size=3),
                         st.booleans()), min_size=1, max_size=60)


@settings(max_examples=80, deadline=None)
@given(capacities=caps, operations=ops, rule=st.sampled_from(PLACEMENTS))
def test_index_agrees_with_a_scan(capacities, operations, rule):
    cap = np.array(capacities, dtype=float)
    index = ServerIndex(cap, rule)
    free = cap.copy()
    placed: list[tuple[int, np.ndarray]] = []
    for demand, release in operations:
        d = np.array(demand, dtype=float)
        if release and placed:
            server, dd = placed.pop(0)
            index.release(server, tuple(dd.tolist()))
            free[server] += dd
        ok = np.flatnonzero((free >= d).all(axis=1))
        assert index.fits(d) == (ok.size > 0)
        chosen = index.choose(d)
        if ok.size == 0:
            assert chosen is None
            continue
        if rule == "random":
            assert chosen in ok
        else:
            assert chosen == ok[np.argmin([_score(rule, free[s], cap[s], d, cap.sum(axis=0))
                                           for s in ok])]
        index.allocate(chosen, tuple(d.tolist()))
        free[chosen] -= d
        placed.append((chosen, d))
        np.testing.assert_allclose(index.free, free)
        np.testing.assert_allclose(index.free_total, free.sum(axis=0))


def _score(rule: str, free: np.ndarray, cap: np.ndarray, d: np.ndarray,
           pool: np.ndarray) -> float:
    """Each rule's score of one server with room (lowest wins; ties: first),
    written out from its source, one resource at a time."""
    C = [c if c > 0 else 1.0 for c in pool]
    m = len(d)
    if rule == "first-fit" or (rule == "drfh" and not any(d)):
        return 0.0
    if rule in ("best-fit", "least-leftover"):
        return sum((free[r] - d[r]) / C[r] for r in range(m))
    if rule == "drfh":  # INFOCOM'14 §V-B: sum_r |(d_r/C_r)/(d_1/C_1) - (f_r/C_r)/(f_1/C_1)|
        ref = 0 if d[0] > 0 else max(range(m), key=lambda r: (d[r] / C[r], -r))
        return sum(abs((d[r] / C[r]) / (d[ref] / C[ref]) - (free[r] / C[r]) / (free[ref] / C[ref]))
                   for r in range(m))
    assert rule == "dot-product"  # Tetris: demand . free, each over the server's capacity
    return -sum((d[r] / cap[r]) * (free[r] / cap[r]) for r in range(m) if cap[r] > 0)


def test_saturated_resources():
    index = ServerIndex(np.array([[2.0, 1.0], [2.0, 0.0]]))
    index.allocate(0, (1.0, 1.0))
    assert index.saturated.tolist() == [False, True]
    assert not index.fits(np.array([0.0, 1.0]))
    index.release(0, (1.0, 1.0))
    assert index.fits(np.array([0.0, 1.0]))  # the cached "no" is dropped on release


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 600), seed=st.integers(0, 2**32 - 1))
def test_first_fit_on_many_servers_with_failures(n, seed):
    """Several levels of block maxima, cached answers kept across allocations,
    releases, failures and repairs: always the lowest server with room."""
    rng = np.random.default_rng(seed)
    cap = rng.integers(0, 5, size=(n, 2)).astype(float)
    index = ServerIndex(cap, mirror=bool(seed % 2))  # the array view kept, or not
    free = cap.copy()
    down: set[int] = set()
    placed: list[tuple[int, tuple[float, ...]]] = []
    demands = [np.array(d, dtype=float) for d in ([1, 1], [2, 0], [0, 3], [4, 4])]
    for _ in range(300):
        op = rng.random()
        if op < 0.05 and placed:  # a server fails: its tasks go first
            server = placed[int(rng.integers(len(placed)))][0]
            for s, d in [p for p in placed if p[0] == server]:
                placed.remove((s, d))
                index.release(s, d)
                free[s] += d
            index.set_down(server)
            down.add(server)
        elif op < 0.1 and down:
            server = down.pop()
            index.set_up(server)
        elif op < 0.4 and placed:
            s, d = placed.pop(int(rng.integers(len(placed))))
            index.release(s, d)
            free[s] += d
        else:
            demand = demands[int(rng.integers(len(demands)))]
            ok = [s for s in range(n) if s not in down and (free[s] >= demand).all()]
            chosen = index.choose(demand)
            assert chosen == (ok[0] if ok else None)
            if index.mirror is not None:  # the same floats as the lists, downed servers -inf
                live = [s for s in range(n) if s not in down]
                assert index.mirror[live].tolist() == free[live].tolist()
                assert (index.mirror[sorted(down)] == -np.inf).all()
            if chosen is not None:
                need = tuple(demand.tolist())
                index.allocate(chosen, need)
                free[chosen] -= demand
                placed.append((chosen, need))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5).flatmap(lambda m: st.tuples(
    st.lists(st.lists(st.integers(0, 3).map(float), min_size=m, max_size=m), min_size=1,
             max_size=20),
    st.lists(st.integers(0, 3).map(float), min_size=m, max_size=m))),
    st.integers(0, 25), st.integers(0, 25))
def test_first_room_is_the_first_server_with_room(case, start, stop):
    """The written-out scans (two, three resources) and the general one."""
    rows, need = case
    cols = [list(col) for col in zip(*rows)]
    stop = min(stop, len(rows))
    expected = next((i for i in range(start, stop)
                     if all(r >= n for r, n in zip(rows[i], need))), -1)
    assert first_room(cols, need, start, stop) == expected
