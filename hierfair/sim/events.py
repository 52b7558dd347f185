"""The event queue's kinds, and the failures that feed it.

Events are ``(time, kind, key, attempt)`` tuples on a binary heap; the kind
orders events that share a timestamp (finishes, task failures, server
failures, repairs, arrivals, completed evictions, a policy's wake-up), then the key (task, server or job id).  A task
event carries the attempt it belongs to, so an interrupted attempt's stale
finish is recognised and skipped.

Failures are drawn from seeded generators keyed by what they concern (server
and time, or task and attempt), never from a shared stream, so they do not
depend on the order anything else happened in.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

FINISH, TASK_FAIL, DOWN, UP, ARRIVAL, EVICTED, WAKE = range(7)

Event = tuple[float, int, int, int]


@dataclass(frozen=True)
class Faults:
    """Server failures (explicit and/or by MTBF) and task failures."""

    #: (server index, time it goes down, seconds until repaired or None: never)
    outages: tuple[tuple[int, float, float | None], ...] = ()
    mtbf: float | None = None  # mean time between failures of each server
    repair: float = 60.0  # seconds a failed server stays down (MTBF failures)
    task_failure: float = 0.0  # probability that a task attempt fails
    seed: int = 0

    def plan(self, events: list[Event], n_servers: int) -> None:
        """Push the outages known in advance and every server's first MTBF failure."""
        for server, at, repair in self.outages:
            heapq.heappush(events, (at, DOWN, server, 0))
            if repair is not None:
                heapq.heappush(events, (at + repair, UP, server, 0))
        if self.mtbf:
            for server in range(n_servers):
                self.next_failure(events, server, 0.0)

    def next_failure(self, events: list[Event], server: int, after: float) -> None:
        rng = np.random.default_rng([self.seed, server, int(after * 1e6)])
        at = after + float(rng.exponential(self.mtbf))
        heapq.heappush(events, (at, DOWN, server, 0))
        heapq.heappush(events, (at + self.repair, UP, server, 0))

    def attempt_end(self, task: int, attempt: int, now: float, duration: float) -> Event:
        """When and how an attempt of ``duration`` seconds starting now ends."""
        p_fail = self.task_failure
        if p_fail > 0:
            draw = np.random.default_rng([self.seed, task, attempt]).random(2)
            if draw[0] < p_fail:
                return (now + draw[1] * duration, TASK_FAIL, task, attempt)
        return (now + duration, FINISH, task, attempt)
