"""Weighted DRF against the DRF paper's numbers and its defining property."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.algorithms.drf import dominant_share, dominant_shares
from hierfair.cli import main
from hierfair.experiment.allocate import allocate
from hierfair.experiment.spec import AlgorithmSpec, load_spec

from .conftest import EXPERIMENTS, experiment


def test_dominant_share_definition():
    # DRF §4.1: a <1 CPU, 4 GB> task on 9 CPUs, 18 GB has dominant share 4/18 (memory).
    total = np.array([9.0, 18.0])
    assert dominant_share(np.array([1.0, 4.0]), total) == 4 / 18
    assert dominant_share(np.array([3.0, 1.0]), total) == 3 / 9
    np.testing.assert_allclose(dominant_shares(np.array([[3, 12], [6, 2]]), total), [2 / 3, 2 / 3])


def test_drf_paper_example(drf_example):
    # DRF §4.1: A gets 3 tasks = <3 CPU, 12 GB>, B gets 2 tasks = <6 CPU, 2 GB>.
    a = allocate(drf_example, "drf")
    assert a.node("A")["tasks"] == 3 and a.node("B")["tasks"] == 2
    np.testing.assert_allclose(a.shares[1] * [9, 18], [3, 12])
    np.testing.assert_allclose(a.shares[2] * [9, 18], [6, 2])
    assert a.node("A")["dominant_share"] == a.node("B")["dominant_share"] == 2 / 3


def test_drf_example_from_cli(capsys):
    assert main(["allocate", str(EXPERIMENTS / "drf-example.yaml"), "-a", "drf", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["resources"] == ["cpu", "mem"]
    assert out["nodes"]["A"] == {"cpu": 3 / 9, "mem": 12 / 18, "dominant_share": 12 / 18,
                                 "tasks": 3}
    assert out["nodes"]["B"] == {"cpu": 6 / 9, "mem": 2 / 18, "dominant_share": 6 / 9,
                                 "tasks": 2}
    assert out["nodes"]["(root)"]["tasks"] == 5  # one name for the root everywhere


def test_weighted_drf_two_resources():
    # Weight 2 on A: keys are s_A/2 = x/9 and s_B = y/3.  By hand: A, B, A, A
    # (tie at 1/3 goes to A, listed first), A; then B's <3,1> needs 10 CPUs
    # and A's <1,4> needs 21 GB: A = 4 tasks <4,16>, B = 1 task <3,1>.
    exp = experiment(hierarchy={"A": {"weight": 2}, "B": {}})
    a = allocate(exp, "drf")
    assert (a.node("A")["tasks"], a.node("B")["tasks"]) == (4, 1)


def test_backfill_false_is_algorithm_1_to_the_letter():
    # 6 CPUs; A <4>, B <3>, C <1>.  A goes first (all at 0, A listed first),
    # then B has the lowest share but needs 3 CPUs with 2 free.  Algorithm 1
    # returns there ("the cluster is full"); with backfill C takes both CPUs.
    exp = experiment(
        cluster={"resources": ["cpu"], "servers": [{"capacity": {"cpu": 6}}]},
        hierarchy={"A": {}, "B": {}, "C": {}},
        workload={"jobs": [{"queue": q, "tasks": 5, "demand": {"cpu": c}, "duration": 1}
                           for q, c in (("A", 4), ("B", 3), ("C", 1))]},
    )
    def tasks(backfill: bool) -> tuple[int, ...]:
        a = allocate(exp, AlgorithmSpec(name="drf", params={"backfill": backfill}))
        return tuple(a.node(q)["tasks"] for q in "ABC")

    assert tasks(False) == (1, 0, 0)
    assert tasks(True) == (1, 0, 2)


@settings(max_examples=40, deadline=None)
@given(weights=st.lists(st.integers(1, 5), min_size=2, max_size=6),
       capacity=st.integers(10, 60))
def test_weighted_shares_are_max_min_fair(weights, capacity):
    # One resource, unit tasks: every leaf either fits or none does, so DRF's
    # invariant holds exactly: no leaf's share minus its last task exceeds
    # another leaf's share, both divided by weight.
    leaves = {f"u{i}": {"weight": w} for i, w in enumerate(weights)}
    jobs = [{"queue": f"u{i}", "tasks": capacity, "demand": {"cpu": 1}, "duration": 1}
            for i in range(len(weights))]
    exp = experiment(cluster={"resources": ["cpu"], "servers": [{"capacity": {"cpu": capacity}}]},
                     hierarchy=leaves, workload={"jobs": jobs})
    a = allocate(exp, "drf")
    tasks = np.array([a.node(f"u{i}")["tasks"] for i in range(len(weights))])
    assert tasks.sum() == capacity
    w = np.array(weights, dtype=float)
    assert ((tasks - 1) / w).max() <= (tasks / w).min() + 1e-12


def test_drf_example_spec_is_committed():
    exp = load_spec(EXPERIMENTS / "drf-example.yaml")
    assert exp.cluster.total.tolist() == [9.0, 18.0]
