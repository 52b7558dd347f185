"""Streaming (issue 30 item 1): a run that keeps no per-task table gives
finished tasks' memory back as it goes, and one that keeps no utilization
table folds its utilisation rows into integrals.  Neither may change a
number: the schedule digest, the counts and the summary are those of the
same run keeping everything (differential, on shipped specs with
preemption, eviction latency, faults, checkpoints and ``after`` jobs)."""

from __future__ import annotations

import math
import os
import platform
from pathlib import Path

import numpy as np
import pytest

import hierfair.sim.ledger as ledger_module
import hierfair.sim.taskstore as taskstore
from hierfair.algorithms import make_policy
from hierfair.experiment.results import WALL_CLOCK_COLUMNS, summarize
from hierfair.experiment.spec import build_experiment
from hierfair.experiment.spec_yaml import read_yaml
from hierfair.sim.model import Job
from hierfair.sim.recording import Recorder

from .conftest import experiment

ROOT = Path(__file__).resolve().parents[1]
SPECS = ["hdrf-preemptive", "hogs-and-mice", "server-failure", "prod-k11-kueue-desync-evictions",
         "prod-k4-kueue-tie", "hdrf-cat-preempt"]


def _lean(name: str):
    data = read_yaml(ROOT / "experiments" / f"{name}.yaml")
    data["tables"] = ["jobs", "preemptions"]
    data.pop("claims", None)
    return build_experiment(data, source=name)


def _pair(exp, algo, seed, tmp_path):
    full = exp.simulator(make_policy(algo.name, algo.params), seed, placement=algo.placement)
    a = full.run(until=exp.spec.stop_at)
    lean = exp.simulator(make_policy(algo.name, algo.params), seed, placement=algo.placement,
                         spill_dir=str(tmp_path))
    b = lean.run(until=exp.spec.stop_at)
    return a, b, lean


def _same_report(kept, streamed, what: str = "") -> None:
    """The streamed run reports what the run keeping everything does: the
    same schedule, summary (wall clock aside) and jobs table."""
    assert streamed.schedule_digest == kept.schedule_digest, what
    sa, sb = summarize(kept), summarize(streamed)
    for key, value in sa.items():
        if key not in WALL_CLOCK_COLUMNS:
            assert sb[key] == value or (math.isnan(value) and math.isnan(sb[key])), (what, key)
    assert streamed.jobs.equals(kept.jobs), what


@pytest.mark.parametrize("shift, lag", [(0, 16), (3, 16), (3, 0)])
@pytest.mark.parametrize("name", SPECS)
def test_a_streamed_run_reports_what_the_same_run_keeping_everything_does(
        name, shift, lag, tmp_path, monkeypatch):
    # blocks of 1 and 8 tasks: a task is given back as soon as it (its block)
    # finishes; with no lag, a block also goes with tasks waiting (and comes back)
    monkeypatch.setattr(taskstore, "SHIFT", shift)
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", lag)
    monkeypatch.setattr(Recorder, "FOLD", 4)  # and utilisation folds often
    exp = _lean(name)
    for algo in exp.spec.algorithms:
        a, b, lean = _pair(exp, algo, 0, tmp_path)
        _same_report(a, b, algo.name)
        assert b.makespan == a.makespan and b.preemptions.equals(a.preemptions)
        sa = summarize(a)
        finished = sa["tasks"] - sa["tasks_unfinished"]
        # a block of one task goes as it finishes
        assert lean._ledger.retired == finished if shift == 0 else lean._ledger.retired <= finished
        # folded only when it held more rows than it may
        assert b.utilization_integrals is None or len(a.utilization) > Recorder.FOLD
    assert os.listdir(tmp_path) == []  # the spill file has no name


def test_a_run_keeping_everything_is_untouched_by_folding_limits(tmp_path, monkeypatch):
    """Without ``spill_dir`` (or with the tables kept) nothing is given back."""
    monkeypatch.setattr(taskstore, "SHIFT", 3)
    monkeypatch.setattr(Recorder, "FOLD", 16)
    data = read_yaml(ROOT / "experiments" / "hogs-and-mice.yaml")
    data["tables"] = ["tasks", "utilization"]
    data.pop("claims", None)
    exp = build_experiment(data)
    algo = exp.spec.algorithms[0]
    a, b, lean = _pair(exp, algo, 0, tmp_path)
    assert lean._ledger.retired == 0 and b.utilization_integrals is None
    assert b.tasks.equals(a.tasks) and b.utilization.equals(a.utilization)


