"""A spec's detail tables, stored once: in each run's own folder.

``hierfair run`` writes every run's detail tables (``jobs``, ``tasks``,
``allocations``, ...) to ``<spec>/runs/<run id>/``; that is what the cache
reuses.  The spec-level view of a table -- every ok run's rows in plan order,
each tagged with its run's identity so that no analysis starts with a merge
-- is assembled from those files when read (:func:`detail_table`), never
stored a second time (issue 24: a full ``make reproduce`` stored each row
twice).  Folders written before that change kept the assembled tables at the
top (``<spec>/<table>.parquet``); they are read as they are, and a sweep into
such a folder removes them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from hierfair.experiment.manifest import Manifest
from hierfair.experiment.spec import DETAIL_TABLES

#: Prefix of the runs.parquet columns that hold one algorithm parameter each.
PARAM = "param_"
#: Identity columns every assembled detail table carries (with grid and params).
_TAGS = ("run", "label", "algorithm", "seed", "run_seed", "grid_point")

__all__ = ["DETAIL_TABLES", "PARAM", "FileTable", "FrameTable", "detail_table",
           "identity_columns", "kept_tables", "legacy_tables", "run_columns", "run_tables"]


def identity_columns(runs: pd.DataFrame) -> list[str]:
    """The columns of runs.parquet that say which run a row is: run, label,
    algorithm, seeds, grid point, grid values, parameters."""
    return [c for c in runs.columns
            if c in _TAGS or "." in c or "[" in c or c.startswith(PARAM)]


def detail_table(folder: Path, name: str, runs: pd.DataFrame | None = None,
                 columns: Sequence[str] | None = None) -> pd.DataFrame | None:
    """Table ``name`` of the spec folder ``folder``: every ok run's rows in
    plan order, tagged with the run's identity columns; ``columns`` selects
    (tags included).  None when no ok run kept the table."""
    folder = Path(folder)
    legacy = folder / f"{name}.parquet"
    if legacy.exists() and _assembled_by_us(folder, legacy):  # an older version's
        return pd.read_parquet(legacy, columns=list(columns) if columns else None)
    if runs is None:
        runs = pd.read_parquet(folder / "runs.parquet")
    paths = run_tables(folder, name, runs)
    if paths is None:
        return None
    ok = runs[runs["status"] == "ok"]
    tags = identity_columns(runs)
    wanted = None if columns is None else [c for c in columns if c not in tags]
    parts = []
    for row, path in zip(ok[tags].itertuples(index=False), paths, strict=True):
        part = pd.read_parquet(path, columns=wanted)
        for k, (col, value) in enumerate(zip(tags, row, strict=True)):
            part.insert(k, col, [value] * len(part))
        parts.append(part)
    if not parts:
        return None
    frame = pd.concat(_same_categories(parts), ignore_index=True)
    return frame if columns is None else frame[[c for c in columns if c in frame.columns]]


def run_tables(folder: Path, name: str, runs: pd.DataFrame) -> list[Path] | None:
    """Each ok run's file of table ``name``, in plan order (read one at a
    time, a week's utilisation is ~70 M rows a run); None when the spec does
    not keep the table, or a run lacks it, or the folder is an older
    version's with the table assembled at its top."""
    folder = Path(folder)
    legacy = folder / f"{name}.parquet"
    if (legacy.exists() and _assembled_by_us(folder, legacy)) or name not in kept_tables(folder):
        return None  # cached runs may hold more than the spec keeps
    paths = [folder / "runs" / run / f"{name}.parquet"
             for run in runs.loc[runs["status"] == "ok", "run"]]
    return paths if all(p.exists() for p in paths) else None


