"""YARN FairScheduler preemption (yarn-fair ``params.preemption``): the
rules on hand-computed inputs, and upstream's TestFairSchedulerPreemption
numbers (apache/hadoop, stored 09517262) on its own cluster.  The reading
and the hand traces: docs/upstream/yarn-preemption.md."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from hierfair.algorithms.yarn_fair import YarnFair, YarnParams
from hierfair.algorithms.yarn_preemption import (
    Candidate,
    StarvedApps,
    can_container_be_preempted,
    containers_for_one,
    distribute_min_share,
    drc_compare,
    fair_share_starved,
    min_share_starvation,
    node_order,
    starved_containers,
    usage_below_share,
)
from hierfair.experiment.contract import check_policy
from hierfair.experiment.spec import build_experiment

CLUSTER = [8192.0, 24.0]  # TestFairSchedulerPreemption: 2 nodes x <4 GB, 12 vcores>


# -- the rules, by hand --------------------------------------------------------------
def test_usage_below_share_compares_dominant_shares_only():
    # <4096, 4> is 0.5 dominant, like <4096, 8>'s 0.5: not below (equal)
    assert not usage_below_share(CLUSTER, [4096, 4], [4096, 8])
    assert usage_below_share(CLUSTER, [3072, 3], [4096, 12])  # 0.375 < 0.5
    assert not usage_below_share(CLUSTER, [1024, 20], [4096, 12])  # 0.833 > 0.5


def test_drc_compare_breaks_dominant_ties_on_the_next_share():
    assert drc_compare(CLUSTER, [8192, 8], [4096, 4]) == 1
    assert drc_compare(CLUSTER, [4096, 12], [4096, 4]) == 1  # 0.5 = 0.5, then 0.5 > 0.167
    assert drc_compare(CLUSTER, [4096, 4], [4096, 4]) == 0
    assert drc_compare(CLUSTER, [4096, 12], [4096, 4], single_type=True) == 0


def test_fair_share_starvation_is_fair_demand_minus_usage():
    # the starving app of the tests: fair share <4096, 12>, demand 4 x <2048, 2>
    assert fair_share_starved(CLUSTER, [0, 0], [4096, 12], [8192, 8], 1.0) == (True, [4096, 8])
    assert fair_share_starved(CLUSTER, [0, 0], [4096, 12], [8192, 8], 0.5) == (True, [2048, 6])
    # Resources.multiply truncates: 4095 * 0.5 -> 2047
    assert fair_share_starved(CLUSTER, [0, 0], [4095, 12], [8192, 8], 0.5)[1] == [2047, 6]
    # after two containers it is at its fair demand's dominant share: not starved
    starved, left = fair_share_starved(CLUSTER, [4096, 4], [4096, 12], [8192, 8], 1.0)
    assert not starved and left == [0, 4]


def test_min_share_starvation_caps_min_share_at_demand():
    assert min_share_starvation([0, 0], [4096, 4], [8192, 8]) == [4096, 4]
    assert min_share_starvation([0, 0], [4096, 4], [2048, 2]) == [2048, 2]
    assert min_share_starvation([8192, 8], [4096, 4], [8192, 8]) == [0, 0]


def test_min_share_goes_to_apps_in_order_with_upstreams_subtraction():
    # one app asking more than is left gets "its share - what is left", as coded
    assert distribute_min_share(CLUSTER, [([8192, 8], [0, 0])], [4096, 4]) == [[4096, 4]]
    assert distribute_min_share(CLUSTER, [([6144, 6], [0, 0])], [4096, 4]) == [[2048, 2]]
    got = distribute_min_share(CLUSTER, [([2048, 2], [0, 0]), ([8192, 8], [0, 0]),
                                         ([1024, 1], [0, 0])], [4096, 4])
    assert got == [[2048, 2], [6144, 6], None]
    # fair-share starvation is taken off an app's pending demand first: <0, 8>
    # (dominant 1/3) is not greater than <4096, 4> (1/2), so the app gets it whole
    assert distribute_min_share(CLUSTER, [([8192, 8], [8192, 0])], [4096, 4]) == [[0, 8]]


def test_starved_containers_count_by_memory_only():
    assert starved_containers([4096, 8], [2048, 2], 4) == 2
    assert starved_containers([4096, 8], [2048, 2], 1) == 1  # at most what it asks
    assert starved_containers([3000, 100], [2048, 2], 4) == 1  # vcores play no part
    assert starved_containers([0, 0], [2048, 2], 4) == 0


def test_can_container_be_preempted_keeps_the_victim_at_its_fair_share():
    fair, one = [4096, 12], [1024, 1]
    assert can_container_be_preempted(CLUSTER, [8192, 8], [0, 0], one, [0, 0], fair)
    assert can_container_be_preempted(CLUSTER, [5120, 5], [0, 0], one, [0, 0], fair)  # to 0.5
    assert not can_container_be_preempted(CLUSTER, [4096, 4], [0, 0], one, [0, 0], fair)
    # containers already to be preempted, and those considered with it, count
    assert not can_container_be_preempted(CLUSTER, [8192, 8], [2048, 2], one, [2048, 2], fair)
    assert can_container_be_preempted(CLUSTER, [8192, 8], [2048, 2], one, [1024, 1], fair)


def test_starved_apps_heap_takes_the_least_starved_first():
    starvation = {"a": [4096, 8], "b": [2048, 2], "c": [4096, 4]}
    heap = StarvedApps(lambda j: starvation[j])
    for app in "abca":  # added once
        heap.add(app)
    assert [heap.take(), heap.take(), heap.take(), heap.take()] == ["b", "c", "a", None]


def _node(tasks, am=()):
    return [Candidate(t, 0, np.array([1024.0, 1.0]), t in am) for t in tasks]


def test_node_order_puts_am_containers_last_and_the_latest_first():
    order = node_order(_node([0, 1, 2, 3], am={0, 1}))
    assert [c.task for c in order] == [3, 2, 0, 1]


def test_one_container_prefers_the_node_with_fewer_am_containers():
    # testPreemptionSelectNonAMContainer's second container: node 1 has only
    # its two AM containers left, node 2 four others; the greedy app may lose
    # any of them (8 GB used, fair share 4 GB)
    usage = np.array([8192.0, 8.0])

    def may(c, considering):
        return can_container_be_preempted(CLUSTER, usage, [0, 0], c.demand, considering,
                                          [4096, 12])
    need = np.array([2048.0, 2.0])
    nodes = [(np.zeros(2), node_order(_node([0, 1], am={0, 1}))),
             (np.zeros(2), node_order(_node([4, 5, 6, 7])))]
    assert [c.task for c in containers_for_one(need, nodes, may)] == [7, 6]
    nodes[1] = (np.zeros(2), node_order(_node([4], am={4})))  # node 2 cannot make room
    # AM containers in launch order (addLast): 0 then 1
    assert [c.task for c in containers_for_one(need, nodes, may)] == [0, 1]


# -- upstream's tests, on their own cluster --------------------------------------------
TREE = {"default": {},
        "preemptable": {"children": {"child-1": {}, "child-2": {}}},
        "preemptable-sibling": {},
        "nonpreemptable": {"children": {"child-1": {}, "child-2": {}}}}
FAIR = {"preemption": True, "fair_share_preemption_threshold": 1,
        "fair_share_preemption_timeout": 0, "utilization_threshold": 0,
        "non_preemptable": ["nonpreemptable"], "starvation_check_delay": 14}
MIN = {"preemption": True, "min_share_preemption_timeout": 0, "utilization_threshold": 0,
       "non_preemptable": ["nonpreemptable"], "starvation_check_delay": 14}


def _run(greedy, starving, params, tree=TREE, greedy_tasks=8, starving_demand=(2048, 2),
         starving_tasks=4):
    data = {
        "name": "y3-test",
        "cluster": {"resources": ["memory", "vcores"], "servers": [
            {"name": "node1", "capacity": {"memory": 4096, "vcores": 12}},
            {"name": "node2", "capacity": {"memory": 4096, "vcores": 12}}]},
        "hierarchy": tree,
        "workload": {"jobs": [
            {"queue": greedy, "tasks": greedy_tasks, "demand": {"memory": 1024, "vcores": 1},
             "duration": 100000, "name": "greedy"},
            {"queue": starving, "tasks": starving_tasks,
             "demand": {"memory": starving_demand[0], "vcores": starving_demand[1]},
             "duration": 100000, "submit": 1, "name": "starving"}]},
        "algorithms": [{"name": "yarn-fair", "params": params}],
        "seeds": [0], "stop_at": 100}
    exp = build_experiment(data)
    return exp.simulate(exp.spec.algorithms[0], 0)


def _running(result, job):
    t = result.tasks
    return t[(t.job == job) & (t.state == "running")]


def _min_tree():
    tree = copy.deepcopy(TREE)
    for parent in ("preemptable", "nonpreemptable"):
        for child in ("child-1", "child-2"):
            tree[parent]["children"][child] = {
                "quota": {"guaranteed": {"memory": 4096, "vcores": 4}}}
    return tree


@pytest.mark.parametrize("params,tree", [(FAIR, TREE), (MIN, None)],
                         ids=["FairSharePreemptionWithDRF", "MinSharePreemptionWithDRF"])
@pytest.mark.parametrize("greedy,starving", [
    ("preemptable/child-1", "preemptable/child-2"),        # BetweenTwoSiblingLeafQueues
    ("preemptable/child-1", "nonpreemptable/child-1")])    # BetweenNonSiblingQueues
def test_verify_preemption_2(greedy, starving, params, tree):
    r = _run(greedy, starving, params, tree or _min_tree())
    assert len(_running(r, 0)) == 4 and len(_running(r, 1)) == 2  # verifyPreemption(2)
    # every victim is the greedy app's, all four on node 1: two sets of two
    assert sorted(r.preemptions.task) == [0, 1, 2, 3]
    assert set(r.preemptions.time) == {1.0}


@pytest.mark.parametrize("params,tree,expect", [(FAIR, TREE, 2), (MIN, None, 0)],
                         ids=["FairSharePreemptionWithDRF", "MinSharePreemptionWithDRF"])
def test_within_same_leaf_queue(params, tree, expect):
    # fair share: verifyPreemption(2); min share: the queue is above its
    # minShare, so verifyNoPreemption
    r = _run("preemptable/child-1", "preemptable/child-1", params, tree or _min_tree())
    assert len(_running(r, 1)) == expect
    assert len(_running(r, 0)) == (4 if expect else 8)


@pytest.mark.parametrize("params,tree", [(FAIR, TREE), (MIN, None)])
def test_no_preemption_from_disallowed_queue(params, tree):
    r = _run("nonpreemptable/child-1", "preemptable/child-1", params, tree or _min_tree())
    assert len(r.preemptions) == 0 and len(_running(r, 0)) == 8


def test_select_non_am_container():
    # the app's first container is its AM: the second set comes from node 2
    r = _run("preemptable/child-1", "preemptable/child-2", {**FAIR, "am_containers": True})
    assert sorted(r.preemptions.task) == [2, 3, 6, 7]
    assert sorted(_running(r, 1).server) == [0, 1]  # two different nodes
    # without AM containers, both sets come from node 1
    r = _run("preemptable/child-1", "preemptable/child-2", FAIR)
    assert sorted(_running(r, 1).server) == [0, 0]


# -- the clocks (wake_at) and the switches ---------------------------------------------
@pytest.mark.parametrize("key,timeout", [("fair_share_preemption_timeout", 5.0),
                                         ("min_share_preemption_timeout", 3.0)])
def test_a_timeout_preempts_at_its_end_without_another_event(key, timeout):
    params = {**(FAIR if key.startswith("fair") else MIN), key: timeout}
    r = _run("preemptable/child-1", "preemptable/child-2", params,
             TREE if key.startswith("fair") else _min_tree())
    assert set(r.preemptions.time) == {1.0 + timeout}
    assert len(_running(r, 1)) == 2


def test_utilization_threshold_is_strict():
    # 6 GB of 8 used (0.75): a 4-GB container fits on neither node
    kw = {"greedy_tasks": 6, "starving_demand": (4096, 4), "starving_tasks": 1}
    r = _run("preemptable/child-1", "preemptable/child-2",
             {**FAIR, "utilization_threshold": 0.75}, **kw)
    assert len(r.preemptions) == 0
    r = _run("preemptable/child-1", "preemptable/child-2",
             {**FAIR, "utilization_threshold": 0.7}, **kw)
    assert len(r.preemptions) > 0 and len(_running(r, 1)) == 1


def test_preemption_on_but_never_due_changes_no_schedule():
    a = _run("preemptable/child-1", "preemptable/child-2", {})
    b = _run("preemptable/child-1", "preemptable/child-2", {"preemption": True})
    assert a.schedule_digest == b.schedule_digest
    assert len(b.preemptions) == 0


class _Preempting(YarnParams):
    preemption: bool = True
    fair_share_preemption_timeout: float | None = 2.0
    min_share_preemption_timeout: float | None = 1.0
    utilization_threshold: float = 0.0
    am_containers: bool = True


class YarnPreempting(YarnFair):
    """yarn-fair with every part of preemption on, for the contract suite."""

    name = "yarn-fair-preempting"
    Params = _Preempting


def test_yarn_fair_with_preemption_keeps_the_policy_contract():
    outcomes = check_policy(f"{__name__}:YarnPreempting")
    failed = [o for o in outcomes if o.status == "failed"]
    assert not failed, failed


def test_same_leaf_with_an_eviction_latency(tmp_path) -> None:
    """With kills taking 5 s (waitTimeBeforeKill) the room still goes to the
    starving app it was freed for, not back to the greedy app at the head of
    the leaf (which restarted in it, for ever, before the swap remembered
    the job): greedy 4, starving 2 as without a latency."""
    import json

    import yaml

    import hierfair

    spec = yaml.safe_load((Path(__file__).resolve().parents[1] / "experiments"
                           / "prod-y3-yarn-preemption.yaml").read_text())
    spec["preemption"] = {"mode": "restart", "eviction_latency": 5}
    spec["grid"] = {"workload.jobs[0].queue": ["preemptable/child-1"],
                    "workload.jobs[1].queue": ["preemptable/child-1"]}
    spec["algorithms"] = [spec["algorithms"][0]]
    spec["claims"] = [c for c in spec["claims"] if c.get("id") == "yarn-y3-same-leaf"]
    hierfair.run(spec, out=str(tmp_path), jobs=1)
    folder = tmp_path / "prod-y3-yarn-preemption"
    claims = json.loads((folder / "claims.json").read_text())
    claims = claims["claims"] if isinstance(claims, dict) else claims
    assert [c["verdict"] for c in claims] == ["holds"]
    # four greedy containers for two starving ones, at t = 1, once (as
    # without a latency; the later ones are job 2's, at t = 50)
    pre = hierfair.load(str(folder)).preemptions
    assert pre[pre["time"] < 50]["time"].tolist() == [1.0] * 4
