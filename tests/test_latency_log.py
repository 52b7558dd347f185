"""Decision latencies in bounded memory (issue 30 item 1): a run that keeps
no decisions table keeps its latencies in a buffer folded into a
histogram; counts and sums stay exact, percentiles within a bin."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hierfair.sim.latency as latency_module
from hierfair.algorithms import make_policy
from hierfair.sim.latency import GROWTH, LatencyLog

from .conftest import experiment


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=400), st.integers(1, 64))
def test_folded_percentiles_are_within_a_bin_and_counts_exact(values, buffer):
    log = LatencyLog(array("q"))
    for i, v in enumerate(values):
        log.values.append(v)
        if i % 7 == 0 and len(log.values) >= buffer:  # folded now and then
            log._fold()
    assert log.count == len(values) and log.total() == sum(values)
    got = log.percentiles([0, 50, 99, 100])
    ns = np.sort(np.array(values))
    for q, g in zip([0, 50, 99, 100], got):
        lo = ns[int(np.floor(q / 100 * (len(ns) - 1)))]  # the rank's own value (lower)
        if log.folded:  # the middle of lo's bin
            assert max(lo, 1) / GROWTH <= g <= max(lo, 1) * GROWTH
        else:
            assert g == pytest.approx(np.percentile(ns, q))


def test_a_run_without_a_decisions_table_keeps_exact_counts_in_bounded_memory(monkeypatch):
    monkeypatch.setattr(latency_module, "BUFFER", 64)
    exp = experiment(workload={"jobs": [
        {"queue": "A", "tasks": 600, "demand": {"cpu": 1, "mem": 4}, "duration": 10},
        {"queue": "B", "tasks": 600, "demand": {"cpu": 3, "mem": 1}, "duration": 7}]})
    kept = exp.simulator(make_policy("drf"), 0).run()
    sim = exp.simulator(make_policy("drf"), 0)
    sim._rec = type(sim._rec)(exp.cluster.resources, keep_decisions=False)
    dropped = sim.run()
    assert dropped.schedule_digest == kept.schedule_digest
    for key in ("decisions", "placements", "tasks", "tasks_waited"):
        assert dropped.counts[key] == kept.counts[key]
    assert kept.counts["placements"] == (kept.decisions["leaf"].notna()).sum() == 1200
    assert sim._rec.latency.folded > 0 and len(sim._rec.latency.values) < 64 + 200
    assert len(sim._rec.decisions.col("time")) == len(sim._rec.decisions.col("leaf")) == 0
    with pytest.raises(ValueError, match="kept no decisions table"):
        dropped.decisions