def test_what_was_given_back_is_not_read_as_if_it_were_there(tmp_path, monkeypatch):
    # blocks of 512 tasks: whole pages of an 8-byte column go back to the system
    monkeypatch.setattr(taskstore, "SHIFT", 9)
    monkeypatch.setattr(Recorder, "FOLD", 2)
    exp = experiment(workload={"jobs": [
        {"queue": "A", "tasks": 2000, "demand": {"cpu": 1, "mem": 1}, "duration": 3},
        {"queue": "B", "tasks": 2000, "demand": {"cpu": 2, "mem": 1}, "duration": 5,
         "submit": 1}]}, tables=["jobs"])
    kept = exp.simulator(make_policy("drf"), 0).run()
    sim = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path))
    result = sim.run()
    led = sim._ledger
    assert led.retired == 4000  # every block finished
    assert not led._store.arrays["finish"].any()  # what memory holds: nothing
    assert (led.states() == 3).all()
    # the digested columns come back from the spill file; the rest are gone
    assert (led.column("finish") == kept.tasks["finish"].to_numpy()).all()
    assert (led.column("server") == kept.tasks["server"].to_numpy()).all()
    with pytest.raises(ValueError, match="given back"):
        led.column("ran")
    with pytest.raises(ValueError, match="left memory"):
        result.utilization  # noqa: B018
    with pytest.raises(Exception, match="not running"):
        sim.view.task_info(5)
    assert len(result.rest("utilization")) <= Recorder.FOLD
    assert result.schedule_digest == kept.schedule_digest


def test_a_block_goes_while_some_of_its_tasks_wait_and_comes_back_when_they_start(
        tmp_path, monkeypatch):
    """A block retires once no task of it that started is unfinished, though
    others of it wait (a queue that is days behind holds no finished task's
    memory); a later first start brings it back from the spill file."""
    monkeypatch.setattr(taskstore, "SHIFT", 3)
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", 0)
    exp = experiment(workload={"jobs": [
        {"queue": "A", "tasks": 600, "demand": {"cpu": 1, "mem": 1}, "duration": 5},
        {"queue": "B", "tasks": 90, "demand": {"cpu": 3, "mem": 1}, "duration": 7,
         "submit": 2}]}, tables=["jobs"])
    kept = exp.simulator(make_policy("drf"), 0).run()
    # a block that comes back reads nothing from the spill file: its finished
    # tasks' values stay there (reading every record at every return was
    # quadratic in the returns)
    reads: list[int] = []
    read, unretire = taskstore.TaskColumns._read, taskstore.TaskColumns.unretire
    during: list[int] = []

    def counted_unretire(self, block):
        before = len(reads)
        unretire(self, block)
        during.append(len(reads) - before)

    monkeypatch.setattr(taskstore.TaskColumns, "_read",
                        lambda self, at, length: reads.append(at) or read(self, at, length))
    monkeypatch.setattr(taskstore.TaskColumns, "unretire", counted_unretire)
    sim = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path))
    result = sim.run(until=40)
    store, led = sim._ledger._store, sim._ledger
    # retired with tasks that had not started: blocks came back when they did
    assert store.returned > 0 and store.n_retired > 0
    assert len(during) == store.returned and not any(during) and reads
    # a finished task of a block that came back has its values in the spill file
    back = [t for t in range(690) if not store.retired[t >> 3] and store.ready[t >> 9]
            and led.state[t] == ledger_module.FINISHED and math.isnan(led.finish[t])]
    assert back and not any(led.has_columns(t) for t in back)
    with pytest.raises(Exception, match="not running"):
        sim.view.task_info(back[0])
    retired = np.repeat(np.frombuffer(store.retired, dtype=np.uint8), 8)[:690].astype(bool)
    with pytest.raises(Exception, match="not running"):  # finished, given back
        sim.view.task_info(int(np.flatnonzero(retired)[0]))
    again = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path)).run()
    assert again.schedule_digest == kept.schedule_digest
    _same_report(exp.simulator(make_policy("drf"), 0).run(until=40), result)


