"""Load that separates the schedulers: arrival scaling, offered load, and the
report's warning when an experiment cannot tell its schedulers apart."""

from __future__ import annotations

import pandas as pd
import pytest

import hierfair

from hierfair.datasets.arrivals import offered_load
from hierfair.errors import SpecError
from hierfair.experiment.sweep import sweep
from hierfair.report import write_report

from .conftest import experiment, spec_with

# 2 jobs on one <9 cpu, 18 mem> server: A brings 30 tasks x <1, 4> x 10 s, B 20 x <3, 1> x 10 s.
SPREAD = {"jobs": [
    {"queue": "A", "tasks": 30, "demand": {"cpu": 1, "mem": 4}, "duration": 10, "submit": 0},
    {"queue": "B", "tasks": 20, "demand": {"cpu": 3, "mem": 1}, "duration": 10, "submit": 100},
    {"queue": "A", "tasks": 1, "demand": {"cpu": 1, "mem": 1}, "duration": 10, "submit": 400},
]}


def submits(exp) -> list[float]:
    return [j.submit for j in exp.workload(0).jobs]


def test_offered_load_by_hand():
    exp = experiment(workload=SPREAD)
    # cpu: (30*1 + 20*3 + 1) * 10 = 910 over 9 cpus x 400 s = 0.253; mem: 1410 / 18 / 400 = 0.196
    assert offered_load(exp.workload(0), exp.cluster) == pytest.approx(910 / (9 * 400))


def test_compress_divides_the_gaps_and_keeps_the_first_arrival():
    exp = experiment(workload={**SPREAD, "arrivals": {"compress": 4}})
    assert submits(exp) == [0.0, 25.0, 100.0]
    assert "arrivals compressed x4" in exp.workload(0).source


def test_offered_load_target_is_met():
    exp = experiment(workload={**SPREAD, "arrivals": {"offered_load": 0.9}})
    assert offered_load(exp.workload(0), exp.cluster) == pytest.approx(0.9)
    assert submits(exp)[1] == pytest.approx(100 * (910 / (9 * 400)) / 0.9)


