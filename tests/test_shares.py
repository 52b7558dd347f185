"""The written-out dominant shares and the rounding memo give the floats of
the plain expressions they replace (the policies' decisions depend on it)."""

from __future__ import annotations

from operator import mul

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.sim.shares import RoundMemo, dominant_share_of, inverse_totals

# Small integers and their thirds give many exact ties between resources.
amounts = st.one_of(st.integers(0, 6).map(float), st.integers(0, 6).map(lambda x: x / 3),
                    st.floats(0, 1e6, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda m: st.tuples(
    st.lists(amounts, min_size=m, max_size=m),
    st.lists(st.one_of(st.just(0.0), st.floats(1e-3, 1e4)), min_size=m, max_size=m))))
def test_dominant_share_equals_max_of_products(case):
    row, totals = case
    inv = inverse_totals(np.array(totals)).tolist()
    expected = max(map(mul, row, inv))
    got = dominant_share_of(inv)(row)
    assert got == expected and type(got) is float


def test_a_resource_the_cluster_lacks_never_dominates():
    inv = inverse_totals(np.array([10.0, 0.0]))
    assert inv.tolist() == [0.1, 0.0]
    assert dominant_share_of(inv.tolist())([1.0, 5.0]) == 0.1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=50))
def test_round_memo_is_round(xs):
    memo = RoundMemo(12, size=8)  # small: the bound is crossed and the memo cleared
    for x in xs + xs[::-1]:
        assert memo[x] == round(x, 12)
