"""The things a scheduler allocates and the things that ask for them.

A *cluster* is a list of servers, each with a capacity vector over an ordered
list of resource names (``cpu``, ``mem``, ``gpu``...).  Servers may differ: some
carry GPUs or MICs and others do not, and a resource a server lacks has
capacity 0.

A *hierarchy* is a weighted tree.  Its leaves are the queues jobs are submitted
to; internal nodes are organisational groups.  Every node is named by its slash
path from the root (``ads/prod``); the root itself is ``""``.  Nodes are stored
in pre-order, so node 0 is the root, every parent precedes its children, and a
subtree is a contiguous index range -- which makes "sum over the subtree" and
"walk to the root" cheap and deterministic.

A *job* is a bag of tasks submitted to one leaf at one time.  Its tasks share a
demand vector; each task has its own duration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

# Demands and capacities are sums of user-supplied floats; a task fits when it
# exceeds the free amount by no more than this (absolute) slack.
TOLERANCE = 1e-9

ROOT = ""
#: The root's name in every table and output (internally its path is ROOT);
#: a spec may write either for the root.
ROOT_NAME = "(root)"


def shown(path: str) -> str:
    """A node's path as tables show it: the root as ROOT_NAME."""
    return path or ROOT_NAME


class Demand(np.ndarray):
    """A task's demand vector that may run only on some servers (placement
    constraints): ``servers`` is the mask of the servers it may use.

    It is an ordinary demand vector everywhere else, so policies that never
    look at constraints need no change; its ``tobytes`` carries the mask,
    so the placement index (which caches answers by those bytes) never
    confuses it with the same demand unconstrained."""

    servers: np.ndarray

    def __new__(cls, vector: np.ndarray, servers: np.ndarray) -> Demand:
        obj = np.array(vector, dtype=np.float64).view(cls)
        mask = np.array(servers, dtype=bool)
        mask.setflags(write=False)
        obj.servers = mask
        obj._tag = b"|" + np.packbits(mask).tobytes()
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        # arithmetic on a constrained demand keeps its constraint (d + headroom)
        self.servers = getattr(obj, "servers", None)
        self._tag = getattr(obj, "_tag", b"")

    def tobytes(self, order: Any = "C") -> bytes:
        return super().tobytes(order) + self._tag

    def __reduce__(self) -> Any:
        return (Demand, (np.asarray(self), self.servers))


def eligible_servers(demand: np.ndarray | None) -> np.ndarray | None:
    """The servers ``demand`` may use (a mask), None for any."""
    return getattr(demand, "servers", None)


@dataclass(frozen=True)
class Cluster:
    """Servers with capacity vectors over ``resources`` (in that order), each
    with the labels placement constraints name (GPU, MIC, a rack)."""

    resources: tuple[str, ...]
    capacities: np.ndarray  # shape (servers, resources), float64
    server_names: tuple[str, ...] = ()
    #: Per server, its labels (default: none).
    labels: tuple[frozenset[str], ...] = ()

    def __post_init__(self) -> None:
        caps = np.asarray(self.capacities, dtype=np.float64).reshape(-1, len(self.resources))
        caps.setflags(write=False)
        object.__setattr__(self, "capacities", caps)
        if not self.server_names:
            object.__setattr__(
                self, "server_names", tuple(f"s{i}" for i in range(caps.shape[0]))
            )
        if not self.labels:
            object.__setattr__(self, "labels", (frozenset(),) * caps.shape[0])

    def carrying(self, labels: frozenset[str]) -> np.ndarray:
        """The mask of servers that carry every one of ``labels``."""
        return np.array([labels <= own for own in self.labels], dtype=bool)

    @property
    def n_servers(self) -> int:
        return int(self.capacities.shape[0])

    @property
    def n_resources(self) -> int:
        return len(self.resources)

    @property
    def total(self) -> np.ndarray:
        """Total capacity R = <r_1, ..., r_m> (DRF paper, Algorithm 1)."""
        return self.capacities.sum(axis=0)

    def vector(self, amounts: Mapping[str, float]) -> np.ndarray:
        """A resource vector from a ``{name: amount}`` mapping; absent means 0."""
        v = np.zeros(len(self.resources))
        for name, amount in amounts.items():
            v[self.resources.index(name)] = amount
        return v

    def fits_somewhere(self, demand: np.ndarray) -> bool:
        """Whether an empty server (one it may use) can hold ``demand``."""
        room = np.all(self.capacities >= np.asarray(demand), axis=1)
        servers = eligible_servers(demand)
        return bool(np.any(room if servers is None else room & servers))


class Quota(NamedTuple):
    """A node's quotas as production schedulers write them, per resource name
    (a resource left out: none of that kind).  ``nominal`` is Kueue's nominal
    quota (what the node owns and may lend); ``borrowing_limit`` and
    ``lending_limit`` bound what it takes from, and gives to, its cohort
    (None: no limit); ``guaranteed`` is YuniKorn's guaranteed and Volcano's
    deserved; ``max`` is a cap (Volcano's capability, YuniKorn's max)."""

    nominal: Mapping[str, float] = {}
    borrowing_limit: Mapping[str, float] | None = None
    lending_limit: Mapping[str, float] | None = None
    guaranteed: Mapping[str, float] = {}
    max: Mapping[str, float] | None = None

    def vector(self, field_name: str, resources: Sequence[str], default: float) -> np.ndarray:
        """One field over ``resources`` (``default`` where the field or the
        resource is absent)."""
        amounts = getattr(self, field_name)
        if amounts is None:
            return np.full(len(resources), default)
        return np.array([float(amounts.get(r, default)) for r in resources])


