"""Published claims: measured as specs say, verdicts as the specs expect, bad
claims rejected like any other bad spec field."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.claims import evaluate, expected_verdict
from hierfair.experiment.stats import time_statistic
from hierfair.experiment.spec import build_experiment, load_spec, read_yaml
from hierfair.experiment.sweep import sweep
from hierfair.report import write_report

from .conftest import EXPERIMENTS

WITH_CLAIMS = sorted(p.stem for p in EXPERIMENTS.glob("*.yaml") if read_yaml(p).get("claims"))


def testtime_statistics_of_a_step_function():
    # 2 tasks on [0, 10), 6 on [10, 15), 0 from 15 to the end at 20
    series = pd.DataFrame({"time": [0.0, 10.0, 15.0]})
    values = np.array([2.0, 6.0, 0.0])
    assert time_statistic(series, values, "mean", None, 20.0) == pytest.approx(50 / 20)
    assert time_statistic(series, values, "median", None, 20.0) == 2.0
    assert time_statistic(series, values, "min", (0, 15), 20.0) == 2.0
    assert time_statistic(series, values, "max", None, 20.0) == 6.0
    assert time_statistic(series, values, "mean", (5, 15), 20.0) == pytest.approx(4.0)


def test_the_papers_claims_are_checked_in_the_experiments():
    assert {"drf-example", "hdrf-fig2", "hdrf-fig4", "hdrf-fig5", "hdrf-fig6", "hdrf-fig8",
            "mch-fig4", "dff-cpu-mic", "hogs-and-mice", "facebook-bins"} <= set(WITH_CLAIMS)


#: Specs too slow for make test at full size (1-3 minutes each on 2 cores) are
#: run here at fewer seeds; make reproduce checks them at full size.  With
#: fewer seeds a claim over stochastic runs may be inconclusive (one seed
#: always is), but never decided otherwise than the spec expects; a verdict
#: pinned explicitly (claim index -> verdict) must be exactly that.  A third
#: element replaces grid axes; claims whose checks select a dropped grid value
#: are left out.
REDUCED: dict[str, tuple] = {
    "hdrf-sec52": ([0], {}),
    "hdrf-sec531": ([0], {}),
    "hogs-and-mice": ([0, 1, 2], {}),
    "hdrf-fig13": ([0], {}),
    "hdrf-fig13-week": ([0], {}, {"workload.jobs": [250]}),
    "drfh-google-machines": ([0, 1, 2], {}),
}


#: Specs whose claims compare wall-clock times (runs.parquet's
#: scheduling_seconds): their verdicts depend on the machine and its load, so
#: tests do not pin them (no timed assertions); they run at this reduced size
#: and must give a verdict, never n/a.  make reproduce reports them.  Values
#: replace the spec's top-level fields; ``workload`` is merged into its own.
WALL_CLOCK: dict[str, dict] = {
    "mch-fig5": {"seeds": [0], "grid": {"hierarchy.levels": [2, 5]},
                 "workload": {"sample": 30}},
}


@pytest.mark.parametrize("name", sorted(WALL_CLOCK))
def test_wall_clock_claims_give_a_verdict_over_positive_times(tmp_path, name):
    data = read_yaml(EXPERIMENTS / f"{name}.yaml")
    reduced = WALL_CLOCK[name]
    data.update({**reduced, "workload": {**data["workload"], **reduced.get("workload", {})}})
    sweep(data, tmp_path, source=str(EXPERIMENTS / f"{name}.yaml"), jobs=2)
    verdicts = json.loads((tmp_path / name / "claims.json").read_text())
    # one seed of a wall-clock value has no interval: never n/a, never decided
    assert [v["verdict"] for v in verdicts] == ["inconclusive"] * len(verdicts)
    for v in verdicts:
        assert all(np.isfinite(c["measured"]) and c["measured"] > 0 for c in v["checks"])
        assert all(c["method"].startswith("one run") for c in v["checks"])
    if name == "mch-fig5":  # issue 12: the Fig. 5 figure puts every scheduler side by side
        from hierfair.report import plot_cost

        runs = pd.read_parquet(tmp_path / name / "runs.parquet")
        assert {"hdrf", "hdrf-fast", "mch", "collapsed-cpu", "collapsed-mem"} <= set(runs["label"])
        assert plot_cost(tmp_path / name) == tmp_path / name / "cost.png"


def test_a_metric_relative_to_another_label_or_grid_point_pairs_runs_by_seed():
    exp = load_spec(EXPERIMENTS / "hdrf-fig4.yaml")
    data = exp.spec.model_dump(mode="json")
    data["grid"] = {"hierarchy.levels": [2, 5]}  # only a column here, never built
    labels = ["static-hdrf", "hdrf"]
    runs = pd.DataFrame([
        {"label": lab, "seed": seed, "grid_point": gp, "hierarchy.levels": lv,
         "status": "ok", "makespan": (1 + gp * 3) * (2 if lab == "hdrf" else 1) * (1 + seed)}
        for lab in labels for seed in (0, 1) for gp, lv in ((0, 2), (1, 5))])
    data["claims"] = [{"claim": "ratios", "source": "here", "checks": [
        # hdrf / static-hdrf at the same seed and grid point: 2 everywhere
        {"algorithm": "hdrf", "metric": "makespan", "relative_to": "static-hdrf",
         "equals": 2.0},
        # hdrf at 5 levels over hdrf at 2 levels, same seed: 4
        {"algorithm": "hdrf", "metric": "makespan", "where": {"hierarchy.levels": 5},
         "baseline_where": {"hierarchy.levels": 2}, "equals": 4.0},
        # the same growth, bounded by static-hdrf's growth measured alike (4)
        {"algorithm": "hdrf", "metric": "makespan", "where": {"hierarchy.levels": 5},
         "baseline_where": {"hierarchy.levels": 2}, "above": "static-hdrf"}]}]
    verdict, = evaluate(build_experiment(data, check_workload=False), runs)
    assert [(c.measured, c.holds) for c in verdict.checks] == [(2.0, True), (4.0, True),
                                                                (4.0, False)]
    assert verdict.checks[2].expected == "> static-hdrf (4)"


@pytest.mark.parametrize("name", [n for n in WITH_CLAIMS if n not in WALL_CLOCK])
def test_every_verdict_is_what_the_spec_expects(tmp_path, name):
    data = read_yaml(EXPERIMENTS / f"{name}.yaml")
    seeds, pinned, *grid = REDUCED.get(name, (data.get("seeds", [0]), {}))
    data["seeds"] = seeds
    if grid:
        data["grid"] = {**data.get("grid", {}), **grid[0]}
        data["claims"] = [c for c in data["claims"] if all(
            v in data["grid"].get(k, [v]) for check in c["checks"]
            for k, v in check.get("where", {}).items())]
    sweep(data, tmp_path, source=str(EXPERIMENTS / f"{name}.yaml"), jobs=2)
    verdicts = json.loads((tmp_path / name / "claims.json").read_text())
    assert len(verdicts) == len(data["claims"])
    for i, v in enumerate(verdicts):
        if i in pinned:
            assert v["verdict"] == pinned[i], (v["claim"], v["checks"])
        elif name in REDUCED:
            # fewer seeds may leave a claim undecided, never decide it otherwise
            assert v["verdict"] in (expected_verdict(v), "inconclusive"), (v["claim"], v["checks"])
        else:
            assert v["verdict"] == expected_verdict(v), (v["claim"], v["checks"])


def test_a_wrong_expectation_is_refuted_with_the_measured_value():
    exp = load_spec(EXPERIMENTS / "hdrf-fig4.yaml")
    data = exp.spec.model_dump(mode="json")
    data["claims"] = [{"claim": "n1,1 gets 4 CPUs", "source": "nowhere", "checks": [
        {"algorithm": ["static-hdrf", "hdrf"], "node": "n1/n11", "resource": "cpu",
         "equals": 0.4},
        {"algorithm": "naive-hdrf", "node": "n2/n21", "resource": "tasks", "churn": 40,
         "above": "hdrf"}]}]
    verdict, = evaluate(build_experiment(data), pd.DataFrame({"status": [], "label": []}))
    assert verdict.verdict == "refuted"
    assert [(c.algorithm, c.measured, c.holds) for c in verdict.checks] == [
        ("static-hdrf", 0.5, False), ("hdrf", 0.5, False), ("naive-hdrf", 0.0, False)]
    assert verdict.checks[2].expected == "> hdrf (5)"


BAD_CLAIMS = [
    ({"algorithm": "drff", "node": "A", "equals": 1}, "claims[0].checks[0].algorithm",
     "drff"),
    ({"algorithm": "drf", "node": "C", "equals": 1}, "claims[0].checks[0].node", "C"),
    ({"algorithm": "drf", "node": "A", "resource": "gpu", "equals": 1},
     "claims[0].checks[0].resource", "gpu"),
    ({"algorithm": "drf", "node": "A", "below": "fifoo"}, "claims[0].checks[0].below", "fifoo"),
    ({"algorithm": "drf", "node": "A"}, "claims[0].checks[0]", "equals, below or above"),
    ({"algorithm": "drf", "equals": 1}, "claims[0].checks[0]", "give one of node"),
    ({"algorithm": "drf", "node": "A", "equals": 1, "stat": "mode"},
     "claims[0].checks[0].stat", "mode"),
    ({"algorithm": "drf", "metric": "makespan", "relative_to": "fifoo", "equals": 1},
     "claims[0].checks[0].relative_to", "fifoo"),
    ({"algorithm": "drf", "node": "A", "relative_to": "drf", "equals": 1},
     "claims[0].checks[0]", "give metric too"),
]


@pytest.mark.parametrize(("check", "where", "value"), BAD_CLAIMS)
def test_bad_claims_are_clear_errors(tmp_path, capsys, check, where, value):
    data = read_yaml(EXPERIMENTS / "drf-example.yaml")
    data["claims"] = [{"claim": "c", "source": "s", "checks": [check]}]
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: {where}" in err and value in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_metric_stops_after_the_runs_are_saved(tmp_path, capsys):
    data = read_yaml(EXPERIMENTS / "drf-example.yaml")
    data["claims"] = [{"claim": "c", "source": "s",
                       "checks": [{"algorithm": "drf", "metric": "makespn", "below": 1}]}]
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["run", str(spec), "--out", str(tmp_path), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{spec}: claims[0].checks[0].metric: no such column in runs.parquet" in err
    assert "makespn" in err
    assert len(pd.read_parquet(tmp_path / "drf-example" / "runs.parquet")) == 2


def test_editing_a_claim_does_not_rerun_the_simulations(tmp_path):
    data = read_yaml(EXPERIMENTS / "drf-example.yaml")
    first = sweep(data, tmp_path, jobs=1)
    edited = copy.deepcopy(data)
    edited["claims"][0]["checks"][0]["equals"] = 4
    again = sweep(edited, tmp_path, jobs=1)
    pd.testing.assert_frame_equal(first, again)  # same start times: nothing ran
    verdict, = json.loads((tmp_path / "drf-example" / "claims.json").read_text())
    assert not verdict["holds"] and verdict["checks"][0]["measured"] == 3
    del edited["claims"]  # and no stale verdicts once a spec drops its claims
    sweep(edited, tmp_path, jobs=1)
    assert not (tmp_path / "drf-example" / "claims.json").exists()


def test_the_report_opens_with_the_verdicts(tmp_path):
    data = read_yaml(EXPERIMENTS / "drf-example.yaml")
    sweep(data, tmp_path, jobs=2)
    # a claim whose mechanism the model lacks: untestable here, and counted so
    gap = {"claim": "B's tasks run faster on a GPU", "source": "nowhere",
           "untestable": "the model has no GPU speed-up",
           "checks": [{"algorithm": "drf", "node": "B", "resource": "tasks", "equals": 2}]}
    sweep({**data, "name": "drf-gap", "claims": [gap]}, tmp_path, jobs=2)
    text = write_report(tmp_path).read_text()
    head = text[:text.index("## drf-example")]
    assert "2 of 2 verdicts are as the specs expect" in head
    assert "| [drf-example](#drf-example) | DRF gives A three tasks" in head
    assert head.count("untestable here (the model has no GPU speed-up") == 1
    assert "| drf | A | tasks | = 3 ± 0.000001 | 3 | computed once | 3 | exact | holds |" in text


def test_a_claim_over_failed_or_timed_out_runs_is_na(tmp_path, broken_fifo):
    from .conftest import spec_with

    data = spec_with(algorithms=["drf", "fifo"], seeds=[0, 1], claims=[
        {"claim": "fifo is slower", "source": "nowhere",
         "checks": [{"algorithm": "fifo", "metric": "makespan", "above": "drf"}]},
        {"claim": "drf finishes", "source": "nowhere",
         "checks": [{"algorithm": "drf", "metric": "makespan", "above": 0}]}])
    sweep(data, tmp_path, jobs=1)
    na, ok = json.loads((tmp_path / "t" / "claims.json").read_text())
    assert na["verdict"] == "n/a" and na["reason"] == "2 of 2 runs of fifo failed"
    assert not na["holds"]
    assert ok["verdict"] == "holds"
    # two seeds of a seed-independent workload agree: exact
    assert ok["checks"][0]["seeds"] == 2 and ok["checks"][0]["method"] == "exact"
    write_report(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "1 hold, 0 refuted, 0 inconclusive, 0 untestable here, 1 n/a" in readme
    assert "n/a (2 of 2 runs of fifo failed)" in readme


def test_seeds_give_a_mean_and_a_95_percent_interval():
    from hierfair.experiment.stats import mean_interval

    mean, half = mean_interval(np.array([3.0]))
    assert mean == 3.0 and np.isnan(half)
    mean, half = mean_interval(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    # mean 3, sample sd sqrt(2.5), t(0.975, 4) = 2.776 (the published table's value)
    assert mean == 3.0 and half == pytest.approx(2.776 * np.sqrt(2.5) / np.sqrt(5), rel=1e-3)


def test_where_accepts_a_list_valued_grid_point(tmp_path):
    from .conftest import spec_with

    data = spec_with(algorithms=["drf"], workload={"jobs": [
        {"queue": "A", "tasks": 2, "demand": {"cpu": 1}, "duration": [1, 1]}]},
        grid={"workload.jobs[0].duration": [[1, 1], [5, 5]]},
        claims=[{"claim": "short tasks end at 1 s", "source": "here", "checks": [
            {"algorithm": "drf", "metric": "makespan", "equals": 1,
             "where": {"workload.jobs[0].duration": [1, 1]}}]}])
    sweep(data, tmp_path, jobs=1)
    verdict, = json.loads((tmp_path / "t" / "claims.json").read_text())
    assert verdict["verdict"] == "holds" and verdict["checks"][0]["measured"] == 1.0
