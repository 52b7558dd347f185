"""Long series and large samples made small enough to draw, read a run and
a piece of a table at a time: a paper-scale week's run holds ~70 M
utilisation changes at offered load 0.5 (four times that at load 2) and
millions of jobs, and a report of its sweep reads 24 such runs.

:func:`steps` draws a step series as the mean over each of MAX_POINTS
equal spans (:func:`span_means`, carried from row group to row group);
:func:`ecdf_points` gives a sample's ECDF as MAX_POINTS weighted values,
exact at each.  A run's table is read a piece at a time through
:func:`hierfair.experiment.detail.run_columns`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: Longer step series and samples are drawn from this many points (a figure, not a table).
MAX_POINTS = 2000


def steps(times: np.ndarray, values: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray]:
    """A step series held to ``end`` (a value that never changed is a line,
    not a point); a longer one than MAX_POINTS as the mean over each of
    MAX_POINTS equal spans (an instant's value every span would show a
    week's second-by-second swings as noise)."""
    if len(times) <= MAX_POINTS:
        if len(times) and times[-1] < end:
            return np.append(times, end), np.append(values, values[-1])
        return times, values
    edges = span_edges(times[0], times[-1], end)
    means = span_means([(times, [values])], edges)[0]
    return edges, np.append(means, means[-1])  # the last span drawn to its end


def span_edges(first: float, last: float, end: float) -> np.ndarray:
    return np.linspace(first, max(end, last), MAX_POINTS + 1)


def span_means(batches: Iterable[tuple[np.ndarray, list[np.ndarray]]], edges: np.ndarray
               ) -> list[np.ndarray]:
    """Each series' mean over each span between ``edges``, from batches of
    (times, one array of values per series) in time order, each value held
    until the next time: the integral of the steps at each change, then at
    each edge, carried from batch to batch (a week's run is read a row group
    at a time)."""
    area = None  # per series: the integral at each edge
    done = 0  # edges already resolved
    last: tuple[float, np.ndarray, np.ndarray] | None = None  # time, values, integrals
    for times, values in batches:
        if not len(times):
            continue
        vals = np.vstack(values)
        if last is None:
            area = np.empty((len(vals), len(edges)))
            at = np.zeros((len(vals), 1))
        else:
            times = np.concatenate(([last[0]], times))
            vals = np.hstack((last[1][:, None], vals))
            at = last[2][:, None]
        at = np.hstack((at, at[:, :1] + np.cumsum(vals[:, :-1] * np.diff(times), axis=1)))
        upto = int(np.searchsorted(edges, times[-1], side="left"))  # edges before the last
        e = edges[done:upto]
        k = np.searchsorted(times, e, side="right") - 1
        area[:, done:upto] = at[:, k] + vals[:, k] * (e - times[k])
        done = upto
        last = (times[-1], vals[:, -1], at[:, -1])
    e = edges[done:]
    area[:, done:] = last[2][:, None] + last[1][:, None] * (e - last[0])
    return list(np.diff(area, axis=1) / np.diff(edges))


def ecdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and weights whose weighted ECDF is the ECDF of ``values``
    (NaN dropped): every distinct value with its count when there are at
    most MAX_POINTS of them; else MAX_POINTS values at equal steps of rank,
    each weighted by how many values lie above the one before and up to it,
    so the drawn ECDF is exact at each of them (a week's millions of jobs
    are then a few thousand rows for the plotting library)."""
    values = np.sort(values[~np.isnan(values)])
    x, counts = np.unique(values, return_counts=True)
    if len(x) <= MAX_POINTS:
        return x, counts
    ranks = np.linspace(0, len(values) - 1, MAX_POINTS).round().astype(np.int64)
    x = np.unique(values[ranks])
    below = np.searchsorted(values, x, side="right")
    return x, np.diff(below, prepend=0)
