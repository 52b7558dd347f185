"""Hierarchical slot scheduling (H-DRF §5.3) and its over-commitment model."""

from __future__ import annotations

import pytest

from hierfair.experiment.allocate import allocate
from hierfair.experiment.runner import run_experiment, simulate
from hierfair.experiment.spec import load_spec

from .conftest import EXPERIMENTS, experiment


def test_slots_ignore_demands_and_equalise_task_counts():
    # 4 slots on a 4-CPU server: A's <1 CPU> and B's <3 CPU> tasks get 2 slots
    # each, committing 8 CPUs of 4.
    exp = experiment(
        cluster={"resources": ["cpu"], "servers": [{"capacity": {"cpu": 4}}]},
        workload={"jobs": [{"queue": "A", "tasks": 9, "demand": {"cpu": 1}, "duration": 1},
                           {"queue": "B", "tasks": 9, "demand": {"cpu": 3}, "duration": 1}]},
    )
    a = allocate(exp, "slots-4")
    assert (a.node("A")["tasks"], a.node("B")["tasks"]) == (2, 2)
    assert a.node("")["cpu"] == 2.0


def test_a_gpu_task_takes_a_slot_only_on_a_server_with_gpus():
    # Server 0 has no GPU, server 1 has 2.  4 slots each: G's GPU tasks fill
    # server 1's 4 slots (over-committing its 2 GPUs) and never server 0's;
    # C's CPU tasks take the lowest-numbered free slots.
    exp = experiment(
        cluster={"resources": ["cpu", "gpu"],
                 "servers": [{"capacity": {"cpu": 4, "gpu": 0}},
                             {"capacity": {"cpu": 4, "gpu": 2}}]},
        hierarchy={"C": {}, "G": {}},
        workload={"jobs": [{"queue": "G", "tasks": 9, "demand": {"cpu": 1, "gpu": 1},
                            "duration": 1},
                           {"queue": "C", "tasks": 9, "demand": {"cpu": 1}, "duration": 1}]},
        algorithms=["slots-4"],
    )
    tasks = simulate(exp, exp.spec.algorithms[0], 0).tasks
    first = tasks[tasks["start"] == 0].groupby("leaf")["server"].agg(sorted).to_dict()
    assert first == {"C": [0, 0, 0, 0], "G": [1, 1, 1, 1]}
    assert set(tasks.loc[tasks["leaf"] == "G", "server"]) == {1}


def run_times(algorithm: str | dict) -> list[float]:
    """Six <1 CPU, 1.5 GB> tasks of 10 s on one <4 CPU, 6 GB> server."""
    exp = experiment(
        cluster={"resources": ["cpu", "mem"], "servers": [{"capacity": {"cpu": 4, "mem": 6}}]},
        hierarchy={"A": {}},
        workload={"jobs": [{"queue": "A", "tasks": 6, "demand": {"cpu": 1, "mem": 1.5},
                            "duration": 10}]},
        algorithms=[algorithm],
    )
    tasks = simulate(exp, exp.spec.algorithms[0], 0).tasks
    return (tasks["finish"] - tasks["start"]).tolist()


def test_overcommitted_tasks_run_slower_as_documented():
    # With 6 slots the 5th task starts with CPU over-committed by 1/4 and
    # memory by 1/4: (1 + 1 * 0.25) * (1 + 5 * 0.25) = 2.8125; the 6th by 1/2
    # and 1/2: 1.5 * 3.5 = 5.25.
    assert run_times("slots-6") == pytest.approx([10, 10, 10, 10, 28.125, 52.5])


def test_no_penalty_no_slowdown():
    assert run_times({"name": "slots-6", "params": {"overcommit_penalty": {}}}) == [10] * 6


def test_hdrf_packs_better_than_any_slot_count(tmp_path):
    # §5.3.1: "H-DRF can more efficiently pack jobs in a cluster" -- it finishes
    # first; 6 slots over-commit memory and thrash worst.
    runs = run_experiment(load_spec(EXPERIMENTS / "hdrf-sec53-slots.yaml"), tmp_path)
    span = dict(zip(runs["label"], runs["makespan"]))
    slots = {k: v for k, v in span.items() if k.startswith("slots-")}
    assert span["hdrf"] < min(slots.values())
    assert max(slots, key=slots.get) == "slots-6"
    done = dict(zip(runs["label"], runs["completion_mean"]))
    assert done["hdrf"] < min(v for k, v in done.items() if k.startswith("slots-"))
