"""Per-server headroom (cluster.headroom; docs/algorithms.md, "Per-server
headroom"): what it changes on a hand-computed example (H-DRF footnote 7),
the invariant it keeps, that it changes nothing when absent, and how a bad
one is refused."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.algorithms import make_policy
from hierfair.cli import main
from hierfair.experiment.spec import build_experiment
from hierfair.sim import Simulator
from hierfair.sim.model import Cluster, Hierarchy, Job, Workload
from hierfair.sim.headroom import Headroom, KeepHeadroom
from hierfair.sim.placement import TOLERANCE, ServerIndex

# -- footnote 7, by hand -----------------------------------------------------------
# One server <6 GB, 4 CPU, 1 GPU> (H-DRF §5.2's server).  Leaf a: eight CPU
# tasks <mem, 1 CPU, 0> at 0; leaf b: one GPU task <1.5 GB, 0, 1 GPU> at 1.
# All tasks take 10 s.  The largest task, componentwise, is <1.5, 1, 1>
# (footnote 10's vector).


def _spec(headroom=None, mem=1.5, algorithm="drf", others=()):
    cluster = {"resources": ["mem", "cpu", "gpu"],
               "servers": [{"count": 1, "capacity": {"mem": 6, "cpu": 4, "gpu": 1}}]}
    if headroom is not None:
        cluster["headroom"] = headroom
    return {"name": "fn7", "cluster": cluster, "hierarchy": {"a": {}, "b": {}},
            "workload": {"jobs": [
                {"queue": "a", "tasks": 8, "demand": {"mem": mem, "cpu": 1}, "duration": 10},
                {"queue": "b", "tasks": 1, "demand": {"mem": 1.5, "gpu": 1}, "duration": 10,
                 "submit": 1}]},
            "algorithms": [algorithm, *others]}


def _starts(headroom=None, mem=1.5, algorithm="drf", others=()):
    """(the CPU tasks' start times, the GPU task's start time or None), under
    ``algorithm`` (in a spec that lists ``others`` too)."""
    exp = build_experiment(_spec(headroom, mem, algorithm, others))
    tasks = exp.simulate(exp.spec.algorithms[0], 0).tasks
    cpu = tasks[tasks.job == 0].start.tolist()
    gpu = tasks[tasks.job == 1].start.iloc[0]
    return cpu, (None if np.isnan(gpu) else gpu)


PAPER = {"size": "largest-task", "exempt": "dominant-share", "keep": "used"}


@pytest.mark.parametrize("algorithm", ["drf", "hdrf", "naive-hdrf"])
def test_without_headroom_memory_blocks_the_gpu_task(algorithm):
    # footnote 7: four 1.5 GB CPU tasks leave no memory for the GPU task, which
    # waits until they end at 10 (or later: hdrf serves the CPU tasks first);
    # four 1 GB tasks leave 2 GB, and it starts at 1
    cpu, gpu = _starts(None, 1.5, algorithm)
    assert cpu[:4] == [0, 0, 0, 0] and gpu >= 10
    assert _starts(None, 1.0, algorithm)[1] == 1


@pytest.mark.parametrize("algorithm", ["drf", "hdrf", "naive-hdrf"])
def test_the_headroom_lets_the_gpu_task_start_at_once(algorithm):
    # CPU tasks must leave 1.5 GB and 1 CPU free: three at 0 (4.5 GB, 3 CPUs);
    # the GPU task (dominant share 1, the headroom's) may use it: starts at 1.
    # At 10 three end: 4.5 GB and 4 CPUs free, two start (1.5 GB left); at 11
    # the GPU task ends: one more (3 GB, 2 CPUs free -> 1.5, 1); at 20 two more.
    assert _starts(PAPER, 1.5, algorithm) == ([0, 0, 0, 10, 10, 11, 20, 20], 1)


def test_keep_all_also_keeps_the_gpu_free_from_cpu_tasks():
    # keep: all -- a CPU task must leave 1 GPU free too, so none starts while
    # the GPU task holds the server's only GPU (1 to 11)
    assert _starts({**PAPER, "keep": "all"}) == ([0, 0, 0, 11, 11, 11, 21, 21], 1)


def test_what_the_gpu_task_holds_may_count_as_kept():
    # count_exempt: beside the GPU task (1.5 GB of the headroom's memory in
    # use) CPU tasks need leave free only the rest of it: at 10 three start
    # (4.5 GB free - 3 x 1.5 + the 1.5 held >= 1.5), not two; keep: all the
    # same (the GPU is held by the GPU task)
    for keep in ("used", "all"):
        assert _starts({**PAPER, "keep": keep, "count_exempt": True}) == (
            [0, 0, 0, 10, 10, 10, 20, 20], 1)


def test_componentwise_exemption_starves_a_task_smaller_than_the_vector():
    # the default reading: only a task covering <1.5, 1, 1> may use the
    # headroom; the GPU task (no CPU) does not, and must leave the one GPU
    # free: it never starts.  CPU tasks run three at a time.
    for keep in ("all", "used"):
        assert _starts({"size": "largest-task", "keep": keep}) == (
            [0, 0, 0, 10, 10, 10, 20, 20], None)


def test_largest_dominant_is_the_gpu_task():
    # the single largest task by dominant share is the GPU task <1.5, 0, 1>:
    # it covers itself; CPU tasks leave 1.5 GB (and, keep: all, the GPU)
    assert _starts("largest-dominant") == ([0, 0, 0, 11, 11, 11, 21, 21], 1)
    assert _starts({"size": "largest-dominant", "keep": "used"}, 1.0) == (
        [0, 0, 0, 0, 10, 10, 10, 11], 1)


def test_an_explicit_vector_and_the_algorithms_it_applies_to():
    vector = {"size": {"mem": 1.5, "cpu": 1, "gpu": 1}, "exempt": "dominant-share",
              "keep": "used"}
    assert _starts(vector) == _starts(PAPER)
    # kept by hdrf only: drf runs as without a headroom
    only_hdrf = {**PAPER, "algorithms": ["hdrf"]}
    assert _starts(only_hdrf, algorithm="drf", others=["hdrf"]) == _starts(None)
    assert _starts(only_hdrf, algorithm="hdrf", others=["drf"]) == _starts(
        PAPER, algorithm="hdrf")


def test_the_largest_task_is_the_workloads():
    exp = build_experiment(_spec("largest-task", mem=1.0))
    assert exp.headroom_vector(exp.workload(0)).tolist() == [1.5, 1.0, 1.0]
    exp = build_experiment(_spec("largest-dominant", mem=1.0))
    assert exp.headroom_vector(exp.workload(0)).tolist() == [1.5, 0.0, 1.0]


# -- the invariant -------------------------------------------------------------------
# Under a headroom H, on every server and every resource r, at every moment:
#     free_r + (what tasks that may use the headroom hold)_r >= H_r,
# i.e. the headroom is free except for what largest-size tasks use of it.  A
# task that may not use it needs free - d >= H (on the resources it keeps);
# one that may moves free and the exempt total alike; a release only adds.

servers = st.integers(1, 6)
vec = st.lists(st.integers(0, 3), min_size=3, max_size=3)


@settings(max_examples=150, deadline=None)
@given(n=servers, extra=st.lists(vec, min_size=6, max_size=6), head=vec,
       operations=st.lists(st.tuples(vec, st.booleans()), min_size=1, max_size=60),
       rule=st.sampled_from(["first-fit", "best-fit"]),
       exempt=st.sampled_from(["componentwise", "dominant-share"]),
       keep=st.sampled_from(["all", "used"]), count=st.booleans())
def test_the_index_keeps_the_headroom_free(n, extra, head, operations, rule, exempt, keep,
                                           count):
    h = np.array(head, dtype=float)
    cap = h + np.array(extra[:n], dtype=float)  # every server can hold the headroom
    headroom = Headroom(tuple(h.tolist()), exempt, keep, count)
    index = ServerIndex(cap, KeepHeadroom(rule, headroom))
    total = np.where(cap.sum(axis=0) > 0, cap.sum(axis=0), 1.0)
    free = cap.copy()
    exempt_use = np.zeros_like(cap)
    placed: list[tuple[int, np.ndarray, bool]] = []
    for demand, release in operations:
        d = np.array(demand, dtype=float)
        if release and placed:
            server, dd, ex = placed.pop(0)
            index.release(server, tuple(dd.tolist()))
            free[server] += dd
            if ex:
                exempt_use[server] -= dd
        ex = headroom.exempts(d, total)
        kept = h if keep == "all" else np.where(d > 0, h, 0)
        ok = (free >= d - TOLERANCE).all(axis=1)
        if not ex:  # leave the headroom free (less what exempt tasks hold, if counted)
            ok &= (free - d + (exempt_use if count else 0) >= kept - TOLERANCE).all(axis=1)
        ok = np.flatnonzero(ok)
        chosen = index.choose(d)
        assert index.fits(d) == (chosen is not None) == (ok.size > 0)
        if chosen is None:
            continue
        if rule == "first-fit":
            assert chosen == ok[0]
        else:  # the least free space left by the task itself
            left = ((free[ok] - d) / total).sum(axis=1)
            assert chosen == ok[np.argmin(left)]
        index.allocate(chosen, tuple(d.tolist()))
        free[chosen] -= d
        if ex:
            exempt_use[chosen] += d
        placed.append((chosen, d, ex))
        np.testing.assert_allclose(index.free, free)
        assert np.all(free + exempt_use >= h - 1e-9)


def _cluster(caps):
    return Cluster(("mem", "cpu", "gpu"), np.array(caps, dtype=float))


jobs_strategy = st.lists(st.tuples(st.integers(0, 2),  # leaf
                                   vec,  # demand
                                   st.integers(1, 5),  # tasks
                                   st.integers(0, 20),  # submit
                                   st.integers(1, 15)),  # duration
                         min_size=1, max_size=8)


def _workload(jobs, caps):
    out = []
    for i, (leaf, demand, tasks, submit, duration) in enumerate(jobs):
        d = np.minimum(np.array(demand, dtype=float), caps.max(axis=0))
        if not d.any():
            d[1] = 1.0
        out.append(Job(id=i, leaf=leaf + 1, submit=float(submit), demand=d,
                       durations=np.full(tasks, float(duration))))
    out.sort(key=lambda j: (j.submit, j.id))
    return Workload(tuple(Job(id=k, leaf=j.leaf, submit=j.submit, demand=j.demand,
                              durations=j.durations) for k, j in enumerate(out)))


@settings(max_examples=40, deadline=None)
@given(n=servers, jobs=jobs_strategy, head=vec,
       algorithm=st.sampled_from(["drf", "hdrf", "naive-hdrf", "capacity-current"]),
       exempt=st.sampled_from(["componentwise", "dominant-share"]),
       keep=st.sampled_from(["all", "used"]), count=st.booleans(),
       rule=st.sampled_from(["first-fit", "best-fit"]))
def test_a_simulation_keeps_the_headroom_free(n, jobs, head, algorithm, exempt, keep, count,
                                              rule):
    h = np.array(head, dtype=float)
    caps = np.tile(h + np.array([4.0, 4.0, 2.0]), (n, 1))
    cluster = _cluster(caps)
    workload = _workload(jobs, caps)
    headroom = Headroom(tuple(h.tolist()), exempt, keep, count)
    sim = Simulator(cluster, Hierarchy.flat(["x", "y", "z"]), workload,
                    make_policy(algorithm), placement=KeepHeadroom(rule, headroom))
    tasks = sim.run().tasks
    ran = tasks.dropna(subset=["start"])
    demand = {j.id: j.demand for j in workload.jobs}
    total = cluster.total
    for t in sorted(set(ran.start)):  # free space only shrinks at starts
        on = ran[(ran.start <= t) & (ran.finish > t)]
        for s in range(n):
            here = on[on.server == s]
            used = sum((demand[j] for j in here.job), np.zeros(3))
            exempt_use = sum((demand[j] for j in here.job
                              if headroom.exempts(demand[j], total)), np.zeros(3))
            assert np.all(caps[s] - used + exempt_use >= h - 1e-9), (t, s)


# -- absent: nothing changes ------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(n=servers, jobs=jobs_strategy,
       algorithm=st.sampled_from(["drf", "hdrf", "naive-hdrf", "capacity-current", "fifo"]),
       rule=st.sampled_from(["first-fit", "best-fit"]),
       keep=st.sampled_from(["all", "used"]), count=st.booleans())
def test_no_or_a_zero_headroom_gives_the_same_schedule(n, jobs, algorithm, rule, keep, count):
    caps = np.tile([4.0, 4.0, 2.0], (n, 1))
    cluster, workload = _cluster(caps), _workload(jobs, caps)
    tree = Hierarchy.flat(["x", "y", "z"])

    def tasks(placement):
        return Simulator(cluster, tree, workload, make_policy(algorithm),
                         placement=placement).run().tasks

    plain = tasks(rule)
    zero = Headroom((0.0, 0.0, 0.0), "dominant-share", keep, count)
    for placement in (KeepHeadroom(rule), KeepHeadroom(rule, zero)):
        assert tasks(placement).equals(plain)


def test_a_spec_without_headroom_runs_as_before():
    base = _spec()
    same = [_spec("none"), _spec({**PAPER, "algorithms": ["hdrf"]}, others=["hdrf"])]
    first = build_experiment(base)
    want = first.simulate(first.spec.algorithms[0], 0).tasks
    for data in same:
        exp = build_experiment(data)
        assert exp.simulate(exp.spec.algorithms[0], 0).tasks.equals(want)


# -- refused, one line each ---------------------------------------------------------------
def _with(headroom=None, algorithms=("drf",), servers=None):
    data = _spec(headroom)
    data["algorithms"] = list(algorithms)
    if servers is not None:
        data["cluster"]["servers"] = servers
    return data


BAD = {
    "unknown resource": (_with({"size": {"mem": 1, "gpux": 1}}), "cluster.headroom.size.gpux",
                         "unknown resource; the cluster has ['mem', 'cpu', 'gpu']"),
    "negative amount": (_with({"size": {"cpu": -1}}), "cluster.headroom.size.cpu",
                        "greater than or equal to 0"),
    "larger than a server": (_with({"size": {"mem": 7}}), "cluster.headroom.size.mem",
                             "larger than server s0's mem (6)"),
    "unknown size": (_with("largest"), "cluster.headroom.size", "unknown headroom size"),
    "unknown exemption": (_with({"size": "largest-task", "exempt": "some"}),
                          "cluster.headroom.exempt", "'componentwise' or 'dominant-share'"),
    "unknown key": (_with({"size": "largest-task", "kep": "all"}), "cluster.headroom.kep",
                    "did you mean 'keep'?"),
    "an unknown algorithm": (_with({"size": "largest-task", "algorithms": ["drff"]}),
                             "cluster.headroom.algorithms[0]",
                             "unknown algorithm; did you mean 'drf'?"),
    "an algorithm with its own index": (_with("largest-task", algorithms=("drf", "hdrf-fast")),
                                        "algorithms[1].name", "hdrf makes the same decisions"),
    "the largest task larger than a server": (
        _with("largest-task", servers=[{"capacity": {"mem": 6, "cpu": 4, "gpu": 1}},
                                       {"capacity": {"mem": 6, "cpu": 4}}]),
        "cluster.headroom.size", "larger than server s1"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_headroom_is_one_line_and_exit_2(case, tmp_path, capsys):
    data, where, detail = BAD[case]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(copy.deepcopy(data)))
    assert main(["validate", str(path)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.startswith("hierfair: error:")]
    assert len(err) == 1, err
    assert f"spec.yaml: {where}: " in err[0] and detail in err[0], err[0]


def test_the_index_refuses_a_headroom_it_cannot_keep():
    with pytest.raises(ValueError, match="mirror"):
        ServerIndex(np.ones((1, 3)), KeepHeadroom("first-fit", Headroom((0.0, 0.0, 0.0))),
                    mirror=True)
    with pytest.raises(ValueError, match="never negative"):
        Headroom((-1.0, 0.0, 0.0))
