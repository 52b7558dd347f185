"""Running a spec: one simulation, or every run of it into a results folder.

``OUT/<spec name>/`` receives:

* ``runs.parquet`` -- one row per run: spec, algorithm, params, seed, grid
  values, status, the metrics of :func:`hierfair.experiment.results.summarize`, version
  and provenance (see :mod:`hierfair.experiment.sweep`);
* ``runs/<run id>/`` -- that run's detail tables (``jobs``, ``tasks``,
  ``allocations``, ``utilization``, ``decisions``, ``attempts``,
  ``preemptions``) and ``summary.json``;
* the same tables at the top -- every successful run's details together,
  each row tagged with its ``run``;
* ``spec.yaml`` -- the spec as resolved (defaults filled in).

Every file is written atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from hierfair.algorithms import make_policy
from hierfair.experiment.spec import AlgorithmSpec, Experiment
from hierfair.experiment.detail import DETAIL_TABLES
from hierfair.experiment.sweep import sweep
from hierfair.sim import SimulationResult

__all__ = ["DETAIL_TABLES", "run_experiment", "simulate"]


def simulate(exp: Experiment, algo: AlgorithmSpec, seed: int) -> SimulationResult:
    """One run: a fresh policy on a fresh simulator."""
    return exp.simulator(make_policy(algo.name, algo.params), seed).run(until=exp.spec.stop_at)


def run_experiment(exp: Experiment, out: Path,
                   progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
                   **options: Any) -> pd.DataFrame:
    """Every run of ``exp`` into ``out/<name>/`` (options: see
    :func:`hierfair.experiment.sweep.sweep`)."""
    options.setdefault("jobs", 1)
    return sweep(exp.spec.model_dump(mode="json"), out, source=exp.source,
                 data_dir=exp.data_dir, progress=progress, **options)
