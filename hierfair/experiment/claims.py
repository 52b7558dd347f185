"""Published claims as checks, and their verdicts.

A spec may list the statements of a paper it reproduces.  Each *claim* quotes
(or closely paraphrases) the paper and names where it says so; its *checks*
say how to measure it here and what the paper's value is::

    claims:
      - claim: n1,1 and n2,1 get 5 CPUs each and n2,2 all 10 GPUs
        source: H-DRF §3.1, Fig. 4
        checks:
          - {algorithm: [static-hdrf, hdrf], node: n1/n11, resource: cpu, equals: 0.5}
          - {algorithm: naive-hdrf, node: n2/n21, resource: cpu, churn: 40, below: hdrf}

A check measures one number per algorithm label, in one of three ways:

* ``node`` with ``over: allocation`` (the default): the node's share of a
  resource (or ``dominant_share``, or ``tasks``) once every job is submitted
  at time 0 and the cluster is full, after ``churn`` task ends -- exactly what
  ``hierfair allocate`` prints.  ``without`` drops some leaves' jobs first
  (the papers' "when n2,2 stops demanding").
* ``node`` with ``over: run``: the time-weighted ``mean`` or ``median`` of that
  quantity over a simulated run, or its ``min`` or ``max`` (optionally within
  ``window: [t0, t1]``), averaged over the spec's ok runs of that label.
* ``metric``: a column of runs.parquet (``makespan``, ``wait_median_mice``...),
  averaged over the ok runs of that label, optionally only the rows ``where``
  some columns have given values (a grid point).

and compares it with ``equals`` (within ``tol``), ``below`` or ``above``; a
bound is a number or another algorithm label, measured the same way.  A claim
holds when every check holds.  Verdicts are written beside the results as
``claims.json`` and rendered by ``hierfair report``; a claim that does not
hold is a finding, reported as such, not an error.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierfair.errors import SpecError
from hierfair.experiment.allocate import allocate
from hierfair.experiment.claim_spec import Bound, CheckSpec
from hierfair.experiment.improvement import improvement_between
from hierfair.experiment.results import write_text
from hierfair.experiment.spec import Experiment
from hierfair.sim.model import shown


@dataclass(frozen=True)
class CheckResult:
    algorithm: str
    measures: str  # what was measured, in words
    expected: str
    measured: float
    holds: bool
    #: Why the check could not be measured (failed or timed-out runs): n/a.
    missing: str = ""
    seeds: int = 0  # how many seeds the value averages (0: not over runs)
    ci95: float = 0.0  # half-width of the 95 % interval over seeds


@dataclass(frozen=True)
class Verdict:
    claim: str
    source: str
    note: str
    reproduced: bool  # what the spec expects: False for a known model difference
    checks: tuple[CheckResult, ...]
    expect: str = "holds"  # "refuted": the published claim is false here (a finding)
    proxy: str = ""
    published: str = ""
    id: str = ""

    @property
    def holds(self) -> bool:
        return all(c.holds for c in self.checks)

    @property
    def verdict(self) -> str:
        """``n/a`` when a check could not be measured, else ``holds`` or ``refuted``."""
        if any(c.missing for c in self.checks):
            return "n/a"
        return "holds" if self.holds else "refuted"

    def to_json(self) -> dict[str, Any]:
        reasons = sorted({c.missing for c in self.checks if c.missing})
        return {"id": self.id, "claim": self.claim, "source": self.source, "note": self.note,
                "reproduced": self.reproduced, "expect": self.expect, "proxy": self.proxy,
                "published": self.published, "verdict": self.verdict, "holds": self.holds,
                "reason": "; ".join(reasons), "checks": [asdict(c) for c in self.checks]}


def expected_verdict(verdict: dict[str, Any]) -> str:
    """What the spec says the verdict should be: refuted for a published claim
    found false (``expect: refuted``) or a known model difference."""
    return "refuted" if verdict["expect"] == "refuted" or not verdict["reproduced"] else "holds"


def verdict_word(verdict: dict[str, Any]) -> str:
    """How a verdict (as in claims.json) reads in a report or a log line."""
    word = verdict["verdict"]
    if word == "n/a":
        return f"n/a ({verdict['reason']})"
    if word == "refuted" and not verdict["reproduced"]:
        return "refuted (a known model difference, see note)"
    if word == "refuted" and verdict["expect"] != "refuted":
        return "REFUTED (unexpectedly)"
    if word == "holds" and expected_verdict(verdict) == "refuted":
        return "holds (the spec expects refuted)"
    return word


def count_verdicts(verdicts: list[dict[str, Any]]) -> str:
    """``3 hold, 1 refuted, 0 n/a`` -- the summary line's counts."""
    words = [v["verdict"] for v in verdicts]
    return (f"{words.count('holds')} hold, {words.count('refuted')} refuted, "
            f"{words.count('n/a')} n/a")


