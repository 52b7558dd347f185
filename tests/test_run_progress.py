"""Progress inside a run (issue 30 item 3): where a long run stands, on a
bar where a person watches, one line every few minutes in a log; a watched
run makes the same schedule as an unwatched one."""

from __future__ import annotations

import io
import multiprocessing
import time

import numpy as np
import pytest

from hierfair.algorithms import make_policy
from hierfair.errors import PolicyError
from hierfair.experiment.progress import BAR_AFTER, RunProgress, span
from hierfair.sim import RunTimeout
from hierfair.sim.watch import Standing, Watch

from .conftest import experiment


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _busy():  # 8,000 tasks: the loop looks at the clock a dozen times
    return experiment(workload={"jobs": [
        {"queue": "A", "tasks": 4000, "demand": {"cpu": 1, "mem": 4}, "duration": 10},
        {"queue": "B", "tasks": 4000, "demand": {"cpu": 3, "mem": 1}, "duration": 7}]})


def test_a_watched_run_reports_where_it_stands_and_makes_the_same_schedule():
    exp = _busy()
    plain = exp.simulator(make_policy("drf"), 0).run()
    seen: list[Standing] = []
    watched = exp.simulator(make_policy("drf"), 0, watch=Watch(report=seen.append, every=0.0)
                            ).run(until=1e9)
    assert watched.schedule_digest == plain.schedule_digest
    assert len(seen) >= 5
    assert all(s.total == 8000 and s.until == 1e9 for s in seen)
    assert [s.now for s in seen] == sorted(s.now for s in seen)
    assert [s.done for s in seen] == sorted(s.done for s in seen)
    assert 0 < seen[-1].done < 8000  # reported while running, not after
    # far from the horizon: how far is the tasks' fraction
    assert seen[-1].fraction == pytest.approx(seen[-1].done / 8000)


def test_the_deadline_still_stops_a_run():
    with pytest.raises(RunTimeout, match="time ran out at simulated time"):
        _busy().simulator(make_policy("drf"), 0, deadline=time.monotonic() - 1).run()
    with pytest.raises(RunTimeout):  # with a reporter beside it
        _busy().simulator(make_policy("drf"), 0, watch=Watch(
            time.monotonic() - 1, report=lambda s: None, every=0.0)).run()


def test_fraction_is_simulated_time_over_the_horizon_or_tasks_done():
    assert Standing(302400.0, 604800.0, 10, 1000).fraction == 0.5
    assert Standing(10.0, None, 250, 1000).fraction == 0.25
    assert Standing(10.0, 604800.0, 1000, 1000).fraction == 1.0  # all done before the stop
    assert Standing(0.0, None, 0, 0).fraction == 1.0


def test_a_log_gets_one_plain_line_with_time_tasks_rate_and_eta():
    log = io.StringIO()
    progress = RunProgress("week: hdrf-s0", every=300.0, stream=log)
    assert not progress.use_bar and progress.every == 300.0
    progress.t0 -= 100.0  # 100 s into the run
    progress(Standing(3600 * 31.2, 604800.0, 1_234_567, 10_000_000))
    assert log.getvalue() == (
        "week: hdrf-s0: simulated 1.3 d of 7.0 d (19%), 1,234,567 of 10,000,000 tasks done, "
        "12,346 tasks/s, elapsed 0:01:40, ETA 0:07:18\n")
    assert span(45) == "45 s" and span(750) == "12.5 min" and span(60, 604800) == "0.0 d"


def test_a_terminal_gets_a_bar_once_the_run_is_long_and_it_goes_when_the_run_ends():
    screen = _Terminal()
    progress = RunProgress("week: hdrf-s0", every=300.0, stream=screen)
    assert progress.use_bar and progress.every == 0.5
    progress(Standing(60.0, 604800.0, 10, 1000))
    assert screen.getvalue() == ""  # a short run never flashes a bar
    progress.t0 -= BAR_AFTER + 1
    progress(Standing(302400.0, 604800.0, 500, 1000))
    shown = screen.getvalue()
    assert "\r" in shown and "50%" in shown and "simulated 3.5 d of 7.0 d" in shown
    progress.close()
    assert progress.bar is None


def _bar_in_a_child() -> bool:
    return RunProgress("x", every=60.0, stream=_Terminal()).use_bar