class FileTable(NamedTuple):
    """One run's table in its own parquet file, read a column, a row group
    or some columns at a time."""

    path: Path

    @property
    def names(self) -> list[str]:
        return pq.read_schema(self.path).names

    def rows(self) -> int:
        return pq.ParquetFile(self.path).metadata.num_rows

    def column(self, name: str) -> np.ndarray:
        return pq.read_table(self.path, columns=[name]).column(0).to_numpy()

    def frame(self, columns: Collection[str]) -> pd.DataFrame:
        """Those of ``columns`` the table has, in its order."""
        return pd.read_parquet(self.path, columns=[c for c in self.names if c in columns])

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
    """One run's rows of a table already in memory (an older version's,
    assembled at the folder's top, or a caller's), its own columns only."""

    data: pd.DataFrame

    @property
    def names(self) -> list[str]:
        return list(self.data.columns)

    def rows(self) -> int:
        return len(self.data)

    def column(self, name: str) -> np.ndarray:
        return self.data[name].to_numpy(float)

    def frame(self, columns: Collection[str]) -> pd.DataFrame:
        return self.data[[c for c in self.names if c in columns]]

    def bounds(self, name: str) -> tuple[float, float]:
        col = self.column(name)
        return float(col[0]), float(col[-1])

    def batches(self, names: list[str]) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
        yield self.column(names[0]), [self.column(n) for n in names[1:]]


def run_columns(folder: Path, name: str, runs: pd.DataFrame,
                columns: Sequence[str] | None = None, table: pd.DataFrame | None = None
                ) -> Iterator[tuple[tuple, FileTable | FrameTable]]:
    """Per ok run of ``runs`` that has rows of table ``name``: its runs.parquet
    row and its table, nothing read yet from a run's own file, so that a
    caller holds a run's columns (or row group) at a time: a paper-scale
    week's run has ~70 M utilisation rows and 2.1 M jobs, and 24 runs' at
    once do not fit in 24 GiB.  Without per-run files (an older version's
    folder) or given ``table`` (the spec-level table, read already), the
    rows come from that table, read whole once (``columns``: the ones to
    read of it), without their run identity columns."""
    ok = runs[runs["status"] == "ok"]
    paths = None if table is not None else run_tables(folder, name, runs)
    if paths is not None:
        for row, path in zip(ok.itertuples(index=False), paths, strict=True):
            yield row, FileTable(path)
        return
    if table is None:
        table = detail_table(folder, name, runs, columns=columns and ["run", *columns])
        if table is None:
            return
    # its identity columns, not every runs.parquet column: runs' ``tasks`` is a run's
    tags = [c for c in identity_columns(runs) if c in table.columns]
    parts = {run: FrameTable(part.drop(columns=tags))
             for run, part in table.groupby("run", sort=False)}
    for row in ok.itertuples(index=False):
        if row.run in parts:
            yield row, parts[row.run]


def _same_categories(parts: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """Give a categorical column the same categories in every run's part
    (their union, in first-seen order), so that it stays categorical when
    concatenated: a run stopped mid-eviction has one task state more."""
    if len(parts) < 2:
        return parts
    for col in parts[0].columns:
        cats = [p[col].cat.categories for p in parts if isinstance(p[col].dtype,
                                                                    pd.CategoricalDtype)]
        if len(cats) == len(parts) and any(not c.equals(cats[0]) for c in cats):
            union = list(dict.fromkeys(x for c in cats for x in c))
            for p in parts:
                p[col] = p[col].cat.set_categories(union)
    return parts


def _assembled_by_us(folder: Path, path: Path) -> bool:
    """An assembled table at the folder's top is read only when hierfair wrote
    it: listed in the manifest, or in a folder of a version before manifests
    (a file the user put there is never served as results)."""
    manifest = Manifest.read(folder)
    return manifest is None or path.name in manifest.files


def kept_tables(folder: Path) -> list[str]:
    """The detail tables the folder's spec keeps (its ``tables:``)."""
    path = folder / "spec.yaml"
    spec = yaml.safe_load(path.read_text()) if path.exists() else None
    return list((spec or {}).get("tables") or DETAIL_TABLES)


def legacy_tables(folder: Path) -> list[Path]:
    """Assembled tables an older version left at the top of ``folder``."""
    return [folder / f"{t}.parquet" for t in DETAIL_TABLES if (folder / f"{t}.parquet").exists()]
