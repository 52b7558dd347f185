"""Sweeps: every algorithm x grid point x seed of a spec, in parallel, cached.

A spec's ``grid:`` maps field paths to lists of values; the sweep runs the
cartesian product, for every algorithm and every seed::

    grid:
      hierarchy.levels: [2, 3, 4]
      workload.jobs: [100, 200]
      algorithms[0].params.backfill: [true, false]

Each run gets a *run seed* derived from the base seed and the grid point
(algorithm parameters excluded, so all algorithms of a grid point see the
same workload); without a grid the run seed is the base seed.  Identical runs
(an algorithm the grid point does not touch) are planned once.

Runs execute on local processes (joblib's ``loky``, all cores by default)
or on a Dask cluster (``backend="dask"`` or a ``scheduler`` address; a
LocalCluster when no address is given), each run a future of its own.
Results come back as they finish.  Each run writes its detail tables and
then, last, its ``summary.json`` under ``OUT/<spec>/runs/<run id>/`` --
atomically -- and the parent rewrites ``runs.parquet`` after every
completion.  A run whose summary
exists with the same key and code version is not run again, so a sweep
killed at any point (Ctrl-C, SIGKILL) and started again runs exactly the
missing runs.  ``force=True`` reruns everything.

A run that raises is recorded with its error, one that exceeds ``timeout``
seconds as timed out, one that every Dask worker running it died on (Dask's
``KilledWorker``, e.g. past the workers' memory limit) as failed, "lost"; the sweep
goes on, and the caller reports failures at the end.  A worker that dies is
no failure: Dask runs its runs again on the others.

The parts, each its own module: the grid's path syntax
(:mod:`~hierfair.experiment.grid`), planning (:mod:`~hierfair.experiment.plan`),
code identity and cached results (:mod:`~hierfair.experiment.cache`), one run
(:mod:`~hierfair.experiment.execute`), runs.parquet
(:mod:`~hierfair.experiment.runs_table`), the backends
(:mod:`~hierfair.experiment.workers`) and the progress line
(:mod:`~hierfair.experiment.progress`); this module runs a plan through them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from hierfair.errors import RunFailed, SpecError
from hierfair.experiment.cache import (
    _git_commit,
    _identity,
    cached_row,
    code_files,
    code_version,
    describe_plan,
)
from hierfair.experiment.claims import evaluate, verdicts_json
from hierfair.experiment.detail import DETAIL_TABLES, detail_table
from hierfair.experiment.execute import _experiment, _simulate, execute
from hierfair.experiment.grid import _grid_path_problems, _tokens, apply_grid_value
from hierfair.experiment.manifest import TRACEBACK, Manifest, relative_source
from hierfair.experiment.plan import (
    _NOT_IN_KEY,
    Plan,
    PlannedRun,
    _check_run_count,
    _digest,
    plan,
    resource_warnings,
    run_seed,
)
from hierfair.experiment.progress import Progress, _clock
from hierfair.experiment.results import remove_stale_temporaries
from hierfair.experiment.runs_table import (
    ENDED,
    _FIRST,
    _LAST,
    _STATUS,
    _Batch,
    _column_order,
    _drop_assembled,
    _write_runs,
)
from hierfair.experiment.slices import NOT_RUN, Only, describe, selects
from hierfair.experiment.spec import SeedRange
from hierfair.experiment.workers import _backend, give_back_memory

# This module's own functions, and every name it defined before it was split
# by job, for code that imports them from here.  Code looks a name up in the
# module that defines it now: patch it there, not here.
__all__ = [
    "sweep", "execute_all", "_run_plan", "_groups",
    # hierfair.experiment.grid
    "_tokens", "apply_grid_value", "_grid_path_problems",
    # hierfair.experiment.plan
    "_NOT_IN_KEY", "PlannedRun", "Plan", "_digest", "run_seed", "plan", "_check_run_count",
    "resource_warnings",
    # hierfair.experiment.cache
    "code_version", "code_files", "_identity", "_git_commit", "cached_row", "describe_plan",
    # hierfair.experiment.execute
    "_experiment", "execute", "_simulate",
    # hierfair.experiment.workers
    "_backend",
    # hierfair.experiment.runs_table
    "_Batch", "_FIRST", "_STATUS", "_LAST", "_column_order", "_write_runs", "_drop_assembled",
    # hierfair.experiment.progress
    "Progress", "_clock",
]


def sweep(data: Mapping[str, Any], out: str | Path, *, source: str = "",
          data_dir: str | None = None, jobs: int | None = None, backend: str = "loky",
          scheduler: str | None = None, force: bool = False, timeout: float | None = None,
          progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
          max_memory: float | None = None, planned: Plan | None = None,
          replace: bool = False, max_runs: int | None = None, fail_fast: bool = False,
          debug: bool = False, run_progress: float | None = None,
          only: Sequence[Only] = ()) -> pd.DataFrame:
    """Run (or reuse) every run of the spec; return runs.parquet's frame.

    ``planned`` is the spec's :func:`plan` when the caller already made it.
    With adaptive seeds (``seeds: {min, max}``) the sweep adds seeds, in
    order, while a claim is inconclusive, up to ``max``.  Results another
    spec file wrote under the same name are replaced only with ``replace``.
    ``jobs=0`` runs in this process, without workers; ``fail_fast`` stops at
    the first failed run (:class:`RunFailed`); ``debug`` raises a run's bug
    itself (for a debugger), in this process; ``run_progress``: seconds
    between progress lines inside each run (None: none); ``only``: a slice
    (:mod:`~hierfair.experiment.slices`), the runs of other grid points
    reused when they have results and else left out (and their claims n/a);
    ``force`` then reruns the slice's runs only."""
    planned = planned or plan(data, source, data_dir, max_memory, max_runs=max_runs)
    base = planned.experiment
    folder = Path(out) / base.spec.name
    manifest = Manifest.open(folder)
    manifest.own_spec(relative_source(source, Path(out)), replace)
    manifest.check_runs((run.run_id for run in planned.runs), DETAIL_TABLES)
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)  # left by a sweep killed mid-write
    manifest.write_text("spec.yaml", base.resolved_yaml())
    needs_runs = any(c.over == "run" for claim in base.spec.claims for c in claim.checks)
    seeds = base.spec.seeds
    while True:
        frame = _run_plan(planned.runs, manifest, source, data_dir, 0 if debug else jobs,
                          backend, scheduler, force, timeout, progress,
                          base.spec.interleave, fail_fast or debug, debug, run_progress,
                          only)
        _drop_assembled(manifest)
        try:
            verdicts = evaluate(base, _with_left_out(frame, planned.runs, only),
                                detail_table(folder, "allocations", frame)
                                if needs_runs else None, folder)
        except SpecError as exc:  # the runs are saved; only the claim is wrong
            raise exc.with_file(source) if source else exc from None
        more = seeds.more(len({r.base_seed for r in planned.runs})) \
            if isinstance(seeds, SeedRange) and any(v.verdict == "inconclusive"
                                                    for v in verdicts) else None
        if more is None:
            break
        planned = plan(data, source, data_dir, max_memory, seeds=seeds.first(more),
                       max_runs=max_runs, overrides=planned.overrides)
    if verdicts:
        manifest.write_text("claims.json", verdicts_json(verdicts))
    else:  # an old file would show verdicts the spec no longer asks for
        manifest.remove("claims.json")
    return frame


