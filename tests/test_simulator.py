"""Simulator invariants on random instances, determinism, and FIFO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hierfair
from hierfair.algorithms import make_policy
from hierfair.experiment.allocate import allocate
from hierfair.experiment.results import WALL_CLOCK_COLUMNS
from hierfair.experiment.detail import DETAIL_TABLES
from hierfair.experiment.spec import AlgorithmSpec, build_experiment, load_spec
from hierfair.sim import Simulator

from .conftest import EXPERIMENTS, experiment

RES = ["cpu", "mem", "gpu"]


@st.composite
def random_spec(draw):
    m = draw(st.integers(1, 3))
    resources = RES[:m]
    # The first server has every resource; the others may lack some (no GPU).
    servers = [{"capacity": {r: draw(st.integers(1, 8)) for r in resources}}]
    for _ in range(draw(st.integers(0, 3))):
        cap = {r: draw(st.integers(0, 8)) for r in resources}
        servers.append({"capacity": cap, "count": draw(st.integers(1, 2))})
    groups = draw(st.integers(1, 3))
    hierarchy = {f"g{g}": {"weight": draw(st.integers(1, 3)),
                           "children": {f"q{k}": {"weight": draw(st.integers(1, 3))}
                                        for k in range(draw(st.integers(1, 3)))}}
                 for g in range(groups)}
    leaves = [f"{g}/{k}" for g, body in hierarchy.items() for k in body["children"]]
    fit = servers[0]["capacity"]  # every demand fits the first server
    jobs = []
    for _ in range(draw(st.integers(1, 8))):
        demand = {r: draw(st.integers(0, fit[r])) for r in resources}
        demand[resources[0]] = max(demand.get(resources[0], 0), 1)
        n = draw(st.integers(1, 6))
        jobs.append({"queue": draw(st.sampled_from(leaves)), "tasks": n, "demand": demand,
                     "duration": draw(st.lists(st.integers(1, 20), min_size=n, max_size=n)),
                     "submit": draw(st.integers(0, 30))})
    return {"name": "random", "cluster": {"resources": resources, "servers": servers,
                                          "placement": draw(st.sampled_from(["first-fit",
                                                                             "best-fit"]))},
            "hierarchy": hierarchy, "workload": {"jobs": jobs},
            "algorithms": [draw(st.sampled_from(["drf", "fifo"]))]}


def server_usage_peaks(tasks: pd.DataFrame, exp) -> np.ndarray:
    """Max simultaneous use of each resource on each server, rebuilt from the
    task log (finishes before starts at equal times, as the simulator does)."""
    demands = np.stack([exp_job.demand for exp_job in exp.workload(0).jobs])
    peaks = np.zeros_like(exp.cluster.capacities)
    for server, rows in tasks.groupby("server"):
        events = []
        for _, t in rows.iterrows():
            d = demands[t["job"]]
            events.append((t["start"], 1, d))
            events.append((t["finish"], 0, -d))
        use = np.zeros(exp.cluster.n_resources)
        for _, _, d in sorted(events, key=lambda e: (e[0], e[1])):
            use = use + d
            peaks[server] = np.maximum(peaks[server], use)
    return peaks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=random_spec())
def test_invariants_on_random_instances(data):
    exp = build_experiment(data)
    wl = exp.workload(0)
    algo = exp.spec.algorithms[0]
    res = Simulator(exp.cluster, exp.hierarchy, wl, make_policy(algo.name, algo.params),
                    placement=exp.placement).run()
    tasks = res.tasks
    # every task of every job starts once and finishes once, after its job arrived
    assert len(tasks) == wl.n_tasks and (tasks["state"] == "finished").all()
    durations = np.concatenate([j.durations for j in wl.jobs])
    np.testing.assert_allclose(tasks["finish"] - tasks["start"], durations)
    submit = np.array([wl.jobs[j].submit for j in tasks["job"]])
    assert (tasks["start"] >= submit).all()
    # no server over capacity at any event
    assert (server_usage_peaks(tasks, exp) <= exp.cluster.capacities + 1e-9).all()
    # utilization never above 1, and back to 0 at the end
    util = res.utilization[list(exp.cluster.resources)].to_numpy()
    assert (util <= 1 + 1e-9).all() and (util >= -1e-9).all()
    np.testing.assert_allclose(util[-1], 0, atol=1e-9)
    # job records agree with task records
    jobs = res.jobs
    np.testing.assert_allclose(jobs["first_start"], tasks.groupby("job")["start"].min())
    np.testing.assert_allclose(jobs["finish"], tasks.groupby("job")["finish"].max())
    assert res.makespan == tasks["finish"].max()
    # the root's recorded allocation ends empty and never exceeds the cluster
    root = res.allocations[res.allocations["path"] == "(root)"]
    assert root["tasks"].iloc[-1] == 0
    assert (root[list(exp.cluster.resources)].to_numpy() <= exp.cluster.total + 1e-9).all()


def test_same_spec_and_seed_give_identical_files(tmp_path: Path):
    exp = load_spec(EXPERIMENTS / "hdrf-fig4.yaml")
    a = hierfair.run(EXPERIMENTS / "hdrf-fig4.yaml", out=tmp_path / "a", jobs=1)
    b = hierfair.run(EXPERIMENTS / "hdrf-fig4.yaml", out=tmp_path / "b", jobs=1)
    for table in DETAIL_TABLES:
        if table == "decisions":  # latency_ns is wall clock; the rest must match
            da = hierfair.load(tmp_path / "a" / exp.spec.name).decisions
            db = hierfair.load(tmp_path / "b" / exp.spec.name).decisions
            pd.testing.assert_frame_equal(da.drop(columns="latency_ns"),
                                          db.drop(columns="latency_ns"))
            continue
        for run in a["run"]:
            fa = (tmp_path / "a" / exp.spec.name / "runs" / run / f"{table}.parquet")
            fb = (tmp_path / "b" / exp.spec.name / "runs" / run / f"{table}.parquet")
            assert fa.read_bytes() == fb.read_bytes(), (run, table)
    keep = [c for c in a.columns if c not in WALL_CLOCK_COLUMNS]
    pd.testing.assert_frame_equal(a[keep], b[keep])
    assert set(WALL_CLOCK_COLUMNS) <= set(a.columns)
    verdicts = [(tmp_path / d / exp.spec.name / "claims.json").read_bytes() for d in "ab"]
    assert verdicts[0] == verdicts[1]


def test_run_writes_the_promised_tables(tmp_path: Path):
    exp = load_spec(EXPERIMENTS / "drf-example.yaml")
    runs = hierfair.run(EXPERIMENTS / "drf-example.yaml", out=tmp_path, jobs=1)
    folder = tmp_path / "drf-example"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["claims.json", "manifest.json", "runs", "runs.parquet", "spec.yaml"])
    for rid in runs["run"]:
        assert sorted(p.name for p in (folder / "runs" / rid).iterdir()) == sorted(
            [f"{t}.parquet" for t in DETAIL_TABLES] + ["summary.json"])
    assert list(runs["algorithm"]) == ["drf", "fifo"]
    assert (runs["status"] == "ok").all()
    drf = runs.iloc[0]
    # 30 A tasks and 20 B tasks of 10 s; DRF keeps 3 A + 2 B running (9 CPUs):
    # B's 20 tasks take 10 rounds = 100 s, A's 30 tasks also fit in 100 s.
    assert drf["makespan"] == 100.0
    assert drf["util_cpu"] == 1.0
    assert drf["tasks_unfinished"] == 0 and drf["tasks"] == 50
    assert drf["placements"] == 50
    for col in ("latency_mean_ns", "latency_p50_ns", "latency_p99_ns"):
        assert drf[col] > 0
    reloaded = load_spec(folder / "spec.yaml")
    assert reloaded.spec_hash == exp.spec_hash


def test_fifo_blocks_head_of_line_unless_backfilling():
    # 4 CPUs. The oldest job's tasks need 3 CPUs: one runs, the next waits for
    # it; plain FIFO leaves the 4th CPU idle, backfill gives it to the young job.
    exp = experiment(
        cluster={"resources": ["cpu"], "servers": [{"capacity": {"cpu": 4}}]},
        workload={"jobs": [
            {"queue": "A", "tasks": 2, "demand": {"cpu": 3}, "duration": 5, "submit": 0},
            {"queue": "B", "tasks": 4, "demand": {"cpu": 1}, "duration": 5, "submit": 1},
        ]},
    )
    plain = allocate(exp, "fifo")
    assert (plain.node("A")["tasks"], plain.node("B")["tasks"]) == (1, 0)
    filled = allocate(exp, AlgorithmSpec(name="fifo", params={"backfill": True}))
    assert (filled.node("A")["tasks"], filled.node("B")["tasks"]) == (1, 1)


def test_churn_finishes_earliest_started_tasks_first():
    exp = experiment()
    # DRF example: tasks start in the order A, B, A, B, A (<9,14> used).  The
    # first churn step ends A's first task; A (4/9 < B's 2/3) takes <1,4> back.
    a = allocate(exp, "drf", churn=1)
    assert (a.node("A")["tasks"], a.node("B")["tasks"]) == (3, 2)
    b = allocate(exp, "drf", churn=2)  # then B's first ends; B (1/3) takes it back
    assert (b.node("A")["tasks"], b.node("B")["tasks"]) == (3, 2)


def test_stop_at_stops_the_run_with_work_left(tmp_path):
    """H-DRF §5.3.2 stops its simulation at one week: ``stop_at`` runs no
    event after it; metrics cover [0, stop_at]; what has not finished stays
    unfinished (and is left out of completion times)."""
    spec = {"name": "stop", "cluster": {"resources": ["cpu"],
                                        "servers": [{"capacity": {"cpu": 2}}]},
            "hierarchy": {"a": {}, "b": {}},
            "workload": {"jobs": [{"queue": "a", "tasks": 10, "demand": {"cpu": 1},
                                   "duration": 10},
                                  {"queue": "b", "tasks": 10, "demand": {"cpu": 1},
                                   "duration": 10, "submit": 30}]},
            "algorithms": ["drf"], "stop_at": 25}
    row = hierfair.run(spec, out=tmp_path, jobs=1).iloc[0]
    # two tasks at a time: 4 finished at 10 and 20, two running at 25, b not arrived
    assert (row["makespan"], row["stopped_at"], row["tasks_unfinished"]) == (20.0, 25.0, 16)
    assert row["util_cpu"] == 1.0 and np.isnan(row["completion_mean"])
    jobs = hierfair.load(tmp_path / "stop").jobs
    assert jobs["finish"].isna().all() and np.isnan(jobs["submit"].iloc[1])
    tasks = hierfair.load(tmp_path / "stop").tasks
    assert tasks["state"].value_counts().to_dict() == {"waiting": 10, "pending": 4,
                                                        "finished": 4, "running": 2}
    # without stop_at it runs to the end
    done = hierfair.run({**spec, "stop_at": None}, out=tmp_path / "all", jobs=1).iloc[0]
    assert np.isnan(done["stopped_at"]) and done["tasks_unfinished"] == 0


def test_a_policy_sees_the_run_through_its_view_alone():
    """Issue 27: attach() hands the policy a PolicyView, not the simulator;
    the view follows the clock and the allocations as the run goes."""
    from hierfair.algorithms import ALGORITHMS
    from hierfair.sim.loop import Simulator
    from hierfair.sim.model import Cluster, Hierarchy, Job, Workload
    from hierfair.sim.view import PolicyView

    cluster = Cluster(("cpu", "mem"), np.array([[4.0, 8.0]]))
    tree = Hierarchy.flat(["a", "b"])
    jobs = tuple(Job(i, tree.index(q), submit=float(i), demand=np.array([1.0, 2.0]),
                     durations=np.full(3, 5.0)) for i, q in enumerate(["a", "b"]))
    policy = ALGORITHMS["drf"]()
    sim = Simulator(cluster, tree, Workload(jobs), policy)
    view = policy.state
    assert type(view) is PolicyView and view is sim.view and not isinstance(view, Simulator)
    seen = []
    original = policy.select

    infos = []

    def spy():
        seen.append((view.now, view.pending(tree.index("a")), view.running[0]))
        infos.extend(view.task_info(t) for t in view.running_tasks())
        return original()

    policy.select = spy
    sim.run()
    assert seen[0] == (0.0, 3, 0)  # a's 3 tasks wait at t=0, nothing runs yet
    assert {t for t, _, _ in seen} >= {0.0, 1.0, 5.0, 6.0}  # arrivals and finishes
    assert max(r for _, _, r in seen) == 4  # 4 CPUs: at most 4 tasks at once
    assert view.now == 10.0 and view.pending(tree.index("b")) == 0
    assert view.running_tasks() == []
    first = infos[0]  # a named tuple, read by name
    assert (first.job, first.leaf, first.server, first.start) == (0, tree.index("a"), 0, 0.0)
    assert first.demand.tolist() == [1.0, 2.0]