def test_a_worker_on_a_terminal_prints_lines_not_a_bar():
    """A worker's bar would garble the command's own bar above it."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_bar_in_a_child) is False
    assert _bar_in_a_child() is True


def test_tasks_that_never_start_get_no_columns_but_every_table_row():
    """Issue 30: a task's columns are written a page of tasks at a time when
    the first of them starts; a run stopped with most of its workload
    waiting or not arrived holds a byte (its state) for each of those tasks;
    its tables still list every task."""
    from hierfair.sim.taskstore import PAGE_SHIFT

    jobs = [{"queue": "A" if i % 2 else "B", "tasks": 5000, "demand": {"cpu": 1, "mem": 1},
             "duration": 5, "submit": 10 * i} for i in range(40)]
    exp = experiment(workload={"jobs": jobs}, tables=["jobs", "tasks"])
    sim = exp.simulator(make_policy("drf"), 0)
    result = sim.run(until=95)  # jobs 0-9 arrived
    led = sim._ledger
    assert led.filled == 10 * 5000  # written past it: nothing (job 9's states at most)
    assert not led._store.arrays["state"][led.filled:].any()
    tasks = result.tasks
    started = tasks["start"].notna().to_numpy()
    pages = np.zeros((len(tasks) >> PAGE_SHIFT) + 1, dtype=bool)
    pages[np.flatnonzero(started) >> PAGE_SHIFT] = True
    # the pages of tasks that never started were never written: they cost nothing
    ready = np.frombuffer(led._store.ready, dtype=np.uint8)[:len(pages)].astype(bool)
    assert (ready == pages).all() and 0 < pages.sum() < len(pages) / 2
    untouched = ~np.repeat(pages, 1 << PAGE_SHIFT)[:led.filled]
    assert untouched.sum() > 10_000
    for name in ("left", "server", "start", "task_job", "seq"):
        assert not led._store.arrays[name][:led.filled][untouched].any()
    assert len(tasks) == 200_000 and result.counts["tasks"] == 200_000
    later = tasks[tasks["job"] >= 10]
    assert (later["state"] == "waiting").all() and (later["server"] == -1).all()
    assert later["start"].isna().all() and (later["ran"] == 0).all()
    assert (later["attempts"] == 0).all()
    assert (later["index"].to_numpy() == np.tile(np.arange(5000), 30)).all()
    waiting = tasks[(tasks["state"] == "pending") & ~started]
    assert len(waiting) > 10_000 and (waiting["server"] == -1).all()
    with pytest.raises(PolicyError, match="not running"):  # no columns: never started
        sim.view.task_info(int(waiting["task"].iloc[-1]))
    assert waiting["finish"].isna().all() and (waiting["attempts"] == 0).all()
    finished = (tasks["state"] == "finished").sum()
    assert result.counts["tasks_unfinished"] == 200_000 - finished > 150_000
    assert result.counts["tasks_waited"] == 200_000 - int(
        (tasks["start"] <= result.jobs["submit"].to_numpy()[tasks["job"]] + 1e-9).sum())
    # the digest is the one of every task's columns, the unstarted at their initial values
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    for name in ("server", "start", "finish", "attempt"):
        h.update(led.column(name).tobytes())
    assert result.schedule_digest == h.hexdigest()
    assert (led.column("left")[~started] == 5.0).all()
    assert (led.column("task_job") == np.repeat(np.arange(40), 5000)).all()


def test_a_policy_naming_a_task_that_has_not_arrived_is_told_so():
    from hierfair.errors import PolicyError

    exp = experiment(workload={"jobs": [
        {"queue": "A", "tasks": 2, "demand": {"cpu": 1, "mem": 1}, "duration": 5},
        {"queue": "B", "tasks": 2, "demand": {"cpu": 1, "mem": 1}, "duration": 5,
         "submit": 10**6}]})
    policy = make_policy("drf")
    policy.preemptions = lambda: [(10**8, -1)]  # type: ignore[method-assign]
    sim = exp.simulator(policy, 0)
    with pytest.raises(PolicyError, match="which is not running"):
        sim.run(until=1)
    assert sim.view.evicting(10**8) is False
    with pytest.raises(PolicyError, match="is not running"):
        sim.view.task_info(10**8)


def test_a_reporter_that_fails_stops_reporting_not_the_run():
    def broken(standing):
        raise BrokenPipeError("stderr closed")

    exp = _busy()
    plain = exp.simulator(make_policy("drf"), 0).run()
    with pytest.warns(RuntimeWarning, match="progress reports stopped: BrokenPipeError"):
        watched = exp.simulator(make_policy("drf"), 0, watch=Watch(report=broken, every=0.0)
                                ).run()
    assert watched.schedule_digest == plain.schedule_digest


def test_the_command_prints_progress_inside_each_run_and_refuses_a_bad_interval(tmp_path, capsys):
    import yaml

    from hierfair.cli import main

    from .conftest import spec_with

    spec = tmp_path / "busy.yaml"
    spec.write_text(yaml.safe_dump(spec_with(name="busy", workload={"jobs": [
        {"queue": "A", "tasks": 4000, "demand": {"cpu": 1, "mem": 4}, "duration": 10},
        {"queue": "B", "tasks": 4000, "demand": {"cpu": 3, "mem": 1}, "duration": 7}]},
        tables=["jobs"])))
    # every 6 ms: a run of 8,000 tasks reports a few times
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--jobs", "0",
                 "--progress-every", "0.0001"]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if ": simulated " in x]
    assert lines and all(x.startswith("busy: drf-s0-") and "of 8,000 tasks done" in x
                         and "ETA" in x for x in lines)
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--force",
                 "--progress-every", "0"]) == 0
    assert ": simulated " not in capsys.readouterr().err
    assert main(["run", str(spec), "--out", str(tmp_path / "out"),
                 "--progress-every", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--progress-every" in err[0] and "-1" in err[0]
