"""Synthetic inputs shared by the benchmarks (seeded, built outside timing)."""

from __future__ import annotations

import numpy as np

from hierfair.model import Cluster, Hierarchy, Job, Workload


def flat_instance(leaves: int, jobs: int = 400, servers: int = 64,
                  seed: int = 0) -> tuple[Cluster, Hierarchy, Workload]:
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
