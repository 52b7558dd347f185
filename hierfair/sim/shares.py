"""Dominant shares of plain-float rows, at the cost a per-task path can pay.

A dominant share is ``max_j alloc_j / R_j`` over the resources the cluster
has (DRF §4).  Policies compute one per task start and finish, so the
constant matters: ``max(map(mul, row, inv))`` costs ~0.2 us, the same
products written out for a fixed number of resources ~0.05 us, with the same
floats (the same multiplications, and ``max`` of non-NaN floats).  Likewise
Python's correctly rounded ``round(x, 12)`` costs ~0.25 us; a leaf's share
takes few distinct values in a run, so a bounded memo returns the same
float for a tenth of that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Row = Sequence[float]


def inverse_totals(total: np.ndarray) -> np.ndarray:
    """``1 / R_j``, and 0 for a resource the cluster lacks (it never dominates)."""
    return np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)


def dominant_share_of(inv: Sequence[float]) -> Callable[[Row], float]:
    """A function ``row -> max_j row[j] * inv[j]``, written out for up to four
    resources (products in resource order, then the larger kept: ``max``'s
    value)."""
    m = len(inv)
    if m == 1:
        (a,) = inv
        return lambda r: r[0] * a
    if m == 2:
        a, b = inv

        def two(r: Row) -> float:
            x, y = r[0] * a, r[1] * b
            return x if x >= y else y
        return two
    if m == 3:
        a, b, c = inv

        def three(r: Row) -> float:
            x, y, z = r[0] * a, r[1] * b, r[2] * c
            if y > x:
                x = y
            return x if x >= z else z
        return three
    if m == 4:
        a, b, c, d = inv

        def four(r: Row) -> float:
            x, y, z, w = r[0] * a, r[1] * b, r[2] * c, r[3] * d
            if y > x:
                x = y
            if z > x:
                x = z
            return x if x >= w else w
        return four
    factors = list(inv)
    return lambda r: max([x * f for x, f in zip(r, factors)])


class RoundMemo(dict):
    """``memo[x] == round(x, digits)``, memoised (bounded: cleared when it
    holds ``size`` values), for keys recomputed far more often than they
    change.  A dict whose ``__missing__`` rounds: a hit is one C-level look-up."""

    def __init__(self, digits: int, size: int = 1 << 16) -> None:
        super().__init__()
        self._digits = digits
        self._size = size

    def __missing__(self, x: float) -> float:
        if len(self) >= self._size:
            self.clear()
        value = self[x] = round(x, self._digits)
        return value
