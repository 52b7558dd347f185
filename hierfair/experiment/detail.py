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

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import yaml

from hierfair.experiment.manifest import Manifest
from hierfair.experiment.spec import DETAIL_TABLES

#: Prefix of the runs.parquet columns that hold one algorithm parameter each.
PARAM = "param_"
#: Identity columns every assembled detail table carries (with grid and params).
_TAGS = ("run", "label", "algorithm", "seed", "run_seed", "grid_point")

__all__ = ["DETAIL_TABLES", "PARAM", "detail_table", "identity_columns", "kept_tables",
           "legacy_tables"]


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
