"""Hierarchical slot-based fair scheduling (Hadoop Fair Scheduler style).

Source: H-DRF paper §5.3 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``)
and DRF paper §2 (``../shared/papers/drf-dominant-resource-fairness-nsdi2011-excerpt.txt``).

Each server is cut into ``k`` equal slots.  A task takes one slot whatever its
demand, so a server's resources may be under- or over-subscribed.  Siblings
are equalised on weighted *task counts*: the walk from the root steps to the
demanding child with the fewest running tasks per unit of weight.

Over-subscribing a server slows its tasks: CPUs are time-shared, and memory
over-commitment thrashes (§5.3: "dramatically reduce throughput").  The paper
gives no model; ours is explicit and parameterised: a task that starts on a
server whose committed resource r exceeds its capacity by a fraction ``o_r``
runs ``prod_r (1 + overcommit_penalty[r] * o_r)`` times longer -- by default
penalty 1 for ``cpu`` (fair time-sharing: 6 tasks on 4 cores run at 4/6
speed) and 5 for ``mem`` (thrashing: 20% over-committed memory doubles the
run time).  The factor is fixed at the task's start (tasks already running
keep theirs).

Cost per decision: O(n) for the walk (reference tree walk), O(log S) for the
slot index.
"""

from __future__ import annotations

import heapq
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, Field, NonNegativeFloat, PositiveInt

from hierfair.errors import SpecError
from hierfair.fields import Strict
from hierfair.sim.model import Cluster
from hierfair.sim.placement import Placement
from hierfair.sim.policy import BasePolicy, PolicyView
from hierfair.sim.treewalk import TreeWalkPolicy, round_score


