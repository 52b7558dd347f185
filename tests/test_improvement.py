"""Response time improvement (H-DRF §5.2): hand-computed percentages under each
base, excluded jobs counted, different workloads refused, per-leaf aggregates,
CDF points, and a sweep's runs paired by seed and grid point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hierfair

from hierfair.errors import SpecError
from hierfair.experiment.improvement import (
    cdf_by,
    cdf_points,
    improvement_between,
    per_leaf,
    response_time_improvement,
)
from hierfair.experiment.sweep import sweep


def jobs(*rows: tuple[int, str, float, float, float]) -> pd.DataFrame:
    """A jobs table from (job, leaf, submit, first_start, finish) rows."""
    frame = pd.DataFrame(rows, columns=["job", "leaf", "submit", "first_start", "finish"])
    frame["name"] = [f"j{j}" for j in frame["job"]]
    frame["tasks"] = 1
    return frame


# job 0: submitted at 0, runs at once; 30 s under A, 60 s under B.
# job 1: submitted at 10; A runs it 10..40 (rt 30); B queues it until 80 and
#        finishes at 100 (rt 90, run time 20).
# job 2: submitted at 0; A is the slower one: 50 s against 40 s.
A = jobs((0, "x", 0.0, 0.0, 30.0), (1, "x", 10.0, 10.0, 40.0), (2, "y", 0.0, 0.0, 50.0))
B = jobs((0, "x", 0.0, 0.0, 60.0), (1, "x", 10.0, 80.0, 100.0), (2, "y", 0.0, 0.0, 40.0))


def test_the_papers_percentage_is_relative_to_the_other_schedulers_response_time():
    out = response_time_improvement(A, B)
    assert out.attrs["relative_to"] == "response_b"
    assert out["job"].tolist() == [0, 1, 2]
    assert out["rt_a"].tolist() == [30.0, 30.0, 50.0]
    assert out["rt_b"].tolist() == [60.0, 90.0, 40.0]
    assert out["earlier"].tolist() == [30.0, 60.0, -10.0]
    # 30 s earlier out of B's 60 s: 50%; 60 of 90: 66.67%; 10 s later of 40: -25%
    assert out["improvement"].tolist() == pytest.approx([50.0, 200 / 3, -25.0])


def test_the_other_bases_are_a_parameter_away():
    speedup = response_time_improvement(A, B, relative_to="response_a")
    # 30 s earlier out of A's 30 s: 100%; 60 of 30: 200%; -10 of 50: -20%
    assert speedup["improvement"].tolist() == pytest.approx([100.0, 200.0, -20.0])
    run_time = response_time_improvement(A, B, relative_to="duration_b")
    # job 1 runs 80..100 under B: 60 s earlier out of 20 s is 300%
    assert run_time["base"].tolist() == [60.0, 20.0, 40.0]
    assert run_time["improvement"].tolist() == pytest.approx([50.0, 300.0, -25.0])
    with pytest.raises(SpecError, match="relative_to: unknown base"):
        response_time_improvement(A, B, relative_to="response_c")  # type: ignore[arg-type]


def test_unfinished_and_missing_jobs_are_excluded_and_counted():
    b = B.copy()
    b.loc[b["job"] == 1, "finish"] = np.nan  # never finished under B
    b = b[b["job"] != 2]  # not in B's table at all
    a = pd.concat([A, jobs((3, "y", 5.0, 5.0, 9.0))], ignore_index=True)
    a.loc[3, "name"] = "j3"
    out = response_time_improvement(a, b)
    assert out["job"].tolist() == [0]
    assert out["improvement"].tolist() == [50.0]
    assert out.attrs["compared"] == 1
    assert out.attrs["unfinished"] == 1
    assert (out.attrs["unfinished_a"], out.attrs["unfinished_b"]) == (0, 1)
    assert (out.attrs["missing_a"], out.attrs["missing_b"]) == (0, 2)
    assert out.attrs["excluded"] == 3


def test_jobs_that_never_arrived_before_a_stop_are_unfinished_not_different():
    # stop_at before job 3's submit: it has no arrival (NaN) in either run
    late = jobs((3, "y", np.nan, np.nan, np.nan))
    a = pd.concat([A, late], ignore_index=True)
    b = pd.concat([B, late], ignore_index=True)
    out = response_time_improvement(a, b)
    assert out["job"].tolist() == [0, 1, 2]
    assert out.attrs["unfinished"] == 1
    with pytest.raises(SpecError, match="job 3.submit"):  # arrived in one run only
        response_time_improvement(a, pd.concat([B, jobs((3, "y", 5.0, 5.0, 9.0))],
                                               ignore_index=True))


def test_a_zero_base_is_undefined_not_infinite():
    a = jobs((0, "x", 0.0, 0.0, 0.0))
    b = jobs((0, "x", 0.0, 0.0, 0.0))
    out = response_time_improvement(a, b)
    assert np.isnan(out["improvement"].iloc[0])
    assert out.attrs["undefined"] == 1


@pytest.mark.parametrize("column, value, message", [
    ("submit", 1.0, "job 0.submit: the runs simulated different workloads"),
    ("leaf", "y", "job 0.leaf: the runs simulated different workloads"),
    ("tasks", 7, "job 0.tasks: the runs simulated different workloads"),
])
def test_different_workloads_are_refused(column, value, message):
    b = B.copy()
    b.loc[b["job"] == 0, column] = value
    with pytest.raises(SpecError, match=message):
        response_time_improvement(A, b)


def test_malformed_tables_are_refused():
    with pytest.raises(SpecError, match="jobs_b: jobs table lacks required columns"):
        response_time_improvement(A, B.drop(columns="finish"))
    with pytest.raises(SpecError, match="unique"):
        response_time_improvement(pd.concat([A, A]), B)
    two_runs = pd.concat([A.assign(run="r1"), A.assign(run="r2")])
    with pytest.raises(SpecError, match="several runs"):
        response_time_improvement(two_runs, B)


def test_per_leaf_means_medians_and_the_improvement_of_the_mean():
    out = per_leaf(response_time_improvement(A, B))
    assert out["leaf"].tolist() == ["x", "y"]
    assert out["jobs"].tolist() == [2, 1]
    x = out.iloc[0]
    assert x["mean_improvement"] == pytest.approx((50 + 200 / 3) / 2)
    assert x["median_improvement"] == pytest.approx((50 + 200 / 3) / 2)
    # mean rt 30 s under A against 75 s under B: 45 / 75 = 60%
    assert x["improvement_of_mean"] == pytest.approx(60.0)
    assert out.iloc[1]["improvement_of_mean"] == pytest.approx(-25.0)
    with pytest.raises(SpecError, match="no such column"):
        per_leaf(response_time_improvement(A, B), by=["seed"])


def test_cdf_points_are_sorted_and_climb_to_one():
    cdf = cdf_points([30.0, -5.0, np.nan, 10.0, 10.0])
    assert cdf["value"].tolist() == [-5.0, 10.0, 10.0, 30.0]
    assert cdf["fraction"].tolist() == [0.25, 0.5, 0.75, 1.0]
    rng = np.random.default_rng(1)
    big = cdf_points(rng.normal(size=500))
    assert (np.diff(big["value"]) >= 0).all() and (np.diff(big["fraction"]) > 0).all()
    assert big["fraction"].iloc[-1] == 1.0
    assert cdf_points([]).empty
    curves = cdf_by(response_time_improvement(A, B))
    assert curves.columns.tolist() == ["leaf", "value", "fraction"]
    assert curves[curves["leaf"] == "x"]["fraction"].tolist() == [0.5, 1.0]
    assert curves[curves["leaf"] == "y"]["value"].tolist() == [-25.0]


def write_folder(folder, runs: list[dict], tables: dict[str, pd.DataFrame]) -> None:
    """A results folder by hand: runs.parquet rows and each run's jobs."""
    folder.mkdir(parents=True)
    pd.DataFrame(runs).to_parquet(folder / "runs.parquet", index=False)
    parts = [t.assign(run=run) for run, t in tables.items()]
    pd.concat(parts, ignore_index=True).to_parquet(folder / "jobs.parquet", index=False)


