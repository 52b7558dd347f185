"""The H-DRF paper's examples, with its published values, for every algorithm
that should reproduce them -- and the failures it shows for those that should not."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from hierfair.experiment.allocate import Allocation, allocate
from hierfair.experiment.stats import time_average
from hierfair.experiment.spec import AlgorithmSpec, build_experiment, load_spec, read_yaml

from .conftest import EXPERIMENTS

FROZEN = AlgorithmSpec(name="hdrf", params={"attribution": "frozen"}, label="hdrf-frozen")
EXACT = ["static-hdrf", "hdrf", FROZEN]


def spec(name: str):
    return load_spec(EXPERIMENTS / f"{name}.yaml")


def share(a: Allocation, path: str, resource: str) -> float:
    return a.node(path)[resource]


def one_task(exp, resource: str) -> float:
    """The share one unit-demand task is of a resource: the discrete slack."""
    return 1.0 / exp.cluster.total[exp.cluster.resources.index(resource)]


@pytest.mark.parametrize("algorithm", EXACT + ["naive-hdrf"])
def test_fig4_static_allocation(algorithm):
    # §3.1: n11 = 5 CPUs, n21 = 5 CPUs, n22 = 10 GPUs (10 CPUs, 10 GPUs).
    a = allocate(spec("hdrf-fig4"), algorithm)
    assert share(a, "n1/n11", "cpu") == 0.5
    assert share(a, "n2/n21", "cpu") == 0.5
    assert share(a, "n2/n22", "gpu") == 1.0


def test_fig4_naive_starves_n21_after_churn_and_hdrf_does_not():
    # §3.3: every CPU n2,1 releases goes to n1,1, until n2,1 holds nothing.
    exp = spec("hdrf-fig4")
    naive = allocate(exp, "naive-hdrf", churn=40)
    assert naive.node("n2/n21")["tasks"] == 0
    assert share(naive, "n1/n11", "cpu") == 1.0
    assert share(naive, "n2/n22", "gpu") == 1.0
    for algorithm in ("hdrf", FROZEN):
        hdrf = allocate(exp, algorithm, churn=40)
        assert [hdrf.node(p)["tasks"] for p in ("n1/n11", "n2/n21", "n2/n22")] == [5, 5, 10]


def test_fig4_capacity_current_leaves_gpus_idle():
    # §5.2: C.S-Current stops once the chosen leaf's task no longer fits (CPUs
    # full), so GPUs stay idle although n2,2 could use them.
    a = allocate(spec("hdrf-fig4"), "capacity-current")
    assert share(a, "", "cpu") == 1.0
    assert share(a, "n2/n22", "gpu") < 1.0


def test_sec32_collapsed_example_static_hdrf_gives_n2_half():
    # §3.2's variant with n11 <1,1>: H-DRF keeps n2 at 1/2 (collapsing gives 1/3,
    # tested with the collapsed algorithms).
    a = allocate(spec("hdrf-sec32-collapsed"), "static-hdrf")
    assert a.node("n2")["dominant_share"] == pytest.approx(0.5)


@pytest.mark.parametrize("algorithm", EXACT)
def test_fig5(algorithm):
    a = allocate(spec("hdrf-fig5"), algorithm)
    for leaf in ("n1/n11", "n2/n21", "n3/n31"):
        assert share(a, leaf, "cpu") == pytest.approx(1 / 3)
    assert share(a, "n3/n32", "gpu") == pytest.approx(1 / 2)
    assert share(a, "n4/n41", "gpu") == pytest.approx(1 / 2)


def test_fig5_rescaling_alone_fails():
    # §3.4: with rescaling only, n3,2 gets 2/3 of the GPUs and n4,1 1/3.
    exp = spec("hdrf-fig5")
    a = allocate(exp, "hdrf-rescale-only")
    tol = one_task(exp, "gpu")
    assert share(a, "n3/n32", "gpu") == pytest.approx(2 / 3, abs=tol)
    assert share(a, "n4/n41", "gpu") == pytest.approx(1 / 3, abs=tol)


@pytest.mark.parametrize("algorithm", EXACT)
def test_fig6_population_monotonicity_fails(algorithm):
    # §4.3, Figs. 6-7: n1 gets 60% of CPUs; once n2,2 stops demanding, 50%.
    exp = spec("hdrf-fig6")
    a = allocate(exp, algorithm)
    assert share(a, "n1", "cpu") == pytest.approx(0.6)
    assert share(a, "n2/n21", "cpu") == pytest.approx(0.3)
    assert share(a, "n2/n22", "gpu") == pytest.approx(0.3)
    data = copy.deepcopy(read_yaml(EXPERIMENTS / "hdrf-fig6.yaml"))
    data["workload"]["jobs"] = [j for j in data["workload"]["jobs"] if j["queue"] != "n2/n22"]
    b = allocate(build_experiment(data), algorithm)
    assert share(b, "n1", "cpu") == pytest.approx(0.5)


@pytest.mark.parametrize("algorithm", EXACT)
def test_fig8_weights(algorithm):
    # §5.1, Figs. 8-9: n1:n2 = 4:1 -> n11 0.8 of CPUs, n21 and n22 0.1 each,
    # n12 all GPUs.  49 servers x 4 CPUs: 0.8 is 156.8 CPUs, so whole tasks
    # land within one task of it.
    exp = spec("hdrf-fig8")
    a = allocate(exp, algorithm)
    tol = one_task(exp, "cpu") + 1e-12
    assert share(a, "n1/n11", "cpu") == pytest.approx(0.8, abs=tol)
    assert share(a, "n2/n21", "cpu") == pytest.approx(0.1, abs=tol)
    assert share(a, "n2/n22", "cpu") == pytest.approx(0.1, abs=tol)
    assert share(a, "n1/n12", "gpu") == pytest.approx(1.0)


def test_static_hdrf_is_exact_where_tasks_are_not():
    a = allocate(spec("hdrf-fig8"), "static-hdrf")
    assert share(a, "n1/n11", "cpu") == pytest.approx(0.8, abs=1e-12)
    assert a.node("n1/n11")["tasks"] == pytest.approx(156.8)
    np.testing.assert_allclose(a.shares[0], a.shares[[1, 4]].sum(axis=0))


THEOREM1_COUNTEREXAMPLE = {
    "name": "theorem1-counterexample",
    "cluster": {"resources": ["r0", "r1"], "servers": [{"capacity": {"r0": 120, "r1": 120}}]},
    "hierarchy": {"A": {}, "B": {"children": {"C": {}, "D": {}, "E": {}}}},
    "workload": {"jobs": [
        {"queue": q, "tasks": 1000, "demand": {r: 1}, "duration": 1}
        for q, r in (("A", "r1"), ("B/C", "r1"), ("B/D", "r0"), ("B/E", "r0"))]},
    "algorithms": ["hdrf"],
}


def test_theorem1_counterexample():
    # Static H-DRF: r1 saturates with A = 2/3, C = 1/3 (B = D + E on r0 = 2/3),
    # then D and E fill r0.  After churn, Algorithm 3 as written attributes B
    # only C's 1/3 (D and E are blocked and r0 is saturated, so both are
    # ignored) and hands A's CPUs to C until A = C = 1/2.  The frozen reading
    # counts D and E at the level they held when r1 saturated and keeps 2/3.
    # (Frozen has been hdrf's default since the readings were measured --
    # docs/algorithms.md, "hdrf" -- so plain "hdrf" now keeps 2/3 here; the
    # as-written readings are named explicitly.)
    exp = build_experiment(THEOREM1_COUNTEREXAMPLE)
    static = allocate(exp, "static-hdrf")
    assert static.node("A")["r1"] == pytest.approx(2 / 3)
    for reading in ("literal", "blocked-fits"):
        as_written = AlgorithmSpec(name="hdrf", params={"attribution": reading})
        assert allocate(exp, as_written).node("A")["r1"] == pytest.approx(2 / 3)  # before churn
        assert allocate(exp, as_written, churn=600).node("A")["r1"] == pytest.approx(1 / 2)
    assert allocate(exp, FROZEN, churn=600).node("A")["r1"] == pytest.approx(2 / 3)
    assert allocate(exp, "hdrf", churn=600).node("A")["r1"] == pytest.approx(2 / 3)


ONE_RESOURCE_EXACT = ["static-hdrf", "hdrf", "naive-hdrf", "collapsed", "mch", "dff"]


@pytest.mark.parametrize("algorithm", ONE_RESOURCE_EXACT)
def test_fig2_sibling_sharing(algorithm):
    # §2.1: of 480 slots n1 and n2 get 240; n2,1 48 and n2,2, n2,3 96 each.  With
    # one resource every hierarchical algorithm agrees (flat DRF does not).
    exp = spec("hdrf-fig2")
    a = allocate(exp, algorithm)
    assert [a.node(p)["tasks"] for p in ("n1", "n2/n21", "n2/n22", "n2/n23")] == [
        240, 48, 96, 96]


@pytest.mark.parametrize("algorithm", ONE_RESOURCE_EXACT)
def test_fig2_leaving_node_goes_to_its_siblings(algorithm):
    # "if n2,3 leaves, its 96 slots are split 32 and 64 to n2,1 and n2,2";
    # nothing goes to n1.
    data = copy.deepcopy(read_yaml(EXPERIMENTS / "hdrf-fig2.yaml"))
    data["workload"]["jobs"] = [j for j in data["workload"]["jobs"] if j["queue"] != "n2/n23"]
    a = allocate(build_experiment(data), algorithm)
    assert [a.node(p)["tasks"] for p in ("n1", "n2/n21", "n2/n22")] == [240, 80, 160]


def test_fig2_flat_drf_ignores_the_tree():
    # Flat DRF sees four leaves of weights 1, 1, 2, 2: n1 gets 480 / 6, not 240.
    a = allocate(spec("hdrf-fig2"), "drf")
    assert [a.node(p)["tasks"] for p in ("n1", "n2/n21", "n2/n22", "n2/n23")] == [
        80, 80, 160, 160]


def test_naive_hdrf_starves_n21_in_a_running_system():
    # §3.3 with tasks ending one at a time (staggered lengths): naive H-DRF
    # hands the CPUs n2,1 releases to n1,1 -- n2,1 drops to none while it has
    # hundreds of tasks waiting, and averages well under its 5 CPUs while n1,1
    # runs; H-DRF keeps it at 5.
    exp = spec("hdrf-fig4-churn")
    algos = {a.name: a for a in exp.spec.algorithms}
    held = {}
    for name in ("naive-hdrf", "hdrf"):
        result = exp.simulate(algos[name], 0)
        alloc = result.allocations
        n21 = alloc[alloc["path"] == "n2/n21"]
        end = result.jobs.set_index("leaf").loc["n1/n11", "finish"]
        before = n21[n21["time"] < end]
        held[name] = time_average(before["time"].to_numpy(), before["cpu"].to_numpy(), end)
        starved = before[(before["time"] > 0) & (before["cpu"] == 0)]
        assert (len(starved) > 0) == (name == "naive-hdrf"), name
    assert held["naive-hdrf"] < 2.5
    assert held["hdrf"] > 4.9
