"""Long series and large samples made small enough to draw, read a run and
a piece of a table at a time: a paper-scale week's run holds ~70 M
utilisation changes at offered load 0.5 (four times that at load 2) and
millions of jobs, and a report of its sweep reads 24 such runs.

:func:`steps` draws a step series as the mean over each of MAX_POINTS
equal spans (:func:`span_means`, carried from row group to row group);
:func:`ecdf_points` gives a sample's ECDF as MAX_POINTS weighted values,
exact at each; :func:`run_columns` reads one run's table from its own file
or from an older version's table assembled at the folder's top.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hierfair.experiment.detail import detail_table, run_tables

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


class FileTable(NamedTuple):
    """One run's table in its own parquet file, read a column or a row group
    at a time."""

    path: Path

    def rows(self) -> int:
        return pq.ParquetFile(self.path).metadata.num_rows

    def column(self, name: str) -> np.ndarray:
        return pq.read_table(self.path, columns=[name]).column(0).to_numpy()

    def bounds(self, name: str) -> tuple[float, float]:
        """The column's first and last values (times are in order)."""
        file = pq.ParquetFile(self.path)
        held = [g for g in range(file.num_row_groups) if file.metadata.row_group(g).num_rows]
        first = file.read_row_group(held[0], columns=[name]).column(0)
        last = file.read_row_group(held[-1], columns=[name]).column(0)
        return float(first[0].as_py()), float(last[-1].as_py())

    def batches(self, names: list[str]) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
        """(first column, the others) a row group at a time."""
        file = pq.ParquetFile(self.path)
        for g in range(file.num_row_groups):
            part = file.read_row_group(g, columns=names)
            yield part.column(0).to_numpy(), [c.to_numpy() for c in part.columns[1:]]


class FrameTable(NamedTuple):
    """One run's rows of an older version's table assembled at the folder's
    top (already in memory)."""

    frame: pd.DataFrame

    def rows(self) -> int:
        return len(self.frame)

    def column(self, name: str) -> np.ndarray:
        return self.frame[name].to_numpy(float)

    def bounds(self, name: str) -> tuple[float, float]:
        col = self.column(name)
        return float(col[0]), float(col[-1])

    def batches(self, names: list[str]) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
        yield self.column(names[0]), [self.column(n) for n in names[1:]]


def run_columns(folder: Path, name: str, runs: pd.DataFrame,
                columns: list[str] | None = None
                ) -> Iterator[tuple[tuple, list[str], FileTable | FrameTable]]:
    """Per ok run of ``runs`` that kept table ``name``: its row, the table's
    own column names and the table, so that a figure holds a run's column
    or row group at a time (a week's utilisation is ~70 M rows a run at
    offered load 0.5, its jobs table ~2 M; all of a report's runs at once
    did not fit in 24 GiB).  Reads either layout: per-run files, or an
    older version's table assembled at the folder's top (``columns``: the
    ones to read of it; it is read whole each call, so call once)."""
    paths = run_tables(folder, name, runs)
    parts: dict[str, pd.DataFrame] = {}
    if paths is None:  # an older version's assembled table, or none kept
        table = detail_table(folder, name, runs, columns=columns and ["run", *columns])
        if table is None:
            return
        parts = dict(tuple(table.groupby("run", sort=False)))
    for i, row in enumerate(runs[runs["status"] == "ok"].itertuples(index=False)):
        if paths is not None:
            yield row, pq.read_schema(paths[i]).names, FileTable(paths[i])
        elif row.run in parts:
            part = parts[row.run]
            own = [c for c in part.columns if c not in set(runs.columns) | {"run"}]
            yield row, own, FrameTable(part)


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
