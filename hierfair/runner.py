"""Run every algorithm x seed of a spec and write its results folder.

``OUT/<spec name>/`` receives:

* ``runs.parquet`` -- one row per run: spec, algorithm, params, seed, the
  metrics of :func:`hierfair.results.summarize`, version and provenance;
* ``jobs.parquet``, ``tasks.parquet``, ``allocations.parquet``,
  ``utilization.parquet``, ``decisions.parquet`` -- the per-run detail, every
  row tagged with its ``run`` id;
* ``spec.yaml`` -- the spec as resolved (defaults filled in).

Every file is written atomically.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from hierfair import __version__
from hierfair.algorithms import make_policy
from hierfair.results import summarize, write_parquet, write_text
from hierfair.simulator import SimulationResult, Simulator
from hierfair.spec import AlgorithmSpec, Experiment

DETAIL_TABLES = ("jobs", "tasks", "allocations", "utilization", "decisions")


def run_id(index: int, algo: AlgorithmSpec, seed: int) -> str:
    return f"{index:02d}-{algo.display}-seed{seed}"


def simulate(exp: Experiment, algo: AlgorithmSpec, seed: int) -> SimulationResult:
    """One run: a fresh policy on a fresh simulator."""
    sim = Simulator(exp.cluster, exp.hierarchy, exp.workload(seed),
                    make_policy(algo.name, algo.params), placement=exp.placement)
    return sim.run()


def run_experiment(exp: Experiment, out: Path,
                   log: Callable[[str], None] = lambda _msg: None) -> pd.DataFrame:
    """Run all algorithms x seeds of ``exp``; write ``out/<name>/``; return runs."""
    spec = exp.spec
    folder = out / spec.name
    rows: list[dict] = []
    details: dict[str, list[pd.DataFrame]] = {t: [] for t in DETAIL_TABLES}
    plan = [(i, algo, seed) for i, algo in enumerate(spec.algorithms) for seed in spec.seeds]
    commit = _git_commit()
    for k, (i, algo, seed) in enumerate(plan, start=1):
        rid = run_id(i, algo, seed)
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        result = simulate(exp, algo, seed)
        wall = time.perf_counter() - t0
        row = {
            "run": rid,
            "spec": spec.name,
            "spec_hash": exp.spec_hash,
            "algorithm": algo.name,
            "label": algo.display,
            "params": json.dumps(algo.params, sort_keys=True),
            "seed": seed,
            "workload_source": result.workload_source,
            **summarize(result),
            "hierfair_version": __version__,
            "git_commit": commit,
            "host": platform.node(),
            "started_at": started.isoformat(),
            "finished_at": datetime.now(UTC).isoformat(),
            "wall_seconds": wall,
        }
        rows.append(row)
        for table in DETAIL_TABLES:
            frame = getattr(result, table).copy()
            frame.insert(0, "run", rid)
            details[table].append(frame)
        log(f"[{k}/{len(plan)}] {spec.name}: {rid} makespan={result.makespan:g} "
            f"({wall:.2f}s)")
    runs = pd.DataFrame(rows)
    for table, frames in details.items():
        write_parquet(pd.concat(frames, ignore_index=True), folder / f"{table}.parquet")
    write_text(exp.resolved_yaml(), folder / "spec.yaml")
    write_parquet(runs, folder / "runs.parquet")  # last: its presence means the rest is there
    return runs


def _git_commit() -> str:
    """The commit of the hierfair checkout, when it is one (else empty)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def log_to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
