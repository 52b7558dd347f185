"""Eviction latency (a preempted task holds its server until its eviction
completes) and policy wake-ups (``wake_at``), in the simulator and in
Kueue's #13662 scenario."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

import hierfair
from hierfair.experiment.spec import build_experiment
from hierfair.sim.policy import BasePolicy

from .conftest import EXPERIMENTS


class PreemptAt(BasePolicy):
    """FIFO over leaves in order (from ``AT``, b first); at ``AT`` it preempts leaf 'a''s running
    tasks for leaf 'b', and it asks to be woken then (no event happens at
    ``AT``); asks again for the same victims every round."""

    name: ClassVar[str] = "preempt-at"
    AT = 5.0

    def select(self) -> int | None:
        s = self.state
        leaves = s.hierarchy.leaves
        for leaf in (leaves if s.now < self.AT else leaves[::-1]):  # b first from AT
            if s.pending(leaf) and s.fits(s.next_demand(leaf)):
                return leaf
        return None

    def preemptions(self) -> list[tuple[int, int]]:
        s = self.state
        if s.now < self.AT:
            return []
        a, b = s.hierarchy.leaves
        return [(t, b) for t in s.running_tasks(a)] if s.pending(b) else []

    def wake_at(self) -> float | None:
        return self.AT if self.state.now < self.AT else None


def spec(latency: float, mode: str = "restart", **extra) -> dict:
    return {"name": "evict",
            "cluster": {"resources": ["cpu"], "servers": [{"capacity": {"cpu": 2}}]},
            "hierarchy": {"a": {}, "b": {}},
            "workload": {"jobs": [
                {"queue": "a", "tasks": 2, "demand": {"cpu": 1}, "duration": 20},
                {"queue": "b", "tasks": 2, "demand": {"cpu": 1}, "duration": 10, "submit": 1}]},
            "algorithms": ["drf"],
            "preemption": {"mode": mode, "eviction_latency": latency}, **extra}


def run(data: dict):
    exp = build_experiment(data)
    return exp.simulator(PreemptAt(), 0).run()


def test_a_wake_up_runs_a_round_where_no_event_happens():
    r = run(spec(0))
    # b arrives at 1 into a full cluster; nothing happens at 5 but the wake-up
    assert r.preemptions["time"].tolist() == [5.0, 5.0]
    assert r.preemptions["lost"].tolist() == [5.0, 5.0]
    starts = r.tasks.set_index("task")["start"]
    assert starts[2] == starts[3] == 5.0  # b's tasks swap in at once


def test_an_evicted_task_holds_its_server_for_the_latency():
    r = run(spec(3))
    att = r.attempts
    pre = att[att["outcome"] == "preempted"]
    # preempted at 5 (lost 5 s of work), its server held until 8
    assert pre["start"].tolist() == [0.0, 0.0] and pre["end"].tolist() == [8.0, 8.0]
    assert r.preemptions["time"].tolist() == [5.0, 5.0]
    assert r.preemptions["lost"].tolist() == [5.0, 5.0]
    assert r.wasted_work == 10.0
    # b starts when the room is freed (the swap at the eviction's end)
    t = r.tasks.set_index("task")
    assert t.loc[2, "start"] == t.loc[3, "start"] == 8.0
    # the cluster stays full through the eviction: a terminating task holds it
    util = r.utilization.set_index("time")["cpu"]
    assert util[util.index <= 8.0].iloc[-1] == 1.0
    # asked again every round while in flight: nothing more happens
    assert len(r.preemptions) == 2 and (t["state"] == "finished").all()
    # a's tasks restart from scratch when b is done (restart) at 18 + 20
    assert t.loc[0, "finish"] == 38.0


def test_checkpoint_keeps_the_work_done_before_the_eviction():
    r = run(spec(3, mode="checkpoint"))
    t = r.tasks.set_index("task")
    # 5 s of a's 20 done before the preemption; 15 left from b's end at 18
    assert t.loc[0, "finish"] == 33.0 and r.wasted_work == 0.0


def test_a_jobs_latency_overrides_the_runs():
    data = spec(3)
    data["workload"]["jobs"][0]["eviction_latency"] = 1
    r = run(data)
    assert r.attempts[r.attempts["outcome"] == "preempted"]["end"].tolist() == [6.0, 6.0]


def test_an_outage_during_the_eviction_ends_it_once():
    r = run(spec(3, faults={"servers": [{"server": 0, "at": 6, "repair": 1}]}))
    att = r.attempts.sort_values(["task", "start"])
    a0 = att[att["task"] == 0]
    # preempted at 5, gone with its server at 6: one preempted attempt, no second stop
    assert a0["outcome"].tolist()[:2] == ["preempted", "finished"]
    assert a0["end"].iloc[0] == 6.0
    assert len(r.preemptions) == 2 and (r.tasks["state"] == "finished").all()
    # nothing starts on the server as it goes down (no swap into a dying
    # server): b's tasks start once it is back, and it is never over-committed
    t = r.tasks.set_index("task")
    assert t.loc[2, "start"] >= 7.0 and t.loc[3, "start"] >= 7.0
    assert (r.utilization["cpu"] <= 1.0).all()
    on = r.attempts[r.attempts["server"] == 0]
    assert ((on["end"] <= 6.0) | (on["start"] >= 7.0)).all()


def test_a_run_stopped_mid_eviction_says_so(tmp_path):
    data = {**spec(3), "stop_at": 7}
    exp = build_experiment(data)
    r = exp.simulator(PreemptAt(), 0).run(until=7)
    assert r.tasks["state"].value_counts().to_dict()["evicting"] == 2
    att = r.attempts
    assert att[att["task"] == 0]["outcome"].tolist() == ["preempted"]
    assert np.isnan(att[att["task"] == 0]["end"].iloc[0])


def test_no_eviction_keeps_the_tables_categories():
    # a run with no eviction in flight at its end has the four states it had
    r = run(spec(3))
    assert list(r.tasks["state"].cat.categories) == ["waiting", "pending", "running",
                                                     "finished"]


def test_the_spec_dumps_as_before_without_a_latency():
    without = build_experiment(spec(0))
    assert "eviction_latency" not in without.resolved_yaml()
    assert "eviction_latency: 3" in build_experiment(spec(3)).resolved_yaml()
    data = spec(0)
    data["workload"]["jobs"][0]["eviction_latency"] = 2
    assert without.spec_hash != build_experiment(data).spec_hash


@pytest.mark.parametrize("where,value", [("preemption", -1), ("job", -2)])
def test_a_negative_latency_is_refused(tmp_path, where, value):
    import subprocess
    import sys

    import yaml
    data = spec(0)
    if where == "preemption":
        data["preemption"]["eviction_latency"] = value
    else:
        data["workload"]["jobs"][1]["eviction_latency"] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    out = subprocess.run([sys.executable, "-m", "hierfair", "validate", str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "eviction_latency" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- Kueue #13662 ----------------------------------------------------------------
def test_kueue_13662_the_gate_keeps_the_preemptors_quota(tmp_path):
    """The upstream test's steps: wlA and wlB preempted; wlA's eviction ends
    first and wlA is not readmitted; once wlB's ends the preemptor runs."""
    hierfair.run(EXPERIMENTS / "prod-k11-kueue-desync-evictions.yaml", out=tmp_path, jobs=1)
    res = hierfair.load(tmp_path / "prod-k11-kueue-desync-evictions")

    def of(table, label):
        return table[table["label"] == label]

    fixed = "kueue-prioritize-preemptors"
    t = of(res.tasks, fixed).set_index("task")
    pre = of(res.preemptions, fixed)
    assert sorted(pre["task"].tolist()) == [0, 1]  # wlA, wlB at t = 10
    assert pre["time"].tolist() == [10.0, 10.0]
    assert t.loc[2, "start"] == 15.0  # the preemptor, when wlB's 5-s eviction ends
    assert t.loc[0, "state"] == t.loc[1, "state"] == "pending"
    # gate off (Kueue's default): wlA is back at 11, when its own eviction ends
    att = of(res.attempts, "kueue")
    assert att[(att["task"] == 0) & (att["start"] == 11.0)].shape[0] == 1
    assert of(res.tasks, "kueue").set_index("task").loc[2, "state"] == "pending"
    assert len(of(res.preemptions, "kueue")) > 20
    # the gate-off run stopped with evictions in flight (a fifth task state):
    # the runs' tables still combine into one categorical column
    assert isinstance(res.tasks["state"].dtype, pd.CategoricalDtype)
    assert (of(res.tasks, "kueue")["state"] == "evicting").any()


