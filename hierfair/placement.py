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
        self.free = self.capacity.copy()
        self.total = self.capacity.sum(axis=0)
        self.free_total = self.total.copy()
        n, m = self.capacity.shape
        size = 1
        while size < n:
            size *= 2
        self._size = size
        self._tree = np.full((2 * size, m), -np.inf)
        self._tree[size : size + n] = self.free
        for node in range(size - 1, 0, -1):
            self._tree[node] = np.maximum(self._tree[2 * node], self._tree[2 * node + 1])
        self._no_fit: set[bytes] = set()
        # Bumped on every release; policies use it to know that a task that
        # did not fit before might fit now.
        self.release_epoch = 0
        self._scale = np.where(self.total > 0, self.total, 1.0)

    # -- queries -------------------------------------------------------------
    def fits(self, demand: np.ndarray) -> bool:
        key = demand.tobytes()
        if key in self._no_fit:
            return False
        if self._first_fit(demand) is None:
            self._no_fit.add(key)
            return False
        return True

    def choose(self, demand: np.ndarray) -> int | None:
        """The server the placement rule picks for ``demand``, or None."""
        if self.placement == "first-fit":
            return self._first_fit(demand)
        return self._best_fit(demand)

    @property
    def saturated(self) -> np.ndarray:
        """Resources that are fully used cluster-wide (H-DRF §3.4)."""
        return self.free_total <= TOLERANCE * self._scale

    # -- updates -------------------------------------------------------------
    def allocate(self, server: int, demand: np.ndarray) -> None:
        self.free[server] -= demand
        self.free_total -= demand
        self._refresh(server)

    def release(self, server: int, demand: np.ndarray) -> None:
        self.free[server] += demand
        self.free_total += demand
        self._refresh(server)
        self._no_fit.clear()
        self.release_epoch += 1

    # -- internals -----------------------------------------------------------
    def _refresh(self, server: int) -> None:
        tree = self._tree
        node = self._size + server
        tree[node] = self.free[server]
        node //= 2
        while node:
            np.maximum(tree[2 * node], tree[2 * node + 1], out=tree[node])
            node //= 2

    def _first_fit(self, demand: np.ndarray) -> int | None:
        tree = self._tree
        need = demand - TOLERANCE
        if not (tree[1] >= need).all():
            return None
        stack = [1]
        size = self._size
        while stack:
            node = stack.pop()
            if not (tree[node] >= need).all():
                continue
            if node >= size:
                return node - size
            stack.append(2 * node + 1)  # right after left: the stack is LIFO
            stack.append(2 * node)
        return None

    def _best_fit(self, demand: np.ndarray) -> int | None:
        ok = np.all(self.free >= demand - TOLERANCE, axis=1)
        if not ok.any():
            return None
        leftover = ((self.free - demand) / self._scale).sum(axis=1)
        leftover[~ok] = np.inf
        return int(np.argmin(leftover))  # argmin takes the lowest index on ties