def _three_jobs():
    """5,900 tasks of three jobs on 30 servers: blocks retire and come back
    within the first 40 s (no retirement lag)."""
    return experiment(cluster={"resources": ["cpu", "mem"],
                               "servers": [{"count": 30, "capacity": {"cpu": 10, "mem": 10}}]},
                      workload={"jobs": [
        {"queue": "A", "tasks": 3000, "demand": {"cpu": 1, "mem": 1}, "duration": 5},
        {"queue": "B", "tasks": 900, "demand": {"cpu": 3, "mem": 1}, "duration": 7,
         "submit": 2},
        {"queue": "A", "tasks": 2000, "demand": {"cpu": 1, "mem": 1}, "duration": 3,
         "submit": 30}]}, tables=["jobs"])


@pytest.mark.parametrize("shift", [0, 3, 9, 11])
@pytest.mark.parametrize("until", [3, 12, 40])
def test_the_tasks_holding_columns_are_listed_without_a_mask_of_every_task(
        shift, until, tmp_path, monkeypatch):
    """TaskColumns.held (what the summary's count of waited tasks reads, a
    chunk at a time) is the mask of pages with columns and blocks not given
    back -- blocks smaller than a page (shift < 9), as large, larger."""
    monkeypatch.setattr(taskstore, "SHIFT", shift)
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", 0)
    exp = _three_jobs()
    sim = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path))
    sim.run(until=until)
    store, filled = sim._ledger._store, sim._ledger.filled
    live = np.repeat(np.frombuffer(store.retired, dtype=np.uint8) == 0, 1 << shift)[:filled]
    mask = store.ready_mask(0, filled) & live
    # some tasks hold columns; late enough, blocks of up to a page were given back
    assert 0 < mask.sum() < filled
    assert store.n_retired > 0 or until < 40 or shift > 9
    for chunk in (1, 700, 1 << 20):
        listed = list(store.held(filled, chunk=chunk))
        assert all(len(part) <= max(chunk, 1 << taskstore.PAGE_SHIFT) for part in listed)
        assert np.array_equal(np.concatenate(listed), np.flatnonzero(mask))


@pytest.mark.parametrize("shift", [10, 11])
@pytest.mark.parametrize("until", [12, 40, None])
def test_a_block_of_whole_pages_comes_back_a_page_at_a_time(shift, until, tmp_path, monkeypatch):
    """Blocks of 2 and 4 pages: a block that comes back gets a page's
    columns as a task of it starts, not all of its pages (a queue days
    behind would hold a whole block per job it serves); the run reports
    what the run keeping everything does."""
    monkeypatch.setattr(taskstore, "SHIFT", shift)
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", 0)
    exp = _three_jobs()
    kept_sim = exp.simulator(make_policy("drf"), 0)
    kept = kept_sim.run(until=until)
    sim = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path))
    streamed = sim.run(until=until)
    store = sim._ledger._store
    assert store.returned > 0
    if until is not None:  # a block that came back holds pages only where tasks started
        per_block = 1 << (shift - taskstore.PAGE_SHIFT)
        back = [b for b in store._spilled if not store.retired[b]]
        assert back and any(
            store.ready[b * per_block:(b + 1) * per_block].count(0) for b in back)
    _same_report(kept, streamed)
    for name in taskstore.DIGESTED:
        assert np.array_equal(sim._ledger.column(name), kept_sim._ledger.column(name),
                              equal_nan=name in ("start", "finish")), name


def test_a_task_that_starts_and_finishes_at_its_blocks_retirement_is_kept(
        tmp_path, monkeypatch):
    """The review's case: a block retires at T, a task of it starts at T and
    finishes at T (a duration that vanishes next to T); the next retirement
    must write it down."""
    monkeypatch.setattr(taskstore, "SHIFT", 1)
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", 0)
    exp = experiment(cluster={"resources": ["cpu", "mem"],
                              "servers": [{"capacity": {"cpu": 1, "mem": 1}}]},
                     workload={"jobs": [{"queue": "A", "tasks": 2, "demand": {"cpu": 1, "mem": 1},
                                         "duration": 1e-9, "submit": 1e8}]}, tables=["jobs"])
    kept = exp.simulator(make_policy("drf"), 0).run()
    sim = exp.simulator(make_policy("drf"), 0, spill_dir=str(tmp_path))
    result = sim.run()
    assert sim._ledger._store.returned == 1
    assert (sim._ledger.column("finish") == kept.tasks["finish"].to_numpy()).all()
    assert result.schedule_digest == kept.schedule_digest


