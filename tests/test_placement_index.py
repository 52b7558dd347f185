"""The placement index and drf's demand groups against linear scans (issue 30 item 2).

The first-fit index keeps, per cached demand that once fitted nowhere, the
exact set of servers with room (a bitset) instead of searching its block
maxima; drf parks its leaves by demand and, after a release, puts back only
the demands that fit.
Both must answer exactly what a scan answers, so that every schedule stays
the same: here on random clusters and update sequences, including servers
whose free CPUs and free memory are on different servers.
"""

from __future__ import annotations

import types

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierfair.algorithms import make_policy
from hierfair.sim import Simulator
from hierfair.sim.headroom import Headroom, KeepHeadroom
from hierfair.sim.placement import TOLERANCE, ServerIndex
from hierfair.sim.policy import LeafPriorityPolicy

from .test_hdrf_fast import simulations

DEMANDS = [(1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (2.0, 1.0), (1.0, 3.0), (0.5, 0.5)]


def scan(free: np.ndarray, room: np.ndarray) -> int | None:
    """First fit by brute force: the lowest server with room."""
    ok = np.flatnonzero((free >= room - TOLERANCE).all(axis=1))
    return int(ok[0]) if ok.size else None


servers = st.integers(1, 70).flatmap(  # up to 5 blocks of 16: searches cross blocks
    lambda n: st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=n,
                       max_size=n))
steps = st.lists(st.tuples(st.sampled_from(["place", "place", "release", "down", "up"]),
                           st.integers(0, len(DEMANDS) - 1), st.integers(0, 69)),
                 min_size=1, max_size=150)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capacities=servers, operations=steps, headroom=st.booleans())
def test_first_fit_answers_as_a_scan_does(capacities, operations, headroom):
    cap = np.array(capacities, dtype=float)
    keep = Headroom((1.0, 1.0)) if headroom else None
    index = ServerIndex(cap, KeepHeadroom("first-fit", keep) if keep else "first-fit")
    free = cap.copy()
    down: set[int] = set()
    placed: list[tuple[int, np.ndarray]] = []
    demands = [np.array(d) for d in DEMANDS]
    for op, which, server in operations:
        d = demands[which]
        server %= len(cap)
        if op == "place":
            chosen = index.choose(d)
            assert chosen == scan(free, index.room(d))
            if chosen is not None:
                index.allocate(chosen, tuple(d.tolist()))
                free[chosen] -= d
                placed.append((chosen, d))
        elif op == "release" and placed:
            s, dd = placed.pop(which % len(placed))
            index.release(s, tuple(dd.tolist()))
            free[s] += dd
        elif op == "down" and server not in down:
            for s, dd in [p for p in placed if p[0] == server]:  # its tasks die first
                placed.remove((s, dd))
                index.release(s, tuple(dd.tolist()))
                free[s] += dd
            index.set_down(server)
            free[server] = -np.inf
            down.add(server)
        elif op == "up" and server in down:
            index.set_up(server)
            free[server] = cap[server]
            down.discard(server)
        for dd in demands:  # every cached answer, after every update
            expected = scan(free, index.room(dd))
            assert index.fits(dd) == (expected is not None)
            assert index.choose(dd) == expected


def test_free_cpu_on_one_server_and_free_memory_on_another():
    """Per-resource block maxima say a block may hold <1 cpu, 1 mem>; no server does."""
    cap = np.array([[1.0, 1.0]] * 40)
    index = ServerIndex(cap, "first-fit")
    d = np.array([1.0, 1.0])
    for s in range(40):  # fill every server, then free cpu on even, mem on odd ones
        index.allocate(s, (1.0, 1.0))
    assert index.choose(d) is None
    for s in range(40):
        index.release(s, (1.0, 0.0) if s % 2 == 0 else (0.0, 1.0))
        assert index.choose(d) is None
        assert not index.fits(d)
    index.release(33, (1.0, 0.0))  # odd: now both
    assert index.choose(d) == 33
    index.release(7, (1.0, 0.0))
    assert index.choose(d) == 7
    index.allocate(7, (1.0, 1.0))
    assert index.choose(d) == 33
    index.allocate(33, (1.0, 1.0))
    assert index.choose(d) is None


def _decisions(instance, grouped: bool):
    cluster, h, workload, faults, interruptions, placement = instance
    policy = make_policy("drf")
    sim = Simulator(cluster, h, workload, policy, placement=placement, faults=faults,
                    interruptions=interruptions)
    if not grouped:  # the base's parking, leaf by leaf, every leaf back after a release
        policy.select = types.MethodType(LeafPriorityPolicy.select, policy)
    result = sim.run()
    return (result.decisions["leaf"].tolist(),
            result.attempts[["task", "server", "start"]].to_numpy().tolist())


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instance=simulations())
def test_drf_parking_by_demand_decides_as_parking_by_leaf(instance):
    assert _decisions(instance, grouped=True) == _decisions(instance, grouped=False)