@dataclass(frozen=True)
class Measured:
    """One number a check compares, with how it was aggregated."""

    value: float
    missing: str = ""  # why it could not be measured: the verdict is n/a
    seeds: int = 0
    ci95: float = 0.0


#: Student's t quantile t(0.975, n - 1) for n = 2..30 (no scipy needed); 1.96 past 30.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
         2.064, 2.060, 2.056, 2.052, 2.048, 2.045)


def _aggregate(values: list[float]) -> Measured:
    """Mean over runs (seeds, grid points) with a 95 % t-interval half-width."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return Measured(float(v.mean()), seeds=len(v))
    t = _T975[len(v) - 2] if len(v) - 2 < len(_T975) else 1.96
    return Measured(float(v.mean()), seeds=len(v),
                    ci95=float(t * v.std(ddof=1) / np.sqrt(len(v))))


class _Measurer:
    """Measures checks on one experiment and its results folder."""

    def __init__(self, exp: Experiment, runs: pd.DataFrame,
                 allocations: pd.DataFrame | None, folder: Path | None = None) -> None:
        self.exp = exp
        self.all_runs = runs
        self.runs = runs[runs["status"] == "ok"]
        self.allocations = allocations
        self.folder = folder
        # a bound named by label is measured once, however many labels it bounds
        self._seen: dict[tuple[str, str], Measured] = {}

    def __call__(self, check: CheckSpec, label: str, where: str) -> Measured:
        key = (where, label)
        if key not in self._seen:
            self._seen[key] = self._measure(check, label, where)
        return self._seen[key]

    def _measure(self, check: CheckSpec, label: str, where: str) -> Measured:
        if check.property is not None:
            return self._property(check, label)  # probes the spec itself, no runs
        if check.over == "allocation" and check.node is not None:
            return Measured(self._allocation(check, label))  # no runs involved
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
        if not values:
            return Measured(float("nan"), f"no ok run of {label} to measure")
        return _aggregate(values)

    def _failed(self, check: CheckSpec, label: str, where: str) -> str:
        """Why runs this check needs did not finish ("" when they all did)."""
        rows = self._rows(check, label, where, self.all_runs)
        bad = rows[rows["status"] != "ok"]
        if not len(bad):
            return ""
        kinds = ", ".join(sorted(set(bad["status"])))
        return f"{len(bad)} of {len(rows)} runs of {label} {kinds}"

    def _rows(self, check: CheckSpec, label: str, where: str,
              runs: pd.DataFrame | None = None) -> pd.DataFrame:
        runs = self.runs if runs is None else runs
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

    def _metric(self, check: CheckSpec, label: str, where: str) -> list[float]:
        if check.metric not in self.runs:
            raise SpecError("no such column in runs.parquet", where=f"{where}.metric",
                            value=check.metric)
        rows = self._rows(check, label, where)
        if check.relative_to is None and check.baseline_where is None:
            return [float(v) for v in rows[check.metric]]
        # pair each run with its baseline: the other label's run of the same
        # seed and grid point, or the run of the same seed at baseline_where
        keys = [k for k in ("seed", "grid_point") if k in rows]
        base_check = check
        if check.baseline_where is not None:
            keys = ["seed"]
            base_check = check.model_copy(update={"where": check.baseline_where})
        base = self._rows(base_check, check.relative_to or label, where)
        pairs = rows[[*keys, check.metric]].merge(base[[*keys, check.metric]], on=keys,
                                                  suffixes=("", "_base"))
        return [float(a / b) for a, b in zip(pairs[check.metric], pairs[check.metric + "_base"])
                if b]

    def _improvement(self, check: CheckSpec, label: str, where: str) -> list[float]:

        if self.folder is None:
            return []
        jobs = improvement_between(self.folder, label, check.improvement_over,
                                   where=check.where or None)
        if check.leaf is not None:
            jobs = jobs[jobs["leaf"] == check.leaf]
        values = []
        for _, group in jobs.groupby("seed"):
            v = group["improvement"].dropna().to_numpy(dtype=float)
            if len(v):
                values.append(float(getattr(np, check.stat)(v)))
        return values

    def _property(self, check: CheckSpec, label: str) -> Measured:
        from hierfair.audit.probe import Probe  # the audit builds on the harness
        from hierfair.audit.properties import PROPERTIES

        algo = next(a for a in self.exp.spec.algorithms if a.display == label)
        out = PROPERTIES[check.property].check(Probe(self.exp, algo))
        if isinstance(out, str):
            return Measured(float("nan"), out)
        return Measured(out.magnitude)

    def _allocation(self, check: CheckSpec, label: str) -> float:

        exp = self.exp
        if check.without:
            exp = _without(exp, check.without)
        algo = next(a for a in exp.spec.algorithms if a.display == label)
        row = allocate(exp, algo, churn=check.churn).node(check.node)
        return float(row[check.resource])

    def _over_run(self, check: CheckSpec, label: str, where: str) -> list[float]:
        if self.allocations is None:
            return []
        values = []
        for run in self._rows(check, label, where)["run"]:
            series = self.allocations[(self.allocations["run"] == run)
                                      & (self.allocations["path"] == shown(check.node))]
            end = float(self.allocations.loc[self.allocations["run"] == run, "time"].max())
            values.append(time_statistic(series, self._quantity(series, check.resource),
                                          check.stat, check.window, end))
        return values

    def _quantity(self, series: pd.DataFrame, resource: str) -> np.ndarray:
        if resource == "tasks":
            return series["tasks"].to_numpy(dtype=float)
        cluster = self.exp.cluster
        shares = series[list(cluster.resources)].to_numpy(dtype=float) / cluster.total
        if resource == "dominant_share":
            return shares.max(axis=1) if len(shares) else np.zeros(0)
        return shares[:, cluster.resources.index(resource)]


def time_statistic(series: pd.DataFrame, values: np.ndarray, stat: str,
                    window: tuple[float, float] | None, end: float) -> float:
    """Mean, median, min or max of a step function given at change points,
    counting each value for as long as it held within the window."""
    t = series["time"].to_numpy(dtype=float)
    lo, hi = window if window is not None else (0.0, end)
    starts = np.clip(t, lo, hi)
    ends = np.clip(np.append(t[1:], max(end, hi)), lo, hi)
    held = ends - starts
    if not len(values) or held.sum() <= 0:
        return float("nan")
    if stat == "mean":
        return float(np.sum(values * held) / held.sum())
    if stat in ("min", "max"):
        seen = values[held > 0]
        return float(seen.min() if stat == "min" else seen.max())
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(held[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def _without(exp: Experiment, leaves: list[str]) -> Experiment:
    """The experiment with the jobs of ``leaves`` (or of any leaf below them) removed."""
    from dataclasses import replace

    workload = exp.workload(exp.spec.seeds[0])
    gone = {i for i, p in enumerate(exp.hierarchy.paths)
            if any(p == leaf or p.startswith(leaf + "/") for leaf in leaves)}
    kept_jobs = [j for j in workload.jobs if j.leaf not in gone]
    kept = replace(workload, jobs=tuple(replace(j, id=i) for i, j in enumerate(kept_jobs)))
    clone = replace(exp, _workloads={})
    clone._workloads[exp.spec.seeds[0]] = kept
    return clone


def _describe(check: CheckSpec) -> str:
    if check.improvement_over is not None:
        leaf = f" of {check.leaf}'s jobs" if check.leaf else ""
        return f"{check.stat} response-time improvement{leaf} over {check.improvement_over}, %"
    if check.metric is not None:
        cond = ", ".join(f"{k}={v}" for k, v in check.where.items())
        ratio = f" / {check.relative_to}'s" if check.relative_to else ""
        if check.baseline_where is not None:
            base = ", ".join(f"{k}={v}" for k, v in check.baseline_where.items())
            return f"{check.metric} ({cond}){ratio} / the same at {base}"
        return check.metric + ratio + (f" ({cond})" if cond else "")
    if check.property is not None:
        return f"{check.property} (docs/properties.md): how far from holding"
    what = f"{shown(check.node)} {check.resource}"
    if check.over == "run":
        span = f" in [{check.window[0]:g}, {check.window[1]:g}] s" if check.window else ""
        return f"{what}, {check.stat} over the run{span}"
    extra = [f"after {check.churn} task ends"] if check.churn else []
    extra += [f"without {', '.join(check.without)}"] if check.without else []
    return what + (f" ({'; '.join(extra)})" if extra else "")


def evaluate(exp: Experiment, runs: pd.DataFrame, allocations: pd.DataFrame | None = None,
             folder: Path | None = None) -> list[Verdict]:
    """Every claim of ``exp``'s spec, measured on its results (``folder``: the
    results folder, for checks over jobs)."""
    measure = _Measurer(exp, runs, allocations, folder)
    verdicts = []
    for i, claim in enumerate(exp.spec.claims):
        results = []
        for j, check in enumerate(claim.checks):
            where = f"claims[{i}].checks[{j}]"
            bounds = {k: getattr(check, k) for k in ("below", "above")}
            for label in check.labels:
                got = measure(check, label, where)
                limits = {k: measure(check, b, where) if isinstance(b, str) else Measured(b)
                          for k, b in bounds.items() if b is not None}
                missing = got.missing or next((m.missing for m in limits.values()
                                               if m.missing), "")
                value = got.value
                expected, holds = [], not np.isnan(value) and not missing
                if check.equals is not None:
                    expected.append(f"= {check.equals:g} ± {check.tol:g}")
                    holds &= abs(value - check.equals) <= check.tol
                for key, sign in (("below", "<"), ("above", ">")):
                    if key in limits:
                        bound = limits[key].value
                        expected.append(f"{sign} {_bound(bounds[key], bound)}")
                        holds &= bool(value < bound if key == "below" else value > bound)
                results.append(CheckResult(label, _describe(check), " and ".join(expected),
                                           float(value), bool(holds), missing, got.seeds,
                                           got.ci95))
        verdicts.append(Verdict(claim.claim, claim.source, claim.note, claim.reproduced,
                                tuple(results), claim.expect, claim.proxy, claim.published,
                                claim.id))
    return verdicts


def _bound(given: Bound, value: float) -> str:
    return f"{given} ({value:.4g})" if isinstance(given, str) else f"{value:g}"


def write_verdicts(verdicts: list[Verdict], folder: Path) -> None:
    """claims.json beside the results; none at all when the spec has no claims
    (an old file would show verdicts the spec no longer asks for)."""
    path = folder / "claims.json"
    if verdicts:
        write_text(json.dumps([v.to_json() for v in verdicts], indent=2) + "\n", path)
    else:
        path.unlink(missing_ok=True)


def read_verdicts(folder: Path) -> list[dict[str, Any]]:
    path = folder / "claims.json"
    return json.loads(path.read_text()) if path.exists() else []