def test_pairing_by_seed_and_grid_point_in_a_folder(tmp_path):
    def run(rid, label, seed, levels, status="ok", param=None):
        return {"run": rid, "label": label, "seed": seed, "status": status,
                "hierarchy.levels": levels, "algorithms[0].params.p": param}

    runs = [run("a0", "hdrf", 0, 2, param=1), run("a0p", "hdrf", 0, 2, param=2),
            run("b0", "slots", 0, 2), run("a1", "hdrf", 0, 3, param=1),
            run("b1", "slots", 0, 3), run("a2", "hdrf", 1, 2, param=1),
            run("b2", "slots", 1, 2, status="failed")]
    later = A.assign(finish=A["finish"] + 5)
    tables = {"a0": A, "a0p": later, "b0": B, "a1": later, "b1": B, "a2": A}
    folder = tmp_path / "spec"
    write_folder(folder, runs, tables)

    with pytest.raises(SpecError, match="hdrf has several runs"):
        improvement_between(folder, "hdrf", "slots")
    out = improvement_between(folder, "hdrf", "slots", where={"algorithms[0].params.p": 1})
    # seed 0 at 2 and 3 levels; seed 1's slots run failed, so a2 has no partner
    assert out.attrs["pairs"] == 2 and out.attrs["unpaired_runs"] == ["a2"]
    assert out.columns[:4].tolist() == ["seed", "hierarchy.levels", "run_a", "run_b"]
    assert out.groupby("hierarchy.levels")["run_a"].first().to_dict() == {2: "a0", 3: "a1"}
    two = out[out["hierarchy.levels"] == 2]
    three = out[out["hierarchy.levels"] == 3]
    assert two["improvement"].tolist() == pytest.approx([50.0, 200 / 3, -25.0])
    assert three["improvement"].tolist() == pytest.approx([25 / 60 * 100, 55 / 90 * 100,
                                                          -15 / 40 * 100])
    assert out.attrs["compared"] == 6

    with pytest.raises(SpecError, match="no runs of this label; the folder has hdrf, slots"):
        improvement_between(folder, "hdrf", "drf")
    with pytest.raises(SpecError, match="where: no such column"):
        improvement_between(folder, "hdrf", "slots", where={"nope": 1})
    with pytest.raises(SpecError, match="no runs.parquet"):
        improvement_between(tmp_path, "hdrf", "slots")