class SlotIndex:
    """Placement by slots: the same interface as :class:`~hierfair.sim.placement.ServerIndex`
    (demands come as arrays in queries, as float tuples in updates).

    ``free_total`` is capacity minus *committed* demand and goes negative when
    servers are over-subscribed, so recorded utilisation can exceed 1.  A task
    takes a slot only on a server that has every resource it asks for (a GPU
    task never lands on a server without GPUs, however many slots it has).
    """

    def __init__(self, capacities: np.ndarray, k: int, penalty: np.ndarray) -> None:
        capacity = np.array(capacities, dtype=np.float64)
        self.total = capacity.sum(axis=0)
        # Plain floats on the per-task path (numpy scalar arithmetic there cost
        # a quarter of a week-long slots run, docs/performance.md).
        self._capacity: list[list[float]] = capacity.tolist()
        self._free_total: list[float] = self.total.tolist()
        self.committed: list[list[float]] = [[0.0] * capacity.shape[1] for _ in self._capacity]
        self.slots = [k] * capacity.shape[0]
        # one min-heap of servers with a free slot per set of resources they have
        has = capacity > 0
        self._kind = [tuple(row) for row in has]
        self._open: dict[tuple[bool, ...], list[int]] = {}
        for server, kind in enumerate(self._kind):
            self._open.setdefault(kind, []).append(server)
        # (resource, capacity, penalty) per server, for the resources whose
        # over-commitment costs something (penalty > 0) and that it has
        self._costly: list[list[tuple[int, float, float]]] = [
            [(r, c, float(penalty[r])) for r, c in enumerate(row) if c > 0 and penalty[r] > 0]
            for row in self._capacity]
        self.release_epoch = 0
        self._held: dict[int, int] = {}  # free slots of servers that are down
        # The answer depends only on which resources a demand asks for: the
        # server kinds that have them.  A walk asks for every leaf's demand,
        # so answers are kept per demand until a slot is taken or freed.
        self._usable: dict[bytes, list[tuple[bool, ...]]] = {}  # demand -> kinds with it
        self._answers: dict[bytes, int | None] = {}

    def _first_open(self, demand: np.ndarray) -> int | None:
        """The lowest-numbered server with a free slot and every resource
        ``demand`` asks for."""
        key = demand.tobytes()
        answer = self._answers.get(key, -1)
        if answer != -1:
            return answer
        kinds = self._usable.get(key)
        if kinds is None:
            needs = demand > 0
            kinds = self._usable[key] = [kind for kind in self._open
                                         if all(k for k, n in zip(kind, needs) if n)]
        best = None
        for kind in kinds:
            heap = self._open[kind]
            while heap and self.slots[heap[0]] == 0:
                heapq.heappop(heap)
            if heap and (best is None or heap[0] < best):
                best = heap[0]
        self._answers[key] = best
        return best

    def _reopen(self, server: int) -> None:
        heapq.heappush(self._open[self._kind[server]], server)

    def fits(self, demand: np.ndarray) -> bool:
        return self._first_open(demand) is not None

    def choose(self, demand: np.ndarray) -> int | None:
        return self._first_open(demand)

    @property
    def free_total(self) -> np.ndarray:
        return np.array(self._free_total)

    @property
    def saturated(self) -> np.ndarray:
        return self.free_total <= 0

    def free_of(self, server: int) -> np.ndarray:
        return np.array(self._capacity[server]) - np.array(self.committed[server])

    def _add(self, server: int, demand: tuple[float, ...], sign: float) -> None:
        used, total = self.committed[server], self._free_total
        for r, d in enumerate(demand):
            if d:
                used[r] += sign * d
                total[r] -= sign * d

    def allocate(self, server: int, demand: tuple[float, ...]) -> None:
        self._answers.clear()
        self.slots[server] -= 1
        self._add(server, demand, 1.0)

    def release(self, server: int, demand: tuple[float, ...]) -> None:
        self._answers.clear()
        if self.slots[server] == 0:
            self._reopen(server)
        self.slots[server] += 1
        self._add(server, demand, -1.0)
        self.release_epoch += 1

    def _shift_total(self, server: int, sign: float) -> None:
        """Add (sign 1) or remove (-1) a server's uncommitted resources."""
        for r, (cap, used) in enumerate(zip(self._capacity[server], self.committed[server])):
            self._free_total[r] += sign * (cap - used)

    def set_down(self, server: int) -> None:
        self._answers.clear()
        self._held[server] = self.slots[server]
        self.slots[server] = 0
        self._shift_total(server, -1.0)

    def set_up(self, server: int) -> None:
        self._answers.clear()
        if self.slots[server] == 0 and self._held.get(server, 0) > 0:
            self._reopen(server)
        self.slots[server] = self._held.pop(server, self.slots[server])
        self._shift_total(server, 1.0)
        self.release_epoch += 1

    def duration_factor(self, server: int) -> float:
        factor, used = 1.0, self.committed[server]
        for r, cap, penalty in self._costly[server]:
            over = used[r] / cap - 1.0
            if over > 0.0:
                factor *= 1.0 + penalty * over
        return factor


DEFAULT_PENALTY = {"cpu": 1.0, "mem": 5.0}


class SlotParams(Strict):
    k: PositiveInt = 4
    #: Slowdown per unit of over-commitment, by resource; resources not
    #: named cost nothing when over-committed.
    overcommit_penalty: dict[str, NonNegativeFloat] = Field(
        default_factory=lambda: dict(DEFAULT_PENALTY))


class _SlotPolicy(BasePolicy[SlotParams]):
    """What both slot schedulers share: parameters and the slot index."""

    name: ClassVar[str] = "slots-k"
    description: ClassVar[str] = ("hierarchical slot scheduler, k slots per server, equal "
                                  "weighted task counts; memory over-commit thrashes (§5.3)")
    Params: ClassVar[type[BaseModel]] = SlotParams

    @classmethod
    def check(cls, params: SlotParams, cluster: Cluster) -> None:
        if "overcommit_penalty" not in params.model_fields_set:
            return  # the defaults name cpu and mem; a cluster may lack them
        for r in params.overcommit_penalty:
            if r not in cluster.resources:
                raise SpecError(f"no such resource; the cluster has {list(cluster.resources)}",
                                where=f"params.overcommit_penalty.{r}", value=r)

    def make_index(self, cluster: Cluster, placement: Placement) -> SlotIndex:
        p = self.params
        penalty = np.array([p.overcommit_penalty.get(r, 0.0) for r in cluster.resources])
        return SlotIndex(cluster.capacities, p.k, penalty)


