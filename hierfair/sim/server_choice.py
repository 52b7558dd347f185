"""Which index places a run's tasks, and a server a policy names itself.

Most policies name a leaf and leave the server to the run's placement rule,
answered by :class:`~hierfair.sim.placement.ServerIndex`; slot schedulers
and hdrf-fast bring an index of their own (``make_index``), which knows no
placement constraints; per-server policies name the server
(``server_for``), which must have room for the task and be one it may use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hierfair.errors import SpecError
from hierfair.sim.model import TOLERANCE, Cluster, Workload, eligible_servers
from hierfair.sim.placement import Index, Placement, ServerIndex
from hierfair.sim.policy import CONSTRAINTS_REFUSED, BasePolicy, own_index


def index_for(policy: BasePolicy, cluster: Cluster, placement: Placement,
              workload: Workload, seed: int) -> Index:
    """The index the run places with: the policy's own, or the shared one
    (which keeps a free-space array when some job has a placement
    constraint); random placement draws from ``seed``."""
    constrained = workload.constrained
    if constrained and own_index(type(policy)):
        raise SpecError(CONSTRAINTS_REFUSED, where="algorithms", value=type(policy).name)
    index = (policy.make_index(cluster, placement)
             or ServerIndex(cluster.capacities, placement, mirror=constrained))
    if hasattr(index, "use_seed"):
        index.use_seed(seed)
    return index


def named_server(policy: BasePolicy) -> Callable[[int, np.ndarray], int | None] | None:
    """The policy's ``server_for``, or None where it is the base's (which
    always defers: the call is skipped)."""
    if getattr(type(policy), "server_for", None) is BasePolicy.server_for:
        return None
    return getattr(policy, "server_for", None)


def asks_preemptions(policy: BasePolicy) -> bool:
    """Whether the policy has a ``preemptions`` of its own (the base's never
    asks: a contended run would otherwise call and time it once per task)."""
    return ("preemptions" in vars(policy)
            or getattr(type(policy), "preemptions", None) is not BasePolicy.preemptions)


def named_job(policy: BasePolicy) -> Callable[[int], int | None] | None:
    """The policy's ``job_for``, or None where it is the base's (FIFO: the
    call is skipped)."""
    if getattr(type(policy), "job_for", None) is BasePolicy.job_for:
        return None
    return getattr(policy, "job_for", None)


def takes(index: Any, server: int, demand: np.ndarray) -> bool:
    """Whether ``server`` may take a task of ``demand`` now: a server of the
    cluster, one the task may use (its constraint), with room for it."""
    servers = eligible_servers(demand)
    return (0 <= server < len(index.capacity) and (servers is None or bool(servers[server]))
            and bool(np.all(index.free_of(server) >= np.asarray(demand) - TOLERANCE)))
