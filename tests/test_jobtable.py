"""Jobs held as columns and made when read (hierfair/sim/jobtable.py): the
facebook-bins generator's JobTable against the eager generator it replaced,
to the bit; the table's reads; and runs with it against runs with a tuple."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierfair.datasets import facebook
from hierfair.datasets.base import BuildContext, RawJob, finalize
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment, load_spec
from hierfair.sim import jobtable
from hierfair.sim.jobtable import JobTable
from hierfair.sim.model import Workload

from .conftest import EXPERIMENTS, spec_with


def eager(p: facebook.Params, ctx: BuildContext) -> Workload:
    """The generator as it was (8dfe45c): every job and its durations built at once."""
    rng = ctx.rng()
    users = ctx.rng(salt=1)
    below = {q: facebook._leaves_below(q, ctx) for q in {*p.large_queues, *p.small_queues}}
    sizes = facebook.job_sizes(p, rng)
    memory_dominant = rng.random(p.jobs) < p.memory_dominant_fraction
    gaps = rng.exponential(p.interarrival, p.jobs) if p.interarrival > 0 else np.zeros(p.jobs)
    submits = p.submit + np.cumsum(gaps) - gaps[0]
    has_gpu = "gpu" in ctx.cluster.resources
    raw, next_large, next_small = [], 0, 0
    for i, n in enumerate(sizes.tolist()):
        if n >= p.large_threshold:
            queue = p.large_queues[next_large % len(p.large_queues)]
            next_large += 1
        else:
            queue = p.small_queues[next_small % len(p.small_queues)]
            next_small += 1
        demand = {"mem": p.mem_dominant_gb if memory_dominant[i] else p.mem_gb}
        if queue in p.gpu_queues and has_gpu:
            demand["gpu"] = 1.0
        else:
            demand["cpu"] = p.cpu
        spread = p.task_duration_spread
        length = (p.large_task_duration if n >= p.large_threshold and p.large_task_duration
                  else p.task_duration)
        durations = (length + rng.uniform(-spread, spread, n) if spread
                     else np.full(n, length))
        leaves = below[queue]
        target = leaves[int(users.integers(len(leaves)))] if leaves else queue
        raw.append(RawJob(target, demand, np.maximum(durations, 1e-3), float(submits[i]),
                          f"fb{i}", f"workload (facebook-bins job {i})"))
    return finalize(raw, ctx.cluster, ctx.hierarchy, source="")


def _key(job) -> tuple:
    return (job.id, job.leaf, job.submit, job.name, job.priority, job.after,
            job.eviction_latency, type(job.demand), job.demand.tobytes(),
            job.durations.tobytes())


def _context(seed: int, users: int, gpus: bool) -> BuildContext:
    data = load_spec(EXPERIMENTS / "hdrf-fig13.yaml").spec.model_dump(mode="json")
    if users:
        data["hierarchy"]["users_per_leaf"] = users
    if not gpus:
        data["cluster"] = {"resources": ["mem", "cpu"],
                           "servers": [{"count": 4, "capacity": {"mem": 32, "cpu": 16}}]}
    exp = build_experiment(data)
    return BuildContext(exp.cluster, exp.hierarchy, seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 300), seed=st.integers(0, 2**31), users=st.sampled_from([0, 3]),
       gpus=st.booleans(), spread=st.sampled_from([0.0, 0.5, 30.0, 200.0]),
       large=st.sampled_from([None, 3600.0]), interarrival=st.sampled_from([0.0, 10.0]),
       threshold=st.sampled_from([20, 500]), fraction=st.floats(0, 1))
def test_the_table_holds_the_jobs_the_eager_generator_built(jobs, seed, users, gpus, spread,
                                                             large, interarrival, threshold,
                                                             fraction):
    p = facebook.Params(kind="facebook-bins", jobs=jobs, task_duration_spread=spread,
                        large_task_duration=large, interarrival=interarrival,
                        large_threshold=threshold, memory_dominant_fraction=fraction)
    ctx = _context(seed, users, gpus)
    table, reference = facebook.build(p, ctx).jobs, eager(p, ctx).jobs
    assert isinstance(table, JobTable)
    # read out of order first: each job's durations come from its own place in the stream
    order = np.random.default_rng(seed).permutation(jobs).tolist()
    assert [_key(table[k]) for k in order] == [_key(reference[k]) for k in order]
    assert [_key(j) for j in table] == [_key(j) for j in reference]
    assert table.names() == [j.name for j in reference]
    assert table.columns.size.tolist() == [j.n_tasks for j in reference]


def test_the_first_job_with_a_bad_field_is_named_as_before():
    ctx = _context(0, 0, True)
    for change in ({"small_queues": ["n2/n29"]}, {"cpu": 99.0},
                   {"task_duration": 1e9 - 10, "task_duration_spread": 20, "jobs": 9},
                   {"submit": 1e9 - 50, "interarrival": 10}):
        p = facebook.Params(kind="facebook-bins", **{"jobs": 20, **change})
        with pytest.raises(SpecError) as old:
            eager(p, ctx)
        with pytest.raises(SpecError) as new:
            facebook.build(p, ctx)
        assert str(new.value) == str(old.value)


def test_a_table_remakes_the_jobs_it_forgot(monkeypatch):
    monkeypatch.setattr(jobtable, "KEEP", 4)
    p = facebook.Params(kind="facebook-bins", jobs=30, task_duration_spread=30)
    table = facebook.build(p, _context(5, 0, True)).jobs
    first = [_key(table[k]) for k in range(30)]
    assert len(table.by_id) <= 4  # the dict of made jobs starts again when full
    assert [_key(table[k]) for k in reversed(range(30))] == first[::-1]
    assert _key(table[-1]) == first[-1] and [_key(j) for j in table[3:6]] == first[3:6]
    with pytest.raises(IndexError):
        table[30]
    with pytest.raises(KeyError):
        table.by_id[30]
    again = pickle.loads(pickle.dumps(table))  # sent to a worker: the same jobs
    assert [_key(j) for j in again] == first and not again.by_id
    assert table[0].durations.flags.writeable is False  # shared by every reader


@pytest.mark.parametrize("spec, algorithm", [
    ("hdrf-fig13.yaml", 0),
    ("hdrf-sec52.yaml", 0),  # sequential arrivals (after)
    ("hogs-and-mice.yaml", 4),  # pdrf with preemptions (restart)
])
def test_a_run_over_the_table_is_the_run_over_its_jobs_as_a_tuple(spec, algorithm):
    data = load_spec(EXPERIMENTS / spec).spec.model_dump(mode="json")
    data.pop("grid", None)
    if not data["workload"].get("exact_counts"):
        data["workload"]["jobs"] = min(data["workload"].get("jobs", 100), 60)
    exp = build_experiment(data)
    workload = exp.workload(0)
    assert isinstance(workload.jobs, JobTable)
    listed = replace(workload, jobs=tuple(workload.jobs))
    runs = []
    for wl in (workload, listed):
        exp._workloads[0] = wl
        runs.append(exp.simulate(exp.spec.algorithms[algorithm], 0))
    a, b = runs
    assert a.counts["tasks"] > 0 and (algorithm < 4 or len(a.preemptions))
    timed = {k for k in a.counts if k.startswith("latency") or k == "scheduling_seconds"}
    assert a.schedule_digest == b.schedule_digest
    assert {k: v for k, v in a.counts.items() if k not in timed} == \
        {k: v for k, v in b.counts.items() if k not in timed}
    for table in ("jobs", "tasks", "allocations", "utilization"):
        assert getattr(a, table).equals(getattr(b, table)), table


def test_offered_load_and_sequence_keep_the_table(tmp_path):
    data = spec_with(cluster={"resources": ["mem", "cpu"], "servers": [
                         {"count": 2, "capacity": {"mem": 32, "cpu": 16}}]},
                     hierarchy={"kind": "paper", "figure": "hdrf-fig10"},
                     workload={"kind": "facebook-bins", "jobs": 40, "interarrival": 5,
                               "gpu_queues": [], "arrivals": {"offered_load": 0.7}})
    jobs = build_experiment(copy.deepcopy(data)).workload(0).jobs
    assert isinstance(jobs, JobTable)  # rescaled submit times: columns, not job objects
    data["workload"]["arrivals"] = {"sequential": True}
    jobs = build_experiment(data).workload(0).jobs
    assert isinstance(jobs, JobTable) and jobs.columns.after.max() >= 0