#: The quota of a node that gives none.
NO_QUOTA = Quota()


@dataclass(frozen=True)
class Hierarchy:
    """A weighted tree in pre-order.  Index 0 is the root (path ``""``)."""

    paths: tuple[str, ...]
    parent: np.ndarray  # parent index, -1 for the root
    weights: np.ndarray  # >= 0 (0: only where a policy allows it); the root's is 1, unused
    children: tuple[tuple[int, ...], ...]
    subtree_end: np.ndarray  # node i's subtree is range(i, subtree_end[i])
    depth: np.ndarray
    _index: dict[str, int] = field(repr=False, compare=False, default_factory=dict)
    #: Per node, the server labels its subtree's tasks need (placement
    #: constraints written on the node; empty: none).
    requires: tuple[frozenset[str], ...] = ()
    #: Per node, its quotas (production schedulers: Kueue, Volcano, YuniKorn).
    quotas: tuple[Quota, ...] = ()
    #: Per node, a priority (YuniKorn orders equal shares by it).
    priorities: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.requires:
            object.__setattr__(self, "requires", (frozenset(),) * len(self.paths))
        if not self.quotas:
            object.__setattr__(self, "quotas", (NO_QUOTA,) * len(self.paths))
        if not self.priorities:
            object.__setattr__(self, "priorities", (0,) * len(self.paths))

    def quota_matrix(self, field_name: str, resources: Sequence[str],
                     default: float) -> np.ndarray:
        """One quota field for every node: an n_nodes x resources array."""
        return np.array([q.vector(field_name, resources, default) for q in self.quotas])

    @property
    def has_quotas(self) -> bool:
        return any(q != NO_QUOTA for q in self.quotas)

    def weighted_shares(self) -> np.ndarray:
        """Each node's share of the cluster by weights alone: the root's is 1,
        a child's its parent's times its weight over its siblings' (the
        hierarchical share guarantee, H-DRF §2.1)."""
        share = np.ones(self.n_nodes)
        for node, kids in enumerate(self.children):
            total = sum(float(self.weights[k]) for k in kids)
            for k in kids:
                share[k] = share[node] * float(self.weights[k]) / total if total else 0.0
        return share

    def with_implied_quotas(self, resources: Sequence[str], total: np.ndarray) -> Hierarchy:
        """This tree if it gives any quota; else, for the policies that read
        quotas, what its weights promise: every node's weighted share of the
        cluster as its ``guaranteed``, and the leaves' as their ``nominal``
        (so a tree written for the paper schedulers compares as it is)."""
        if self.has_quotas:
            return self
        quotas = []
        for node, share in enumerate(self.weighted_shares().tolist()):
            amounts = {r: share * float(t) for r, t in zip(resources, total.tolist())}
            quotas.append(Quota(nominal=amounts if self.is_leaf(node) else {},
                                guaranteed=amounts))
        return replace(self, quotas=tuple(quotas))

    def requires_of(self, node: int) -> frozenset[str]:
        """Labels a task of ``node`` needs: its own and its ancestors'."""
        need = self.requires[node]
        for a in self.ancestors(node):
            need = need | self.requires[a]
        return need

    @classmethod
    def from_edges(cls, nodes: Sequence[tuple[str, float]],
                   requires: Mapping[str, frozenset[str]] | None = None,
                   quotas: Mapping[str, Quota] | None = None,
                   priorities: Mapping[str, int] | None = None) -> Hierarchy:
        """Build from ``(path, weight)`` pairs listed in pre-order (root
        excluded), with the labels some nodes' tasks need (``requires``), their
        quotas and their priorities, each by path."""
        paths = [ROOT] + [p for p, _ in nodes]
        weights = np.array([1.0] + [float(w) for _, w in nodes])
        index = {p: i for i, p in enumerate(paths)}
        parent = np.full(len(paths), -1, dtype=np.int64)
        kids: list[list[int]] = [[] for _ in paths]
        for i, p in enumerate(paths[1:], start=1):
            head = p.rpartition("/")[0]
            j = index[head]
            if j >= i:
                raise ValueError(f"node {p!r} listed before its parent")
            parent[i] = j
            kids[j].append(i)
        depth = np.zeros(len(paths), dtype=np.int64)
        for i in range(1, len(paths)):
            depth[i] = depth[parent[i]] + 1
        end = np.arange(1, len(paths) + 1, dtype=np.int64)
        for i in range(len(paths) - 1, 0, -1):  # descendants are final before their parent
            end[parent[i]] = max(end[parent[i]], end[i])
        return cls(
            paths=tuple(paths),
            parent=parent,
            weights=weights,
            children=tuple(tuple(k) for k in kids),
            subtree_end=end,
            depth=depth,
            _index=index,
            requires=tuple(frozenset((requires or {}).get(p, ())) for p in paths),
            quotas=tuple((quotas or {}).get(p, NO_QUOTA) for p in paths),
            priorities=tuple((priorities or {}).get(p, 0) for p in paths),
        )

    @classmethod
    def flat(cls, leaves: Sequence[str], weights: Sequence[float] | None = None) -> Hierarchy:
        """A one-level tree: the root with the given leaves."""
        ws = weights if weights is not None else [1.0] * len(leaves)
        return cls.from_edges(list(zip(leaves, ws)))

    @property
    def n_nodes(self) -> int:
        return len(self.paths)

    def index(self, path: str) -> int:
        return self._index[path]

    def __contains__(self, path: str) -> bool:
        return path in self._index

    def is_leaf(self, node: int) -> bool:
        return not self.children[node]

    @property
    def leaves(self) -> tuple[int, ...]:
        """Leaf indices in pre-order (the stable tie-break order everywhere)."""
        return tuple(i for i, c in enumerate(self.children) if not c)

    def ancestors(self, node: int) -> list[int]:
        """``node``'s parent, grandparent, ..., root (H-DRF's P^1, P^2, ...)."""
        out = []
        p = int(self.parent[node])
        while p >= 0:
            out.append(p)
            p = int(self.parent[p])
        return out

    def path_from_root(self, node: int) -> list[int]:
        """Root, ..., node."""
        return [*reversed(self.ancestors(node)), node]


