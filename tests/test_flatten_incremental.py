"""The incremental collapsed/MCH policies decide exactly like the re-flattening
references (algorithms/collapsed.py, algorithms/mch.py): same leaf at every
decision, same server and start time for every task.

Instances are built for ties: small integer weights, demands and capacities,
durations from a short list (many tasks finish together), so exact float
tie-breaks by leaf index are exercised, not just clear winners.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierfair.algorithms.collapsed import (
    Collapsed,
    CollapsedCPU,
    CollapsedCPUReference,
    CollapsedMem,
    CollapsedMemReference,
    CollapsedReference,
)
from hierfair.algorithms.mch import MCH, MCHReference
from hierfair.datasets import full_binary
from hierfair.sim import Simulator
from hierfair.sim.model import Cluster, Hierarchy, Job, Workload
from hierfair.sim.policy import BasePolicy
from hierfair.sim.treewalk import SCORE_DECIMALS, round_score

from .test_hdrf_properties import trees

RES = ("cpu", "mem", "gpu")
PAIRS = [(CollapsedReference, Collapsed), (CollapsedCPUReference, CollapsedCPU),
         (CollapsedMemReference, CollapsedMem), (MCHReference, MCH)]
Instance = tuple[Cluster, Hierarchy, Workload]


def decisions(policy: BasePolicy, inst: Instance) -> tuple[pd.Series, pd.DataFrame]:
    result = Simulator(*inst, policy).run()
    return result.decisions["leaf"], result.tasks[["server", "start"]]


def assert_same(ref: BasePolicy, fast: BasePolicy, inst: Instance) -> None:
    leaves, tasks = decisions(ref, inst)
    fast_leaves, fast_tasks = decisions(fast, inst)
    assert leaves.tolist() == fast_leaves.tolist()
    pd.testing.assert_frame_equal(tasks, fast_tasks)


@st.composite
def instances(draw) -> Instance:
    h = Hierarchy.from_edges(draw(trees(max_depth=4, max_fanout=3)))
    m = draw(st.integers(2, 3))
    servers = draw(st.lists(st.lists(st.integers(2, 12), min_size=m, max_size=m),
                            min_size=1, max_size=4))
    cluster = Cluster(RES[:m], np.array(servers, dtype=float))
    jobs = []
    for leaf in h.leaves:
        for _ in range(draw(st.integers(0, 3))):
            demand = [draw(st.integers(0, 3)) for _ in range(m)]
            if draw(st.booleans()):  # single-resource demand
                demand = [0] * m
                demand[draw(st.integers(0, m - 1))] = draw(st.integers(1, 3))
            if not any(demand):
                demand[0] = 1
            durations = [draw(st.sampled_from([1.0, 2.0, 3.0, 5.0]))
                         for _ in range(draw(st.integers(1, 5)))]
            jobs.append((draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 4.0])), leaf,
                         np.array(demand, dtype=float), np.array(durations)))
    jobs.sort(key=lambda j: j[0])
    return cluster, h, Workload(tuple(Job(id=i, leaf=leaf, submit=t, demand=d, durations=du)
                                      for i, (t, leaf, d, du) in enumerate(jobs)))


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(), pair=st.sampled_from(PAIRS), backfill=st.booleans())
def test_incremental_decides_like_the_reference(inst: Instance, pair, backfill: bool) -> None:
    ref_cls, fast_cls = pair
    params = {} if issubclass(fast_cls, CollapsedCPU | CollapsedMem) else {"backfill": backfill}
    assert_same(ref_cls(ref_cls.Params(**params)), fast_cls(fast_cls.Params(**params)), inst)


def binary_instance(levels: int, seed: int) -> Instance:
    """Unit weights (many exactly equal keys), three resources, a backlog at
    every leaf and arrivals while the cluster is full."""
    rng = np.random.default_rng(seed)
    h = full_binary.build(full_binary.Params(kind="full-binary", levels=levels))
    cluster = Cluster(RES, np.tile([16.0, 32.0, 4.0], (6, 1)))
    leaves = list(h.leaves)
    kinds = np.array([[1, 2, 0], [2, 1, 0], [1, 1, 1], [0, 4, 0], [3, 0, 0]], dtype=float)
    jobs = []
    for i in range(3 * len(leaves)):
        t = 0.0 if i < len(leaves) else float(rng.integers(1, 40))
        jobs.append((t, leaves[i % len(leaves)] if t == 0 else int(rng.choice(leaves)),
                     kinds[rng.integers(len(kinds))],
                     rng.choice([2.0, 3.0, 7.0], int(rng.integers(1, 6)))))
    jobs.sort(key=lambda j: j[0])
    return cluster, h, Workload(tuple(Job(id=i, leaf=leaf, submit=t, demand=d, durations=du)
                                      for i, (t, leaf, d, du) in enumerate(jobs)))


def test_six_level_binary_tree() -> None:
    inst = binary_instance(6, seed=3)
    for ref_cls, fast_cls in PAIRS:
        assert_same(ref_cls(), fast_cls(), inst)


@given(st.floats(0, 1e6, allow_nan=False))
@settings(derandomize=True)
def test_round_score_is_numpys_round(x: float) -> None:
    assert round_score(x) == round(np.float64(x), SCORE_DECIMALS)


def test_round_score_matches_numpy_over_magnitudes() -> None:
    # 10,000 values from 1e-6 to 1e4, where Python's round(x, 12) differs
    x = np.random.default_rng(0).random(10_000) * 10.0 ** np.arange(-6, 4).repeat(1000)
    assert np.array_equal(np.round(x, SCORE_DECIMALS), [round_score(v) for v in x.tolist()])
    assert any(round(v, SCORE_DECIMALS) != round_score(v) for v in x.tolist())
