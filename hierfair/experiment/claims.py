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

Measuring a check (the results read, the static allocations, the fluid
claims' finer tasks): :mod:`hierfair.experiment.claim_measure`; here, each
check decided by its interval, and the verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierfair.experiment.claim_measure import (  # noqa: F401 - re-exported
    _KEY,
    FLUID_GRAINS,
    Measured,
    _keyed,
    _measured,
    _Measurer,
    _refined,
    _without,
)
from hierfair.experiment.claim_spec import Bound, CheckSpec
from hierfair.experiment.results import WALL_CLOCK_COLUMNS
from hierfair.experiment.spec import Experiment
from hierfair.experiment.stats import Decision, combine, decide_bound, decide_equals
from hierfair.experiment.verdict import (  # noqa: F401 - re-exported
    CheckResult,
    Verdict,
    count_verdicts,
    expected_verdict,
    verdict_word,
)
from hierfair.sim.model import shown


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
    results folder, for checks over jobs) and decided by its interval
    (hierfair.experiment.stats)."""
    measure = _Measurer(exp, runs, allocations, folder)
    verdicts = []
    for i, claim in enumerate(exp.spec.claims):
        measure.fluid = claim.fluid
        results = [_check(measure, check, label, f"claims[{i}].checks[{j}]")
                   for j, check in enumerate(claim.checks) for label in check.labels]
        verdicts.append(Verdict(
            claim.claim, claim.source, claim.note, tuple(results), claim.expect or "holds",
            claim.untestable, claim.proxy, claim.published, claim.id,
            tuple(e.model_dump(mode="json") for e in claim.history), claim.fluid,
            tuple(claim.proxy_kind)))
    return verdicts


def _check(measure: _Measurer, check: CheckSpec, label: str, where: str) -> CheckResult:
    """One label's result of one check: every condition decided by its interval."""
    got = measure(check, label, where)
    bounds = {k: b for k in ("below", "above") if (b := getattr(check, k)) is not None}
    limits = {k: measure(check, b, where) if isinstance(b, str) else Measured(b)
              for k, b in bounds.items()}
    missing = got.missing or next((m.missing for m in limits.values() if m.missing), "")
    expected = ([f"= {check.equals:g} ± {check.tol:g}"] if check.equals is not None else [])
    expected += [f"{'<' if k == 'below' else '>'} {_bound(bounds[k], m.value)}"
                 for k, m in limits.items()]
    base = dict(algorithm=label, measures=_describe(check), expected=" and ".join(expected),
                measured=float(got.value), missing=missing, seeds=got.seeds)
    if missing or np.isnan(got.value):
        return CheckResult(outcome="n/a", **base)
    noisy = check.metric in WALL_CLOCK_COLUMNS
    # a claim about how schedules differ cannot be tested on identical schedules
    # (what a scheduler costs can: wall-clock claims compare computation)
    others = [b for b in bounds.values() if isinstance(b, str)]
    others += [o for o in (check.relative_to, check.improvement_over) if o is not None]
    same = [n for o in others if (n := measure.identical(check, label, o, where))]
    if others and len(same) == len(others) and not noisy and check.metric != "decisions" \
            and check.equals is None:  # "the same as X" is what identical schedules confirm
        return CheckResult(outcome="untestable", reason=(
            f"{label} and {', '.join(others)} give the identical schedule on every one "
            f"of the {same[0]} paired runs"), **base)
    outcome, deciding, of = _decide(measure, check, got, limits, noisy)
    reason = ("one run of a workload that depends on the seed: no interval (add seeds)"
              if deciding.method == "one run" else
              "the interval crosses the claimed bound (add seeds)"
              if outcome == "inconclusive" else "")
    if got.whole is not None:  # a fluid claim: decided fluid, whole tasks beside it
        whole = {k: Measured(m.value if m.whole is None else m.whole) for k, m in limits.items()}
        whole_outcome = _decide(measure, check, Measured(got.whole), whole, noisy)[0]
        return CheckResult(outcome=outcome, low=deciding.low, high=deciding.high,
                           method=f"exact, tasks {FLUID_GRAINS[-1]}× finer (fluid)",
                           whole_tasks=got.whole, whole_outcome=whole_outcome, **base)
    return CheckResult(outcome=outcome, low=deciding.low, high=deciding.high,
                       method=deciding.method + of, reason=reason, **base)


def _decide(measure: _Measurer, check: CheckSpec, got: Measured,
            limits: dict[str, Measured], noisy: bool) -> tuple[str, Decision, str]:
    """Every condition of a check decided by its interval: the outcome, the
    deciding condition, and what its interval is of."""
    ratio = check.relative_to is not None or check.baseline_where is not None
    own = measure.sample(got, noisy=noisy, ratio=ratio)
    decisions = []  # (decision, what its interval is of)
    if check.equals is not None:
        decisions.append((decide_equals(own, check.equals, check.tol), ""))
    for key, m in limits.items():
        if m.sample is None:
            decisions.append((decide_bound(own, m.value, key == "below"), ""))
        else:
            diff = decide_bound(measure.versus(got, m, noisy=noisy), 0.0, key == "below")
            decisions.append((diff, f" of the difference from {getattr(check, key)}"))
    outcome = combine([d.outcome for d, _ in decisions])
    deciding, of = next((d, of) for d, of in decisions if d.outcome == outcome)
    return outcome, deciding, of


def _bound(given: Bound, value: float) -> str:
    return f"{given} ({value:.4g})" if isinstance(given, str) else f"{value:g}"


def verdicts_json(verdicts: list[Verdict]) -> str:
    """claims.json's text: every verdict, in the spec's order."""
    return json.dumps([v.to_json() for v in verdicts], indent=2) + "\n"


def read_verdicts(folder: Path) -> list[dict[str, Any]]:
    path = folder / "claims.json"
    return json.loads(path.read_text()) if path.exists() else []
