"""The asv benchmarks still run and measure what they say (smallest
parameters; no timed assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks import bench_datasets, bench_latency, bench_simulator, latency, workloads


def test_latency_instance_is_contended_and_steady():
    cluster, hierarchy, workload = workloads.latency_instance(4)
    assert len(hierarchy.leaves) == 16
    queued = {job.leaf for job in workload.jobs if job.submit == 0}
    assert queued == set(hierarchy.leaves)  # every leaf demanding at time 0
    work = sum(job.demand[0] * job.n_tasks for job in workload.jobs if job.submit == 0)
    assert work > 3 * cluster.capacities[:, 0].sum()  # far more than fits at once
    assert any(job.submit > 0 for job in workload.jobs)  # and more keeps coming


def test_steady_latencies_stop_at_the_budget():
    instance = workloads.latency_instance(2)
    latencies = workloads.steady_latencies("drf", instance, 50)
    assert latencies.size == 50 and (latencies > 0).all()


def test_unknown_algorithm_skips():
    with pytest.raises(NotImplementedError, match="no-such-policy"):
        workloads.policy_or_skip("no-such-policy")


def test_decision_latency_benchmark():
    bench = bench_latency.DecisionLatency()
    assert bench.param_names == ["algorithm", "levels"]
    assert bench_latency.LEVELS == list(range(2, 15, 2))
    for algorithm in ("drf", "hdrf"):
        bench.setup(algorithm, 2)
        before = len(bench.sim.result().decisions)
        bench.time_churn(algorithm, 2)
        assert len(bench.sim.result().decisions) >= before + 2 * bench_latency.STEPS
    with pytest.raises(NotImplementedError, match="no-such-policy"):
        bench.setup("no-such-policy", 2)


def test_latency_table():
    stats = {("drf", 2): (8_000.0, 21_500.0), ("drf", 4): (18_000.0, 108_000.0),
             ("gone", 2): "no algorithm", ("gone", 4): "no algorithm"}
    text = latency.table(stats, ["drf", "gone"], [2, 4])
    assert text.splitlines() == [
        "| algorithm | 4 leaves (2 levels) | 16 leaves (4 levels) |",
        "|---|---|---|",
        "| drf | 8.0 / 22 | 18 / 108 |",
    ]


@pytest.mark.parametrize("algorithm", ["drf", "fifo"])
def test_simulate_benchmark_runs(algorithm):
    bench = bench_simulator.Simulate()
    bench.setup(algorithm, 16)
    bench.time_simulate(algorithm, 16)


def test_swim_day_skips_without_traces(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("HIERFAIR_DATA", str(missing))
    with pytest.raises(NotImplementedError, match=f"no traces at {missing}"):
        bench_simulator.SwimDay().setup("drf")
    with pytest.raises(NotImplementedError, match="no traces"):
        bench_datasets.Traces().setup()


def test_swim_day_skips_unknown_algorithm(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERFAIR_DATA", str(tmp_path))
    with pytest.raises(NotImplementedError, match="no-such-policy"):
        bench_simulator.SwimDay().setup("no-such-policy")


def test_swim_day_skips_without_its_trace_file(monkeypatch, tmp_path):
    monkeypatch.setenv("HIERFAIR_DATA", str(tmp_path))  # a folder without the day
    with pytest.raises(NotImplementedError, match="FB-2009_samples_24_times_1hr_0.tsv"):
        bench_simulator.SwimDay().setup("drf")


def test_swim_day_throughput(trace, monkeypatch, tmp_path):
    """The real spec loads from the traces; the run is the benchmark's own
    code on the day's first 50 jobs (the whole day takes a minute)."""
    spec = yaml.safe_load(bench_simulator.SWIM_DAY.read_text())
    first50 = "FB-2009_samples_24_times_1hr_0_first50jobs.tsv"
    trace(first50)
    monkeypatch.setenv("HIERFAIR_DATA", str(trace.of(spec)))
    exp, _, seed = bench_simulator.swim_day("drf")
    assert exp.workload(seed).n_tasks == 148_854
    spec["workload"]["files"] = [first50]
    small = Path(tmp_path / "swim-50.yaml")
    small.write_text(yaml.safe_dump(spec))
    monkeypatch.setattr(bench_simulator, "SWIM_DAY", small)
    bench = bench_simulator.SwimDay()
    bench_simulator._swim_day.cache_clear()
    bench.setup("drf")
    bench.time_simulate("drf")
    bench.peakmem_simulate("drf")


