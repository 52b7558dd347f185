"""Placement constraints: servers carry labels, a node or a job requires
some, and every policy that places through the shared index keeps to them
(issue 28, part 2)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.algorithms import ALGORITHMS, make_policy
from hierfair.algorithms.tsf import tasks_alone
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment
from hierfair.sim.model import Demand
from hierfair.sim.placement import PLACEMENTS, ServerIndex
from hierfair.sim.policy import BasePolicy

SPEC: dict[str, Any] = {
    "name": "constrained",
    "cluster": {"resources": ["cpu", "mem", "gpu"], "servers": [
        {"name": "cpu-box", "count": 2, "capacity": {"cpu": 8, "mem": 16}},
        {"name": "gpu-box", "count": 2, "capacity": {"cpu": 8, "mem": 16, "gpu": 2},
         "labels": ["gpu", "rack-2"]}]},
    "hierarchy": {"ml": {"requires": ["gpu"]}, "web": {}},
    "workload": {"jobs": [
        {"queue": "ml", "tasks": 40, "demand": {"cpu": 1, "mem": 2}, "duration": 10},
        {"queue": "web", "tasks": 20, "demand": {"cpu": 1, "mem": 2}, "duration": 10},
        {"queue": "web", "tasks": 10, "demand": {"cpu": 2, "mem": 1}, "duration": 7,
         "requires": ["rack-2"]}]},
    "algorithms": ["drf"],
}

# every algorithm that places through the shared index
SHARED_INDEX = sorted(name for name, cls in ALGORITHMS.items()
                      if cls.make_index is BasePolicy.make_index)


def _spec(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(SPEC)
    data.update(changes)
    return data


@pytest.mark.parametrize("algorithm", SHARED_INDEX)
def test_every_policy_keeps_every_task_on_a_server_it_may_use(algorithm):
    exp = build_experiment(_spec(algorithms=[algorithm]))
    result = exp.simulate(exp.spec.algorithms[0], 0)
    attempts = result.attempts
    job_of = result.attempts["task"].map(dict(zip(result.tasks["task"], result.tasks["job"])))
    on_gpu_box = attempts["server"] >= 2
    assert on_gpu_box[job_of != 1].all(), "a gpu or rack-2 task ran on a cpu box"
    assert len(result.tasks) == 70  # and every task ran


def test_a_policy_with_its_own_index_is_refused():
    with pytest.raises(SpecError, match=r"algorithms\[1\]\.name: tests where tasks fit"):
        build_experiment(_spec(algorithms=["drf", "hdrf-fast"]))


def test_a_label_no_server_carries_is_named():
    with pytest.raises(SpecError, match=r"workload\.jobs\[2\]\.requires: no server carries"):
        data = _spec()
        data["workload"]["jobs"][2]["requires"] = ["rack-9"]
        build_experiment(data)
    with pytest.raises(SpecError, match=r"hierarchy\.ml\.requires: no server carries every "
                                        r"label of \['gpu', 'tpu'\]"):
        build_experiment(_spec(hierarchy={"ml": {"requires": ["gpu", "tpu"]}, "web": {}}))
    with pytest.raises(SpecError, match=r"cluster\.servers\[0\]\.labels\[0\]: .*\(got .a b.\)"):
        data = _spec()
        data["cluster"]["servers"][0]["labels"] = ["a b"]
        build_experiment(data)


def test_a_misreport_keeps_the_liars_constraint():
    # the strategy-proofness search lies about demands, never about where a
    # job may run: u1 may use server a only, truthful or not
    from hierfair.experiment.probe import Probe
    from hierfair.experiment.properties import PROPERTIES
    from hierfair.experiment.spec_models import AlgorithmSpec

    exp = build_experiment({
        "name": "sp", "algorithms": ["drf"],
        "cluster": {"resources": ["cpu", "mem"], "servers": [
            {"name": "a", "capacity": {"cpu": 4, "mem": 4}, "labels": ["a"]},
            {"name": "b", "capacity": {"cpu": 4, "mem": 4}}]},
        "hierarchy": {"u1": {"requires": ["a"]}, "u2": {}},
        "workload": {"jobs": [
            {"queue": "u1", "tasks": 50, "duration": 100, "demand": {"cpu": 1, "mem": 1}},
            {"queue": "u2", "tasks": 50, "duration": 100, "demand": {"cpu": 1, "mem": 1}}]}})
    probe = Probe(exp, AlgorithmSpec(name="drf"))
    u1 = exp.hierarchy.index("u1")
    lying = probe.fill(lies=(("u1", (1.0, 1.000001)),))
    held = lying.held()
    assert held is not None and not held[u1, 1].any()  # nothing on server b
    assert PROPERTIES["strategy-proofness"].check(probe).magnitude == 0.0


def test_a_label_every_server_carries_is_no_constraint():
    data = _spec(hierarchy={"ml": {"requires": ["gpu"]}, "web": {}})
    for server in data["cluster"]["servers"]:
        server["labels"] = ["gpu", "rack-2"]
    exp = build_experiment({**data, "algorithms": ["hdrf-fast"]})  # own index: fine now
    assert not any(isinstance(j.demand, Demand) for j in exp.workload(0).jobs)


def test_a_constrained_demand_is_its_own_key_and_pickles():
    d = Demand(np.array([1.0, 2.0]), np.array([True, False, True]))
    assert d.tobytes() != np.array([1.0, 2.0]).tobytes()
    assert (d + 1).servers.tolist() == [True, False, True]
    back = pickle.loads(pickle.dumps(d))
    assert back.servers.tolist() == [True, False, True] and back.tolist() == [1.0, 2.0]


def test_tsf_counts_only_the_servers_a_task_may_use():
    caps = np.array([[8.0, 16.0], [8.0, 16.0], [4.0, 4.0]])
    assert tasks_alone(caps, np.array([1.0, 2.0])) == 8 + 8 + 2
    assert tasks_alone(caps, Demand(np.array([1.0, 2.0]), np.array([False, True, True]))) == 10


masks = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(0, 5), min_size=2, max_size=2), min_size=n, max_size=n),
    st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=3)))


@settings(max_examples=60, deadline=None)
@given(case=masks, rule=st.sampled_from(PLACEMENTS),
       steps=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans()),
                      min_size=1, max_size=40))
def test_the_index_answers_constrained_demands_as_a_scan_does(case, rule, steps):
    capacities, mask_rows = case
    cap = np.array(capacities, dtype=float)
    index = ServerIndex(cap, rule, mirror=True)
    free = cap.copy()
    shapes = [np.array(d, dtype=float) for d in ([1, 1], [2, 0], [0, 1], [1, 3])]
    placed: list[tuple[int, np.ndarray]] = []
    for shape, m, release in steps:
        if release and placed:
            server, need = placed.pop(0)
            index.release(server, tuple(need.tolist()))
            free[server] += need
        mask = np.array(mask_rows[m % len(mask_rows)])
        for demand in (shapes[shape], Demand(shapes[shape], mask)):  # unconstrained, then not
            allowed = mask if isinstance(demand, Demand) else np.ones(len(cap), dtype=bool)
            ok = np.flatnonzero((free >= demand).all(axis=1) & allowed)
            chosen = index.choose(demand)
            assert index.fits(demand) == (ok.size > 0)
            assert (chosen is None) if ok.size == 0 else (chosen in ok)
            if rule == "first-fit" and ok.size:
                assert chosen == ok[0]
        if chosen is not None:
            index.allocate(chosen, tuple(np.asarray(demand).tolist()))
            free[chosen] -= demand
            placed.append((chosen, np.asarray(demand)))


def test_the_gpu_server_preset_labels_its_gpu_servers():
    exp = build_experiment(_spec(
        cluster={"kind": "gpu-servers", "servers": 6, "gpu_servers": 2},
        hierarchy={"ml": {"requires": ["gpu"]}, "web": {}},
        workload={"jobs": [{"queue": "ml", "tasks": 4, "demand": {"cpu": 4}, "duration": 1},
                           {"queue": "web", "tasks": 4, "demand": {"cpu": 4}, "duration": 1}]}))
    assert exp.cluster.resources == ("mem", "cpu", "gpu")
    assert exp.cluster.capacities.tolist()[-1] == [32.0, 16.0, 16.0]
    assert [bool(x) for x in exp.cluster.carrying(frozenset({"gpu"}))] == [False] * 4 + [True] * 2
    with pytest.raises(SpecError, match=r"cluster: gpu_servers \(3\) is more than servers"):
        build_experiment(_spec(cluster={"kind": "gpu-servers", "servers": 2, "gpu_servers": 3}))
