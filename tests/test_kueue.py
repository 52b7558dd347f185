"""Kueue's fair sharing as coded: the quota tree and DRS against upstream's
asserted values, the comparison rules, and the admission cycle and
preemption through whole runs (the K-scenarios' specs carry the rest as
claims: experiments/prod-k*.yaml)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.algorithms.kueue_quota import DRS, QuotaTree, compare_drs
from hierfair.datasets.tree import from_nested
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment, load_spec

from .conftest import EXPERIMENTS


def tree_of(nested: dict, resources: tuple[str, ...] = ("cpu",)) -> QuotaTree:
    return QuotaTree(from_nested(nested), resources)


def usage_of(tree: QuotaTree, used: dict[str, float]) -> np.ndarray:
    u = np.zeros_like(tree.nominal)
    for path, amount in used.items():
        u[tree.hierarchy.index(path)] = amount
    return tree.usage(u)


def drs(tree: QuotaTree, u: np.ndarray, path: str) -> float:
    return tree.drs(tree.hierarchy.index(path), u).weighted


def test_cohort_drs_is_borrowing_over_the_parents_reach():
    # fair_sharing_test.go "admits workloads respecting fair share" (hierarchical):
    # asserted first-left 428.6 (= 6000/14), second-left = second-right 214.3,
    # first-right 0, bank 0
    t = tree_of({"fl": {"children": {
                    "sl": {"children": {"cql": {"quota": {"nominal": {"cpu": 2}}}}},
                    "sr": {"children": {"cqr": {"quota": {"nominal": {"cpu": 2}}}}}}},
                 "fr": {"children": {"bank": {"quota": {"nominal": {"cpu": 10}},
                                              "children": {"idle": {}}}}}})
    u = usage_of(t, {"fl/sl/cql": 5, "fl/sr/cqr": 5})
    assert drs(t, u, "fl") == pytest.approx(6000 / 14)
    assert drs(t, u, "fl/sl") == pytest.approx(3000 / 14)
    assert drs(t, u, "fl/sr") == pytest.approx(3000 / 14)
    assert drs(t, u, "fr") == 0 and drs(t, u, "fr/bank") == 0


def test_drs_at_the_k_scenarios_asserted_values():
    # K9: a (nominal 3) at 8 of a cohort of 8 -> 625; K10: p1 at 8 of 9 -> 888.9;
    # K5: a borrowing 400 of 1200 at weight 300 -> 1.111; K7 step 1: best-effort
    # (weight 0.5) at 6 of 12 -> 1000, physics at 6 -> 500
    k9 = tree_of({"all": {"children": {"a": {"quota": {"nominal": {"cpu": 3}}},
                                        "b": {"quota": {"nominal": {"cpu": 1}}},
                                        "shared": {"quota": {"nominal": {"cpu": 4}}}}}})
    assert drs(k9, usage_of(k9, {"all/a": 8}), "all/a") == pytest.approx(625)
    k10 = tree_of({"c": {"quota": {"nominal": {"cpu": 9}},
                         "children": {"p1": {}, "p2": {}}}})
    assert drs(k10, usage_of(k10, {"c/p1": 8}), "c/p1") == pytest.approx(8000 / 9)
    k5 = tree_of({"all": {"children": {"a": {"weight": 300, "quota": {"nominal": {"cpu": 600}}},
                                        "b": {"weight": 300, "quota": {"nominal": {"cpu": 600}}}}}})
    assert drs(k5, usage_of(k5, {"all/a": 1000}), "all/a") == pytest.approx(400_000 / 1200 / 300)
    k7 = tree_of({"root": {"quota": {"nominal": {"cpu": 12}}, "children": {
        "be": {"weight": 0.5, "children": {"q": {}}},
        "research": {"children": {"physics": {"children": {"q": {}}}}}}}})
    u = usage_of(k7, {"root/be/q": 6, "root/research/physics/q": 6})
    assert drs(k7, u, "root/be") == pytest.approx(1000)
    assert drs(k7, u, "root/research/physics") == pytest.approx(500)


def test_lending_and_borrowing_limits_by_hand():
    # a owns 4 and lends at most 1 (keeps 3: localQuota), b owns 2 and may
    # borrow at most 1.  The cohort can reach 1 + 2 = 3; a can reach its 3
    # kept plus those 3; b its 2 plus 1 borrowed.
    t = tree_of({"c": {"children": {
        "a": {"quota": {"nominal": {"cpu": 4}, "lending_limit": {"cpu": 1}}},
        "b": {"quota": {"nominal": {"cpu": 2}, "borrowing_limit": {"cpu": 1}}}}}})
    ix = t.hierarchy.index
    assert t.local_quota[ix("c/a")][0] == 3 and t.subtree_quota[ix("c")][0] == 3
    assert t.potential[ix("c/a")][0] == 6 and t.potential[ix("c/b")][0] == 3
    idle = usage_of(t, {})
    assert t.available(ix("c/a"), idle)[0] == 6
    assert t.available(ix("c/b"), idle)[0] == 3  # 2 own + the 1 it may borrow
    busy = usage_of(t, {"c/a": 4})  # a uses all it owns: 1 of it lent to the cohort
    assert t.available(ix("c/a"), busy)[0] == 2
    assert t.available(ix("c/b"), busy)[0] == 2
    # a's usage inside its kept quota is not the cohort's
    assert busy[ix("c")][0] == 1


def test_compare_drs_zero_weights():
    zw500, zw1000 = DRS(500.0, 0.0, True, frozenset({0})), DRS(1000.0, 0.0, True, frozenset({0}))
    idle0 = DRS(0.0, 0.0, False, frozenset())
    one = DRS(100.0, 1.0, True, frozenset({0}))
    assert zw500.weighted == math.inf and idle0.weighted == 0
    assert compare_drs(zw500, zw1000) == -1  # since PR #6925: by the unweighted ratio
    assert compare_drs(zw500, zw1000, zero_weight_ratio=False) == 0  # before: both MaxInt
    assert compare_drs(zw500, one) == 1 and compare_drs(one, zw500) == -1
    assert compare_drs(idle0, one) == -1  # not borrowing: 0 whatever the weight


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8)), min_size=2, max_size=4),
       st.integers(1, 20))
def test_quota_tree_is_consistent_on_random_flat_cohorts(queues, extra):
    # no limits: a cohort's subtree quota is the sum of nominals; a CQ can
    # reach all of it; what is available to a CQ is the cohort's free
    # quota (capped at 0), and the DRS is its borrowing over the cohort's.
    nested = {"c": {"quota": {"nominal": {"cpu": extra}}, "children": {
        f"q{i}": {"quota": {"nominal": {"cpu": n}}} for i, (n, _) in enumerate(queues)}}}
    t = tree_of(nested)
    total = extra + sum(n for n, _ in queues)
    u = usage_of(t, {f"c/q{i}": used for i, (_, used) in enumerate(queues)})
    for i, (n, used) in enumerate(queues):
        q = t.hierarchy.index(f"c/q{i}")
        assert t.potential[q][0] == total
        assert t.available(q, u)[0] == pytest.approx(max(0, total - sum(x for _, x in queues)))
        assert drs(t, u, f"c/q{i}") == pytest.approx(max(0, used - n) * 1000 / total)


def run_spec(name: str, label: str):
    exp = load_spec(EXPERIMENTS / f"{name}.yaml")
    algo = next(a for a in exp.spec.algorithms if a.display == label)
    return exp, exp.simulate(algo, 0)


def test_the_loop_before_pr_6925_is_found_and_stopped():
    _, result = run_spec("prod-k3-kueue-zero-weight", "kueue-before-6925")
    assert result.loop.startswith("preemption loop: at simulated time 10 ")
    assert result.stopped_at == 10
    # after the fix: one preemption, no loop, and the run goes on to its end
    _, fixed = run_spec("prod-k3-kueue-zero-weight", "kueue")
    assert fixed.loop == "" and fixed.counts["preemptions"] == 1
    assert list(fixed.preemptions["job"]) == [1]  # wlA2 (priority 100), not wlA1 (9001)


def test_victims_are_the_ones_upstream_names():
    # K4: the lower-priority best-effort workload; K5: a's three most recently
    # admitted; K7: two best-effort and four physics low-priority workloads
    _, k4 = run_spec("prod-k4-kueue-tie", "kueue")
    assert list(k4.preemptions["victim"]) == ["all/best-effort-b"]
    _, k5 = run_spec("prod-k5-kueue-large-weights", "kueue")
    assert sorted(k5.preemptions["task"]) == [7, 8, 9]
    _, k7 = run_spec("prod-k7-kueue-hierarchical", "kueue")
    victims = k7.preemptions["victim"].value_counts().to_dict()
    assert victims == {"root/best-effort/best-effort-queue": 2,
                       "root/research/physics/physics-queue": 4}
    lows = {int(j) for j in k7.preemptions["job"]}
    assert lows <= {0, 1}  # only the priority -1 jobs (be-lo, ph-lo) lost tasks


def test_weight_zero_is_refused_by_policies_that_divide_by_it():
    data = {"name": "z", "cluster": {"resources": ["cpu"], "servers": [{"capacity": {"cpu": 2}}]},
            "hierarchy": {"a": {"weight": 0}, "b": {}},
            "workload": {"jobs": [{"queue": "a", "demand": {"cpu": 1}, "duration": 1}]},
            "algorithms": ["kueue", "drf"]}
    with pytest.raises(SpecError) as err:
        build_experiment(data)
    assert str(err.value).startswith("hierarchy.a.weight: a weight of 0 is defined only by "
                                     "kueue, volcano, volcano-capacity, yunikorn-fair; drf (algorithms[1]) "
                                     "divides by weights")
    data["algorithms"] = ["kueue"]
    build_experiment(data)


def test_quota_and_per_queue_settings_are_checked():
    data = {"name": "q", "cluster": {"resources": ["cpu"], "servers": [{"capacity": {"cpu": 2}}]},
            "hierarchy": {"a": {"quota": {"nominal": {"gpu": 1}}}, "b": {}},
            "workload": {"jobs": [{"queue": "a", "demand": {"cpu": 1}, "duration": 1}]},
            "algorithms": ["kueue"]}
    with pytest.raises(SpecError, match=r"^hierarchy\.a\.quota\.nominal\.gpu: unknown resource"):
        build_experiment(data)
    data["hierarchy"]["a"] = {}
    data["algorithms"] = [{"name": "kueue", "params": {"preemption": {"c": {}}}}]
    with pytest.raises(SpecError, match=r"^algorithms\[0\]\.params\.preemption\.c: no such "
                                        r"ClusterQueue"):
        build_experiment(data)


@pytest.mark.parametrize("weight", [1e-9, 1.0, 300.0, 1e7, 1e9])
def test_extreme_weights_keep_the_one_preemption(weight):
    # Kueue #6774 was reproduced "with weights of 10 million, where rounding
    # keeps weightedShare constant"; in float64 (since PR #6925) the shares
    # at any weight from 1e-9 to 1e9 still order 500 before 1000: wlB1
    # evicts wlA2 once and the queues settle at 1 and 1
    exp = load_spec(EXPERIMENTS / "prod-k3-kueue-zero-weight.yaml")
    data = exp.spec.model_dump(mode="json")
    for q in data["hierarchy"]["top-cohort"]["children"].values():
        q["weight"] = weight
    data["algorithms"] = [data["algorithms"][0]]
    data.pop("claims")
    exp = build_experiment(data)
    result = exp.simulate(exp.spec.algorithms[0], 0)
    assert result.loop == "" and result.counts["preemptions"] == 1
    assert list(result.preemptions["victim"]) == ["top-cohort/best-effort-cq-a"]


def test_a_policy_that_reads_the_clock_is_not_taken_for_a_loop():
    # PDRF (p = 1) repeats its running and waiting sets at different times
    # while its thresholds move with the clock: a state repeated at a later
    # time is not a loop (only one instant is compared); this run finishes
    exp = load_spec(EXPERIMENTS / "hogs-and-mice.yaml")
    algo = next(a for a in exp.spec.algorithms if a.display == "pdrf-p1")
    result = exp.simulate(algo, 5)
    assert result.loop == "" and result.stopped_at is None
    assert result.counts["tasks_unfinished"] == 0 and result.counts["preemptions"] == 487


def test_tree_usage_sums_as_the_reverse_preorder_walk():
    """QuotaTree.usage adds a level at a time; the sums must be bit for bit
    the reverse pre-order walk's (Kueue's DRS ties are float comparisons)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hierfair.algorithms.kueue_quota import QuotaTree
    from hierfair.experiment.spec import build_experiment

    from .test_simulator import random_spec

    @settings(max_examples=40, deadline=None)
    @given(data=random_spec(), seed=st.integers(0, 2**32 - 1))
    def check(data, seed):
        exp = build_experiment(data)
        h = exp.hierarchy.with_implied_quotas(exp.cluster.resources, exp.cluster.total)
        tree = QuotaTree(h, exp.cluster.resources, exp.cluster.total)
        rng = np.random.default_rng(seed)
        cq = np.zeros((h.n_nodes, len(exp.cluster.resources)))
        cq[list(h.leaves)] = rng.random((len(h.leaves), cq.shape[1])) * rng.choice(
            [1e-9, 1.0, 1e9], size=(len(h.leaves), 1))
        walk = cq.copy()
        for i in range(h.n_nodes - 1, 0, -1):
            walk[tree.parent[i]] += np.maximum(0.0, walk[i] - tree.local_quota[i])
        assert np.array_equal(tree.usage(cq), walk)

    check()


