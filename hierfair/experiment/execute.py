"""One run, in whichever process executes it: simulate, write, summarize.

:func:`execute` runs one planned simulation, writes its detail tables and
then, last, its ``summary.json`` (what :mod:`hierfair.experiment.cache`
reuses), and returns its row; a failure or a timeout is recorded in the row,
never raised (unless asked, for a debugger).
"""

from __future__ import annotations

import json
import platform
import time
import traceback
import warnings
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from hierfair.algorithms import make_policy
from hierfair.datasets.arrivals import offered_load
from hierfair.errors import HierfairError
from hierfair.experiment.cache import _identity, code_version
from hierfair.experiment.detail import DETAIL_TABLES
from hierfair.experiment.manifest import SUMMARY, TRACEBACK, clear_run, file_digest
from hierfair.experiment.plan import PlannedRun, _digest
from hierfair.experiment.progress import RunProgress
from hierfair.experiment.results import summarize, write_text
from hierfair.experiment.spec import Experiment, build_experiment
from hierfair.experiment.table_files import TableFiles
from hierfair.sim import Livelock, RunTimeout


@lru_cache(maxsize=1)  # a worker reuses a spec's built inputs (traces read once) across runs
def _experiment(spec_json: str, source: str, data_dir: str | None, input_id: str
                ) -> Experiment:
    # One at a time, with one workload (Experiment.workload): a worker that
    # ran every grid point and seed of the paper-scale week held all six of
    # its workloads, ~130 MB each, between runs.  input_id keys the cache too: a
    # worker that outlives a sweep must not reuse a workload read from data
    # that has changed since.  The plan checked the size against the user's
    # memory limit already.
    return build_experiment(json.loads(spec_json), source=source, data_dir=data_dir,
                            max_memory=float("inf"))


def execute(run: PlannedRun, folder: str, source: str, data_dir: str | None,
            timeout: float | None, reraise: bool = False,
            progress_every: float | None = None) -> dict[str, Any]:
    """Run one simulation; write its details and summary; return its row.
    ``reraise``: a bug in the run is recorded, then raised (``--pdb``);
    ``progress_every``: seconds between progress lines inside the run
    (:class:`~hierfair.experiment.progress.RunProgress`; None: none)."""
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"status": "ok", "error": "", "traceback": "", "warnings": ""}
    run_dir = Path(folder) / "runs" / run.run_id
    # never an old summary beside new tables, nor old tables beside a failure
    clear_run(run_dir, DETAIL_TABLES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bug = _simulate(run, row, run_dir, source, data_dir, timeout, progress_every)
    # numpy's and pandas' warnings are recorded with the run, never printed raw
    row["warnings"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
    row.update(_identity(run))
    row.update(code_version=code_version(), host=platform.node(),
               started_at=started.isoformat(), finished_at=datetime.now(UTC).isoformat(),
               wall_seconds=time.perf_counter() - t0)
    # the run folder's manifest: what each file's bytes were, checked before
    # reuse and before a rerun replaces it
    files = {name: file_digest(run_dir / name)
             for name in (TRACEBACK, *(f"{t}.parquet" for t in run.spec_data["tables"]))
             if (run_dir / name).exists()}
    write_text(json.dumps({"key": run.key, "row": row, "files": files}, sort_keys=True,
                          default=float), run_dir / SUMMARY)
    if bug is not None and reraise:
        raise bug
    return row


def _simulate(run: PlannedRun, row: dict[str, Any], run_dir: Path, source: str,
              data_dir: str | None, timeout: float | None,
              progress_every: float | None = None) -> Exception | None:
    """Run the simulation into ``row`` and ``run_dir``; any failure is
    recorded, a bug's traceback too (returned, for ``--pdb``)."""
    progress = (RunProgress(f"{run.spec_data['name']}: {run.run_id}", progress_every)
                if progress_every else None)
    try:
        exp = _experiment(json.dumps(run.spec_data, sort_keys=True), source, data_dir,
                          run.input_id)
        deadline = time.monotonic() + timeout if timeout else None
        watch = progress.watch(deadline) if progress else None
        # a table that outgrows a row group is written as the run goes
        with TableFiles(run_dir) as files:
            sim = exp.simulator(make_policy(run.algorithm["name"], run.algorithm.get("params")),
                                run.seed, deadline=deadline,
                                placement=run.algorithm.get("placement"), watch=watch,
                                spill_dir=str(run_dir), table_sink=files.write)
            try:
                result = sim.run(until=exp.spec.stop_at)
            finally:
                if progress:
                    progress.close()
            row.update(summarize(result, **exp.spec.metrics.model_dump()))
            row["workload_source"] = result.workload_source
            workload = exp.workload(run.seed)
            row.update(input_id=_digest(workload.input_identity),
                       input_fallback=bool(workload.fallback),
                       input_skipped_lines=workload.skipped_lines,
                       offered_load=offered_load(workload, exp.cluster))
            files.finish_all(result, exp.spec.tables)
        if result.loop:  # stopped, not failed: its tables show the loop
            row.update(status="loop", error=result.loop)
    except RunTimeout:
        row.update(status="timeout", error=f"exceeded the {timeout:g} s timeout")
    except HierfairError as exc:  # the input, found at run time: its line says it all
        row.update(status="failed", error=str(exc))
    except Exception as exc:  # a bug, a PolicyError, a Livelock: kept to debug
        if isinstance(exc, Livelock):
            row.update(error=str(exc))
        row.update(status="failed", traceback=traceback.format_exc(),
                   error=row["error"] or f"{type(exc).__name__}: {exc}")
        write_text(row["traceback"], run_dir / TRACEBACK)
        return exc
    return None