@pytest.mark.parametrize("arrivals, message", [
    ({}, "give one of compress or offered_load, or sequential: true"),
    ({"sequential": True, "offered_load": 1}, "offered_load needs open arrivals"),
    ({"compress": 2, "offered_load": 1}, "give one of compress or offered_load"),
    ({"compress": 0}, "workload.arrivals.compress: Input should be greater than 0"),
    ({"speed": 2}, "workload.arrivals.speed: unknown key; allowed here: compress, offered_load"),
    ({"offered_load": 1e-9}, "stretches the last arrival"),
])
def test_bad_arrivals_are_named(arrivals, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        experiment(workload={**SPREAD, "arrivals": arrivals})


def test_offered_load_needs_a_span():
    same_time = {"jobs": [dict(j, submit=0) for j in SPREAD["jobs"]], "arrivals":
                 {"offered_load": 1}}
    with pytest.raises(SpecError, match="the jobs all arrive at once"):
        experiment(workload=same_time)


def test_a_grid_over_load_runs_contended_and_uncontended(tmp_path):
    # Each job fits alone; all three together need 10 of the 9 CPUs.
    fits = {"jobs": [
        {"queue": "A", "tasks": 3, "demand": {"cpu": 1, "mem": 4}, "duration": 100},
        {"queue": "B", "tasks": 2, "demand": {"cpu": 3, "mem": 1}, "duration": 100,
         "submit": 100},
        {"queue": "A", "tasks": 1, "demand": {"cpu": 1, "mem": 1}, "duration": 100,
         "submit": 400}], "arrivals": {"compress": 1}}
    data = spec_with(workload=fits, algorithms=["drf", "fifo"],
                     grid={"workload.arrivals.compress": [0.01, 10]})
    frame = sweep(data, tmp_path, jobs=1)
    by_point = frame.groupby("grid_point")["contended"].agg(["all", "any"])
    assert not by_point.loc[0, "any"]  # 100x slower: no job meets another
    assert by_point.loc[1, "all"]  # 10x faster: the third job waits
    # cpu work 1000 cpu-s over 9 cpus, spread over 40,000 s or 40 s
    assert frame["offered_load"].tolist() == pytest.approx(
        [1000 / 9 / 40_000] * 2 + [1000 / 9 / 40] * 2)


def test_the_report_says_when_no_run_contended(tmp_path):
    quiet = {"jobs": [{"queue": "A", "tasks": 1, "demand": {"cpu": 1}, "duration": 1},
                      {"queue": "B", "tasks": 1, "demand": {"cpu": 1}, "duration": 1}]}
    sweep(spec_with(workload=quiet, algorithms=["drf", "fifo"]), tmp_path, jobs=1)
    runs = pd.read_parquet(tmp_path / "t" / "runs.parquet")
    assert not runs["contended"].any() and (runs["tasks_waited"] == 0).all()
    write_report(tmp_path)
    assert "**No run contended for the cluster**" in (tmp_path / "README.md").read_text()


def test_the_report_says_when_schedules_are_identical(tmp_path):
    # contended, but one leaf only: every fair scheduler runs it the same way
    one = {"jobs": [{"queue": "A", "tasks": 30, "demand": {"cpu": 1}, "duration": 1}]}
    sweep(spec_with(workload=one, algorithms=["drf", "fifo", "hdrf"]), tmp_path, jobs=1)
    runs = pd.read_parquet(tmp_path / "t" / "runs.parquet")
    assert runs["contended"].all()
    write_report(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "**All 3 algorithms gave identical schedules**" in readme


def test_no_warning_when_schedules_differ(tmp_path):
    sweep(spec_with(algorithms=["drf", "fifo"]), tmp_path, jobs=1)
    write_report(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "identical schedules" not in readme and "No run contended" not in readme


def test_sequential_arrivals_wait_for_the_previous_job_of_their_leaf(tmp_path):
    # A's two jobs: the second is submitted when the first ends (10 s of 3 waves).
    chain = {"jobs": [
        {"queue": "A", "tasks": 27, "demand": {"cpu": 1, "mem": 1}, "duration": 10},
        {"queue": "A", "tasks": 1, "demand": {"cpu": 1, "mem": 1}, "duration": 5, "submit": 1},
        {"queue": "B", "tasks": 1, "demand": {"cpu": 1, "mem": 1}, "duration": 5, "submit": 50},
    ], "arrivals": {"sequential": True}}
    exp = experiment(workload=chain)
    assert [j.after for j in exp.workload(0).jobs] == [-1, 0, -1]
    sweep(spec_with(workload=chain, algorithms=["fifo"]), tmp_path, jobs=1)
    jobs = hierfair.load(tmp_path / "t").jobs.set_index("job")
    # 27 unit tasks on 9 CPUs: three waves of 10 s; job 1 arrives at 30, not at 1
    assert jobs.loc[0, "finish"] == 30.0
    assert jobs.loc[1, "submit"] == 30.0 and jobs.loc[1, "finish"] == 35.0
    assert jobs.loc[2, "submit"] == 50.0  # B's first job keeps its own submit time
    assert jobs["after"].tolist() == [-1, 0, -1]


def test_closed_loop_improvement_can_exceed_100_percent(tmp_path):
    # H-DRF §5.2 footnote 8: a job that starts much earlier under A than under B.
    from hierfair.experiment.improvement import improvement_between

    chain = {"jobs": [
        {"queue": "B", "tasks": 18, "demand": {"cpu": 1, "mem": 1}, "duration": 10},
        {"queue": "A", "tasks": 8, "demand": {"cpu": 1, "mem": 1}, "duration": 10},
        {"queue": "B", "tasks": 1, "demand": {"cpu": 1, "mem": 1}, "duration": 1},
    ], "arrivals": {"sequential": True}}
    sweep(spec_with(workload=chain, algorithms=["fifo", "drf"]), tmp_path, jobs=1)
    jobs = improvement_between(tmp_path / "t", "fifo", "drf").set_index("job")
    # fifo runs B's 18 tasks first (0-20), then A's 8 on 8 CPUs beside B's second
    # job (20-21); drf shares the 9 CPUs with A, so B's first job ends at 30 and
    # its second runs 30-31: 10 s earlier, as a percentage of its 1 s under drf.
    assert jobs.loc[2, ["submit_a", "finish_a", "submit_b", "finish_b"]].tolist() == \
        [20.0, 21.0, 30.0, 31.0]
    assert jobs.loc[2, "improvement"] == pytest.approx(1000.0)


def test_the_report_gives_means_and_intervals_over_seeds(tmp_path):
    data = spec_with(workload={"kind": "facebook-bins", "jobs": 5, "small_queues": ["A"],
                               "large_queues": ["B"], "gpu_queues": [], "max_tasks": 30,
                               "large_threshold": 20},
                     algorithms=["drf", "fifo"], seeds=[0, 1, 2])
    frame = sweep(data, tmp_path, jobs=1)
    write_report(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "Across seeds (mean ± half-width of the 95 % interval)" in readme
    from hierfair.report.fmt import num

    drf = frame[frame["label"] == "drf"]["makespan"].mean()
    row = next(line for line in readme.splitlines() if line.startswith("| drf | 3 |"))
    assert row.split(" | ")[2].startswith(f"{num(drf)} ± ")
