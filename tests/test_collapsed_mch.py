"""Collapsed hierarchies (H-DRF §3.2) and MCH (MCH letter §III-IV)."""

from __future__ import annotations

import numpy as np
import pytest

from hierfair.algorithms.collapsed import collapsed_weights
from hierfair.algorithms.mch import mch_weights
from hierfair.cli import main
from hierfair.experiment.allocate import allocate
from hierfair.experiment.spec import load_spec
from hierfair.sim.model import Hierarchy

from .conftest import EXPERIMENTS, experiment


def test_collapsed_weights_are_products_of_guarantees():
    # H-DRF Fig. 2 weights: n1 (1), n2 (1) with n21 (1), n22 (2), n23 (2).
    h = Hierarchy.from_edges([("n1", 1), ("n2", 1), ("n2/n21", 1), ("n2/n22", 2),
                              ("n2/n23", 2)])
    everyone = np.ones(h.n_nodes, dtype=bool)
    flat = collapsed_weights(h, everyone)
    # §2.1: of 480 slots n21 gets 48, n22 and n23 96 each; n1 240.
    np.testing.assert_allclose(flat[[1, 3, 4, 5]] * 480, [240, 48, 96, 96])
    # n23 leaves: its 96 go 32 / 64 to n21 / n22, nothing to n1.
    demanding = everyone.copy()
    demanding[5] = False
    np.testing.assert_allclose(collapsed_weights(h, demanding)[[1, 3, 4]] * 480, [240, 80, 160])


def test_collapsed_dovetailing_leaves_n2_one_third():
    # H-DRF §3.2: n11 <1,1> weighs 1/2, n21 and n22 1/4; DRF saturates both
    # resources with n11 at 2/3 and n2 at 1/3, below its guaranteed 1/2.
    a = allocate(load_spec(EXPERIMENTS / "hdrf-sec32-collapsed.yaml"), "collapsed")
    assert a.node("n1/n11")["dominant_share"] == pytest.approx(2 / 3)
    assert a.node("n2")["dominant_share"] == pytest.approx(1 / 3)


def test_collapsed_works_for_a_single_resource():
    # §3.2: with n22 demanding <1 CPU> too, collapsing gives 50 / 25 / 25.
    exp = experiment(
        cluster={"resources": ["cpu"], "servers": [{"capacity": {"cpu": 20}}]},
        hierarchy={"n1": {"children": {"n11": {}}}, "n2": {"children": {"n21": {}, "n22": {}}}},
        workload={"jobs": [{"queue": q, "tasks": 50, "demand": {"cpu": 1}, "duration": 1}
                           for q in ("n1/n11", "n2/n21", "n2/n22")]},
    )
    a = allocate(exp, "collapsed")
    assert [a.node(p)["tasks"] for p in ("n1/n11", "n2/n21", "n2/n22")] == [10, 5, 5]


def test_single_resource_variants_need_their_resource(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text((EXPERIMENTS / "hdrf-fig4.yaml").read_text()
                    .replace("algorithms: [", "algorithms: [collapsed-mem, "))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "algorithms[0].params.resource" in err and "'mem'" in err


MCH_FIG4_LEAVES = ["n1/n11", "n1/n12", "n2/n21", "n2/n22", "n2/n23", "n3/n31"]


def test_mch_weights_of_the_letters_fig4():
    # MCH letter §IV-A: "the weights of all leaf nodes would be 1, 1, 0.5, 0.5, 1, 1".
    exp = load_spec(EXPERIMENTS / "mch-fig4.yaml")
    h = exp.hierarchy
    demands = np.zeros((h.n_nodes, 2))
    for job in exp.workload(0).jobs:
        demands[job.leaf] = job.demand
    flat, k_star = mch_weights(h, demands, exp.cluster.total, demands.any(axis=1))
    assert exp.cluster.resources[k_star] == "cpu"
    leaves = [h.index(p) for p in MCH_FIG4_LEAVES]
    np.testing.assert_allclose(flat[leaves], [1, 1, 0.5, 0.5, 1, 1])


@pytest.mark.parametrize("algorithm", ["mch", "static-hdrf", "hdrf"])
def test_mch_fig4_dominant_shares(algorithm):
    # "the dominant share of the leaves are 0.33, 0.5, 0.165, 0.165, 0.5, 0.33"
    # (exactly 1/3, 1/2, 1/6, ...: the letter rounds); whole tasks of 1/200.
    a = allocate(load_spec(EXPERIMENTS / "mch-fig4.yaml"), algorithm)
    got = [a.node(p)["dominant_share"] for p in MCH_FIG4_LEAVES]
    np.testing.assert_allclose(got, [1 / 3, 1 / 2, 1 / 6, 1 / 6, 1 / 2, 1 / 3], atol=1 / 200)


def test_mch_agrees_with_static_hdrf_on_hdrf_fig4_and_collapsed_does_not():
    exp = load_spec(EXPERIMENTS / "hdrf-fig4.yaml")
    mch = allocate(exp, "mch")
    assert [mch.node(p)["tasks"] for p in ("n1/n11", "n2/n21", "n2/n22")] == [5, 5, 10]
    collapsed = allocate(exp, "collapsed")
    assert collapsed.node("n2/n21")["tasks"] < 5  # dovetailing n2 is punished