def _run_plan(runs: Sequence[PlannedRun], manifest: Manifest, source: str,
              data_dir: str | None, jobs: int | None, backend: str, scheduler: str | None,
              force: bool, timeout: float | None,
              progress: Callable[[int, int, dict[str, Any] | None], None] | None,
              interleave: bool = False, fail_fast: bool = False,
              debug: bool = False, run_progress: float | None = None,
              only: Sequence[Only] = ()) -> pd.DataFrame:
    """Every run of one plan, reused from the cache or executed; runs.parquet.
    ``interleave``: the runs of one seed and grid point go to one worker;
    ``only``: a slice, outside which runs without results are left out.

    At every moment runs.parquet lists only runs whose tables are complete:
    before any run is (re)written it is rewritten with the reused rows alone
    (and claims.json, decided from the old rows, goes), and rows are added in
    batches as runs finish -- so an interrupted sweep leaves each run's row
    and its tables, or neither, and a rerun completes it."""
    folder = manifest.folder
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    for run in runs:
        mine = selects(only, run.grid)
        row = None if force and mine else cached_row(run, folder)
        if row is None:
            if mine:
                todo.append(run)
        else:  # its place in this plan (an adaptive sweep's later plans insert seeds),
            # and what this command changed (the row is this command's)
            rows[run.run_id] = {**row, "run_index": run.index, "overrides": run.overrides}
    done, total = len(rows), len(rows) + len(todo)  # a slice: its own runs and the cached
    if progress:
        progress(done, total, None)
    if todo:
        manifest.check_runs((run.run_id for run in todo), DETAIL_TABLES)  # new seeds too
        manifest.add_runs(run.run_id for run in todo)
        _write_runs(rows, manifest)
        manifest.remove("claims.json")
        batch = _Batch()
        groups = _groups(todo, interleave)
        with nullcontext() if jobs == 0 else _backend(backend, jobs, scheduler) as run_all:
            if jobs == 0:  # in this process, no worker: breakpoints and --pdb work
                results: Any = (execute_all(g, str(folder), source, data_dir, timeout, debug,
                                             run_progress)
                                for g in groups)
            else:  # absolute: a Dask worker elsewhere would write under its own directory
                results = run_all(execute_all, [(g, str(folder.absolute()), source, data_dir,
                                                 timeout, False, run_progress)
                                                for g in groups], _lost)
            for group_rows in results:
                for row in group_rows:
                    rows[row["run"]] = row
                    done += 1
                    if progress:
                        progress(done, total, row)
                    if fail_fast and row["status"] not in ENDED:
                        _write_runs(rows, manifest)
                        raise RunFailed(row, folder / "runs" / row["run"] / TRACEBACK)
                if batch.due(len(group_rows), len(rows)):
                    _write_runs(rows, manifest)
        remove_stale_temporaries(folder)  # a worker killed mid-write (its run ran again)
    return _write_runs(rows, manifest)