def test_a_runs_table_given_is_the_one_paired(tmp_path):
    # A claim is measured on the runs table evaluate is given (it may hold a
    # row the folder's runs.parquet lacks: a run finished but not yet written
    # into it); improvement checks pair that table, as every other check reads it.
    rows = [{"run": "a", "label": "x", "seed": 0, "status": "ok"},
            {"run": "b", "label": "y", "seed": 0, "status": "ok"}]
    write_folder(tmp_path / "s", rows[:1], {"a": A, "b": B})
    with pytest.raises(SpecError, match="no runs of this label"):
        improvement_between(tmp_path / "s", "x", "y")
    out = improvement_between(tmp_path / "s", "x", "y", runs=pd.DataFrame(rows))
    with pytest.raises(SpecError, match="the runs table given: no runs of this label"):
        improvement_between(tmp_path / "s", "x", "z", runs=pd.DataFrame(rows))
    assert out.attrs["pairs"] == 1 and out["improvement"].tolist() == pytest.approx(
        [50.0, 200 / 3, -25.0])


def test_different_workloads_in_a_folder_name_the_runs(tmp_path):
    runs = [{"run": "a", "label": "x", "seed": 0, "status": "ok"},
            {"run": "b", "label": "y", "seed": 0, "status": "ok"}]
    write_folder(tmp_path / "s", runs, {"a": A, "b": B.assign(submit=B["submit"] + 1)})
    with pytest.raises(SpecError, match="a vs b: job 0.submit"):
        improvement_between(tmp_path / "s", "x", "y")


def small_sweep(**more) -> dict:
    """A spec of 12 Google-like jobs on two small servers, H-DRF against 4 slots."""
    return {"name": "imp",
            "cluster": {"resources": ["cpu", "mem"],
                        "servers": [{"count": 2, "capacity": {"cpu": 4, "mem": 4}}]},
            "hierarchy": {"kind": "full-binary", "levels": 2},
            "workload": {"kind": "google-synthetic", "jobs": 12, "max_tasks": 20},
            "algorithms": ["hdrf", "slots-4"], **more}


