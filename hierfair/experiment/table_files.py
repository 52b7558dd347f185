"""A run's tables written as the run goes, a row group at a time.

A table that outgrows ``Recorder.FOLD`` rows (2^20, pyarrow's own row-group
size) hands its rows to :meth:`TableFiles.write` as it grows; each batch is
the file's next row group, in a temporary beside the file, which
:meth:`TableFiles.finish` completes with the rows left at the end and puts
in place.  The bytes are those of the whole table written at once (pandas'
``to_parquet``; tests/test_streaming.py), so a long run's tables need not
fit in memory.  A table that never grew so far is written at the end, as
every table was before.  An interruption leaves a temporary named after its
writer, which the next sweep removes (:func:`remove_stale_temporaries`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hierfair.experiment.results import temporary_name, write_parquet
from hierfair.experiment.spec_models import DETAIL_TABLES
from hierfair.experiment.workers import release_freed

if TYPE_CHECKING:
    from hierfair.sim.result import SimulationResult

#: Before a table of at least this many cells is written, what the run and
#: the tables before it freed goes back to the system: parquet's encoders
#: hold 3-4 times a table's bytes at their peak, in pyarrow's pool, which
#: cannot reuse what glibc's heap keeps, nor glibc what the pool keeps
#: (docs/performance.md, "The end of a run").
GIVE_BACK_CELLS = 1 << 20


class TableFiles:
    """The parquet files of one run folder, written a row group at a time."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._open: dict[str, tuple[pq.ParquetWriter, str]] = {}

    def write(self, name: str, rows: pd.DataFrame) -> None:
        """The next row group of table ``name``."""
        _check(name)
        table = pa.Table.from_pandas(rows, preserve_index=False)
        if name not in self._open:
            tmp = temporary_name(self.run_dir / f"{name}.parquet")
            self._open[name] = (pq.ParquetWriter(tmp, table.schema), tmp)
        self._open[name][0].write_table(table)

    def finish(self, name: str, rest: pd.DataFrame) -> None:
        """Table ``name`` is complete with ``rest``: put its file in place."""
        _check(name)
        if name not in self._open:
            write_parquet(rest, self.run_dir / f"{name}.parquet")
            return
        if len(rest):  # an empty row group would not be in a file written at once
            self.write(name, rest)
        writer, tmp = self._open.pop(name)
        writer.close()
        os.replace(tmp, self.run_dir / f"{name}.parquet")

    def finish_all(self, result: SimulationResult, names: Iterable[str]) -> None:
        """:meth:`finish` each of a run's tables in turn, each let go of once
        written; before a large one, the memory freed so far is given back."""
        for name in names:
            rest = result.rest(name)
            if rest.size >= GIVE_BACK_CELLS:
                release_freed()
            self.finish(name, rest)
            del rest
            result.let_go(name)

    def __enter__(self) -> TableFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Whatever was not finished (the run failed) is removed."""
        for writer, tmp in self._open.values():
            writer.close()
            Path(tmp).unlink(missing_ok=True)
        self._open.clear()


def _check(name: str) -> None:
    """Only a run's own tables: the one file this writes or replaces is
    ``<run folder>/<table>.parquet`` (which the run folder's manifest lists)."""
    if name not in DETAIL_TABLES:
        raise ValueError(f"not a table of a run: {name!r}")
