"""Reading a results folder back: ``hierfair.load(folder)``.

A folder that ``hierfair run SPEC --out OUT`` wrote is ``OUT/<spec name>/``;
:func:`load` returns its tables as DataFrames (each read on first use) with
the spec and the claims' verdicts.  Every column is described in
docs/results.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from hierfair.errors import HierfairError
from hierfair.experiment.detail import DETAIL_TABLES, detail_table


@dataclass(frozen=True)
class Results:
    """One spec's results: ``runs`` (one row per run) and the detail tables
    ``jobs``, ``tasks``, ``allocations``, ``utilization``, ``decisions``,
    ``attempts``, ``preemptions`` (every ok run's rows, tagged with the run's
    label, seed, grid values and parameters)."""

    folder: Path
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @cached_property
    def runs(self) -> pd.DataFrame:
        return pd.read_parquet(self.folder / "runs.parquet")

    @cached_property
    def spec(self) -> dict[str, Any]:
        """The spec as the runs saw it (defaults filled in)."""
        return yaml.safe_load((self.folder / "spec.yaml").read_text())

    @cached_property
    def verdicts(self) -> list[dict[str, Any]]:
        path = self.folder / "claims.json"
        return json.loads(path.read_text()) if path.exists() else []

    def table(self, name: str) -> pd.DataFrame:
        """A detail table by name (empty when no run finished)."""
        if name not in DETAIL_TABLES:
            raise HierfairError(f"no table {name!r}; tables: runs, {', '.join(DETAIL_TABLES)}")
        if name not in self._tables:
            table = detail_table(self.folder, name, self.runs)
            self._tables[name] = pd.DataFrame() if table is None else table
        return self._tables[name]

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name in DETAIL_TABLES:
            return self.table(name)
        raise AttributeError(name)


def load(folder: str | Path) -> Results:
    """The results of one spec, from the folder ``hierfair run`` wrote for it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise HierfairError(f"{folder}: no such results folder")
    if not (folder / "runs.parquet").exists():
        inside = sorted(p.parent.name for p in folder.glob("*/runs.parquet"))
        hint = (f"; it holds the results of {', '.join(inside[:8])}: load one of them, e.g. "
                f"load({str(folder / inside[0])!r})" if inside else
                "; `hierfair run SPEC --out DIR` writes DIR/<spec name>/")
        raise HierfairError(f"{folder}: not one spec's results (no runs.parquet){hint}")
    return Results(folder)
