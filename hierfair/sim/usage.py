"""What every node of the hierarchy holds: allocated resources and running tasks.

A task start or stop changes a leaf and its ancestors by a handful of floats.
They are kept as plain Python lists (a numpy call per change costs more than
the arithmetic); the ``np.ndarray`` views that policies read are brought up to
date, for the changed nodes only, when read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hierfair.sim.model import Hierarchy


class NodeUsage:
    """Allocation and running-task count per node, rolled up leaf to root."""

    def __init__(self, hierarchy: Hierarchy, n_resources: int) -> None:
        n = hierarchy.n_nodes
        #: node -> the node and its ancestors (leaf first)
        self.paths: list[tuple[int, ...]] = [(node, *hierarchy.ancestors(node))
                                             for node in range(n)]
        self.rows: list[list[float]] = [[0.0] * n_resources for _ in range(n)]
        self.tasks: list[int] = [0] * n
        self._resources = range(n_resources)
        self._two = n_resources == 2
        self._alloc = np.zeros((n, n_resources))
        self._running = np.zeros(n, dtype=np.int64)
        self._stale: set[int] = set()  # leaves changed since the arrays were synced

    # In place, resource by resource: cheaper than a new list per node; with
    # two resources (most clusters) the loop over them is written out.
    def add(self, leaf: int, need: Sequence[float]) -> None:
        rows, tasks = self.rows, self.tasks
        if self._two:
            a, b = need
            for node in self.paths[leaf]:
                row = rows[node]
                row[0] += a
                row[1] += b
                tasks[node] += 1
        else:
            resources = self._resources
            for node in self.paths[leaf]:
                row = rows[node]
                for r in resources:
                    row[r] += need[r]
                tasks[node] += 1
        self._stale.add(leaf)

    def remove(self, leaf: int, need: Sequence[float]) -> None:
        rows, tasks = self.rows, self.tasks
        if self._two:
            a, b = need
            for node in self.paths[leaf]:
                row = rows[node]
                row[0] -= a
                row[1] -= b
                tasks[node] -= 1
        else:
            resources = self._resources
            for node in self.paths[leaf]:
                row = rows[node]
                for r in resources:
                    row[r] -= need[r]
                tasks[node] -= 1
        self._stale.add(leaf)

    @property
    def alloc(self) -> np.ndarray:
        self._sync()
        return self._alloc

    @property
    def running(self) -> np.ndarray:
        self._sync()
        return self._running

    def _sync(self) -> None:
        if not self._stale:
            return
        nodes = sorted({node for leaf in self._stale for node in self.paths[leaf]})
        self._stale.clear()
        self._alloc[nodes] = [self.rows[node] for node in nodes]
        self._running[nodes] = [self.tasks[node] for node in nodes]