def test_the_datacenter_weeks_first_hour_runs(trace, monkeypatch):
    """Issue 30 item 5: asv runs the FB-2010 week spec's first hour (the
    whole week, 22.8 M tasks, is benchmarks/datacenter.py's)."""
    spec = yaml.safe_load(bench_simulator.FB2010_WEEK.read_text())
    trace(spec["workload"]["files"][0])
    monkeypatch.setenv("HIERFAIR_DATA", str(trace.of(spec)))
    bench = bench_simulator.FB2010Week()
    bench.setup("drf")
    exp, _, seed = bench.inputs
    assert exp.workload(seed).n_tasks == 197_490
    bench.time_simulate("drf")


def test_a_run_without_per_task_tables_is_estimated_lean():
    """The week's 22.8 M tasks fit this machine's check only because a run
    that keeps no per-task table is estimated by its ledger (Size.lean);
    tests/test_memory_estimate.py holds the estimate above a measured peak."""
    from hierfair.experiment.memory import Size

    week = dict(servers=1200, nodes=10, depth=2, resources=2, jobs=283_920, tasks=22_773_933)
    lean, full = Size(**week, lean=True).estimate_bytes(), Size(**week).estimate_bytes()
    assert lean < 10 * 2**30 < 24 * 2**30 < full


def _results(folder: Path, value: float, status: str = "ok") -> None:
    import pandas as pd
    runs = pd.DataFrame({"run": ["drf-s0-aa"], "label": ["drf"], "seed": [0], "grid_point": [0],
                         "status": [status], "makespan": [3.0], "wall_seconds": [float(value)]})
    (folder / "runs" / "drf-s0-aa").mkdir(parents=True)
    runs.to_parquet(folder / "runs.parquet")
    pd.DataFrame({"task": [0, 1], "start": [0.0, value]}).to_parquet(
        folder / "runs" / "drf-s0-aa" / "tasks.parquet")


def test_golden_comparison_finds_one_changed_cell(tmp_path):
    from benchmarks import golden
    for name, value in (("a", 1.0), ("b", 1.0), ("c", 1.5)):
        _results(tmp_path / name, value)
    assert golden.compare_folders(tmp_path / "a", tmp_path / "b") == 1
    with pytest.raises(AssertionError, match="tasks.parquet"):
        golden.compare_folders(tmp_path / "a", tmp_path / "c")
    # runs that did not end ok on both sides are not "identical": nothing ran
    _results(tmp_path / "d", 1.0, "error")
    _results(tmp_path / "e", 1.0, "error")
    with pytest.raises(AssertionError, match="not every run ended ok"):
        golden.compare_folders(tmp_path / "d", tmp_path / "e")
    with pytest.raises(AssertionError, match="no results"):
        golden.compare_folders(tmp_path / "a", tmp_path / "missing")


@pytest.mark.skipif(not (Path(__file__).parent.parent / ".git").exists(),
                    reason="not a git checkout: nothing to export")
def test_golden_base_imports_its_own_algorithms(tmp_path):
    # The trap the script exists for: PYTHONPATH at a plain checkout still
    # imports this checkout's hierfair.algorithms (the editable install).
    import shutil

    from benchmarks import golden
    code, plain = tmp_path / "code", tmp_path / "plain"
    golden.export("HEAD", code)
    golden.check_origin(golden.environment(code), tmp_path, code)
    shutil.copytree(code, plain)  # as checked out: algorithms/ beside hierfair/
    for sub in ("algorithms", "datasets"):
        shutil.move(plain / "hierfair" / sub, plain / sub)
    with pytest.raises(SystemExit, match="wrong tree"):
        golden.check_origin(golden.environment(plain), tmp_path, plain)
