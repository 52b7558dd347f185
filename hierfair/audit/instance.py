"""Random audit instances: a weighted tree, per-leaf task demands, a cluster.

An :class:`Instance` is everything a property needs and nothing else; it turns
into a runnable spec (:meth:`Instance.spec`), so what the audit measured is
what ``hierfair allocate`` / ``hierfair run`` measure on the counterexample it
writes.  :func:`draw` makes one from a seed; :func:`smaller` lists the
one-step reductions the shrinker tries (docs/properties.md, "Instances").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hierfair.sim.model import Hierarchy

RESOURCES = ("cpu", "mem", "gpu", "disk")
#: Task lengths per leaf in the running-system properties: unequal and
#: co-prime, so tasks of different leaves end at different times.
DURATIONS = (3.0, 5.0, 7.0, 11.0)


@dataclass(frozen=True)
class Instance:
    """A static sharing problem: every demanding leaf wants more than fits."""

    nodes: tuple[tuple[str, float], ...]  # (path, weight) in pre-order, root excluded
    resources: tuple[str, ...]
    demands: tuple[tuple[str, tuple[float, ...]], ...]  # demanding leaves only
    servers: tuple[tuple[float, ...], ...]  # one row: a pooled cluster
    seed: int = 0

    # -- derived ----------------------------------------------------------
    def hierarchy(self) -> Hierarchy:
        return Hierarchy.from_edges(self.nodes)

    @property
    def total(self) -> np.ndarray:
        return np.sum(np.array(self.servers, dtype=float), axis=0)

    @property
    def pooled(self) -> bool:
        return len(self.servers) == 1

    @property
    def flat(self) -> bool:
        return all("/" not in p for p, _ in self.nodes)

    def demand_of(self, path: str) -> np.ndarray:
        return np.array(dict(self.demands).get(path, (0.0,) * len(self.resources)))

    def demand_matrix(self, h: Hierarchy | None = None) -> np.ndarray:
        h = h or self.hierarchy()
        out = np.zeros((h.n_nodes, len(self.resources)))
        for path, d in self.demands:
            out[h.index(path)] = d
        return out

    @property
    def grain(self) -> float:
        """The largest one-task dominant share (of the pooled total): the
        granularity whole tasks impose on every share-valued property."""
        total = self.total
        return max((max(v / t for v, t in zip(d, total) if t > 0) for _, d in self.demands),
                   default=0.0)

    def tasks_per_leaf(self) -> int:
        """More tasks than any leaf can ever hold at once: every leaf insatiable."""
        total = self.total
        least = min((v for _, d in self.demands for v in d if v > 0), default=1.0)
        return int(math.ceil(total.max() / least)) + 1

    def finer(self, k: int) -> Instance:
        """The same instance with every task k times smaller against the
        cluster (every server k times larger): whole tasks' granularity / k."""
        return replace(self, servers=tuple(tuple(v * k for v in row) for row in self.servers))

    def duration(self, path: str) -> float:
        return DURATIONS[[p for p, _ in self.demands].index(path) % len(DURATIONS)]

    # -- as a spec ----------------------------------------------------------
    def spec(self, name: str, algorithms: list[Any], *, running: bool = False,
             claims: list[dict] | None = None, description: str = "") -> dict:
        """A spec of this instance.  ``running``: tasks of unequal lengths
        (``DURATIONS``), enough of them to keep every leaf demanding through
        :meth:`horizon`; otherwise 10-s tasks for static allocations."""
        tree: dict = {}
        for path, weight in self.nodes:
            *heads, leaf = path.split("/")
            where = tree
            for part in heads:
                where = where[part].setdefault("children", {})
            where[leaf] = {} if weight == 1 else {"weight": _num(weight)}
        jobs = []
        for path, d in self.demands:
            dur = self.duration(path) if running else 10.0
            # enough for the whole horizon at full concurrency (running), or
            # for the first fill and two rounds of churn (static)
            n = self.tasks_per_leaf() * (int(math.ceil(self.horizon() / dur)) + 1
                                         if running else 3)
            jobs.append({"queue": path, "tasks": n, "duration": _num(dur),
                         "demand": {r: _num(v) for r, v in zip(self.resources, d) if v}})
        servers = [{"capacity": {r: _num(v) for r, v in zip(self.resources, row)}}
                   for row in self.servers]
        out: dict[str, Any] = {"name": name}
        if description:
            out["description"] = description
        out.update({"cluster": {"resources": list(self.resources), "servers": servers},
                    "hierarchy": tree, "workload": {"jobs": jobs},
                    "algorithms": algorithms, "seeds": [0]})
        if claims:
            out["claims"] = claims
        return out

    def horizon(self) -> float:
        """Length of the running-system window: six of the longest tasks."""
        return 6.0 * max(DURATIONS[: max(1, len(self.demands))])


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