class CountsPending(PreemptAt):
    """Checks ``view.job_pending`` against the leaf's count at every decision."""

    seen = 0

    def select(self) -> int | None:
        s = self.state
        for leaf in s.hierarchy.leaves:
            waiting = s.pending_jobs(leaf)
            assert sum(s.job_pending(j) for j in waiting) == s.pending(leaf)
            assert all(s.job_pending(j) > 0 for j in waiting)
        others = set(range(2)) - {j for x in s.hierarchy.leaves
                                             for j in s.pending_jobs(x)}
        assert all(s.job_pending(j) == 0 for j in others)
        type(self).seen += 1
        return super().select()


@pytest.mark.parametrize("latency", [0, 3])
def test_job_pending_counts_each_jobs_waiting_tasks(latency):
    exp = build_experiment(spec(latency))
    CountsPending.seen = 0
    exp.simulator(CountsPending(), 0).run()
    assert CountsPending.seen > 5


class NamesTheLateJob(PreemptAt):
    """Preempts for leaf b naming b's *second* job at the preemption only
    (job_for answers None, FIFO, at any other time)."""

    def job_for(self, leaf: int) -> int | None:
        s = self.state
        return 2 if s.now == self.AT and 2 in s.pending_jobs(leaf) else None


def test_the_room_goes_to_the_job_it_was_made_for():
    data = spec(3)
    data["workload"]["jobs"][1]["tasks"] = 1
    data["workload"]["jobs"].append({"queue": "b", "tasks": 1, "demand": {"cpu": 1},
                                     "duration": 10, "submit": 2, "name": "late"})
    for latency in (0, 3):
        data["preemption"]["eviction_latency"] = latency
        exp = build_experiment(data)
        t = exp.simulator(NamesTheLateJob(), 0).run().tasks.set_index("task")
        # task 3 is the late job's: it takes the room at the swap (5, or 8
        # when the evictions complete), not b's first job (FIFO)
        assert t.loc[3, "start"] == 5.0 + latency


