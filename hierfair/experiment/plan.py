"""Planning a sweep: the spec validated at every grid point, its runs listed.

:func:`plan` is the one place that decides whether a spec is valid; it
builds every grid point as a run will see it and lists the runs in a fixed
order, each with its key (what makes it the same run again: the resolved
spec at that point, the algorithm, the run seed, the input and the source of
a policy of the user's own) and its *run seed* (:func:`run_seed`).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hierfair.algorithms import policy_code
from hierfair.errors import SpecError
from hierfair.experiment.grid import _grid_path_problems, apply_grid_value
from hierfair.experiment.limits import MAX_RUNS
from hierfair.experiment.spec import AlgorithmSpec, Experiment, SeedRange, build_experiment
from hierfair.sim.model import Workload, job_columns

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
    for demand in {id(d): d for d in job_columns(workload.jobs).demand}.values():
        asked |= demand > 0
    out = []
    for r, name in enumerate(exp.cluster.resources):
        if total[r] <= 0:
            out.append(f"cluster.resources: no server has any {name}")
        elif not asked[r]:
            out.append(f"no job asks for {name}: util_{name} will be 0 (give jobs {name} "
                       "demands, e.g. workload.extra_demands; docs/workloads.md)")
    return out
