"""Verdicts decided by their uncertainty (issue 25): an interval that
straddles a bound is inconclusive, schedulers that schedule identically
cannot be compared, seeds that match are paired, and an expectation does not
change without its history."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from hierfair.errors import SpecError
from hierfair.experiment.claims import evaluate
from hierfair.experiment.results import WALL_CLOCK_COLUMNS
from hierfair.experiment.spec import build_experiment
from hierfair.experiment.stats import Sample, decide_bound, decide_equals
from hierfair.experiment.sweep import sweep

from .conftest import spec_with

#: A workload that depends on the seed (generated), two algorithms.
RANDOM = {"kind": "facebook-bins", "jobs": 6, "small_queues": ["A"], "large_queues": ["B"],
          "gpu_queues": [], "max_tasks": 30, "large_threshold": 20}


def runs_frame(values: dict[str, list[float]], metric: str = "makespan") -> pd.DataFrame:
    return pd.DataFrame([{"run": f"{lab}-{s}", "label": lab, "seed": s, "grid_point": 0,
                          "status": "ok", metric: v}
                         for lab, vs in values.items() for s, v in enumerate(vs)])


def claim(check: dict) -> dict:
    return {"claim": "c", "source": "s", "checks": [check]}


def verdict_of(runs: pd.DataFrame, check: dict, **spec) -> dict:
    data = spec_with(algorithms=["drf", "fifo"], workload=RANDOM, seeds=[0, 1, 2, 3],
                     claims=[claim(check)], **spec)
    v, = evaluate(build_experiment(data, check_workload=False), runs)
    return v.to_json()


def test_a_mean_inside_whose_interval_straddles_is_inconclusive():
    # mean 9.5 < 10, but the 95 % t interval (≈ 5.5 to 13.5) crosses 10
    v = verdict_of(runs_frame({"drf": [7, 12, 8, 11]}),
                   {"algorithm": "drf", "metric": "makespan", "below": 10})
    c, = v["checks"]
    assert c["measured"] == 9.5 and c["low"] < 10 < c["high"]
    assert v["verdict"] == "inconclusive" and c["method"] == "t, 95 %"
    assert "interval crosses" in v["reason"]
    # the same mean with a narrow interval holds; far above, refuted
    assert verdict_of(runs_frame({"drf": [9.4, 9.6, 9.5, 9.5]}),
                      {"algorithm": "drf", "metric": "makespan", "below": 10})["verdict"] == "holds"
    assert verdict_of(runs_frame({"drf": [19.4, 19.6, 19.5, 19.5]}),
                      {"algorithm": "drf", "metric": "makespan", "below": 10})["verdict"] == "refuted"


def test_equivalence_is_a_tost():
    inside = Sample(np.array([1.98, 2.02, 2.0, 1.99, 2.01]), "t")
    assert decide_equals(inside, 2.0, 0.5).outcome == "holds"
    assert decide_equals(inside, 2.0, 0.5).method.startswith("TOST")
    wide = Sample(np.array([0.5, 3.5, 2.0, 1.0, 3.0]), "t")  # mean 2, interval ≈ 0.4 to 3.6
    assert decide_equals(wide, 2.0, 0.5).outcome == "inconclusive"
    far = Sample(np.array([3.9, 4.1, 4.0]), "t")
    assert decide_equals(far, 2.0, 0.5).outcome == "refuted"
    # one run of a seed-dependent workload decides nothing
    assert decide_bound(Sample(np.array([1.0]), "one run"), 2.0, below=True).outcome \
        == "inconclusive"
    assert decide_bound(Sample(np.array([1.0]), "exact"), 2.0, below=True).outcome == "holds"


def test_matching_seeds_are_compared_by_paired_differences():
    # fifo is above drf on every seed by 1 while both vary a lot between seeds:
    # unpaired means overlap; the paired difference (1, 1.2, 0.9, 1.1) is clear
    drf, fifo = [10, 30, 20, 50], [11, 31.2, 20.9, 51.1]
    v = verdict_of(runs_frame({"drf": drf, "fifo": fifo}),
                   {"algorithm": "fifo", "metric": "makespan", "above": "drf"})
    c, = v["checks"]
    assert c["method"] == "paired t, 95 % of the difference from drf"
    assert c["low"] > 0 and v["verdict"] == "holds"
    assert c["low"] < 1.05 < c["high"]  # the interval is the difference's
    # when a seed is missing on one side, the groups are compared unpaired (Welch)
    runs = runs_frame({"drf": drf, "fifo": fifo})
    runs = runs[~((runs["label"] == "drf") & (runs["seed"] == 3))]
    v = verdict_of(runs, {"algorithm": "fifo", "metric": "makespan", "above": "drf"})
    assert v["checks"][0]["method"].startswith("Welch") and v["verdict"] == "inconclusive"


def test_identical_schedules_are_untestable_here(tmp_path):
    # one leaf: drf and fifo give the same schedule, whatever the claim says
    data = spec_with(algorithms=["drf", "fifo"], seeds=[0, 1], hierarchy={"A": {}},
                     workload={"jobs": [{"queue": "A", "tasks": 20, "demand": {"cpu": 1},
                                         "duration": 10}]},
                     claims=[claim({"algorithm": "fifo", "metric": "makespan",
                                    "below": "drf"})])
    sweep(data, tmp_path, jobs=1)
    runs = pd.read_parquet(tmp_path / "t" / "runs.parquet")
    assert runs["schedule_digest"].nunique() == 1
    v, = evaluate(build_experiment(data), runs, folder=tmp_path / "t")
    assert v.verdict == "untestable"
    assert "identical schedule on every one of the 2 paired runs" in v.to_json()["reason"]
    # a second leaf makes them differ: then the comparison is decided
    data["hierarchy"] = {"A": {}, "B": {}}
    data["workload"]["jobs"].append({"queue": "B", "tasks": 20, "demand": {"cpu": 1},
                                     "duration": 10, "submit": 1})
    sweep(data, tmp_path / "2", jobs=1)
    runs = pd.read_parquet(tmp_path / "2" / "t" / "runs.parquet")
    v, = evaluate(build_experiment(data), runs, folder=tmp_path / "2" / "t")
    assert v.verdict in ("holds", "refuted")


HISTORY = {"date": "2026-11-20", "old": "holds", "new": "refuted", "why": "measured 3.3"}


@pytest.mark.parametrize(("fields", "problem"), [
    ({"expect": "refuted"}, "unless a history entry"),
    ({"expect": "holds", "history": [HISTORY]}, "the last history entry changed it to 'refuted'"),
    ({"expect": "refuted", "history": [HISTORY, {**HISTORY, "old": "inconclusive",
                                                  "new": "refuted"}]}, r"history\[1\]\.old"),
    ({"expect": "refuted", "history": [{**HISTORY, "why": ""}]}, "why"),
])
def test_an_expectation_changed_without_its_history_is_refused(fields, problem):
    data = spec_with(claims=[{**claim({"algorithm": "drf", "node": "A", "equals": 1}),
                              **fields}])
    with pytest.raises(SpecError, match=problem):
        build_experiment(copy.deepcopy(data))


def test_an_expectation_with_its_history_is_accepted():
    ok = spec_with(claims=[{**claim({"algorithm": "drf", "node": "A", "equals": 1}),
                            "expect": "refuted", "history": [HISTORY]}])
    exp = build_experiment(ok)
    assert exp.spec.claims[0].expect == "refuted"
    gap = spec_with(claims=[{**claim({"algorithm": "drf", "node": "A", "equals": 1}),
                             "untestable": "no headroom here"}])
    assert build_experiment(gap).spec.claims[0].expect == "untestable"


def test_adaptive_seeds_are_added_while_a_claim_is_inconclusive(tmp_path):
    """``seeds: {min, max, step}``: seeds 0..min-1 first, then ``step`` more
    while a claim is inconclusive; the sweep stops at the first decided
    round or at max, and gives the same tables as the same seeds listed."""
    decided = claim({"algorithm": "drf", "metric": "makespan", "above": 0})
    data = spec_with(algorithms=["drf", "fifo"], workload=RANDOM,
                     seeds={"min": 3, "max": 7, "step": 2}, claims=[decided])
    runs = sweep(data, tmp_path / "a", jobs=1)
    # makespans 4380, 6900, 1200 on seeds 0-2: "above 0" is inconclusive (t(2) is
    # 4.3); with seeds 3 and 4 it holds, and the sweep stops there
    assert sorted(runs["seed"].unique()) == [0, 1, 2, 3, 4]
    first = sweep({**data, "seeds": [0, 1, 2]}, tmp_path / "c", jobs=1)
    v, = evaluate(build_experiment({**data, "seeds": [0, 1, 2]}), first)
    assert v.verdict == "inconclusive"
    v, = evaluate(build_experiment(data), runs)
    assert v.verdict == "holds" and v.checks[0].seeds == 5
    # a claim no sample can decide (tol 0 on a varying value): seeds up to max
    mean = float(runs.loc[runs["label"] == "drf", "makespan"].mean())
    open_ = claim({"algorithm": "drf", "metric": "makespan", "equals": mean, "tol": 0})
    runs = sweep({**data, "claims": [open_]}, tmp_path / "a", jobs=1)
    assert sorted(runs["seed"].unique()) == list(range(7))
    assert list(runs["run_index"]) == list(range(len(runs)))
    listed = sweep({**data, "seeds": list(range(7)), "claims": [open_]}, tmp_path / "b",
                   jobs=1)
    keep = [c for c in runs.columns if c not in WALL_CLOCK_COLUMNS]
    pd.testing.assert_frame_equal(runs[keep], listed[keep])


@pytest.mark.parametrize(("seeds", "problem"), [
    ({"min": 1, "max": 5}, "seeds.min"), ({"min": 5, "max": 3}, "is below min"),
    ({"min": 2, "max": 500}, "seeds.max")])
def test_bad_adaptive_seeds_are_named(seeds, problem):
    with pytest.raises(SpecError, match=problem):
        build_experiment(spec_with(seeds=seeds))


def test_interleaved_runs_share_a_worker_and_give_the_same_tables(tmp_path):
    """``interleave: true`` (wall-clock claims): the runs of one seed and grid
    point run in one worker, the first algorithm rotating with the seed; the
    tables are those of the runs made apart."""
    from hierfair.experiment.sweep import _groups, plan

    data = spec_with(algorithms=["drf", "fifo", "hdrf"], workload=RANDOM, seeds=[0, 1, 2])
    runs = plan(data).runs
    groups = _groups(runs, interleave=True)
    assert [[r.algorithm["name"] for r in g] for g in groups] == [
        ["drf", "fifo", "hdrf"], ["fifo", "hdrf", "drf"], ["hdrf", "drf", "fifo"]]
    assert all(len({r.base_seed for r in g}) == 1 for g in groups)
    assert _groups(runs, interleave=False) == [[r] for r in runs]
    apart = sweep(data, tmp_path / "a", jobs=2)
    together = sweep({**data, "interleave": True}, tmp_path / "b", jobs=2)
    keep = [c for c in apart.columns if c not in WALL_CLOCK_COLUMNS]
    pd.testing.assert_frame_equal(apart[keep], together[keep])