def test_a_block_left_with_waiting_tasks_near_the_front_retires_once_it_falls_behind(
        tmp_path, monkeypatch):
    """A block whose last running task finished while it was within
    RETIRE_LAG of the newest arrivals, its other tasks waiting, retires when
    arrivals leave it behind -- not only at a later finish of its own, which
    a queue days behind may not give for days (slots-10 at load 1, paper
    scale, kept most blocks behind the front so: ~800 MB a simulated day)."""
    monkeypatch.setattr(ledger_module, "RETIRE_LAG", 2)
    # a job a block, a block a page (a first start gives its whole page columns)
    page = np.ones(1 << taskstore.PAGE_SHIFT)
    jobs = [Job(i, 1, 0.0, np.ones(2), page) for i in range(4)]
    led = ledger_module.Ledger(jobs, 2, 1, retire=True, spill_dir=str(tmp_path),
                               block_shift=taskstore.PAGE_SHIFT)
    store = led._store
    led.arrive(0, 0.0)
    task = led.launch(0, 1, 0, 0.0)
    led.stop(task, 1.0, ledger_module.FINISHED)
    led.arrive(1, 2.0)  # block 0 is one block behind the newest: within the lag
    assert not store.retired[0] and led.has_columns(task)
    led.arrive(2, 3.0)  # two behind: past it, its finished task's memory goes
    assert store.retired[0] and not led.has_columns(task)
    assert led.column("finish")[task] == 1.0 and led.column("server")[task] == 0
    # a waiting task of it brings it back; both finishes read back
    second = led.launch(0, 1, 0, 4.0)
    led.stop(second, 5.0, ledger_module.FINISHED)
    assert store.returned == 1 and list(led.column("finish")[:2]) == [1.0, 5.0]
    assert store.retired[0]  # it went again at that finish, behind the front
    led.arrive(3, 6.0)
    assert not store.retired[1] and not store.retired[2]  # nothing of theirs finished


def test_the_row_groups_a_table_streams_are_pyarrows_own(tmp_path):
    """Recorder.FOLD is pyarrow's row-group size: a streamed table's file has
    the bytes of the whole table written at the end."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    frame = pd.DataFrame({"time": np.arange(Recorder.FOLD + 1, dtype=float)})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    meta = pq.ParquetFile(tmp_path / "t.parquet").metadata
    assert meta.num_row_groups == 2 and meta.row_group(0).num_rows == Recorder.FOLD


def test_tables_written_as_the_run_goes_have_the_bytes_of_tables_written_at_the_end(
        tmp_path, monkeypatch):
    import hierfair

    data = read_yaml(ROOT / "experiments" / "hogs-and-mice.yaml")
    data.update(algorithms=["drf", data["algorithms"][4]], seeds=[10],
                tables=["jobs", "allocations", "utilization", "decisions"])
    data.pop("claims")
    hierfair.run(data, out=tmp_path / "whole", jobs=0)
    monkeypatch.setattr(Recorder, "FOLD", 64)
    monkeypatch.setattr(taskstore, "SHIFT", 3)
    hierfair.run(data, out=tmp_path / "streamed", jobs=0)
    import pandas as pd
    import pyarrow.parquet as pq
    whole = sorted((tmp_path / "whole").rglob("*.parquet"))
    assert len(whole) == 2 * 4 + 1
    for path in whole:
        other = tmp_path / "streamed" / path.relative_to(tmp_path / "whole")
        if path.name == "runs.parquet":
            a, b = pd.read_parquet(path), pd.read_parquet(other)
            for col in ("makespan", "tasks_waited", "schedule_digest", "preemptions",
                        "wait_mean", "completion_mean"):
                assert (a[col] == b[col]).all(), col
            assert (a["util_cpu"] == b["util_cpu"]).all() and (a["util_mem"] == b["util_mem"]).all()
            continue
        if path.name == "decisions.parquet":  # latencies are wall-clock
            a, b = pd.read_parquet(path), pd.read_parquet(other)
            assert a.drop(columns="latency_ns").equals(b.drop(columns="latency_ns"))
            continue
        frame = pd.read_parquet(path)
        if len(frame) > 64:  # streamed: 64-row groups, as if written at once with them
            assert pq.ParquetFile(other).metadata.row_group(0).num_rows == 64
            ref = tmp_path / "ref.parquet"
            frame.to_parquet(ref, index=False, row_group_size=64)
            assert other.read_bytes() == ref.read_bytes(), path.name
        else:
            assert other.read_bytes() == path.read_bytes(), path.name
    assert not [p for p in (tmp_path / "streamed").rglob(".*") if p.is_file()]


def test_utilisation_after_the_last_finish_is_not_folded_past_the_end(tmp_path, monkeypatch):
    """Review of ed7e1c5: a server that fails for good after the last finish
    changes utilisation after the run's end (the makespan); a fold must not
    count it (the summary clips at the end)."""
    data = read_yaml(ROOT / "experiments" / "prod-u1-yunikorn.yaml")
    data["tables"] = ["jobs"]
    data.pop("claims", None)
    data["faults"] = {"servers": [{"server": 0, "at": 10, "repair": None}]}
    exp = build_experiment(data)
    algo = next(a for a in exp.spec.algorithms if a.name == "hdrf")
    a, b, _ = _pair(exp, algo, 90, tmp_path)
    assert a.utilization["time"].max() > a.makespan  # the case itself
    monkeypatch.setattr(Recorder, "FOLD", 1)
    b = exp.simulator(make_policy(algo.name, algo.params), 90, placement=algo.placement,
                      spill_dir=str(tmp_path)).run(until=exp.spec.stop_at)
    assert b.utilization_integrals is not None
    for key in ("util_vcore", "util_memory"):
        assert summarize(b)[key] == summarize(a)[key]


@pytest.mark.parametrize("seed", range(6))
def test_a_sum_read_a_part_at_a_time_has_numpys_bits(seed):
    """The folded utilisation integral: numpy's pairwise split, emulated
    above a part's size, gives np.sum of the whole to the last bit."""
    from hierfair.sim.recording import pairwise_sum

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3_000_000))
    values = rng.random(n) * rng.choice([1e-9, 1.0, 1e7], n)
    for most in (int(rng.integers(1, 5000)), 1 << 16):
        assert pairwise_sum(lambda lo, hi: values[lo:hi], 0, n, most) == np.sum(values)