@dataclass(frozen=True)
class Job:
    """A bag of tasks with one demand vector, submitted to one leaf.  A
    job limited to some servers has a :class:`Demand` (``demand.servers``)."""

    id: int
    leaf: int  # hierarchy node index
    submit: float
    demand: np.ndarray  # per task, over the cluster's resources
    durations: np.ndarray  # one per task
    name: str = ""
    #: Its priority (production schedulers: higher first; preempted last).
    priority: int = 0
    #: A job (id) that must finish before this one is submitted: closed-loop
    #: arrivals, "each leaf runs its next job as soon as the previous one
    #: finishes" (H-DRF §5.2).  It then arrives at max(submit, that finish).
    after: int = -1
    #: Seconds a preempted task of it keeps its server (None: the run's
    #: ``Interruptions.eviction_latency``).
    eviction_latency: float | None = None

    @property
    def n_tasks(self) -> int:
        return int(self.durations.shape[0])


class JobColumns(NamedTuple):
    """Jobs as columns, one entry a job (:func:`job_columns`)."""

    leaf: np.ndarray  # int64
    submit: np.ndarray  # float64
    size: np.ndarray  # int64: tasks
    after: np.ndarray  # int64
    demand: Sequence[np.ndarray]  # shared vectors where jobs ask the same


def job_columns(jobs: Sequence[Job]) -> JobColumns:
    """``jobs``' columns: a :class:`~hierfair.sim.jobtable.JobTable`'s own,
    or read off the jobs once."""
    held = getattr(jobs, "columns", None)
    if held is not None:
        return held
    return JobColumns(np.array([j.leaf for j in jobs], dtype=np.int64),
                      np.array([j.submit for j in jobs], dtype=np.float64),
                      np.array([j.n_tasks for j in jobs], dtype=np.int64),
                      np.array([j.after for j in jobs], dtype=np.int64),
                      [j.demand for j in jobs])


@dataclass(frozen=True)
class InputFile:
    """A trace file a workload was read from, as identified for the run cache."""

    name: str  # as the spec names it
    size: int
    sha256: str


@dataclass(frozen=True)
class Workload:
    """Jobs sorted by (submit time, id) -- the order arrivals are processed in:
    a tuple, or a :class:`~hierfair.sim.jobtable.JobTable` that makes each
    job when it is read."""

    jobs: Sequence[Job]
    source: str = "explicit job list"
    #: The trace files actually read (none for generators and job lists).
    inputs: tuple[InputFile, ...] = ()
    #: Why a generator stands in for a missing trace (the spec's ``fallback:``).
    fallback: str = ""
    #: What the user should know about the input: lines skipped, rows sorted.
    notes: tuple[str, ...] = ()
    skipped_lines: int = 0

    @property
    def input_identity(self) -> dict[str, object]:
        """What a cached run must have read to be reused (file contents, or the
        fact that the fallback generator stood in)."""
        return {"files": [[f.name, f.size, f.sha256] for f in self.inputs],
                "fallback": bool(self.fallback)}

    @property
    def n_tasks(self) -> int:
        held = getattr(self.jobs, "columns", None)
        return int(held.size.sum()) if held is not None else sum(j.n_tasks for j in self.jobs)

    @cached_property
    def constrained(self) -> bool:
        """Whether some job may use only some servers (a placement
        constraint); looked at once per workload, not once per run."""
        demands = {id(d): d for d in job_columns(self.jobs).demand}  # shared: looked at once
        return any(eligible_servers(d) is not None for d in demands.values())
