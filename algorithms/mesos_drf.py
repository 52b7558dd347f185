"""Mesos' hierarchical DRF sorter, as its code behaves.

Concept.  Mesos orders *clients* (role paths such as ``eng/dev``) with one
sorter tree.  A node's share is its whole subtree's allocation, resource by
resource, over the cluster total, the largest of those, divided by the weight
configured for that node's own path::

    share(n) = max_r (alloc_r(subtree n) / total_r) / weight(path n)

Siblings are ordered by ``(share, allocation count, path)`` -- the count is
the number of allocations ever made in the subtree, never decremented -- and
``sort()`` lists the active clients depth first in that order.  This is the
H-DRF paper's *naive* H-DRF (§3.3): a parent's usage is the plain sum of its
children's, nothing is rescaled and nothing is ignored because it is blocked.

Upstream: apache/mesos at c1b42f79d157aa900be5cbb0c1023f1479962aa7
(``src/master/allocator/mesos/sorter/drf/sorter.{hpp,cpp}``, last changed in
3f753e77): ``DRFSorter::calculateShare``, ``getWeight``, ``Node::compareDRF``,
``sort``, ``add``, ``remove``, ``allocated``.  Read in docs/upstream/sorters.md §1
(docs/algorithms.md, "mesos-drf").

* :func:`drf_share` and :func:`drf_key` are the sorter's arithmetic, in
  IEEE doubles and in Mesos' order (``ChangeWeightOnSubtree`` asserts an order
  that holds only in doubles: 0.15/3 < 0.1/2).
* :class:`DRFSorter` is the sorter's tree (virtual leaves ``x/.``,
  activation, removal and collapse) with no simulator: the upstream unit
  tests replay against it (tests/test_upstream_sorters.py).
* :class:`MesosDRF` is the policy: the walk from the root steps to the
  child with the lowest :func:`drf_key` whose subtree has a task that fits --
  the first client of ``sort()`` that can use an offer.  Leaves without a
  pending task are Mesos' inactive clients: not sorted, their allocation
  still counted in their ancestors'.  ``params.exclude`` is
  ``fairnessExcludeResourceNames``.

Simplifications (not in the code read): one allocation is one task (Mesos
counts ``allocated()`` calls, one per accepted offer); jobs inside a leaf run
FIFO (the per-role framework sorter is not modelled); no quota stage, no
agent shuffling, no offer filters.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from pydantic import Field

from hierfair.fields import Strict
from hierfair.sim.policy import PolicyView
from hierfair.sim.treewalk import TreeWalkPolicy

Resources = Mapping[str, float]
ACTIVE, INACTIVE, INTERNAL = "active", "inactive", "internal"


# -- the sorter's arithmetic (shared by the policy and the replica) ----------
def drf_share(alloc: Resources, totals: Resources, weight: float,
              exclude: Collection[str] = ()) -> float:
    """``DRFSorter::calculateShare``: in doubles, max over the resources of
    the cluster total (skipping excluded and empty ones) of alloc/total, then
    divided by the weight -- in this order, as Mesos rounds."""
    share = 0.0
    for name, total in totals.items():
        if name in exclude or total <= 0:
            continue
        share = max(share, alloc.get(name, 0.0) / total)
    return share / weight


def drf_key(share: float, count: int, path: str) -> tuple[float, int, bytes]:
    """``Node::compareDRF`` as a key: share, then allocations made in the
    subtree, then the path in byte order (std::string: ``.`` < ``/`` < letters)."""
    return (share, count, path.encode())


# -- the sorter's tree, without a simulator ---------------------------------
@dataclass(eq=False)
class SorterNode:
    name: str
    kind: str
    parent: SorterNode | None
    children: list[SorterNode] = field(default_factory=list)
    alloc: dict[str, float] = field(default_factory=dict)  # the subtree's scalars
    count: int = 0  # allocations ever made in the subtree

    @property
    def path(self) -> str:
        if self.parent is None:
            return ""
        return self.name if self.parent.parent is None else f"{self.parent.path}/{self.name}"

    @property
    def client_path(self) -> str:
        """A virtual leaf ``x/.`` is the client ``x``."""
        return self.parent.path if self.name == "." and self.parent else self.path


def _add(into: dict[str, float], res: Resources, sign: float = 1.0) -> None:
    for k, v in res.items():
        into[k] = into.get(k, 0.0) + sign * v


def sorted_clients(root: SorterNode, totals: Resources, weight_of: Callable[[str], float],
                   exclude: Collection[str] = ()) -> list[str]:
    """``DRFSorter::sort``: each node's non-inactive children by
    :func:`drf_key`, listed depth first; inactive leaves are skipped (their
    allocation is already in their ancestors'), internal nodes always sorted."""
    out: list[str] = []

    def visit(node: SorterNode) -> None:
        kids = [c for c in node.children if c.kind != INACTIVE]
        kids.sort(key=lambda c: drf_key(drf_share(c.alloc, totals, weight_of(c.path), exclude),
                                        c.count, c.path))
        for c in kids:
            if c.kind == ACTIVE:
                out.append(c.client_path)
            else:
                visit(c)
    visit(root)
    return out


class DRFSorter:
    """The Mesos DRF sorter's state machine (sorter.cpp ``add``, ``remove``,
    ``activate``, ``deactivate``, ``allocated``, ``unallocated``, ``update``,
    ``addSlave``, ``removeSlave``, ``updateWeight``, ``sort``)."""

    def __init__(self, exclude: Collection[str] = ()) -> None:
        self.root = SorterNode("", INTERNAL, None)
        self.clients: dict[str, SorterNode] = {}
        self.weights: dict[str, float] = {}
        self.agents: dict[str, dict[str, float]] = {}
        self.exclude = frozenset(exclude)

    @property
    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for res in self.agents.values():
            _add(out, res)
        return out

    def add_slave(self, agent: str, res: Resources) -> None:
        self.agents[agent] = dict(res)

    def remove_slave(self, agent: str) -> None:
        del self.agents[agent]  # allocations made there stay (as upstream)

    def update_weight(self, path: str, weight: float) -> None:
        # A weight is looked up by a node's own path (getWeight), so a virtual
        # leaf "x/." keeps weight 1 and "x" weighs its whole subtree.
        self.weights[path] = weight

    def add(self, client: str) -> None:
        tokens, cur, i = client.split("/"), self.root, 0
        while True:
            if i == len(tokens):  # the path is an internal node: add its "." leaf
                v = SorterNode(".", INACTIVE, cur)
                cur.children.append(v)
                cur = v
                break
            if cur.kind != INTERNAL:  # a leaf gets a child: it keeps its client as "."
                v = SorterNode(".", cur.kind, cur, alloc=dict(cur.alloc), count=cur.count)
                cur.kind = INTERNAL
                cur.children.append(v)
                self.clients[v.client_path] = v
                break
            child = next((c for c in cur.children if c.name == tokens[i]), None)
            if child is None:
                break
            cur, i = child, i + 1
        for j in range(i, len(tokens)):
            node = SorterNode(tokens[j], INACTIVE if j == len(tokens) - 1 else INTERNAL, cur)
            cur.children.append(node)
            cur = node
        self.clients[client] = cur

    def remove(self, client: str) -> None:
        cur = self.clients.pop(client)
        leaf_alloc = dict(cur.alloc)
        while cur.parent is not None:
            parent = cur.parent
            _add(parent.alloc, leaf_alloc, -1.0)  # counts are never decremented
            if not cur.children:
                parent.children.remove(cur)
            elif len(cur.children) == 1 and cur.children[0].name == ".":
                cur.kind = cur.children[0].kind  # collapse x + "x/." into the leaf x
                cur.children.clear()
                self.clients[cur.path] = cur
            cur = parent

    def activate(self, client: str) -> None:
        if self.clients[client].kind == INACTIVE:
            self.clients[client].kind = ACTIVE

    def deactivate(self, client: str) -> None:
        if self.clients[client].kind == ACTIVE:
            self.clients[client].kind = INACTIVE

    def _path_up(self, client: str) -> list[SorterNode]:
        node: SorterNode | None = self.clients[client]
        out = []
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def allocated(self, client: str, res: Resources) -> None:
        for node in self._path_up(client):
            _add(node.alloc, res)
            node.count += 1

    def unallocated(self, client: str, res: Resources) -> None:
        for node in self._path_up(client):
            _add(node.alloc, res, -1.0)

    def update(self, client: str, old: Resources, new: Resources) -> None:
        for node in self._path_up(client):
            _add(node.alloc, old, -1.0)
            _add(node.alloc, new)

    def sort(self) -> list[str]:
        return sorted_clients(self.root, self.totals, lambda p: self.weights.get(p, 1.0),
                              self.exclude)


# -- the policy ---------------------------------------------------------------
class MesosParams(Strict):
    #: Resources left out of every share (``fairnessExcludeResourceNames``,
    #: the master's ``--fair_sharing_excluded_resource_names``).
    exclude: list[str] = Field(default_factory=list)


class MesosDRF(TreeWalkPolicy[MesosParams]):
    """The DRF sorter's order, walked from the root: at each level the child
    with the lowest (share, allocation count, path) whose subtree can place
    a task."""

    name: ClassVar[str] = "mesos-drf"
    description: ClassVar[str] = ("Mesos' hierarchical DRF sorter as coded (sorter/drf/"
                                  "sorter.cpp): plain-sum shares per node path, ties by "
                                  "allocation count then path")
    Params = MesosParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        resources = state.cluster.resources
        self._totals = dict(zip(resources, state.cluster.total.tolist()))
        self._resources = resources
        #: tasks ever started per node (the sorter's allocation count)
        self.allocations = [0] * self.tree.n

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        for node in self.state.hierarchy.path_from_root(leaf):
            self.allocations[node] += 1
        super().on_task_start(leaf, demand)

    def node_key(self, node: int) -> tuple[float, int, bytes]:
        h, state = self.state.hierarchy, self.state
        alloc = dict(zip(self._resources, state.alloc_row(node)))
        share = drf_share(alloc, self._totals, float(h.weights[node]), self.params.exclude)
        return drf_key(share, self.allocations[node], h.paths[node])

    def walk_keys(self, demanding: object, fits: object, demand: object) -> list:
        return [self.node_key(n) for n in range(self.tree.n)]

    def order(self) -> list[str]:
        """``sort()`` on the simulator's present: the demanding leaves (Mesos'
        active clients) in the sorter's order, as paths."""
        demanding = self.tree.any_below(self.leaf_status()[0])
        keys = self.walk_keys(None, None, None)
        h, out = self.state.hierarchy, []

        def visit(node: int) -> None:
            for c in sorted((c for c in h.children[node] if demanding[c]), key=keys.__getitem__):
                if h.is_leaf(c):
                    out.append(h.paths[c])
                else:
                    visit(c)
        visit(0)
        return out
