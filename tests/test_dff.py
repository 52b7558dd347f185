"""DFF against what its letter pins down: Fair Resource vectors and the
heterogeneous-cluster claim (§4.2)."""

from __future__ import annotations

import numpy as np
import pytest

from hierfair.algorithms.dff import fair_resources, fairness
from hierfair.experiment.allocate import allocate
from hierfair.experiment.spec import load_spec
from hierfair.sim.model import Hierarchy

from .conftest import EXPERIMENTS


@pytest.fixture(scope="module")
def cpu_mic():
    return load_spec(EXPERIMENTS / "dff-cpu-mic.yaml")


def test_fair_resources_of_fig1_with_table1(cpu_mic):
    # Eq. 3 from the root <336, 952, 21>: every top node needs CPU and memory,
    # only n3 (through n3,2) and n4 need MICs.
    h = cpu_mic.hierarchy
    needs = np.zeros((h.n_nodes, 3), dtype=bool)
    for job in cpu_mic.workload(0).jobs:
        for node in [job.leaf, *h.ancestors(job.leaf)]:
            needs[node] |= job.demand > 0
    fr = fair_resources(h, needs, cpu_mic.cluster.total)
    expect = {
        "n1": [84, 238, 0], "n1/n11": [84, 238, 0],
        "n2": [84, 238, 0],
        "n3": [84, 238, 10.5], "n3/n31": [42, 119, 0], "n3/n32": [42, 119, 10.5],
        "n4": [84, 238, 10.5], "n4/n41": [84, 238, 10.5],
    }
    for path, vec in expect.items():
        np.testing.assert_allclose(fr[h.index(path)], vec)


def test_fairness_is_the_largest_used_over_fair_ratio():
    # Eq. 6: u = <42, 100, 5> against fr = <84, 238, 10.5> -> max(0.5, 0.42, 0.476).
    f = fairness(np.array([[42.0, 100.0, 5.0], [1.0, 0.0, 0.0]]),
                 np.array([[84.0, 238.0, 10.5], [0.0, 1.0, 1.0]]))
    assert f[0] == pytest.approx(0.5)
    assert f[1] == np.inf  # holds CPU it is owed none of


def test_weights_split_fair_resources():
    h = Hierarchy.from_edges([("a", 3), ("b", 1)])
    fr = fair_resources(h, np.array([[1, 1], [1, 1], [1, 0]], dtype=bool), np.array([8.0, 8.0]))
    np.testing.assert_allclose(fr[1:], [[6, 8], [2, 0]])


def test_mic_jobs_are_not_starved_under_dff(cpu_mic):
    # §4.2: under H-DRF "the CPU resource is saturated quickly ... MIC resources
    # cannot be allocated"; DFF gives the MIC jobs (4 and 5) their MICs.
    dff = allocate(cpu_mic, "dff")
    hdrf = allocate(cpu_mic, "hdrf")
    mic_tasks = {name: a.node("n3/n32")["tasks"] + a.node("n4/n41")["tasks"]
                 for name, a in (("dff", dff), ("hdrf", hdrf))}
    # fr gives n3,2 and n4,1 10.5 MICs each: five 2-MIC tasks apiece.
    assert mic_tasks["dff"] == 10
    assert mic_tasks["hdrf"] < mic_tasks["dff"]
    assert dff.node("")["mic"] > hdrf.node("")["mic"]
    # "DFF only incurs a small amount of overhead": CPU stays saturated.
    assert dff.node("")["cpu"] == pytest.approx(1.0)
