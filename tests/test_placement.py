"""The server index against a brute-force scan."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.placement import ServerIndex

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
            index.release(server, dd)
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
        index.allocate(chosen, d)
        free[chosen] -= d
        placed.append((chosen, d))
        np.testing.assert_allclose(index.free, free)
        np.testing.assert_allclose(index.free_total, free.sum(axis=0))


def test_saturated_resources():
    index = ServerIndex(np.array([[2.0, 1.0], [2.0, 0.0]]))
    index.allocate(0, np.array([1.0, 1.0]))
    assert index.saturated.tolist() == [False, True]
    assert not index.fits(np.array([0.0, 1.0]))
    index.release(0, np.array([1.0, 1.0]))
    assert index.fits(np.array([0.0, 1.0]))  # the cached "no" is dropped on release
