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

Runs execute through joblib: local processes (``loky``, all cores by
default) or a Dask cluster (``backend="dask"``, through joblib's dask
backend; a LocalCluster when no scheduler address is given).  Results come
back as they finish.  Each run writes its detail tables and then, last, its
``summary.json`` under ``OUT/<spec>/runs/<run id>/`` -- atomically -- and the
parent rewrites ``runs.parquet`` after every completion.  A run whose summary
exists with the same key and code version is not run again, so a sweep
killed at any point (Ctrl-C, SIGKILL) and started again runs exactly the
missing runs.  ``force=True`` reruns everything.

A run that raises is recorded with its error, one that exceeds ``timeout``
seconds as timed out; the sweep goes on, and the caller reports failures at
the end.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import platform
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierfair import __version__
from hierfair.algorithms import make_policy, policy_code
from hierfair.datasets.arrivals import offered_load
from hierfair.errors import EnvironmentProblem, HierfairError, RunFailed, SpecError
from hierfair.experiment.claims import evaluate, verdicts_json
from hierfair.experiment.detail import (
    DETAIL_TABLES,
    PARAM,
    detail_table,
    identity_columns,
    legacy_tables,
)
from hierfair.experiment.manifest import (
    SUMMARY,
    TRACEBACK,
    Manifest,
    clear_run,
    file_digest,
    relative_source,
)
from hierfair.experiment.results import (
    remove_stale_temporaries,
    summarize,
    write_parquet,
    write_text,
)
from hierfair.experiment.limits import MAX_RUNS
from hierfair.experiment.spec import AlgorithmSpec, SeedRange, Experiment, build_experiment
from hierfair.experiment.workers import parallel, quiet_workers
from hierfair.sim import Livelock, RunTimeout
from hierfair.sim.model import Workload

# Spec fields that are not part of a run's identity (the run names them itself).
_NOT_IN_KEY = ("algorithms", "seeds", "grid", "name", "description", "claims", "report",
               "tables", "interleave")


@dataclass(frozen=True)
class PlannedRun:
    """One simulation of the sweep, picklable for any worker."""

    index: int
    run_id: str
    algorithm: dict[str, Any]
    grid_point: int
    grid: dict[str, Any]
    base_seed: int
    seed: int
    spec_data: dict[str, Any]
    key: str
    #: Digest of the input the plan saw (trace contents, or the fallback).
    input_id: str = ""
    #: What the command line changed (hierfair.experiment.overrides), or "".
    overrides: str = ""

    @property
    def label(self) -> str:
        return AlgorithmSpec.model_validate(self.algorithm).display


@dataclass(frozen=True)
class Plan:
    """A validated spec, its runs in a fixed order, and what the user should
    know about its input (fallbacks, skipped lines, sorted rows), said once."""

    experiment: Experiment
    runs: list[PlannedRun]
    notes: tuple[str, ...] = ()
    #: what is probably a mistake but runs (a resource no job asks for)
    warnings: tuple[str, ...] = ()
    #: what the command line changed, recorded in every run's row
    overrides: str = ""


