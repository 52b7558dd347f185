"""Synthetic inputs shared by the benchmarks (seeded, built outside timing)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.algorithms import make_policy
from hierfair.datasets import full_binary
from hierfair.datasets.google import CALIBRATION
from hierfair.errors import SpecError
from hierfair.sim import Simulator
from hierfair.sim.model import Cluster, Hierarchy, Job, Workload
from hierfair.sim.policy import BasePolicy

Instance = tuple[Cluster, Hierarchy, Workload]


def trace_dir() -> Path:
    """``$HIERFAIR_DATA``, else ``../shared/traces`` beside the checkout; a
    missing folder raises NotImplementedError (asv's skip)."""
    here = Path(__file__).resolve().parent.parent
    folder = Path(os.environ.get("HIERFAIR_DATA", here.parent / "shared" / "traces"))
    if not folder.is_dir():
        raise NotImplementedError(f"no traces at {folder}")
    return folder


def policy_or_skip(algorithm: str) -> BasePolicy:
    """A fresh policy; an algorithm this checkout lacks raises NotImplementedError."""
    try:
        return make_policy(algorithm)
    except SpecError as exc:
        raise NotImplementedError(f"no algorithm {algorithm!r} here: {exc}") from None


def flat_instance(leaves: int, jobs: int = 400, servers: int = 64,
                  seed: int = 0) -> Instance:
    """``leaves`` queues sharing ``servers`` <32 CPU, 128 GB> servers; jobs of
    1-50 tasks with mixed CPU/memory demands arriving over 2000 s."""
    rng = np.random.default_rng(seed)
    hierarchy = Hierarchy.flat([f"u{i}" for i in range(leaves)])
    cluster = Cluster(("cpu", "mem"), np.tile([32.0, 128.0], (servers, 1)))
    raw = []
    for _ in range(jobs):
        leaf = hierarchy.leaves[int(rng.integers(leaves))]
        n = int(rng.integers(1, 50))
        demand = np.array([float(rng.integers(1, 4)), float(rng.integers(1, 16))])
        raw.append((float(rng.integers(0, 2000)), leaf, demand,
                    rng.integers(5, 200, n).astype(float)))
    raw.sort(key=lambda r: r[0])
    return cluster, hierarchy, Workload(tuple(
        Job(id=i, leaf=leaf, submit=t, demand=d, durations=dur)
        for i, (t, leaf, d, dur) in enumerate(raw)))


# -- decision latency ----------------------------------------------------------
#: Server of the latency instance; Google's trace normalises requests to the
#: largest machine, so a task asks for its calibrated fraction of this.
SERVER = np.array([32.0, 128.0])


def _google_like(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Task counts, per-task <cpu, mem> and job durations drawn from the
    google-synthetic marginals (clusterdata-2011-2 quantiles)."""
    def draw(name: str) -> np.ndarray:
        q = np.asarray(CALIBRATION[name])
        return np.interp(rng.random(n), np.linspace(0, 1, q.size), q)

    # At most 32 tasks a job: the 2,000-task tail would put most of the
    # backlog on a few leaves, and the tree should have many demanding leaves.
    tasks = np.clip(np.round(draw("tasks")), 1, 32).astype(int)
    # Some requests are 0 in the trace; every task asks for a sliver at least.
    cpu = np.maximum(draw("cpu"), 1e-3) * SERVER[0]
    mem = np.maximum(draw("mem"), 1e-4) * SERVER[1]
    return tasks, cpu, mem, np.maximum(draw("duration"), 1.0)


def latency_instance(levels: int, servers: int = 4, backlog: int = 512,
                     arrivals_per_hour: int = 512, seed: int = 0) -> Instance:
    """A contended cluster under a full binary tree of ``levels`` levels.

    At time 0, ``backlog`` Google-like jobs are queued, spread evenly over the
    leaves: all of them while there are at most ``backlog``, else every
    (leaves/backlog)-th (a job at each of 16,384 leaves would cost the slowest
    policies minutes of notifications before the first measured decision).
    That is far more work than ``servers`` servers hold (~200 tasks at once
    for 4), and jobs keep arriving at random leaves (Poisson).  So after the
    first fill at time 0, every decision is made in steady state: tasks of
    varied durations (seconds to hours, jittered +-50 % per task) finish,
    queued ones start, and arrivals ask the policy again while the cluster
    is full.
    """
    rng = np.random.default_rng(seed)
    hierarchy = full_binary.build(full_binary.Params(kind="full-binary", levels=levels))
    cluster = Cluster(("cpu", "mem"), np.tile(SERVER, (servers, 1)))
    leaves = np.asarray(hierarchy.leaves)
    queued = backlog
    later = arrivals_per_hour * 2  # two hours of arrivals: more than a run reaches
    submit = np.concatenate([np.zeros(queued),
                             np.cumsum(rng.exponential(3600 / arrivals_per_hour, later))])
    # Spread over the tree: every leaf when it has fewer leaves than the
    # backlog, else every (leaves / backlog)-th leaf.
    stride = max(1, leaves.size // queued)
    leaf = np.concatenate([leaves[np.arange(queued) * stride % leaves.size],
                           rng.choice(leaves, later)])
    tasks, cpu, mem, duration = _google_like(rng, submit.size)
    return cluster, hierarchy, Workload(tuple(
        Job(id=i, leaf=int(leaf[i]), submit=float(submit[i]),
            demand=np.array([cpu[i], mem[i]]),
            durations=duration[i] * rng.uniform(0.5, 1.5, tasks[i]))
        for i in range(submit.size)), source=f"latency instance, {levels} levels")


@cache
def backlog_instance(levels: int) -> Instance:
    """:func:`latency_instance` with only the jobs queued at time 0 (ids
    0..511, so ids stay dense); cached: asv reruns setup before every sample."""
    cluster, hierarchy, workload = latency_instance(levels)
    jobs = tuple(job for job in workload.jobs if job.submit == 0)
    return cluster, hierarchy, Workload(jobs, source=f"{workload.source}, backlog")


def filled(algorithm: str, levels: int) -> Simulator:
    """A simulator of ``algorithm`` on :func:`backlog_instance`, every job
    submitted and the cluster filled (``submit_all``): ready for
    ``finish_earliest`` steps; NotImplementedError for an unknown algorithm."""
    sim = Simulator(*backlog_instance(levels), policy_or_skip(algorithm))
    sim.submit_all()
    return sim


class _Enough(Exception):
    """The decision budget is spent (raised from inside the policy's select)."""


def steady_decisions(policy: BasePolicy, instance: Instance, decisions: int) -> pd.DataFrame:
    """The first ``decisions`` scheduling decisions after time 0 (``time``,
    ``leaf``, ``latency_ns``), as the simulator records them; the run stops
    there."""
    select = policy.select
    sims: list[Simulator] = []
    left = decisions

    # Wrapped on the instance before the simulator sees it, so however the
    # simulator calls select it meets the budget; this adds one Python call
    # (a few tenths of a us, the same for every algorithm) to every decision.
    def counted() -> int | None:
        nonlocal left
        if getattr(sims[0], "view", sims[0]).now > 0:  # commits before the view: sim.now
            left -= 1
            if left < 0:
                raise _Enough
        return select()

    policy.select = counted  # type: ignore[method-assign]
    sims.append(Simulator(*instance, policy))
    try:
        sims[0].run()
    except _Enough:
        pass
    table = sims[0].result().decisions
    return table[table["time"] > 0]


def steady_latencies(algorithm: str, instance: Instance, decisions: int) -> np.ndarray:
    """Latencies (ns) of :func:`steady_decisions` for ``algorithm`` by name;
    NotImplementedError (asv's skip) for one this checkout lacks."""
    return steady_decisions(policy_or_skip(algorithm), instance, decisions)[
        "latency_ns"].to_numpy()


Stats = dict[tuple[str, int], tuple[int, int] | str]


def latency_grid(algorithms: list[str], levels: list[int], decisions: int) -> Stats:
    """Median and 99th percentile decision latency (ns) of every algorithm at
    every tree size; for an algorithm this checkout lacks, the reason."""
    stats: Stats = {}
    for depth in levels:
        instance = latency_instance(depth)
        for algorithm in algorithms:
            try:
                latencies = steady_latencies(algorithm, instance, decisions)
            except NotImplementedError as exc:
                stats[algorithm, depth] = str(exc)
                continue
            median, p99 = np.percentile(latencies, [50, 99])
            stats[algorithm, depth] = round(median), round(p99)
    return stats


def simulate(exp: Any, algo: Any, seed: int) -> Any:
    """One run in this process: ``Experiment.simulate``, or, on commits
    before it (asv measures older commits with these benchmarks),
    ``hierfair.experiment.runner.simulate``."""
    if hasattr(exp, "simulate"):
        return exp.simulate(algo, seed)
    from hierfair.experiment.runner import simulate as old  # type: ignore[import-not-found]

    return old(exp, algo, seed)
