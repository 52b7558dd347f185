"""The server index against a brute-force scan."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.sim.placement import ServerIndex, first_room

caps = st.integers(1, 40).flatmap(
    lambda n: st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3),
                       min_size=n, max_size=n))
ops = st.lists(st.tuples(st.lists(st.integers(0, 4), min_size=3, max_size=3),
                         st.booleans()), min_size=1, max_size=60)


@settings(max_examples=80, deadline=None)
@given(capacities=caps, operations=ops, rule=st.sampled_from(["first-fit", "best-fit"]))
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
        if rule == "first-fit":
            assert chosen == ok[0]
        else:
            left = ((free[ok] - d) / cap.sum(axis=0).clip(min=1)).sum(axis=1)
            assert chosen == ok[np.argmin(left)]
        index.allocate(chosen, tuple(d.tolist()))
        free[chosen] -= d
        placed.append((chosen, d))
        np.testing.assert_allclose(index.free, free)
        np.testing.assert_allclose(index.free_total, free.sum(axis=0))


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