def test_a_long_run_averages_utilisation_to_the_bit(tmp_path, monkeypatch):
    """Review of ed7e1c5: folding a sum a part at a time changed util_* in
    the last bits; now a streamed run's util_* is the kept run's exactly."""
    monkeypatch.setattr(Recorder, "FOLD", 37)  # numpy splits past 128: reads cross folds
    data = read_yaml(ROOT / "experiments" / "hogs-and-mice.yaml")
    data.update(tables=["jobs"], seeds=[10])
    data["workload"].update(jobs=400, task_duration_spread=7)
    data.pop("claims")
    exp = build_experiment(data)
    for algo in exp.spec.algorithms[:3]:
        a, b, _ = _pair(exp, algo, 10, tmp_path)
        assert b.utilization_integrals is not None and len(a.utilization) > 20 * 37
        sa, sb = summarize(a), summarize(b)
        assert sa["util_cpu"] == sb["util_cpu"] and sa["util_mem"] == sb["util_mem"]


def test_table_files_touch_only_their_own_files_under_the_run_folder(tmp_path):
    """What TableFiles removes or replaces: its own temporaries, and the run's
    ``<table>.parquet`` it puts in place -- never a user's file beside them,
    another writer's temporary, or anything outside the run folder."""
    import pandas as pd

    from hierfair.experiment.table_files import TableFiles

    run = tmp_path / "out" / "runs" / "r"
    run.mkdir(parents=True)
    mine = run / "notes.txt"
    mine.write_text("the user's")
    other = run / ".jobs.parquet~elsewhere~1~abcd1234.tmp"  # another host's writer
    other.write_bytes(b"x")
    outside = tmp_path / "allocations.parquet"
    outside.write_bytes(b"not ours")
    rows = pd.DataFrame({"time": [0.0, 1.0]})

    with pytest.raises(RuntimeError), TableFiles(run) as files:  # a run that fails
        files.write("allocations", rows)
        assert len(list(run.glob(".allocations.parquet~*.tmp"))) == 1
        raise RuntimeError
    assert sorted(p.name for p in run.iterdir()) == sorted([mine.name, other.name])
    with TableFiles(run) as files:  # one that completes
        files.write("utilization", rows)
        files.finish("utilization", rows)
        files.finish("jobs", rows)
    assert sorted(p.name for p in run.iterdir()) == sorted(
        [mine.name, other.name, "utilization.parquet", "jobs.parquet"])
    assert len(pd.read_parquet(run / "utilization.parquet")) == 4
    assert mine.read_text() == "the user's" and other.read_bytes() == b"x"
    assert outside.read_bytes() == b"not ours"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["allocations.parquet", "out"]
    with pytest.raises(ValueError, match="not a table"):
        TableFiles(run).finish("../../../allocations", rows)
    assert outside.read_bytes() == b"not ours"