# -- drawing --------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """What random instances look like (the audit's ``--depth`` etc.)."""

    max_depth: int = 3
    max_fanout: int = 3
    max_weight: int = 4
    resources: tuple[int, int] = (2, 4)
    total: tuple[int, int] = (48, 96)
    max_demand: int = 3
    #: every ``flat_every``-th instance is a one-level tree (flat DRF's
    #: properties, e.g. sharing incentive, are defined there)
    flat_every: int = 4
    #: every ``servers_every``-th instance has 2-4 heterogeneous servers
    servers_every: int = 2


DEFAULT_SHAPE = Shape()


def draw(seed: int, shape: Shape = DEFAULT_SHAPE) -> Instance:
    """One random instance; the same seed and shape give the same instance."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(shape.resources[0], shape.resources[1] + 1))
    depth = 1 if seed % shape.flat_every == 0 else shape.max_depth
    nodes: list[tuple[str, float]] = []

    def grow(prefix: str, level: int) -> None:
        fan = int(rng.integers(2 if level == 1 else 1, shape.max_fanout + 1))
        for k in range(fan):
            path = f"{prefix}n{k}"
            nodes.append((path, float(rng.integers(1, shape.max_weight + 1))))
            if level < depth and rng.random() < 0.5:
                grow(path + "/", level + 1)

    grow("", 1)
    h = Hierarchy.from_edges(nodes)
    demands = []
    for leaf in h.leaves:
        kind = rng.random()
        if kind < 0.15:
            continue  # asks for nothing
        row = np.zeros(m)
        if kind < 0.45:  # single-resource
            row[int(rng.integers(0, m))] = rng.integers(1, shape.max_demand + 1)
        else:  # general, some resources unused
            row = rng.integers(0, shape.max_demand + 1, m).astype(float)
            if not row.any():
                row[int(rng.integers(0, m))] = 1
        demands.append((h.paths[leaf], tuple(float(v) for v in row)))
    if not demands:  # at least one demanding leaf
        leaf = h.paths[h.leaves[0]]
        demands.append((leaf, (1.0,) + (0.0,) * (m - 1)))
    total = rng.integers(shape.total[0], shape.total[1] + 1, m).astype(float)
    servers: tuple[tuple[float, ...], ...] = (tuple(float(v) for v in total),)
    if seed % shape.servers_every == 1:
        servers = _split(rng, total, int(rng.integers(2, 5)))
    return Instance(nodes=tuple(nodes), resources=RESOURCES[:m], demands=tuple(demands),
                    servers=servers, seed=seed)


def _split(rng: np.random.Generator, total: np.ndarray, k: int) -> tuple[tuple[float, ...], ...]:
    """k servers summing to ``total``; resources past the first two may be
    missing on some servers (GPU-less machines)."""
    weights = rng.dirichlet(np.ones(k), size=len(total)).T  # (k, m)
    rows = np.floor(weights * total).astype(float)
    for r in range(2, len(total)):
        if rng.random() < 0.5:
            rows[int(rng.integers(0, k)), r] = 0.0
    rows[0] += total - rows.sum(axis=0)  # keep the totals exact
    return tuple(tuple(float(v) for v in row) for row in rows)


# -- shrinking --------------------------------------------------------------
def smaller(inst: Instance) -> Iterator[Instance]:
    """One-step reductions, roughly biggest first: drop a subtree, lift an
    only child, pool or drop servers, drop a resource, simplify weights and
    demands.  Each keeps the instance well formed."""
    paths = [p for p, _ in inst.nodes]
    for path in paths:
        parent = path.rpartition("/")[0]
        siblings = [p for p in paths if p.rpartition("/")[0] == parent]
        if len(siblings) > 1:
            yield _drop(inst, path)
    for path in paths:
        kids = [p for p in paths if p.rpartition("/")[0] == path]
        if len(kids) == 1:
            yield _lift(inst, path, kids[0])
    if not inst.pooled:
        yield replace(inst, servers=(tuple(float(v) for v in inst.total),))
        for i in range(len(inst.servers)):
            rest = inst.servers[:i] + inst.servers[i + 1:]
            if np.sum(rest, axis=0).min() > 0:
                yield replace(inst, servers=rest)
    for r in range(len(inst.resources) - 1, -1, -1):
        if len(inst.resources) > 1:
            yield _drop_resource(inst, r)
    for i, (path, w) in enumerate(inst.nodes):
        if w != 1:
            yield replace(inst, nodes=inst.nodes[:i] + ((path, 1.0),) + inst.nodes[i + 1:])
    for i, (path, d) in enumerate(inst.demands):
        for r, v in enumerate(d):
            options = ([0.0] if sum(x > 0 for x in d) > 1 else []) + ([1.0] if v > 1 else [])
            for new in options:
                row = d[:r] + (new,) + d[r + 1:]
                yield replace(inst, demands=inst.demands[:i] + ((path, row),)
                              + inst.demands[i + 1:])
        if len(inst.demands) > 1:  # the leaf stays, asking for nothing
            yield replace(inst, demands=inst.demands[:i] + inst.demands[i + 1:])
    # Totals are never scaled down: coarser tasks would turn whole-task
    # rounding into "violations" (every tolerance is one task).


def _drop(inst: Instance, path: str) -> Instance:
    def gone(p: str) -> bool:
        return p == path or p.startswith(path + "/")

    return replace(inst, nodes=tuple(n for n in inst.nodes if not gone(n[0])),
                   demands=tuple(d for d in inst.demands if not gone(d[0])))


def _lift(inst: Instance, parent: str, child: str) -> Instance:
    """The only child takes its parent's place (and weight)."""
    def rename(p: str) -> str:
        return parent + p[len(child):] if p == child or p.startswith(child + "/") else p
    weight = dict(inst.nodes)[parent]
    nodes = tuple((rename(p), weight if p == child else w) for p, w in inst.nodes if p != parent)
    return replace(inst, nodes=nodes, demands=tuple((rename(p), d) for p, d in inst.demands))


def _drop_resource(inst: Instance, r: int) -> Instance:
    demands = tuple((p, d[:r] + d[r + 1:]) for p, d in inst.demands)
    demands = tuple((p, d) for p, d in demands if any(d))
    return replace(inst, resources=inst.resources[:r] + inst.resources[r + 1:],
                   demands=demands or inst.demands[:0],
                   servers=tuple(s[:r] + s[r + 1:] for s in inst.servers))


def size(inst: Instance) -> tuple[int, ...]:
    """What the shrinker minimises, most important first."""
    return (len(inst.nodes), len(inst.servers), len(inst.resources),
            int(sum(w != 1 for _, w in inst.nodes)),
            int(sum(v > 0 for _, d in inst.demands for v in d)),
            int(sum(sum(d) for _, d in inst.demands)))
