"""Heterogeneous servers: DRFH, per-server DRF, PS-DSF and TSF on the field's
examples, and placement as a choice of its own (issue 28)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from hierfair.algorithms import make_policy
from hierfair.errors import PolicyError, SpecError
from hierfair.experiment.spec import Experiment, build_experiment
from hierfair.experiment.spec_models import AlgorithmSpec
from hierfair.sim.policy import LeafPriorityPolicy

# DRFH (Wang, Li, Liang, INFOCOM 2014), the two-server example of §II/§V:
# s1 <2 CPU, 12 GB>, s2 <12 CPU, 2 GB>; u1's tasks <0.2, 1>, u2's <1, 0.2>.
TWO_SERVERS: dict[str, Any] = {
    "name": "drfh-two-servers",
    "cluster": {"resources": ["cpu", "mem"],
                "servers": [{"name": "s1", "capacity": {"cpu": 2, "mem": 12}},
                            {"name": "s2", "capacity": {"cpu": 12, "mem": 2}}]},
    "hierarchy": {"u1": {}, "u2": {}},
    "workload": {"kind": "jobs", "jobs": [
        {"queue": "u1", "tasks": 100, "duration": 1000, "demand": {"cpu": 0.2, "mem": 1}},
        {"queue": "u2", "tasks": 100, "duration": 1000, "demand": {"cpu": 1, "mem": 0.2}}]},
    "algorithms": [{"name": "drf"}],
}


def _experiment(**changes: Any) -> Experiment:
    data = copy.deepcopy(TWO_SERVERS)
    data.update(changes)
    return build_experiment(data)


def placed(exp: Experiment, name: str, placement: str | None = None,
           params: dict | None = None) -> dict[tuple[str, str], int]:
    """Tasks per (user, server) once every backlogged user has filled the cluster."""
    sim = exp.simulator(make_policy(name, params), 0, placement=placement)
    sim.submit_all()
    counts: dict[tuple[str, str], int] = {}
    for task in sim.view.running_tasks():
        info = sim.view.task_info(task)
        key = (exp.hierarchy.paths[info.leaf], exp.cluster.server_names[info.server])
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_best_fit_drfh_puts_each_user_on_the_server_of_its_shape():
    # The paper's numbers: 10 tasks each, u1 all on s1 and u2 all on s2, and a
    # global dominant share G = 10 * max(0.2/14, 1/14) = 5/7 for both.
    exp = _experiment()
    counts = placed(exp, "drfh")
    assert counts == {("u1", "s1"): 10, ("u2", "s2"): 10}
    pool = exp.cluster.total
    for user, demand in (("u1", [0.2, 1.0]), ("u2", [1.0, 0.2])):
        tasks = sum(n for (u, _), n in counts.items() if u == user)
        assert tasks * max(np.array(demand) / pool) == pytest.approx(5 / 7)


@pytest.mark.parametrize(("name", "placement"), [
    ("drfh", "first-fit"),        # First-Fit DRFH, the paper's other heuristic
    ("drf", "least-leftover"),    # the least normalised leftover is not DRFH's rule
    ("drf", None),
    ("per-server-drf", None),     # DRF on each server alone: 5 + 1 on each
    ("tsf", None),                # TSF's fairness, placed first-fit
])
def test_without_drfh_s_shape_rule_each_user_gets_six(name, placement):
    assert placed(_experiment(), name, placement) == {
        ("u1", "s1"): 5, ("u1", "s2"): 1, ("u2", "s1"): 1, ("u2", "s2"): 5}


def test_any_fairness_policy_takes_the_drfh_placement():
    # TSF's task shares are equal for u1 and u2 here (h = 10 + 2 for both),
    # so with DRFH's placement it fills as DRFH does.
    assert placed(_experiment(), "tsf", "drfh") == {("u1", "s1"): 10, ("u2", "s2"): 10}
    assert placed(_experiment(), "hdrf-fast", "drfh") == {("u1", "s1"): 10, ("u2", "s2"): 10}


def test_online_psdsf_locks_in_a_task_that_the_ps_dsf_allocation_would_not_keep():
    # gamma: u1 10 on s1, 2 on s2; u2 2 on s1, 10 on s2.  Online, every key is
    # 0 at first: u1 starts on s1, then u2 (key 0) on s1 too; from then on
    # u1's lowest key is on s1 (x/10) and u2's on s2 (x/10), so u1 fills s1's
    # CPU beside u2's one task: 5 and 1 on s1, u2 10 on s2.  That breaks the
    # PS-DSF condition on s1 (u1, s = 0.5, is held back by u2's CPU, s = 5.5);
    # the PS-DSF allocation is 10 and 10.  Nothing moves the task once placed.
    assert placed(_experiment(), "psdsf") == {("u1", "s1"): 5, ("u2", "s1"): 1,
                                              ("u2", "s2"): 10}


def test_tetris_alignment_is_not_packing_by_shape():
    # demand . free, each over the server's capacity: u1's first task scores
    # 0.1 + 0.083 on s1 and 0.017 + 0.5 on s2, so it goes where memory is scarce
    assert placed(_experiment(), "drf", "dot-product") == {("u1", "s2"): 2, ("u2", "s1"): 2}


def test_a_placement_that_would_do_nothing_is_refused():
    with pytest.raises(SpecError, match=r"algorithms\[0\]\.placement: psdsf names every "
                                        r"task's server itself .*would do nothing"):
        _experiment(algorithms=[{"name": "psdsf", "placement": "drfh"}])
    with pytest.raises(SpecError, match=r"algorithms\[0\]\.placement: slots-k places tasks "
                                        r"through its own index"):
        _experiment(algorithms=[{"name": "slots-k", "placement": "drfh"}])
    # a per-server policy cannot keep a headroom either
    with pytest.raises(SpecError, match=r"algorithms\[0\]\.name: names every task's server "
                                        r"itself .*cannot keep cluster\.headroom"):
        data = copy.deepcopy(TWO_SERVERS)
        data["cluster"]["headroom"] = {"size": {"cpu": 1, "mem": 1}}
        build_experiment({**data, "algorithms": ["per-server-drf"]})
    with pytest.raises(SpecError, match=r"placement.*random"):
        _experiment(algorithms=[{"name": "drf", "placement": "randm"}])


def test_an_entry_without_a_placement_dumps_as_before():
    # run keys and saved specs of every earlier result stay the same
    assert "placement" not in AlgorithmSpec(name="drf").model_dump(mode="json")
    assert AlgorithmSpec(name="drf", placement="drfh").model_dump()["placement"] == "drfh"


def test_random_placement_follows_the_run_seed():
    exp = _experiment()

    def schedule(seed: int) -> list:  # (leaf, server) in the order tasks started
        sim = exp.simulator(make_policy("drf"), seed, placement="random")
        sim.submit_all()
        return [(sim.view.task_info(t).leaf, sim.view.task_info(t).server)
                for t in sim.view.running_tasks()]

    assert schedule(3) == schedule(3)
    assert len({tuple(schedule(seed)) for seed in range(6)}) > 1


class _Misplaces(LeafPriorityPolicy):
    name = "misplaces"

    def key(self, leaf: int) -> int:
        return leaf

    def server_for(self, leaf: int, demand: np.ndarray) -> int | None:
        return 0  # s1, whatever room it has


def test_a_server_named_without_room_stops_the_run():
    with pytest.raises(PolicyError, match="on server 0, which has no room"):
        exp = _experiment()
        sim = exp.simulator(_Misplaces(), 0)
        sim.submit_all()
