"""``hdrf-fast`` against its readable specification, ``hdrf`` (literal-frozen).

A differential test: both run on the same random instances -- trees of
random depth, fan-out and weights; heterogeneous servers, some without a
resource; jobs arriving over time (some only after an earlier job finishes)
with fractional, single-resource, complementary and never-fitting demands,
varied durations; server outages (some permanent), task failures, restart or
checkpoint -- and must take the
same decisions: the same leaf at every decision, each task on the same
server at the same time.  Plus the papers' examples through ``allocate``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hierfair.algorithms.hdrf_fast_kernels as hf
from hierfair.algorithms import make_policy
from hierfair.experiment.allocate import allocate
from hierfair.experiment.spec import load_spec
from hierfair.sim import Faults, Interruptions, Simulator, jit
from hierfair.sim.model import Cluster, Hierarchy, Job, Workload
from hierfair.sim.placement import TOLERANCE, ServerIndex

from .conftest import EXPERIMENTS
from .test_hdrf_properties import trees

DEMANDS = [0.0, 0.1, 0.3, 0.7, 1.0, 2.5, 3.0]  # fractional: sums and thresholds inexact


@st.composite
def simulations(draw, max_depth: int = 4):
    nodes = draw(trees(max_depth=max_depth))
    h = Hierarchy.from_edges(nodes)
    m = draw(st.integers(2, 4))
    n_servers = draw(st.integers(1, 4))
    servers = []
    for _ in range(n_servers):
        row = [float(draw(st.integers(4, 12))) for _ in range(m)]
        if m >= 3 and draw(st.booleans()):
            row[-1] = 0.0  # a server without the last resource (a GPU-less box)
        servers.append(row)
    if not any(row[-1] for row in servers):
        servers[0][-1] = 4.0
    cluster = Cluster(tuple(f"r{j}" for j in range(m)), np.array(servers))
    jobs = []
    for _ in range(draw(st.integers(1, 14))):
        leaf = draw(st.sampled_from(h.leaves))
        demand = [draw(st.sampled_from(DEMANDS)) for _ in range(m)]
        if not any(demand):
            demand[draw(st.integers(0, m - 1))] = 1.0
        if draw(st.integers(0, 19)) == 0:
            demand[0] = 100.0  # a task that fits nowhere, ever
        durations = [float(draw(st.integers(1, 9))) for _ in range(draw(st.integers(1, 6)))]
        jobs.append((float(draw(st.integers(0, 20))), leaf, demand, durations))
    jobs.sort(key=lambda j: j[0])
    # some jobs arrive only when an earlier one finishes (closed loop, H-DRF §5.2)
    after = [draw(st.integers(0, i - 1)) if i and draw(st.integers(0, 3)) == 0 else -1
             for i in range(len(jobs))]
    workload = Workload(tuple(Job(id=i, leaf=leaf, submit=t, demand=np.array(d),
                                  durations=np.array(dur), after=after[i])
                              for i, (t, leaf, d, dur) in enumerate(jobs)))
    outages = tuple((draw(st.integers(0, n_servers - 1)), float(draw(st.integers(0, 20))),
                     draw(st.sampled_from([None, 3.0, 8.0])))
                    for _ in range(draw(st.integers(0, 2))))
    faults = Faults(outages=outages, task_failure=draw(st.sampled_from([0.0, 0.3])), seed=3)
    interruptions = draw(st.sampled_from([Interruptions(),
                                          Interruptions(mode="checkpoint", overhead=0.5)]))
    # every rule: random draws only where a task is placed, so hdrf-fast (which
    # tests fits itself) draws exactly as hdrf does
    placement = draw(st.sampled_from(["first-fit", "best-fit", "drfh", "dot-product",
                                      "random"]))
    return cluster, h, workload, faults, interruptions, placement


def schedule(instance, algorithm: str):
    cluster, h, workload, faults, interruptions, placement = instance
    policy = make_policy(algorithm)
    result = Simulator(cluster, h, workload, policy, placement=placement, faults=faults,
                       interruptions=interruptions).run()
    return (result.decisions["leaf"].tolist(), result.attempts[["task", "server", "start"]]
            .to_numpy().tolist()), policy


def assert_same_schedule(instance) -> None:
    (ref, _), (fast, _) = schedule(instance, "hdrf"), schedule(instance, "hdrf-fast")
    assert fast[0] == ref[0], "hdrf-fast chose another leaf than hdrf"
    assert fast[1] == ref[1], "hdrf-fast placed a task elsewhere or at another time"


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instance=simulations())
def test_hdrf_fast_decides_exactly_as_hdrf(instance):
    assert_same_schedule(instance)


def test_a_larger_tree_with_many_demand_vectors():
    # Six levels, 64 leaves, three resources (the third only on half the
    # servers), 300 jobs over time: many Y changes and blocked subtrees.
    rng = np.random.default_rng(7)
    nodes = [(p, float(rng.integers(1, 4))) for p in _binary_paths(6)]
    h = Hierarchy.from_edges(nodes)
    caps = np.array([[16.0, 32.0, 4.0 if s % 2 else 0.0] for s in range(12)])
    cluster = Cluster(("cpu", "mem", "gpu"), caps)
    jobs = []
    for i in range(300):
        demand = [float(rng.integers(1, 5)), float(rng.integers(0, 9)),
                  float(rng.integers(1, 3)) if rng.random() < 0.2 else 0.0]
        jobs.append(Job(id=i, leaf=int(rng.choice(h.leaves)), submit=float(i // 3),
                        demand=np.array(demand),
                        durations=rng.integers(1, 40, int(rng.integers(1, 12))).astype(float)))
    instance = (cluster, h, Workload(tuple(jobs)), None, None, "first-fit")
    ref, _ = schedule(instance, "hdrf")
    fast, policy = schedule(instance, "hdrf-fast")
    assert len(ref[0]) > 1000 and fast == ref
    # the incremental state did work, and less than a recomputation per decision
    stats = policy.stats
    assert stats["decisions"] > 1000 and stats["reflagged"] > 0
    assert stats["recomputed"] < stats["decisions"] * (h.n_nodes - len(h.leaves)) / 4


def _binary_paths(levels: int) -> list[str]:
    out: list[str] = []

    def grow(prefix: str, depth: int) -> None:
        for k in range(2):
            path = f"{prefix}n{k}"
            out.append(path)
            if depth < levels:
                grow(path + "/", depth + 1)

    grow("", 1)
    return out


@pytest.mark.parametrize("spec,churn,expected", [
    # H-DRF Fig. 4 after 40 task ends; Fig. 5's GPU halves (§3.3-3.4)
    ("hdrf-fig4.yaml", 40, {"n1/n11": 5, "n2/n21": 5, "n2/n22": 10}),
    ("hdrf-fig5.yaml", 0, {"n1/n11": 10, "n2/n21": 10, "n3/n31": 10, "n3/n32": 15,
                           "n4/n41": 15}),
    # the default keeps n0/n1/n1 at 21 tasks through churn (issue 11)
    ("hdrf-churn-starvation.yaml", 522, {"n0/n1/n1": 21}),
])
def test_the_papers_examples(spec, churn, expected):
    a = allocate(load_spec(EXPERIMENTS / spec), "hdrf-fast", churn=churn)
    assert {p: a.node(p)["tasks"] for p in expected} == expected


def test_a_fit_answer_is_forgotten_after_a_release_no_walk_saw():
    # Found by review (helper-36): a select after a release runs no walk (no
    # pending leaf can use what is free), then a job arrives; the answer
    # "(2, 0, 0) fits nowhere" from before the release must not block it.
    # One server (c, d, g) = (5, 1, 1); L's task fits at t = 11, when A's
    # task has freed 4 c; remembered wrongly, it waited for t = 100.
    cluster = Cluster(("c", "d", "g"), np.array([[5.0, 1.0, 1.0]]))
    h = Hierarchy.from_edges([(x, 1.0) for x in "aetpqul"])
    leaf = {x: i + 1 for i, x in enumerate("aetpqul")}
    jobs = [("a", 0, [4, 0, 0], 10), ("e", 0, [0, 0, 1], 100), ("t", 0, [0, 1, 0], 2),
            ("p", 1, [2, 1, 0], 5), ("q", 1, [2, 0, 1], 5), ("u", 3, [0, 1, 0], 100),
            ("l", 11, [2, 0, 0], 5)]
    workload = Workload(tuple(Job(id=i, leaf=leaf[x], submit=float(t), demand=np.array(d, float),
                                  durations=np.array([float(dur)]))
                              for i, (x, t, d, dur) in enumerate(jobs)))
    instance = (cluster, h, workload, None, None, "first-fit")
    assert_same_schedule(instance)
    (_, attempts), _ = schedule(instance, "hdrf-fast")
    assert [start for task, _, start in attempts if task == 6] == [11.0]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data(), m=st.integers(1, 4), n_servers=st.integers(1, 6))
def test_remembered_fit_answers_are_the_scans_answers(data, m, n_servers):
    # The walk answers "does this vector fit somewhere" from earlier answers on
    # the same free space when one dominates it; more queries than it keeps.
    # Vectors on a grid of small values so that dominance and ties happen.
    grid = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])
    free = np.array(data.draw(st.lists(st.lists(grid, min_size=m, max_size=m),
                                       min_size=n_servers, max_size=n_servers)))
    queries = data.draw(st.lists(st.lists(grid, min_size=m, max_size=m), min_size=1,
                                 max_size=3 * hf.MEMO))
    memo, answers, known = np.zeros((hf.MEMO, m)), np.zeros(hf.MEMO, np.bool_), 0
    F = np.zeros((hf.U0 + m, 1))
    top, dirty = np.zeros((1, m)), np.ones(1, np.uint8)  # one block of maxima

    def truth(q):
        return any(all(f >= x - TOLERANCE for f, x in zip(row, q)) for row in free)

    scanned = []  # the queries no earlier answer decides: a scan each, remembered
    for q in queries:
        F[hf.U0:, 0] = q
        ok, known = hf.fits_known(free, F, hf.U0, 0, m, memo, answers, known, top, dirty)
        assert ok == truth(q) == hf.fits(free, F, hf.U0, 0, m, top, dirty)
        if not any(all(x <= y for x, y in zip(q, r)) if truth(r) else
                   all(x >= y for x, y in zip(q, r)) for r in scanned[:hf.MEMO]):
            scanned.append(q)
    assert known == min(hf.MEMO, len(scanned))
    assert [bool(a) for a in answers[:known]] == [truth(r) for r in scanned[:known]]
    assert memo[:known].tolist() == scanned[:known]


@settings(deadline=None)  # the first call may compile the kernel
@given(data=st.data(), m=st.integers(1, 3), n_servers=st.integers(1, 50))
def test_the_fit_test_skips_only_blocks_where_nothing_fits(data, m, n_servers):
    # The walk's fit test skips a block of servers by its per-resource maxima,
    # taken again when the index marks the block changed: after any sequence
    # of allocations, releases and outages it answers as a scan of every
    # server does.  Tasks take half or all of a server's room, so blocks fill
    # up, and the questions are a server's own free row (fits, perhaps only
    # there), a little more than it, and a random vector.
    grid = st.sampled_from([0.0, 1.0, 2.0, 4.0])
    caps = np.array(data.draw(st.lists(st.lists(grid, min_size=m, max_size=m),
                                       min_size=n_servers, max_size=n_servers)))
    index = ServerIndex(caps, mirror=True)
    top, dirty = np.zeros((len(index.mirror_dirty), m)), index.mirror_dirty
    F = np.zeros((hf.U0 + m, 1))
    held: list[tuple[int, tuple[float, ...]]] = []
    down: set[int] = set()
    servers = st.integers(0, n_servers - 1)
    for _ in range(data.draw(st.integers(1, 80))):
        s = data.draw(servers)
        op = data.draw(st.sampled_from(["take", "take", "give", "down", "up"]))
        if op == "take" and s not in down:
            need = tuple(float(f) * data.draw(st.sampled_from([0.5, 1.0]))
                         for f in index.free_of(s))
            index.allocate(s, need)
            held.append((s, need))
        elif op == "give" and held:
            index.release(*held.pop(data.draw(st.integers(0, len(held) - 1))))
        elif op == "down" and s not in down and not any(h == s for h, _ in held):
            index.set_down(s)
            down.add(s)
        elif op == "up" and s in down:
            index.set_up(s)
            down.discard(s)
        row = index.mirror[data.draw(servers)]
        more = row + np.eye(m)[data.draw(st.integers(0, m - 1))]
        other = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=m,
                                   max_size=m))
        for need in (row, more, other):
            F[hf.U0:, 0] = need
            scan = any(all(f >= x - TOLERANCE for f, x in zip(r, need)) for r in index.mirror)
            assert hf.fits(index.mirror, F, hf.U0, 0, m, top, dirty) == scan


def test_the_kernels_are_compiled_here():
    # numba is a dependency: without it hdrf-fast still decides the same (the
    # next test), only slower -- which nobody would notice without this test
    assert jit.COMPILED or os.environ.get("HIERFAIR_NO_JIT"), "numba did not load"


@pytest.mark.skipif(bool(os.environ.get("HIERFAIR_NO_JIT")), reason="this is that run")
def test_the_kernels_as_plain_python_decide_the_same():
    """The same kernels, uncompiled (HIERFAIR_NO_JIT=1: what runs where numba
    cannot install), pass this module's differential tests; plain Python
    also checks every array index, which compiled code does not."""
    env = {**os.environ, "HIERFAIR_NO_JIT": "1", "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           str(Path(__file__)), "-k", "not plain_python"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


_NO_LOADS_IN_THE_RUN = """
import hierfair.algorithms.hdrf_fast as hf
from hierfair.algorithms import make_policy
from hierfair.experiment.spec import load_spec
exp = load_spec({spec!r})
sim = exp.simulator(make_policy("hdrf-fast", {{}}), 0)   # attach warms the kernels
kernels = [k for k in vars(hf).values() if hasattr(k, "signatures")]
before = [len(k.signatures) for k in kernels]
sim.run()
print([k.py_func.__name__ for k, b in zip(kernels, before) if len(k.signatures) != b])
"""


@pytest.mark.skipif(not jit.COMPILED, reason="numba is not loaded: nothing is compiled")
def test_a_run_loads_no_kernel_the_warm_up_left_out():
    # A kernel signature first met inside the run is loaded (or compiled)
    # inside the first decision's measured time: ~1 s in mch-fig5 once.  A
    # fresh process, since signatures stay loaded for the process's life.
    code = _NO_LOADS_IN_THE_RUN.format(spec=str(EXPERIMENTS / "mch-fig4.yaml"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
