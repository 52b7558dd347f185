"""runs.parquet: one row per run, its columns in a fixed order, rewritten in batches.

The columns: identity, grid values and params, status, metrics (by name),
provenance -- the same order whether a row was just computed or read back
from the cache.  A sweep rewrites the file as runs finish (:class:`_Batch`
says when), so that it lists only runs whose tables are complete.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from hierfair.experiment.detail import PARAM, legacy_tables
from hierfair.experiment.manifest import Manifest
from hierfair.experiment.results import write_parquet

#: The statuses of a run that ended as the simulation decided: ``ok``, or
#: ``loop`` (stopped in a preemption loop, hierfair.sim.loops: a finding, its
#: tables kept to the stop).  Every other status is a run that did not finish.
ENDED = ("ok", "loop")
#: The columns a claim may read of a ``loop`` run (cut short: its waits,
#: utilisation and allocations describe only the time to the loop).
LOOP_COLUMNS = frozenset({"looped", "preemptions", "preemptions_max_job", "last_preemption",
                          "stopped_at"})

_FIRST = ("run", "run_index", "spec", "spec_hash", "algorithm", "label", "params", "seed",
          "run_seed", "grid_point", "overrides")
_STATUS = ("status", "error", "traceback", "warnings", "workload_source", "input_id",
           "input_fallback", "input_skipped_lines")
_LAST = ("hierfair_version", "code_version", "git_commit", "host", "started_at", "finished_at",
         "wall_seconds")


def _column_order(columns: Sequence[str]) -> list[str]:
    """Identity, grid values, status, metrics (by name), provenance -- the same
    order whether a row was just computed or read back from the cache."""
    def rank(col: str) -> tuple[int, int, str]:
        if col in _FIRST:
            return (0, _FIRST.index(col), "")
        if "." in col or "[" in col:
            return (1, 0, col)
        if col.startswith(PARAM):
            return (1, 1, col)
        if col in _STATUS:
            return (2, _STATUS.index(col), "")
        if col in _LAST:
            return (4, _LAST.index(col), "")
        return (3, 0, col)
    return sorted(columns, key=rank)


def _write_runs(rows: Mapping[str, dict[str, Any]], manifest: Manifest) -> pd.DataFrame:
    """runs.parquet with ``rows`` in plan order; none at all without rows."""
    if not rows:
        manifest.remove("runs.parquet")
        return pd.DataFrame()
    frame = pd.DataFrame(sorted(rows.values(), key=lambda r: r["run_index"]))
    frame = frame[_column_order(list(frame.columns))]
    with manifest.writing("runs.parquet") as path:
        write_parquet(frame, path)
    return frame


def _drop_assembled(manifest: Manifest) -> None:
    """Remove the spec-level copies of the detail tables that versions before
    this one assembled at the top of the folder (they would now be stale, and
    the same rows are in the runs' own files: hierfair.experiment.detail)."""
    for path in legacy_tables(manifest.folder):
        manifest.remove(path.name)


class _Batch:
    """When to rewrite runs.parquet: after a tenth more rows or ten seconds,
    so that a sweep's bookkeeping grows with its length, not its square."""

    def __init__(self) -> None:
        self.pending = 0
        self.last = time.monotonic()

    def due(self, added: int, total: int) -> bool:
        self.pending += added
        if self.pending * 10 < total and time.monotonic() - self.last < 10:
            return False
        self.pending, self.last = 0, time.monotonic()
        return True
