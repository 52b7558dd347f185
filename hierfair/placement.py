"""Where a task goes once the policy has chosen whose task runs next.

Fair-sharing policies decide *whose* task runs; placement decides *which
server* holds it.  The index keeps every server's free vector and answers two
questions quickly:

* ``fits(d)`` -- does any server have room for demand ``d``?  Policies ask this
  many times per decision, so negative answers are cached until resources are
  released (free space only shrinks between releases, so "no" stays "no").
* ``place(d)`` -- pick a server: *first-fit* (lowest server index with room) or
  *best-fit* (the server that is left with the least normalised free space).

First-fit uses a segment tree whose nodes hold the element-wise maximum free
vector of their range: a range whose maximum cannot hold ``d`` is skipped whole,
so a decision costs O(m log S) in the common case instead of a scan over S
servers.  (The per-resource maxima may come from different servers, so the
descent can backtrack; it never returns a wrong server.)
"""

from __future__ import annotations

from operator import ge as _ge
from typing import Literal

import numpy as np

Placement = Literal["first-fit", "best-fit"]
PLACEMENTS: tuple[str, ...] = ("first-fit", "best-fit")

# Demands and capacities are sums of user-supplied floats; a task fits when it
# exceeds the free amount by no more than this (absolute) slack.
TOLERANCE = 1e-9


class ServerIndex:
    """Free resources per server, with fast fit queries and placement."""

    def __init__(self, capacities: np.ndarray, placement: Placement = "first-fit") -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"unknown placement {placement!r}; choose one of {PLACEMENTS}")
        self.placement = placement
        self.capacity = np.array(capacities, dtype=np.float64)
        self.total = self.capacity.sum(axis=0)
        self.free_total = self.total.copy()
        n, m = self.capacity.shape
        size = 1
        while size < n:
            size *= 2
        self._size = size
        # Plain Python lists: for a handful of resources, comparing small lists
        # is several times faster than a numpy call per tree node.
        self._free: list[list[float]] = self.capacity.tolist()
        empty = [-float("inf")] * m
        tree: list[list[float]] = [empty] * (2 * size)
        tree[size : size + n] = [list(row) for row in self._free]
        for node in range(size - 1, 0, -1):
            tree[node] = [a if a > b else b for a, b in zip(tree[2 * node], tree[2 * node + 1])]
        self._tree = tree
        # Answers to "where would this demand go?" (server or None), by demand
        # bytes.  Free space only shrinks between releases, so "None" stays
        # true until a release, and first-fit's answer stays true until its
        # server is allocated on.
        self._answers: dict[bytes, int | None] = {}
        # Bumped on every release; policies use it to know that a task that
        # did not fit before might fit now.
        self.release_epoch = 0
        self._scale = np.where(self.total > 0, self.total, 1.0)

    # -- queries -------------------------------------------------------------
    @property
    def free(self) -> np.ndarray:
        """Free resources per server, shape (servers, resources)."""
        return np.array(self._free)

    def fits(self, demand: np.ndarray) -> bool:
        return self.choose(demand) is not None

    def choose(self, demand: np.ndarray) -> int | None:
        """The server the placement rule picks for ``demand``, or None."""
        key = demand.tobytes()
        try:
            return self._answers[key]
        except KeyError:
            pass
        if self.placement == "first-fit":
            server = self._first_fit([d - TOLERANCE for d in demand.tolist()])
        else:
            server = self._best_fit(demand)
        self._answers[key] = server
        return server

    @property
    def saturated(self) -> np.ndarray:
        """Resources that are fully used cluster-wide (H-DRF §3.4)."""
        return self.free_total <= TOLERANCE * self._scale

    def duration_factor(self, server: int) -> float:
        """How much slower a task starting now on ``server`` runs (never: tasks
        here get what they demand)."""
        return 1.0

    # -- updates -------------------------------------------------------------
    def allocate(self, server: int, demand: np.ndarray) -> None:
        self._update(server, demand.tolist(), -1.0)
        self.free_total -= demand
        if self.placement == "first-fit":
            answers = self._answers
            for key in [k for k, s in answers.items() if s == server]:
                del answers[key]
        else:
            self._answers.clear()

    def release(self, server: int, demand: np.ndarray) -> None:
        self._update(server, demand.tolist(), 1.0)
        self.free_total += demand
        self._answers.clear()
        self.release_epoch += 1

    def set_down(self, server: int) -> None:
        """The server fails: nothing fits on it until :meth:`set_up` (its
        tasks must have been released first)."""
        self.free_total -= np.asarray(self._free[server])
        self._free[server] = [-float("inf")] * len(self._free[server])
        self._refresh_path(server)
        self._answers.clear()

    def set_up(self, server: int) -> None:
        self._free[server] = self.capacity[server].tolist()
        self.free_total += self.capacity[server]
        self._refresh_path(server)
        self._answers.clear()
        self.release_epoch += 1

    # -- internals -----------------------------------------------------------
    def _refresh_path(self, server: int) -> None:
        self._update(server, [0.0] * len(self._free[server]), 0.0)

    def _update(self, server: int, demand: list[float], sign: float) -> None:
        row = [f + sign * d for f, d in zip(self._free[server], demand)]
        self._free[server] = row
        tree = self._tree
        node = self._size + server
        tree[node] = row
        node //= 2
        while node:
            tree[node] = [a if a > b else b for a, b in zip(tree[2 * node], tree[2 * node + 1])]
            node //= 2

    def _first_fit(self, need: list[float]) -> int | None:
        tree = self._tree
        size = self._size
        stack = [1]
        while stack:
            node = stack.pop()
            if not all(map(_ge, tree[node], need)):
                continue
            if node >= size:
                return node - size
            stack.append(2 * node + 1)  # right after left: the stack is LIFO
            stack.append(2 * node)
        return None

    def _best_fit(self, demand: np.ndarray) -> int | None:
        free = self.free
        ok = np.all(free >= demand - TOLERANCE, axis=1)
        if not ok.any():
            return None
        leftover = ((free - demand) / self._scale).sum(axis=1)
        leftover[~ok] = np.inf
        return int(np.argmin(leftover))  # argmin takes the lowest index on ties