def test_a_sweep_gives_one_row_per_job_per_seed_and_grid_point(tmp_path):
    spec = small_sweep(seeds=[0, 1], grid={"hierarchy.levels": [2, 3]})
    runs = sweep(spec, tmp_path, jobs=1)
    assert (runs["status"] == "ok").all()
    out = improvement_between(tmp_path / "imp", "hdrf", "slots-4")

    table = hierfair.load(tmp_path / "imp").jobs
    # read a pair of runs' files at a time, or from the whole table: the same rows
    whole = improvement_between(tmp_path / "imp", "hdrf", "slots-4", jobs=table)
    pd.testing.assert_frame_equal(out, whole)
    assert out.attrs == whole.attrs
    by_run = runs.set_index("run")
    assert len(out) == 12 * 2 * 2 and out.attrs["excluded"] == 0
    assert sorted(out["seed"].unique()) == [0, 1]
    assert out.groupby(["seed", "hierarchy.levels"]).size().tolist() == [12] * 4
    for pair, rows in out.groupby(["run_a", "run_b"]):
        a, b = by_run.loc[pair[0]], by_run.loc[pair[1]]
        assert (a["label"], b["label"]) == ("hdrf", "slots-4")
        assert a["seed"] == b["seed"] == rows["seed"].iloc[0]
        assert a["hierarchy.levels"] == b["hierarchy.levels"] == rows["hierarchy.levels"].iloc[0]
        # recomputed from the simulator's own completion column (finish - submit)
        ja = table[table["run"] == pair[0]].set_index("job")
        jb = table[table["run"] == pair[1]].set_index("job")
        expected = 100 * (jb["completion"] - ja["completion"]) / jb["completion"]
        assert rows.set_index("job")["improvement"].to_numpy() == pytest.approx(
            expected.loc[rows["job"]].to_numpy())
    # the two schedulers differ on this workload, so the check above has teeth
    assert (out["improvement"].abs() > 1).sum() >= 5
    # with fixed submit times B's response time bounds the paper's percentage
    assert (out["improvement"] < 100).all()


def test_the_report_draws_the_improvement_cdf_of_every_compared_pair(tmp_path):
    from hierfair.report import improvement_pairs, plot_improvement, write_report

    spec = small_sweep(algorithms=["hdrf", "slots-4", "drf"], claims=[
        {"claim": "c", "source": "s", "checks": [
            {"algorithm": ["hdrf", "drf"], "improvement_over": "slots-4", "above": -1000},
            {"algorithm": "hdrf", "improvement_over": "slots-4", "below": 1000}]}])
    sweep(spec, tmp_path, jobs=1)
    folder = tmp_path / "imp"
    assert improvement_pairs(folder) == [("hdrf", "slots-4", {}), ("drf", "slots-4", {})]
    assert plot_improvement(folder) == folder / "improvement.png"
    assert "(H-DRF §5.2).](imp/improvement.png)" in write_report(tmp_path).read_text()


def test_a_claim_pairs_the_runs_it_is_given(tmp_path):
    # evaluate measures every check on the runs table it is given; a row that
    # is not (yet) in the folder's runs.parquet counts for improvement checks too
    from hierfair.experiment.claims import evaluate
    from hierfair.experiment.spec import build_experiment

    spec = small_sweep(claims=[{"claim": "c", "source": "s", "checks": [
        {"algorithm": "hdrf", "improvement_over": "slots-4", "above": -1000}]}])
    runs = sweep(spec, tmp_path, jobs=1)
    folder = tmp_path / "imp"
    runs[runs["label"] == "hdrf"].to_parquet(folder / "runs.parquet")  # slots-4's row lost
    exp = build_experiment(spec)
    check = evaluate(exp, runs, folder=folder)[0].checks[0]
    assert (check.outcome, check.seeds) == ("inconclusive", 1)  # one seed: no interval
    assert check.measured == improvement_between(folder, "hdrf", "slots-4", runs=runs)[
        "improvement"].mean()


def test_many_leaves_are_drawn_by_their_ancestors():
    from hierfair.report import curve_groups

    users = pd.Series([f"n{i}/n{i}{j}/u{k}" for i in range(2) for j in range(3)
                       for k in range(25)])
    groups = curve_groups(users)  # 150 users -> their 6 paper leaves
    assert groups.nunique() == 6 and groups.iloc[0] == "n0/n00" and groups.iloc[-1] == "n1/n12"
    few = pd.Series(["a/b", "a/c", "d"])
    assert curve_groups(few).equals(few)
