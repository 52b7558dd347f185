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
from pydantic import Field, NonNegativeFloat, PositiveInt

from hierfair.errors import SpecError
from hierfair.experiment.spec_base import Strict
from hierfair.sim.model import Cluster
from hierfair.sim.treewalk import TreeWalkPolicy


class SlotIndex:
    """Placement by slots: the same interface as :class:`~hierfair.sim.placement.ServerIndex`
    (demands come as arrays in queries, as float tuples in updates).

    ``free_total`` is capacity minus *committed* demand and goes negative when
    servers are over-subscribed, so recorded utilisation can exceed 1.  A task
    takes a slot only on a server that has every resource it asks for (a GPU
    task never lands on a server without GPUs, however many slots it has).
    """

    def __init__(self, capacities: np.ndarray, k: int, penalty: np.ndarray) -> None:
        self.capacity = np.array(capacities, dtype=np.float64)
        self.total = self.capacity.sum(axis=0)
        self.free_total = self.total.copy()
        self.committed = np.zeros_like(self.capacity)
        self.slots = [k] * self.capacity.shape[0]
        # one min-heap of servers with a free slot per set of resources they have
        has = self.capacity > 0
        self._kind = [tuple(row) for row in has]
        self._open: dict[tuple[bool, ...], list[int]] = {}
        for server, kind in enumerate(self._kind):
            self._open.setdefault(kind, []).append(server)
        self._penalty = penalty  # per resource, 0 where over-commit costs nothing
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
    def saturated(self) -> np.ndarray:
        return self.free_total <= 0

    def free_of(self, server: int) -> np.ndarray:
        return self.capacity[server] - self.committed[server]

    def allocate(self, server: int, demand: tuple[float, ...]) -> None:
        self._answers.clear()
        self.slots[server] -= 1
        self.committed[server] += demand
        self.free_total -= demand

    def release(self, server: int, demand: tuple[float, ...]) -> None:
        self._answers.clear()
        if self.slots[server] == 0:
            self._reopen(server)
        self.slots[server] += 1
        self.committed[server] -= demand
        self.free_total += demand
        self.release_epoch += 1

    def set_down(self, server: int) -> None:
        self._answers.clear()
        self._held[server] = self.slots[server]
        self.slots[server] = 0
        self.free_total -= self.capacity[server] - self.committed[server]

    def set_up(self, server: int) -> None:
        self._answers.clear()
        if self.slots[server] == 0 and self._held.get(server, 0) > 0:
            self._reopen(server)
        self.slots[server] = self._held.pop(server, self.slots[server])
        self.free_total += self.capacity[server] - self.committed[server]
        self.release_epoch += 1

    def duration_factor(self, server: int) -> float:
        cap = self.capacity[server]
        used = self.committed[server]
        over = np.divide(used, cap, out=np.zeros_like(cap), where=cap > 0) - 1.0
        return float(np.prod(1.0 + self._penalty * np.clip(over, 0.0, None)))


DEFAULT_PENALTY = {"cpu": 1.0, "mem": 5.0}


class SlotParams(Strict):
    k: PositiveInt = 4
    #: Slowdown per unit of over-commitment, by resource; resources not
    #: named cost nothing when over-committed.
    overcommit_penalty: dict[str, NonNegativeFloat] = Field(
        default_factory=lambda: dict(DEFAULT_PENALTY))


class Slots(TreeWalkPolicy):
    """H-DRF §5.3's hierarchical slot scheduler with ``k`` slots per server."""

    name: ClassVar[str] = "slots-k"
    description: ClassVar[str] = ("hierarchical slot scheduler, k slots per server, equal "
                                  "weighted task counts; memory over-commit thrashes (§5.3)")
    Params: ClassVar[type[Strict]] = SlotParams

    @classmethod
    def check(cls, params: SlotParams, cluster: Cluster) -> None:  # type: ignore[override]
        if "overcommit_penalty" not in params.model_fields_set:
            return  # the defaults name cpu and mem; a cluster may lack them
        for r in params.overcommit_penalty:
            if r not in cluster.resources:
                raise SpecError(f"no such resource; the cluster has {list(cluster.resources)}",
                                where=f"params.overcommit_penalty.{r}", value=r)

    def make_index(self, cluster: Cluster, placement: str) -> SlotIndex:
        p: SlotParams = self.params  # type: ignore[assignment]
        penalty = np.array([p.overcommit_penalty.get(r, 0.0) for r in cluster.resources])
        return SlotIndex(cluster.capacities, p.k, penalty)

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        return self.state.running / self.tree.weights