def _with_left_out(frame: pd.DataFrame, runs: Sequence[PlannedRun],
                   only: Sequence[Only]) -> pd.DataFrame:
    """runs.parquet's rows and, for the claims alone, a row of status
    ``not run`` for each planned run a slice left out: a claim that needs one
    is n/a, never decided on the runs that happen to exist."""
    have = set(frame["run"]) if len(frame) else set()
    why = f"not run yet ({describe(only)} ran other grid points)"
    out = [{"status": NOT_RUN, "error": why, "traceback": "", "warnings": "", **_identity(run)}
           for run in runs if run.run_id not in have]
    return pd.concat([frame, pd.DataFrame(out)], ignore_index=True) if out else frame


def _groups(todo: Sequence[PlannedRun], interleave: bool) -> list[list[PlannedRun]]:
    """One run per worker task; interleaved, the runs of a seed and grid point
    together, the first algorithm rotating with the seed (no algorithm always
    runs first in a fresh process)."""
    if not interleave:
        return [[run] for run in todo]
    groups: dict[tuple[int, int], list[PlannedRun]] = {}
    for run in todo:
        groups.setdefault((run.grid_point, run.base_seed), []).append(run)
    return [g[s % len(g):] + g[:s % len(g)] for (_, s), g in groups.items()]


def _lost(task: tuple, why: str) -> list[dict[str, Any]]:
    """The rows of a group no worker could finish (each worker running it
    died): a run of it that did finish (its summary written before a later
    run killed the worker) keeps its row; the others are failed, with
    ``why``, and keep no result, so the next ``hierfair run`` runs them again."""
    now = datetime.now(UTC).isoformat()
    folder = Path(task[1])
    return [cached_row(run, folder) or
            {"status": "failed", "error": why, "traceback": "", "warnings": "",
             **_identity(run), "code_version": code_version(), "host": "",
             "started_at": now, "finished_at": now, "wall_seconds": float("nan")}
            for run in task[0]]


def execute_all(runs: Sequence[PlannedRun], folder: str, source: str, data_dir: str | None,
                timeout: float | None, reraise: bool = False,
                progress_every: float | None = None) -> list[dict[str, Any]]:
    """:func:`execute` each run in turn, in this process, giving back what
    each freed (:func:`~hierfair.experiment.workers.give_back_memory`)."""
    rows = []
    for run in runs:
        rows.append(execute(run, folder, source, data_dir, timeout, reraise, progress_every))
        give_back_memory()
    return rows