def test_a_runs_tables_are_let_go_of_as_they_are_written(tmp_path, monkeypatch):
    """TableFiles.finish_all writes each table as finish does (the same
    bytes), then the result forgets it, and a table of GIVE_BACK_CELLS or
    more gives the allocators' memory back before the next is written: the
    end of a long run holds one table's write at a time, not all of them
    (docs/performance.md, "The end of a run")."""
    import pandas as pd

    from hierfair.experiment import table_files
    from hierfair.experiment.table_files import TableFiles

    exp = _lean("hogs-and-mice")
    result = exp.simulator(make_policy("drf"), 0).run()
    summarize(result)  # builds the jobs table first, as hierfair run does
    given_back = []
    monkeypatch.setattr(table_files, "release_freed", lambda: given_back.append(1))
    monkeypatch.setattr(table_files, "GIVE_BACK_CELLS", result.jobs.size)
    reference = {name: result.rest(name) for name in ("jobs", "preemptions")}
    assert result.preemptions.size < result.jobs.size  # one table above the line, one below
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with TableFiles(tmp_path / "a") as files:
        for name, frame in reference.items():
            files.finish(name, frame)
    with TableFiles(tmp_path / "b") as files:
        files.finish_all(result, ["jobs", "preemptions"])
    for name in reference:
        assert (tmp_path / "b" / f"{name}.parquet").read_bytes() == \
            (tmp_path / "a" / f"{name}.parquet").read_bytes()
        with pytest.raises(AttributeError):
            getattr(result, name)
    assert given_back == [1]  # after the jobs table alone
    assert pd.read_parquet(tmp_path / "b" / "jobs.parquet").equals(reference["jobs"])


def test_a_worker_holds_one_workload_and_one_experiment_at_a_time():
    """A worker that ran every grid point and seed of the paper-scale week
    held every one's workload between runs (~1.8 GB; docs/performance.md):
    now the last one alone, and a seed's runs still share theirs."""
    import gc
    import json
    import weakref

    from hierfair.experiment.execute import _experiment

    from .conftest import spec_with

    exp = build_experiment(spec_with(workload={"kind": "google-synthetic", "jobs": 40}))
    first = exp.workload(0)
    assert exp.workload(0) is first  # runs of one seed read their inputs once
    jobs, gone = [(j.submit, j.n_tasks) for j in first.jobs], weakref.ref(first)
    del first
    exp.workload(1)
    gc.collect()
    assert gone() is None  # freed when another seed's was built
    assert [(j.submit, j.n_tasks) for j in exp.workload(0).jobs] == jobs  # rebuilt the same
    specs = [json.dumps(spec_with(name=f"s{k}"), sort_keys=True) for k in range(2)]
    held = weakref.ref(_experiment(specs[0], "", None, "x"))
    _experiment(specs[1], "", None, "x")
    gc.collect()
    assert held() is None



_FREED_INSIDE_THE_HEAP = """
import time
import numpy as np
from hierfair.experiment import workers
mib = lambda: workers._resident() >> 20
start = mib()
heap = [np.ones(1 << 12) for _ in range(20000)]  # 32 kB arrays: glibc's heap, not mmap
pin = np.ones(1 << 12)  # above them: glibc cannot give the freed space back by its top
del heap
time.sleep(0.2)
workers.RELEASE_ABOVE = 1 << 40
looked_small = workers.give_back_memory()
kept = mib()
workers.RELEASE_ABOVE = 0
print(start, kept, looked_small, workers.give_back_memory(), mib())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_worker_gives_back_what_a_run_freed_before_its_next_run():
    """~650 MB of small arrays freed below one that lives on: glibc's heap
    keeps it for its own reuse (a worker carried ~1.1 GB from a paper-scale
    week into its next run) until give_back_memory; below RELEASE_ABOVE it
    does not look.  In a fresh process: a test process's heap holds whatever
    earlier tests left."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FREED_INSIDE_THE_HEAP], check=True,
                         capture_output=True, text=True).stdout.split()
    start, kept, looked_small, looked, after = out
    assert (looked_small, looked) == ("False", "True")
    assert int(kept) - int(start) > 400  # what the allocator kept
    assert int(after) - int(start) < (int(kept) - int(start)) / 4