def test_before_pr_6764_a_target_tie_goes_either_way():
    """K4 with 5-s evictions: the fixed order always evicts B's workload
    alone (the CQ whose first candidate is already evicted wins the tie at
    every re-planning); before #6764 the tie is drawn each time, so some
    seeds evict A's too while B's eviction is in flight, and some evict A's
    first.  The draws come from the run's seed: the same seed, the same runs."""
    exp = load_spec(EXPERIMENTS / "prod-k4-kueue-tie.yaml")
    fixed = next(a for a in exp.spec.algorithms if a.display == "kueue")
    before = next(a for a in exp.spec.algorithms if a.display == "kueue-before-6764")
    firsts, counts = set(), set()
    for seed in range(10):
        r = exp.simulate(fixed, seed)
        assert list(r.preemptions["victim"]) == ["all/best-effort-b"]
        b = exp.simulate(before, seed)
        victims = list(b.preemptions["victim"])
        assert 1 <= len(victims) <= 2 and len(set(victims)) == len(victims)
        assert (b.preemptions["time"] == 10.0).all()  # re-planned in the same instant
        firsts.add(victims[0])
        counts.add(len(victims))
        again = exp.simulate(before, seed)
        assert list(again.preemptions["task"]) == list(b.preemptions["task"])
    assert counts == {1, 2} and firsts == {"all/best-effort-a", "all/best-effort-b"}
