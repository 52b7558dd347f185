"""Measuring a claim's checks: one number per algorithm label, and the runs behind it.

A :class:`_Measurer` reads a spec's results (runs.parquet, the allocations
table, the jobs' response-time improvements) or computes a static allocation,
and gives each check a :class:`Measured`: the value, the per-run values keyed
by what makes two runs' inputs the same (so two labels' runs pair up), or why
it could not be measured.  A static allocation may be of a variant of the
experiment: some leaves' jobs dropped (``without``), or every task cut ``k``
times finer (a fluid claim, :data:`FLUID_GRAINS`).  Deciding the checks and
writing the verdicts: :mod:`hierfair.experiment.claims`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierfair.errors import SpecError
from hierfair.experiment.allocate import allocate
from hierfair.experiment.claim_spec import CheckSpec
from hierfair.experiment.improvement import improvement_between
from hierfair.experiment.probe import Probe
from hierfair.experiment.runs_table import ENDED, LOOP_COLUMNS
from hierfair.experiment.properties import PROPERTIES
from hierfair.experiment.spec import Experiment
from hierfair.experiment.stats import Sample, time_statistic
from hierfair.sim.model import shown


@dataclass(frozen=True)
class Measured:
    """One number a check compares: its value, and the per-run values it
    comes from (``sample``, indexed by seed and grid point; None for a
    deterministic value such as a static allocation)."""

    value: float
    missing: str = ""  # why it could not be measured: the verdict is n/a
    sample: pd.Series | None = None
    #: A fluid claim's allocation check: the value with whole tasks (``value``
    #: is then the finest grain's).
    whole: float | None = None

    @property
    def seeds(self) -> int:
        return 0 if self.sample is None else len(self.sample)


def _measured(sample: pd.Series) -> Measured:
    return Measured(float(sample.mean()), sample=sample)


#: What pairs two runs of different algorithms: the same seed and grid point.
_KEY = ("seed", "grid_point")


def _keyed(rows: pd.DataFrame, values: pd.Series) -> pd.Series:
    """``values`` (aligned with ``rows``) indexed by what makes two runs'
    inputs the same: the run seed (the base seed and the grid point's
    non-algorithm values), else the seed and grid point."""
    if "run_seed" in rows:
        return pd.Series(values.to_numpy(dtype=float), index=pd.Index(
            rows["run_seed"].to_numpy(), name="run_seed"))
    grid = rows["grid_point"] if "grid_point" in rows else pd.Series(0, index=rows.index)
    index = pd.MultiIndex.from_arrays([rows["seed"].to_numpy(), grid.to_numpy()],
                                      names=list(_KEY))
    return pd.Series(values.to_numpy(dtype=float), index=index)


class _Measurer:
    """Measures checks on one experiment and its results folder."""

    def __init__(self, exp: Experiment, runs: pd.DataFrame,
                 allocations: pd.DataFrame | None, folder: Path | None = None) -> None:
        self.exp = exp
        self.all_runs = runs
        self.runs = runs[runs["status"].isin(ENDED)]  # loop runs: see _ended
        self.allocations = allocations
        self.folder = folder
        #: the claim being measured states a theorem about divisible resources
        self.fluid = False
        self._allocations: dict[tuple[str, tuple[str, ...], int, int], Any] = {}
        # a bound named by label is measured once, however many labels it bounds
        self._seen: dict[tuple[str, str, bool], Measured] = {}

    def __call__(self, check: CheckSpec, label: str, where: str) -> Measured:
        key = (where, label, self.fluid)
        if key not in self._seen:
            self._seen[key] = self._measure(check, label, where)
        return self._seen[key]

    @cached_property
    def deterministic(self) -> bool:
        """Whether a run's outcome does not depend on its seed: the same
        workload for two seeds, and no random faults.  Then one run is exact."""
        spec = self.exp.spec
        if spec.faults.mtbf is not None or spec.faults.task_failure > 0:
            return False
        a, b = (self.exp.workload(s) for s in (0, 1))
        return len(a.jobs) == len(b.jobs) and all(
            x.leaf == y.leaf and x.submit == y.submit and x.after == y.after
            and np.array_equal(x.demand, y.demand) and np.array_equal(x.durations, y.durations)
            for x, y in zip(a.jobs, b.jobs, strict=True))

    def sample(self, m: Measured, *, noisy: bool = False, ratio: bool = False) -> Sample:
        """The sample a check decides on: exact when the value cannot vary
        (no runs, runs that agree, or one run of a seed-independent workload;
        wall-clock values always vary), one run, or a t sample."""
        if m.sample is None:
            return Sample(np.array([m.value]), "exact")
        v = m.sample.to_numpy(dtype=float)
        if v.size > 1 and np.all(v == v[0]):
            return Sample(v, "exact")
        if v.size == 1:
            return Sample(v, "exact" if self.deterministic and not noisy else "one run")
        return Sample(v, "ratio" if ratio else "t")

    def versus(self, got: Measured, other: Measured, *, noisy: bool = False) -> Sample:
        """``got`` minus ``other``: paired by seed and grid point when their runs
        pair up one to one, else Welch's two groups."""
        a, b = got.sample, other.sample
        assert a is not None and b is not None
        if len(a) == len(b) and a.index.is_unique and \
                a.index.sort_values().equals(b.index.sort_values()):
            diff = self.sample(Measured(0.0, sample=a - b.reindex(a.index)), noisy=noisy)
            return diff._replace(method="paired t") if diff.method == "t" else diff
        return Sample(a.to_numpy(dtype=float), "Welch", b.to_numpy(dtype=float))

    def identical(self, check: CheckSpec, label: str, other: str, where: str) -> int:
        """How many paired runs ``label`` and ``other`` have, when every pair
        gave the identical schedule (runs.parquet's schedule_digest); else 0."""
        if "schedule_digest" not in self.runs or label == other:
            return 0
        a, b = self._rows(check, label, where), self._rows(check, other, where)
        keys = ["run_seed"] if "run_seed" in a else [k for k in _KEY if k in a]
        pairs = a[[*keys, "schedule_digest"]].merge(b[[*keys, "schedule_digest"]], on=keys)
        if pairs.empty or len(pairs) != len(a) or pairs.isna().to_numpy().any():
            return 0
        same = pairs["schedule_digest_x"] == pairs["schedule_digest_y"]
        return len(pairs) if same.all() else 0

    def _measure(self, check: CheckSpec, label: str, where: str) -> Measured:
        if check.property is not None:
            return self._property(check, label)  # probes the spec itself, no runs
        if check.over == "allocation" and check.node is not None:  # no runs involved
            if self.fluid:
                whole, finer = self.whole_and_fluid(check, label)
                return Measured(finer[-1], whole=whole)
            return Measured(self._allocation(check, label))
        missing = self._failed(check, label, where)
        for other in (check.improvement_over, check.relative_to):
            if other is not None:
                missing = missing or self._failed(check, other, where)
        if check.baseline_where is not None:
            base = check.model_copy(update={"where": check.baseline_where})
            missing = missing or self._failed(base, check.relative_to or label, where)
        if missing:
            return Measured(float("nan"), missing)
        if check.metric is not None:
            values = self._metric(check, label, where)
        elif check.improvement_over is not None:
            values = self._improvement(check, label, where)
        else:
            values = self._over_run(check, label, where)
        if values.empty:
            return Measured(float("nan"), f"no ok run of {label} to measure")
        return _measured(values)

    def _failed(self, check: CheckSpec, label: str, where: str) -> str:
        """Why runs this check needs did not finish ("" when they all did)."""
        rows = self._rows(check, label, where, self.all_runs)
        bad = rows[~rows["status"].isin(_ended(check))]
        if not len(bad):
            return ""
        kinds = ", ".join(sorted(set(bad["status"])))
        return f"{len(bad)} of {len(rows)} runs of {label} {kinds}"

    def _rows(self, check: CheckSpec, label: str, where: str,
              runs: pd.DataFrame | None = None) -> pd.DataFrame:
        if runs is None:
            runs = self.runs[self.runs["status"].isin(_ended(check))]
        rows = runs[runs["label"] == label]
        for column, value in check.where.items():
            if column not in runs:
                raise SpecError("no such column in runs.parquet", where=f"{where}.where",
                                value=column)
            if isinstance(value, list | dict):  # runs.parquet keeps such grid values as JSON
                value = json.dumps(value)
            # an empty cell: the column does not describe this run (another
            # algorithm's grid parameter), so the condition does not exclude it
            rows = rows[(rows[column] == value) | rows[column].isna()]
        return rows

    def _metric(self, check: CheckSpec, label: str, where: str) -> pd.Series:
        if check.metric not in self.runs:
            raise SpecError("no such column in runs.parquet", where=f"{where}.metric",
                            value=check.metric)
        if not pd.api.types.is_numeric_dtype(self.runs[check.metric]):
            raise SpecError("not a number column of runs.parquet (a loop is `looped`, 0 or 1)",
                            where=f"{where}.metric", value=check.metric)
        rows = self._rows(check, label, where)
        if check.relative_to is None and check.baseline_where is None:
            return _keyed(rows, rows[check.metric])
        # pair each run with its baseline: the other label's run of the same
        # seed and grid point, or the run of the same seed at baseline_where
        # the same inputs: the run seed (the grid's algorithm parameters aside)
        keys = ["run_seed"] if "run_seed" in rows else [k for k in _KEY if k in rows]
        base_check = check
        if check.baseline_where is not None:
            keys = ["seed"]
            base_check = check.model_copy(update={"where": check.baseline_where})
        base = self._rows(base_check, check.relative_to or label, where)
        mine = [*dict.fromkeys([*keys, *(k for k in ("run_seed", *_KEY) if k in rows)])]
        pairs = rows[[*mine, check.metric]].merge(base[[*keys, check.metric]], on=keys,
                                                  suffixes=("", "_base"))
        pairs = pairs[pairs[check.metric + "_base"] != 0]
        return _keyed(pairs, pairs[check.metric] / pairs[check.metric + "_base"])

    def _improvement(self, check: CheckSpec, label: str, where: str) -> pd.Series:
        if self.folder is None:
            return pd.Series(dtype=float)
        # read a pair of runs at a time: a paper-scale sweep's jobs do not fit at once
        jobs = improvement_between(self.folder, label, check.improvement_over,
                                   where=check.where or None, runs=self.all_runs)
        if check.leaf is not None:
            jobs = jobs[jobs["leaf"] == check.leaf]
        values = {}
        for seed, group in jobs.groupby("seed"):
            v = group["improvement"].dropna().to_numpy(dtype=float)
            if len(v):
                values[(seed, -1)] = float(getattr(np, check.stat)(v))
        return pd.Series(values, dtype=float)

    def _property(self, check: CheckSpec, label: str) -> Measured:

        algo = next(a for a in self.exp.spec.algorithms if a.display == label)
        out = PROPERTIES[check.property].check(Probe(self.exp, algo))
        if isinstance(out, str):
            return Measured(float("nan"), out)
        return Measured(out.magnitude)

    def _allocation(self, check: CheckSpec, label: str, grain: int = 1) -> float:
        """The static allocation's value; with ``grain`` k every task is cut
        into k tasks of 1/k the demand (and churn is k times as many ends),
        in the whole task's units: the fluid allocation as k grows."""
        key = (label, tuple(check.without), check.churn, grain)
        if key not in self._allocations:  # one allocation serves every node and resource
            exp = self.exp
            if check.without:
                exp = _without(exp, check.without)
            if grain > 1:
                exp = _refined(exp, grain)
            algo = next(a for a in exp.spec.algorithms if a.display == label)
            self._allocations[key] = allocate(exp, algo, churn=check.churn * grain)
        row = self._allocations[key].node(check.node)
        return float(row[check.resource]) / (grain if check.resource == "tasks" else 1)

    def whole_and_fluid(self, check: CheckSpec, label: str) -> tuple[float, list[float]]:
        """A fluid claim's allocation check: its value with whole tasks, and
        with tasks FLUID_GRAINS times finer (the last decides)."""
        return (self._allocation(check, label),
                [self._allocation(check, label, k) for k in FLUID_GRAINS])

    def _over_run(self, check: CheckSpec, label: str, where: str) -> pd.Series:
        if self.allocations is None:
            return pd.Series(dtype=float)
        rows = self._rows(check, label, where)
        rows_of, ends = self._allocation_index
        empty = np.zeros(0, dtype=np.int64)
        values = []
        for run in rows["run"]:
            series = self.allocations.iloc[rows_of.get((run, shown(check.node)), empty)]
            values.append(time_statistic(series, self._quantity(series, check.resource),
                                          check.stat, check.window, ends.get(run, np.nan)))
        return _keyed(rows, pd.Series(values, index=rows.index, dtype=float))

    @cached_property
    def _allocation_index(self) -> tuple[dict[tuple[str, str], np.ndarray], dict[str, float]]:
        """The allocations table's row positions per (run, node) in table
        order, and each run's last time: found once, not per check and run
        (a spec of 180 runs and 60 checks spent minutes filtering)."""
        table = self.allocations
        assert table is not None
        positions = table.groupby(["run", "path"], sort=False, observed=True).indices
        ends = table.groupby("run", sort=False, observed=True)["time"].max()
        return ({key: np.sort(pos) for key, pos in positions.items()},
                {run: float(v) for run, v in ends.items()})

    def _quantity(self, series: pd.DataFrame, resource: str) -> np.ndarray:
        if resource == "tasks":
            return series["tasks"].to_numpy(dtype=float)
        cluster = self.exp.cluster
        shares = series[list(cluster.resources)].to_numpy(dtype=float) / cluster.total
        if resource == "dominant_share":
            return shares.max(axis=1) if len(shares) else np.zeros(0)
        return shares[:, cluster.resources.index(resource)]