def test_a_hand_stepped_replay_evicts_at_once():
    """``hierfair allocate`` steps a run by hand (a static replay: everything
    arrives, then tasks finish one at a time): an eviction latency has no
    meaning there and is not applied (it stopped with "illegal transition
    EVICTING -> FINISHED" when it was)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "hierfair", "allocate",
                          str(EXPERIMENTS / "prod-k11-kueue-desync-evictions.yaml"),
                          "-a", "kueue", "--churn", "3"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "cq-2" in out.stdout


def test_kueue_13662_thrash_without_a_horizon_stops_as_a_loop(tmp_path):
    """Gate off and no stop_at: the queues thrash for as long as the tasks
    would run (10^6 s); the run stops, with its tables, once wlA has been
    evicted 1,000 times: status loop, a livelock line."""
    import yaml

    spec = yaml.safe_load((EXPERIMENTS / "prod-k11-kueue-desync-evictions.yaml").read_text())
    spec["algorithms"] = [spec["algorithms"][1]]  # kueue, the gate off
    spec["stop_at"] = None
    spec.pop("claims")
    runs = hierfair.run(spec, out=tmp_path, jobs=1)
    row = runs.iloc[0]
    assert row["status"] == "loop" and row["looped"] == 1
    assert row["error"].startswith("livelock: task 0 (job 0, leaf thrash-cohort/cq-2)")
    assert row["preemptions_max_job"] == 1000