# -- planning --------------------------------------------------------------
def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if not m:
            raise SpecError("not a field path (use a.b[0].c)", where=f"grid.{path}", value=path)
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def apply_grid_value(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` (``a.b[0].c``) in ``data`` to ``value``; the parent must exist."""
    tokens = _tokens(path)
    node: Any = data
    for tok in tokens[:-1]:
        try:
            node = node[tok]
        except (KeyError, IndexError, TypeError):
            raise SpecError("no such field in the spec", where=f"grid.{path}",
                            value=tok) from None
    last = tokens[-1]
    if isinstance(node, list) and isinstance(last, int) and last >= len(node):
        raise SpecError("index out of range", where=f"grid.{path}", value=last)
    if not isinstance(node, dict | list):
        raise SpecError("no such field in the spec", where=f"grid.{path}", value=last)
    node[last] = value


def _grid_path_problems(data: Mapping[str, Any]) -> list[SpecError]:
    """The grid paths that name no field of the spec as written (checked
    when the spec has other problems, so that validate reports all at once)."""
    grid = data.get("grid") if isinstance(data, Mapping) else None
    if not isinstance(grid, Mapping):
        return []
    raw = copy.deepcopy(dict(data))
    if isinstance(raw.get("algorithms"), list):  # `- drf` is `- {name: drf}`
        raw["algorithms"] = [{"name": a} if isinstance(a, str) else a
                             for a in raw["algorithms"]]
    problems = []
    for path, values in grid.items():
        try:
            apply_grid_value(copy.deepcopy(raw), str(path), values[0] if values else None)
        except SpecError as exc:
            problems.append(exc)
        except Exception:  # noqa: BLE001 - a path the raw data cannot even be walked by
            continue
    return problems


def _digest(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


def run_seed(base_seed: int, grid: Mapping[str, Any]) -> int:
    """The seed a run's workload is built with: the base seed itself without a
    grid, else derived from it and the grid point (algorithm params excluded)."""
    point = {k: v for k, v in grid.items() if not k.startswith("algorithms")}
    if not point:
        return base_seed
    return int(_digest([base_seed, point], 8), 16) % (2**31)


def plan(data: Mapping[str, Any], source: str = "", data_dir: str | None = None,
         max_memory: float | None = None, seeds: Sequence[int] | None = None,
         max_runs: int | None = None,
         progress: Callable[[int, int], None] | None = None, overrides: str = "") -> Plan:
    """Validate the spec and every grid point exactly as a run will see them
    (workloads built, traces read, sizes checked); list the runs in a fixed order.
    ``seeds`` replaces the spec's base seeds (an adaptive range's later rounds).
    More than ``max_runs`` runs (default MAX_RUNS) is refused before any grid
    point is built; ``progress(done, total)`` hears of each grid point checked.

    This is the one place that decides validity: ``validate`` and ``run``
    both call it, so what one accepts the other runs."""
    try:
        base = build_experiment(copy.deepcopy(data), source=source, data_dir=data_dir,
                                check_workload=False, max_memory=max_memory)
    except SpecError as exc:  # report a misspelt grid path in the same pass
        raise SpecError.combine([exc, *_grid_path_problems(data)]) from None
    resolved = base.spec.model_dump(mode="json")
    grid = resolved.pop("grid", {}) or {}
    _check_run_count(base, grid, seeds, max_runs)
    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*grid.values())] or [{}]
    runs: list[PlannedRun] = []
    notes: dict[str, None] = {}  # ordered, without repeats
    warned: dict[str, None] = {}
    seen: set[str] = set()
    problems: list[SpecError] = []  # every grid point is checked; all problems reported
    for g, point in enumerate(points):
        if progress:
            progress(g, len(points))
        spec_data = copy.deepcopy(resolved)
        try:
            for path, value in point.items():
                apply_grid_value(spec_data, path, value)
            exp = build_experiment(copy.deepcopy(spec_data), source=source,
                                   data_dir=data_dir, max_memory=max_memory)
        except SpecError as exc:
            if not point:
                raise
            at = ", ".join(f"{k}={v!r}" for k, v in point.items())
            problems += [p if p.where and p.where.startswith("grid.") else
                         SpecError(p.message, file=p.file, value=p.value,
                                   where=f"{p.where or 'spec'} (at grid point {at})")
                         for p in exc.problems()]
            continue
        workload = exp.workload(exp.spec.seed_list[0])
        notes.update(dict.fromkeys(([workload.fallback] if workload.fallback else [])
                                   + list(workload.notes)))
        warned.update(dict.fromkeys(resource_warnings(exp, workload)))
        inputs = _digest(workload.input_identity)
        identity = {k: v for k, v in spec_data.items() if k not in _NOT_IN_KEY}
        for a, algo in enumerate(spec_data["algorithms"]):
            # grid keys of *other* algorithms do not describe this run
            mine = {k: v for k, v in point.items()
                    if not k.startswith("algorithms[") or k.startswith(f"algorithms[{a}]")}
            # a policy of the user's own: its source is part of the key
            own = [code] if (code := policy_code(algo["name"])) else []
            for seed in base.spec.seed_list if seeds is None else seeds:
                rseed = run_seed(seed, point)
                key = _digest([identity, algo, rseed, inputs, *own], 32)
                if key in seen:  # e.g. drf under a grid over another algorithm's params
                    continue
                seen.add(key)
                run_id = f"{AlgorithmSpec.model_validate(algo).display}-s{seed}-{key[:8]}"
                runs.append(PlannedRun(index=len(runs), run_id=run_id, algorithm=algo,
                                       grid_point=g, grid=mine, base_seed=seed, seed=rseed,
                                       spec_data=spec_data, key=key, input_id=inputs,
                                       overrides=overrides))
    if problems:
        raise SpecError.combine(problems)
    return Plan(base, runs, tuple(notes), tuple(warned), overrides)


def _check_run_count(base: Experiment, grid: Mapping[str, list], seeds: Sequence[int] | None,
                     max_runs: int | None) -> None:
    """Refuse, before building anything, a spec of more runs than allowed:
    grid points x algorithms x seeds (an adaptive range counts its max)."""
    limit = MAX_RUNS if max_runs is None else max_runs
    spec = base.spec
    n_seeds = len(seeds) if seeds is not None else (
        spec.seeds.max if isinstance(spec.seeds, SeedRange) else len(spec.seed_list))
    points = math.prod(len(v) for v in grid.values())
    total = points * len(spec.algorithms) * n_seeds
    if total > limit:
        raise SpecError(f"{points:,} grid point(s) x {len(spec.algorithms)} algorithm(s) x "
                        f"{n_seeds} seed(s) = {total:,} runs, over the limit of {limit:,} "
                        "(raise it with --max-runs)", where="grid" if grid else "seeds",
                        value=total)


def resource_warnings(exp: Experiment, workload: Workload) -> list[str]:
    """A resource no server has, or no job asks for: its utilisation is 0 and
    it separates nothing -- usually a forgotten demand (a trace names CPUs
    and memory only)."""
    total = exp.cluster.total
    asked = np.zeros(len(total), dtype=bool)
    for job in workload.jobs:
        asked |= job.demand > 0
    out = []
    for r, name in enumerate(exp.cluster.resources):
        if total[r] <= 0:
            out.append(f"cluster.resources: no server has any {name}")
        elif not asked[r]:
            out.append(f"no job asks for {name}: util_{name} will be 0 (give jobs {name} "
                       "demands, e.g. workload.extra_demands; docs/workloads.md)")
    return out


# -- one run -----------------------------------------------------------------
@lru_cache(maxsize=4)  # a worker reuses a spec's built inputs (traces read once) across runs
def _experiment(spec_json: str, source: str, data_dir: str | None, input_id: str
                ) -> Experiment:
    # input_id keys the cache too: a worker that outlives a sweep must not reuse
    # a workload read from data that has changed since.  The plan checked the
    # size against the user's memory limit already.
    return build_experiment(json.loads(spec_json), source=source, data_dir=data_dir,
                            max_memory=float("inf"))


@lru_cache(maxsize=1)
def code_version() -> str:
    """hierfair's version plus a hash of its source: any code change reruns."""
    h = hashlib.sha256(__version__.encode())
    for path, name in code_files():
        h.update(name.encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def code_files() -> list[tuple[Path, str]]:
    """Every source file of hierfair (subpackages included) with a stable name
    relative to its package root: what :func:`code_version` hashes."""
    import hierfair.algorithms
    import hierfair.datasets

    out = []
    for pkg in (sys.modules["hierfair"], hierfair.algorithms, hierfair.datasets):
        root = Path(pkg.__file__).parent
        skip = {Path(p.__file__).parent for p in (hierfair.algorithms, hierfair.datasets)}
        for path in sorted(root.rglob("*.py")):
            if pkg is sys.modules["hierfair"] and any(d in path.parents for d in skip):
                continue  # installed inside hierfair only in a wheel; hashed as their own
            out.append((path, f"{pkg.__name__}:{path.relative_to(root).as_posix()}"))
    return out


def execute(run: PlannedRun, folder: str, source: str, data_dir: str | None,
            timeout: float | None, reraise: bool = False) -> dict[str, Any]:
    """Run one simulation; write its details and summary; return its row.
    ``reraise``: a bug in the run is recorded, then raised (``--pdb``)."""
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"status": "ok", "error": "", "traceback": "", "warnings": ""}
    run_dir = Path(folder) / "runs" / run.run_id
    # never an old summary beside new tables, nor old tables beside a failure
    clear_run(run_dir, DETAIL_TABLES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bug = _simulate(run, row, run_dir, source, data_dir, timeout)
    # numpy's and pandas' warnings are recorded with the run, never printed raw
    row["warnings"] = "; ".join(dict.fromkeys(str(w.message) for w in caught))
    row.update(_identity(run))
    row.update(code_version=code_version(), host=platform.node(),
               started_at=started.isoformat(), finished_at=datetime.now(UTC).isoformat(),
               wall_seconds=time.perf_counter() - t0)
    # the manifest: what each detail table's bytes were, checked before reuse
    files = {f"{t}.parquet": file_digest(run_dir / f"{t}.parquet")
             for t in run.spec_data["tables"] if (run_dir / f"{t}.parquet").exists()}
    write_text(json.dumps({"key": run.key, "row": row, "files": files}, sort_keys=True,
                          default=float), run_dir / SUMMARY)
    if bug is not None and reraise:
        raise bug
    return row


def _simulate(run: PlannedRun, row: dict[str, Any], run_dir: Path, source: str,
              data_dir: str | None, timeout: float | None) -> Exception | None:
    """Run the simulation into ``row`` and ``run_dir``; any failure is
    recorded, a bug's traceback too (returned, for ``--pdb``)."""
    try:
        exp = _experiment(json.dumps(run.spec_data, sort_keys=True), source, data_dir,
                          run.input_id)
        deadline = time.monotonic() + timeout if timeout else None
        sim = exp.simulator(make_policy(run.algorithm["name"], run.algorithm.get("params")),
                            run.seed, deadline=deadline)
        result = sim.run(until=exp.spec.stop_at)
        row.update(summarize(result, **exp.spec.metrics.model_dump()))
        row["workload_source"] = result.workload_source
        workload = exp.workload(run.seed)
        row.update(input_id=_digest(workload.input_identity),
                   input_fallback=bool(workload.fallback),
                   input_skipped_lines=workload.skipped_lines,
                   offered_load=offered_load(workload, exp.cluster))
        for table in exp.spec.tables:
            write_parquet(getattr(result, table), run_dir / f"{table}.parquet")
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


def _identity(run: PlannedRun) -> dict[str, Any]:
    out = {"run": run.run_id, "run_index": run.index, "spec": run.spec_data["name"],
           "spec_hash": run.key[:16], "algorithm": run.algorithm["name"], "label": run.label,
           "params": json.dumps(run.algorithm.get("params") or {}, sort_keys=True),
           "seed": run.base_seed, "run_seed": run.seed, "grid_point": run.grid_point,
           "overrides": run.overrides, "hierfair_version": __version__,
           "git_commit": _git_commit()}
    out.update({k: json.dumps(v) if isinstance(v, dict | list) else v
                for k, v in run.grid.items()})
    # each parameter its own column (the JSON above is the exact identity)
    out.update({f"{PARAM}{k}": json.dumps(v) if isinstance(v, dict | list) else v
                for k, v in (run.algorithm.get("params") or {}).items()})
    return out


@lru_cache(maxsize=1)
def _git_commit() -> str:
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def cached_row(run: PlannedRun, folder: Path) -> dict[str, Any] | None:
    """The recorded row of ``run`` if it finished ok with this key and code,
    and every detail table it wrote has the bytes its manifest records."""
    path = folder / "runs" / run.run_id / SUMMARY
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    row = record.get("row", {})
    if (record.get("key") != run.key or row.get("status") != "ok"
            or row.get("code_version") != code_version()
            or row.get("input_id") != run.input_id):  # the data changed under the run
        return None
    files = record.get("files") or {}
    for t in run.spec_data["tables"]:  # damaged or swapped tables: rerun, never serve
        table = path.parent / f"{t}.parquet"
        if f"{t}.parquet" not in files or not table.exists() \
                or file_digest(table) != files[f"{t}.parquet"]:
            return None
    return row


# -- executing -----------------------------------------------------------------
@contextmanager
def _backend(backend: str, jobs: int | None, scheduler: str | None) -> Iterator[int]:
    """Configure joblib for ``backend``; yields the n_jobs to use."""
    import joblib

    if backend == "loky":
        with quiet_workers():
            yield jobs or -1
        return
    if backend != "dask":
        raise SpecError("unknown backend; choose loky or dask", where="--backend", value=backend)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise EnvironmentProblem("--backend dask: needs dask.distributed, which is not "
                                 "installed: pip install 'hierfair[cluster]'") from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise EnvironmentProblem(f"--scheduler: cannot reach the Dask scheduler at "
                                     f"{scheduler} ({exc})") from None
        cluster = None
    else:
        cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        with joblib.parallel_config(backend="dask"):
            yield -1
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(data: Mapping[str, Any], out: str | Path, *, source: str = "",
          data_dir: str | None = None, jobs: int | None = None, backend: str = "loky",
          scheduler: str | None = None, force: bool = False, timeout: float | None = None,
          progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
          max_memory: float | None = None, planned: Plan | None = None,
          replace: bool = False, max_runs: int | None = None, fail_fast: bool = False,
          debug: bool = False) -> pd.DataFrame:
    """Run (or reuse) every run of the spec; return runs.parquet's frame.

    ``planned`` is the spec's :func:`plan` when the caller already made it.
    With adaptive seeds (``seeds: {min, max}``) the sweep adds seeds, in
    order, while a claim is inconclusive, up to ``max``.  Results another
    spec file wrote under the same name are replaced only with ``replace``.
    ``jobs=0`` runs in this process, without workers; ``fail_fast`` stops at
    the first failed run (:class:`RunFailed`); ``debug`` raises a run's bug
    itself (for a debugger), in this process."""
    planned = planned or plan(data, source, data_dir, max_memory, max_runs=max_runs)
    base = planned.experiment
    folder = Path(out) / base.spec.name
    manifest = Manifest.open(folder)
    manifest.own_spec(relative_source(source, Path(out)), replace)
    manifest.check_runs(run.run_id for run in planned.runs)
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)  # left by a sweep killed mid-write
    manifest.write_text("spec.yaml", base.resolved_yaml())
    needs_runs = any(c.over == "run" for claim in base.spec.claims for c in claim.checks)
    seeds = base.spec.seeds
    while True:
        frame = _run_plan(planned.runs, manifest, source, data_dir, 0 if debug else jobs,
                          backend, scheduler, force, timeout, progress,
                          base.spec.interleave, fail_fast or debug, debug)
        _drop_assembled(manifest)
        try:
            verdicts = evaluate(base, frame, detail_table(folder, "allocations", frame)
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
              debug: bool = False) -> pd.DataFrame:
    """Every run of one plan, reused from the cache or executed; runs.parquet.
    ``interleave``: the runs of one seed and grid point go to one worker.

    At every moment runs.parquet lists only runs whose tables are complete:
    before any run is (re)written it is rewritten with the reused rows alone
    (and claims.json, decided from the old rows, goes), and rows are added in
    batches as runs finish -- so an interrupted sweep leaves each run's row
    and its tables, or neither, and a rerun completes it."""
    import joblib

    folder = manifest.folder
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    for run in runs:
        row = None if force else cached_row(run, folder)
        if row is None:
            todo.append(run)
        else:  # its place in this plan (an adaptive sweep's later plans insert seeds),
            # and what this command changed (the row is this command's)
            rows[run.run_id] = {**row, "run_index": run.index, "overrides": run.overrides}
    done = len(rows)
    if progress:
        progress(done, len(runs), None)
    if todo:
        manifest.check_runs(run.run_id for run in todo)  # an adaptive round's new seeds too
        manifest.add_runs(run.run_id for run in todo)
        _write_runs(rows, manifest)
        manifest.remove("claims.json")
        batch = _Batch()
        groups = _groups(todo, interleave)
        with nullcontext(0) if jobs == 0 else _backend(backend, jobs, scheduler) as n_jobs:
            if jobs == 0:  # in this process, no worker: breakpoints and --pdb work
                results: Any = (execute_all(g, str(folder), source, data_dir, timeout, debug)
                                for g in groups)
            else:
                results = parallel(1 if jobs == 1 else n_jobs, (
                    joblib.delayed(execute_all)(g, str(folder), source, data_dir, timeout)
                    for g in groups), unordered=True)
            for group_rows in results:
                for row in group_rows:
                    rows[row["run"]] = row
                    done += 1
                    if progress:
                        progress(done, len(runs), row)
                    if fail_fast and row["status"] != "ok":
                        _write_runs(rows, manifest)
                        raise RunFailed(row, folder / "runs" / row["run"] / TRACEBACK)
                if batch.due(len(group_rows), len(rows)):
                    _write_runs(rows, manifest)
    return _write_runs(rows, manifest)


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


def execute_all(runs: Sequence[PlannedRun], folder: str, source: str, data_dir: str | None,
                timeout: float | None, reraise: bool = False) -> list[dict[str, Any]]:
    """:func:`execute` each run in turn, in this process."""
    return [execute(run, folder, source, data_dir, timeout, reraise) for run in runs]


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


def describe_plan(runs: Sequence[PlannedRun], folder: Path) -> list[str]:
    lines = []
    for run in runs:
        state = "cached" if cached_row(run, folder) else "to run"
        grid = " ".join(f"{k}={v}" for k, v in run.grid.items())
        lines.append(f"{run.run_id}  {run.label}  seed={run.base_seed} run_seed={run.seed}"
                     f"{'  ' + grid if grid else ''}  [{state}]")
    return lines


class Progress:
    """Runs done / total with elapsed time and ETA: a bar on a terminal,
    one plain line per run otherwise (logs, CI)."""

    def __init__(self, name: str, stream: Any = None) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.first = 0

    def __call__(self, done: int, total: int, row: dict[str, Any] | None) -> None:
        if row is None:
            self.first = done
            if done:
                print(f"{self.name}: {done} of {total} runs cached", file=self.stream)
            return
        elapsed = time.monotonic() - self.t0
        fresh = done - self.first
        eta = elapsed / fresh * (total - done) if fresh else 0.0
        # the error itself is printed once, in the list at the end of the run
        status = "" if row["status"] == "ok" else f" {row['status'].upper()}"
        if self.tty:
            width = 30
            fill = int(width * done / total) if total else width
            bar = "#" * fill + "-" * (width - fill)
            end = "\n" if done == total or status else ""
            print(f"\r{self.name} [{bar}] {done}/{total} {_clock(elapsed)} ETA {_clock(eta)}"
                  f"{status}", end=end, file=self.stream, flush=True)
        else:
            print(f"[{done}/{total}] {self.name}: {row['run']} {row['status']} "
                  f"({row['wall_seconds']:.2f}s, elapsed {_clock(elapsed)}, ETA {_clock(eta)})"
                  f"{status}", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"

