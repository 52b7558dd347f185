"""Hierarchical slot scheduling (H-DRF §5.3) and its over-commitment model."""

from __future__ import annotations

import pytest

import hierfair
from hierfair.experiment.allocate import allocate
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
    tasks = exp.simulate(exp.spec.algorithms[0], 0).tasks
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
    tasks = exp.simulate(exp.spec.algorithms[0], 0).tasks
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
    runs = hierfair.run(EXPERIMENTS / "hdrf-sec53-slots.yaml", out=tmp_path, jobs=1)
    span = dict(zip(runs["label"], runs["makespan"]))
    slots = {k: v for k, v in span.items() if k.startswith("slots-")}
    assert span["hdrf"] < min(slots.values())
    assert max(slots, key=slots.get) == "slots-6"
    done = dict(zip(runs["label"], runs["completion_mean"]))
    assert done["hdrf"] < min(v for k, v in done.items() if k.startswith("slots-"))


# -- the incremental walk against the reference --------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hierfair.algorithms.slots import SlotParams, Slots, SlotsReference  # noqa: E402
from hierfair.sim import Faults, Simulator  # noqa: E402

from .test_flatten_incremental import binary_instance, instances  # noqa: E402


def same_schedule(inst, k: int, faults: Faults | None = None) -> None:
    """Same leaf at every decision, every task on the same server at the same
    start, under ``k`` slots per server."""
    out = []
    for cls in (SlotsReference, Slots):
        result = Simulator(*inst, cls(SlotParams(k=k)), faults=faults).run()
        out.append((result.decisions["leaf"].tolist(),
                    result.attempts[["task", "server", "start"]].to_numpy().tolist()))
    assert out[0][0] == out[1][0], "another leaf than the reference walk"
    assert out[0][1] == out[1][1], "a task elsewhere or at another time"


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), k=st.integers(1, 6), gpu_less=st.booleans(),
       outages=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 8),
                                  st.sampled_from([None, 2.0, 6.0])), max_size=2),
       task_failure=st.sampled_from([0.0, 0.3]))
def test_the_incremental_walk_decides_like_the_reference(inst, k, gpu_less, outages,
                                                        task_failure):
    cluster, h, workload = inst
    caps = cluster.capacities.copy()
    if gpu_less and caps.shape[1] == 3 and len(caps) > 1:
        caps[1:, 2] = 0.0  # servers without the third resource: fewer kinds with a slot
        cluster = type(cluster)(cluster.resources, caps)
    faults = Faults(outages=tuple((s % len(caps), float(t), r) for s, t, r in outages),
                    task_failure=task_failure, seed=1)
    same_schedule((cluster, h, workload), k, faults)


def test_the_incremental_walk_on_a_six_level_tree():
    for k in (2, 5):
        same_schedule(binary_instance(6, seed=3), k)


@pytest.mark.parametrize("seed", range(6))
def test_slot_index_against_a_plain_model(seed):
    """The slot index on plain floats (its per-task path) against the model it
    keeps: lowest server with a free slot and every resource asked for; free
    totals over the servers that are up; the over-commitment factor as the
    module docstring writes it, in numpy.  Random allocations, releases,
    failures and repairs, with over-commitment."""
    import numpy as np

    from hierfair.algorithms.slots import SlotIndex

    rng = np.random.default_rng(seed)
    n, k = 7, 3
    cap = rng.integers(0, 4, size=(n, 3)).astype(float)
    penalty = np.array([1.0, 5.0, 0.0])
    index = SlotIndex(cap, k, penalty)
    used = np.zeros_like(cap)
    slots = [k] * n
    down: set[int] = set()
    placed: list[tuple[int, tuple[float, ...]]] = []
    demands = [np.array(d, dtype=float) for d in ([1, 1, 0], [2, 0, 0], [0, 0, 1], [3, 2, 1])]
    for _ in range(400):
        op = rng.random()
        if op < 0.05 and placed:  # a server fails: its tasks go first
            server = placed[int(rng.integers(len(placed)))][0]
            for s, d in [p for p in placed if p[0] == server]:
                placed.remove((s, d))
                index.release(s, d)
                used[s] -= d
                slots[s] += 1
            index.set_down(server)
            down.add(server)
        elif op < 0.1 and down:
            index.set_up(down.pop())
        elif op < 0.4 and placed:
            s, d = placed.pop(int(rng.integers(len(placed))))
            index.release(s, d)
            used[s] -= d
            slots[s] += 1
        else:
            demand = demands[int(rng.integers(len(demands)))]
            ok = [s for s in range(n) if s not in down and slots[s] > 0
                  and (cap[s][demand > 0] > 0).all()]
            chosen = index.choose(demand)
            assert chosen == (ok[0] if ok else None)
            if chosen is not None:
                need = tuple(demand.tolist())
                index.allocate(chosen, need)
                used[chosen] += demand
                slots[chosen] -= 1
                placed.append((chosen, need))
                over = np.divide(used[chosen], cap[chosen], out=np.zeros(3),
                                 where=cap[chosen] > 0) - 1.0
                factor = float(np.prod(1.0 + penalty * np.clip(over, 0.0, None)))
                assert index.duration_factor(chosen) == factor
        up = [s for s in range(n) if s not in down]
        assert index.free_total.tolist() == pytest.approx((cap[up] - used[up]).sum(axis=0).tolist())
        assert index.free_of(up[0] if up else 0).tolist() == (cap - used)[up[0] if up else 0].tolist()