class SlotsReference(_SlotPolicy, TreeWalkPolicy[SlotParams]):
    """H-DRF §5.3's hierarchical slot scheduler with ``k`` slots per server:
    the reference tree walk, recomputing every node's score per decision."""

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        return self.state.running / self.tree.weights


class _ScoreMemo(dict):
    """``memo[x] == round_score(x)``: a node's score takes few values (tasks
    over a weight), recomputed at every start and finish along a root path;
    a hit is one C-level look-up.  Cleared when it holds 65,536 values."""

    def __missing__(self, x: float) -> float:
        if len(self) >= 1 << 16:
            self.clear()
        value = self[x] = round_score(x)
        return value


class Slots(_SlotPolicy):
    """:class:`SlotsReference`'s walk, kept up to date per change instead of
    recomputed per decision (the same leaf at every decision; tests/test_slots.py).

    A node's score is its running tasks over its weight, rounded as the
    reference rounds; a start or finish changes one root path.  Whether a
    leaf's next task fits depends only on which resources it asks for (a slot
    on a server that has them), so each node counts its demanding leaves by
    demand support, and a walk asks the index once per support, then steps at
    every level to the least-scored child with a leaf of a fitting support below.
    """

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h = state.hierarchy
        n = h.n_nodes
        self._children = h.children
        self._w = h.weights.tolist()
        self._path = [(v, *h.ancestors(v)) for v in range(n)]  # node first, root last
        self._running = [0] * n  # tasks running in the subtree
        self._score = [0.0] * n
        self._memo = _ScoreMemo()
        # a leaf's next demand's support (which resources it asks for), None: not demanding
        self._support: list[bytes | None] = [None] * n
        self._below: list[dict[bytes, int]] = [{} for _ in range(n)]  # support -> leaves
        self._demanding = [0] * n  # demanding leaves below, whatever their support
        self._sample: dict[bytes, np.ndarray] = {}  # a demand of each support, for fits
        self._dirty: set[int] = set()

    def leaf_changed(self, leaf: int) -> None:
        self._dirty.add(leaf)

    def _count(self, leaf: int, delta: int) -> None:
        running, score, w, memo = self._running, self._score, self._w, self._memo
        for v in self._path[leaf]:
            r = running[v] = running[v] + delta
            score[v] = memo[r / w[v]]

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        self._count(leaf, 1)
        self._dirty.add(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self._count(leaf, -1)
        self._dirty.add(leaf)

    def _refresh(self, leaf: int) -> None:
        d = self.state.next_demand(leaf)
        sup = None if d is None else (d > 0).tobytes()  # the resources it asks for
        old = self._support[leaf]
        if sup == old:
            return
        self._support[leaf] = sup
        if sup is not None:
            self._sample.setdefault(sup, d)  # type: ignore[arg-type]
        change = (sup is not None) - (old is not None)
        demanding = self._demanding
        for v in self._path[leaf]:
            below = self._below[v]
            if old is not None:
                below[old] -= 1
            if sup is not None:
                below[sup] = below.get(sup, 0) + 1
            demanding[v] += change

    def select(self) -> int | None:
        for leaf in self._dirty:
            self._refresh(leaf)
        self._dirty.clear()
        fits = self.state.fits
        ok: list[bytes] = []
        present = 0  # supports some leaf demands
        for sup, k in self._below[0].items():
            if k:
                present += 1
                if fits(self._sample[sup]):
                    ok.append(sup)
        if not ok:
            return None
        below, score, node = self._below, self._score, 0
        if len(ok) == present:  # every demand fits: any demanding leaf below will do
            demanding = self._demanding
            while kids := self._children[node]:
                best = -1
                for c in kids:
                    if demanding[c] and (best < 0 or score[c] < score[best]):
                        best = c
                node = best
            return node
        while kids := self._children[node]:
            best = -1
            for c in kids:
                there = below[c]
                for sup in ok:  # a loop, not any(...): this is the hot path
                    if there.get(sup):
                        break
                else:
                    continue
                if best < 0 or score[c] < score[best]:
                    best = c
            node = best
        return node