#: How much finer tasks are cut to judge a fluid claim (H-DRF and DRF state
#: their theorems for divisible resources): the finest decides.
FLUID_GRAINS = (10, 100)


def _refined(exp: Experiment, k: int) -> Experiment:
    """The experiment with every task cut into ``k`` tasks of 1/k its demand."""
    from dataclasses import replace

    seed = exp.spec.seed_list[0]
    jobs = tuple(replace(j, demand=j.demand / k, durations=np.repeat(j.durations, k))
                 for j in exp.workload(seed).jobs)
    clone = replace(exp, _workloads={})
    clone._workloads[seed] = replace(exp.workload(seed), jobs=jobs)
    return clone


def _without(exp: Experiment, leaves: list[str]) -> Experiment:
    """The experiment with the jobs of ``leaves`` (or of any leaf below them) removed."""
    from dataclasses import replace

    workload = exp.workload(exp.spec.seed_list[0])
    gone = {i for i, p in enumerate(exp.hierarchy.paths)
            if any(p == leaf or p.startswith(leaf + "/") for leaf in leaves)}
    kept_jobs = [j for j in workload.jobs if j.leaf not in gone]
    kept = replace(workload, jobs=tuple(replace(j, id=i) for i, j in enumerate(kept_jobs)))
    clone = replace(exp, _workloads={})
    clone._workloads[exp.spec.seed_list[0]] = kept
    return clone


def _ended(check: CheckSpec) -> tuple[str, ...]:
    """The run statuses a check may measure: a run stopped in a preemption
    loop only for the churn columns (the rest describe a run cut short)."""
    return ENDED if check.metric in LOOP_COLUMNS else ("ok",)
