"""How a check is decided from its sample: an interval, a named method, an outcome.

The rule (README, "Truth rules"): a check holds when its interval lies inside
the claimed region, is refuted when the interval lies outside it, and is
inconclusive when the interval crosses the region's edge.  The interval
comes from the seed sample:

* ``exact`` -- a deterministic value (a static allocation, an audited
  property, or runs whose workload and faults do not depend on the seed):
  a point, decided as it is;
* ``t`` -- one sample over seeds: Student's t interval of the mean;
* ``paired t`` -- two algorithms on the same seeds (and grid points): the
  t interval of the mean of the per-seed differences, compared with 0;
* ``Welch`` -- two algorithms whose runs do not pair up (a seed failed on
  one side): Welch's interval of the difference of the means;
* ``ratio`` -- ``relative_to``: the per-seed ratios, as one sample (t);
* ``equals x ± tol`` is an equivalence claim: the two one-sided tests
  (TOST) at level 5 % hold when the 90 % interval lies within
  [x - tol, x + tol]; it is refuted when the 95 % interval lies outside.

One run of a workload that does depend on the seed has no interval: the
check is inconclusive ("add seeds").  Statistics come from scipy.stats.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
import pandas as pd

Outcome = Literal["holds", "refuted", "inconclusive"]
Method = Literal["exact", "t", "paired t", "Welch", "ratio", "one run"]

#: The confidence level of every interval (TOST uses 1 - 2 * (1 - LEVEL)).
LEVEL = 0.95


class Sample(NamedTuple):
    """The values a check decides on: one per seed (or per paired seed), or
    two unpaired groups (``other``) whose difference of means is decided."""

    values: np.ndarray
    method: Method
    other: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def estimate(self) -> float:
        """The point estimate: the mean (or the difference of two means)."""
        if self.values.size == 0:
            return float("nan")
        mean = float(np.mean(self.values))
        return mean - float(np.mean(self.other)) if self.other is not None else mean

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """The two-sided interval of :attr:`estimate` at ``level``."""
        # imported here: scipy.stats is half of a worker's start-up (0.9 s of 1.8)
        from scipy import stats

        m = self.estimate
        if self.method in ("exact", "one run") or self.n < 2:
            return (m, m)
        if self.other is not None:
            if self.other.size < 2:
                return (float("-inf"), float("inf"))
            res = stats.ttest_ind(self.values, self.other, equal_var=False)
            ci = res.confidence_interval(level)
            lo, hi = float(ci.low), float(ci.high)
            return (m, m) if np.isnan(lo) else (lo, hi)  # both groups constant
        sem = float(stats.sem(self.values))
        if sem == 0 or not np.isfinite(sem):
            return (m, m)
        lo, hi = stats.t.interval(level, self.n - 1, loc=m, scale=sem)
        return (float(lo), float(hi))


def mean_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The mean and the half-width of its t interval (NaN for one value)."""
    sample = Sample(np.asarray(values, dtype=float), "t")
    lo, hi = sample.interval(level)
    half = (hi - lo) / 2 if sample.n > 1 else float("nan")
    return sample.estimate, half


class Decision(NamedTuple):
    outcome: Outcome
    low: float
    high: float
    #: The method in words, with its level ("paired t, 95 %").
    method: str


def _named(sample: Sample, level: float) -> str:
    if sample.method in ("exact", "one run"):
        return sample.method
    return f"{sample.method}, {level:.0%}".replace("%", " %")


def decide_bound(sample: Sample, bound: float, below: bool) -> Decision:
    """``estimate < bound`` (below) or ``> bound``: the interval decides."""
    lo, hi = sample.interval()
    name = _named(sample, LEVEL)
    if sample.method == "one run":
        return Decision("inconclusive", lo, hi, name)
    inside = hi < bound if below else lo > bound
    outside = lo >= bound if below else hi <= bound
    return Decision("holds" if inside else "refuted" if outside else "inconclusive",
                    lo, hi, name)


def decide_equals(sample: Sample, target: float, tol: float) -> Decision:
    """``estimate = target ± tol``: TOST (90 % interval inside) holds, the
    95 % interval outside refutes; an exact value is compared as it is."""
    region = (target - tol, target + tol)
    if sample.method in ("exact", "one run") or sample.n < 2:
        v = sample.estimate
        inside = region[0] <= v <= region[1]
        if sample.method == "one run":
            return Decision("inconclusive", v, v, "one run")
        return Decision("holds" if inside else "refuted", v, v, "exact")
    lo90, hi90 = sample.interval(1 - 2 * (1 - LEVEL))
    lo, hi = sample.interval()
    if region[0] <= lo90 and hi90 <= region[1]:
        return Decision("holds", lo90, hi90, f"TOST ({sample.method}), 90 % interval")
    if hi < region[0] or lo > region[1]:
        return Decision("refuted", lo, hi, _named(sample, LEVEL))
    return Decision("inconclusive", lo, hi, _named(sample, LEVEL))


def combine(outcomes: list[Outcome]) -> Outcome:
    """Several conditions of one check: refuted if any is, else inconclusive
    if any is, else holds."""
    for word in ("refuted", "inconclusive"):
        if word in outcomes:
            return word  # type: ignore[return-value]
    return "holds"


# -- statistics of a step function over time -----------------------------------------
# Two forms, kept apart because their float paths differ and results are
# byte-for-byte stable: runs.parquet's utilisation divides by the run's length
# (time before the first change point counts as 0); a claim's time statistic
# divides by the time covered inside its window.
def time_average(times: np.ndarray, values: np.ndarray, end: float) -> float:
    """Mean of a step function (value ``values[k]`` from ``times[k]`` on) over [0, end]."""
    if end <= 0 or times.size == 0:
        return 0.0
    t = np.append(np.clip(times, 0, end), end)
    return float(np.sum(values * np.diff(t)) / end)


def time_statistic(series: pd.DataFrame, values: np.ndarray, stat: str,
                    window: tuple[float, float] | None, end: float) -> float:
    """Mean, median, min or max of a step function given at change points,
    counting each value for as long as it held within the window."""
    t = series["time"].to_numpy(dtype=float)
    lo, hi = window if window is not None else (0.0, end)
    starts = np.clip(t, lo, hi)
    ends = np.clip(np.append(t[1:], max(end, hi)), lo, hi)
    held = ends - starts
    if not len(values) or held.sum() <= 0:
        return float("nan")
    if stat == "mean":
        return float(np.sum(values * held) / held.sum())
    if stat in ("min", "max"):
        seen = values[held > 0]
        return float(seen.min() if stat == "min" else seen.max())
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(held[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])
