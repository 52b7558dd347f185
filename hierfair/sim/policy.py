"""The contract between the simulator and a scheduling algorithm.

The simulator owns the cluster, the queues and the clock; a *policy* owns the
allocation math.  The simulator keeps the policy informed (a job arrived, a
task started or finished, a job completed) and, whenever resources may be
assigned, repeatedly asks it one question: *which leaf's next task runs now?*
The policy answers with a leaf whose next task fits on some server, or ``None``
when it will place nothing more until something changes.  The simulator then
places that task (first-fit or best-fit) and asks again.

Everything a policy may read about the present is in :class:`SchedulerState`;
it never sees the event queue or the future.
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from hierfair.sim.model import Cluster, Hierarchy, Job


class SchedulerState(Protocol):
    """Read-only view of the simulation that policies decide from."""

    hierarchy: Hierarchy
    cluster: Cluster
    #: Resources allocated to every node (rows: nodes in pre-order).  An
    #: internal node's row is the plain sum of its children's.
    alloc: np.ndarray
    #: Running tasks per node (internal nodes: sum over the subtree).
    running: np.ndarray
    #: The policy's own random generator, seeded from the run's seed: a
    #: policy that draws from it gives the same schedule for the same seed
    #: (and needs no ``seed`` parameter of its own).
    rng: np.random.Generator

    def alloc_row(self, node: int) -> list[float]:
        """``alloc[node]`` as plain floats, for per-node arithmetic in Python
        (cheaper than a numpy row); read it, never modify it."""
        ...

    @property
    def now(self) -> float: ...

    @property
    def free_total(self) -> np.ndarray: ...

    @property
    def saturated(self) -> np.ndarray: ...

    @property
    def release_epoch(self) -> int:
        """Increases whenever resources are released anywhere in the cluster."""
        ...

    def pending(self, leaf: int) -> int:
        """Tasks waiting at ``leaf``; a leaf is *demanding* while this is > 0."""
        ...

    def next_demand(self, leaf: int) -> np.ndarray | None:
        """Demand vector of the task ``leaf`` would run next (FIFO over its jobs)."""
        ...

    def head_job(self, leaf: int) -> Job | None:
        """The job ``leaf`` serves next."""
        ...

    def fits(self, demand: np.ndarray) -> bool:
        """Whether some server has room for ``demand`` right now."""
        ...


class Policy(Protocol):
    """What every scheduling algorithm implements."""

    name: ClassVar[str]
    description: ClassVar[str]

    def attach(self, state: SchedulerState) -> None:
        """Called once before the first event."""

    def on_job_arrival(self, job: Job) -> None: ...

    def on_job_completion(self, job: Job) -> None: ...

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None: ...

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None: ...

    def select(self) -> int | None:
        """The leaf whose next task should start now, or None to stop this round."""

    def preemptions(self) -> list[tuple[int, int]]:
        """Running tasks to stop before this round, as ``(task, beneficiary
        leaf)``; they go back to their leaf's queue.  Most policies: none."""


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BasePolicy:
    """Convenience base: stores the state and funnels every notification into
    :meth:`leaf_changed`, which is all most policies need."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]] = NoParams

    @classmethod
    def check(cls, params: BaseModel, cluster: Cluster) -> None:
        """Reject params that cannot work on this cluster (raise SpecError)."""

    def make_index(self, cluster: Cluster, placement: str) -> Any:
        """The placement index this policy needs, or None for the usual
        resource-fitting one (slot schedulers bring their own)."""
        return None

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params if params is not None else self.Params()
        self.state: SchedulerState

    def attach(self, state: SchedulerState) -> None:
        self.state = state

    def leaf_changed(self, leaf: int) -> None:
        """The leaf's allocation or its pending work changed."""

    def on_job_arrival(self, job: Job) -> None:
        self.leaf_changed(job.leaf)

    def on_job_completion(self, job: Job) -> None:
        self.leaf_changed(job.leaf)

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        self.leaf_changed(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        self.leaf_changed(leaf)

    def select(self) -> int | None:
        raise NotImplementedError

    def preemptions(self) -> list[tuple[int, int]]:
        return []


class BackfillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: When the first leaf in priority order cannot fit its next task, try the
    #: next one (True), or stop this round (False: head-of-line blocking).
    backfill: bool = True


class LeafPriorityPolicy(BasePolicy):
    """Serve the demanding leaf with the smallest :meth:`key` whose task fits.

    One mechanism for every flat policy: a binary heap of demanding leaves keyed
    by ``(key(leaf), leaf)`` (the leaf's pre-order index breaks ties, so runs
    are deterministic).  Entries are invalidated lazily by a per-leaf version
    number, so a notification costs O(log n).  A leaf whose task does not fit
    is *parked* until resources are released -- free space only shrinks in
    between -- so a full cluster costs O(1) per decision, not a scan.
    """

    Params: ClassVar[type[BaseModel]] = BackfillParams

    def attach(self, state: SchedulerState) -> None:
        super().attach(state)
        self._heap: list[tuple[Any, int, int]] = []
        self._version = [0] * state.hierarchy.n_nodes  # plain ints: read per decision
        self._heap_limit = 4 * state.hierarchy.n_nodes + 64
        self._parked: list[tuple[Any, int, int]] = []
        self._parked_epoch = state.release_epoch
        self._backfill = bool(getattr(self.params, "backfill", True))

    def key(self, leaf: int) -> Any:
        raise NotImplementedError

    def leaf_changed(self, leaf: int) -> None:
        version = self._version
        v = version[leaf] = version[leaf] + 1
        if self.state.pending(leaf) > 0:
            heapq.heappush(self._heap, (self.key(leaf), leaf, v))
        if len(self._heap) > self._heap_limit:
            # Drop stale entries so the heap stays O(leaves), not O(events).
            self._heap = [e for e in self._heap if e[2] == version[e[1]]]
            heapq.heapify(self._heap)

    def select(self) -> int | None:
        state = self.state
        heap = self._heap
        if self._parked and state.release_epoch != self._parked_epoch:
            for entry in self._parked:
                heapq.heappush(heap, entry)
            self._parked.clear()
        self._parked_epoch = state.release_epoch
        while heap:
            _, leaf, version = heap[0]
            if version != self._version[leaf]:
                heapq.heappop(heap)
                continue
            demand = state.next_demand(leaf)
            if demand is not None and state.fits(demand):
                return leaf
            if not self._backfill:
                return None
            self._parked.append(heapq.heappop(heap))
        return None


# -- preemption helpers shared by the preemptive policies -------------------
def running_by_leaf(state: Any) -> dict[int, list[int]]:
    """Running task ids per leaf, earliest started first."""
    out: dict[int, list[int]] = {}
    for task in state.running_tasks():
        out.setdefault(state.task_info(task)[1], []).append(task)
    return out


def room_on_one_server(state: Any, need: np.ndarray, tasks: Any) -> list[int]:
    """Take tasks from ``tasks`` (an iterable, in the order to preempt them)
    until stopping the ones taken on one server leaves room for ``need`` there;
    returns those, or [] if the candidates run out first.  Tasks started in
    this very instant are skipped (undoing them could swap forever)."""
    freed: dict[int, np.ndarray] = {}
    chosen: dict[int, list[int]] = {}
    for task in tasks:
        _, _, server, demand, start = state.task_info(task)
        if start >= state.now:
            continue
        freed[server] = freed.get(server, 0.0) + demand
        chosen.setdefault(server, []).append(task)
        if np.all(state.server_free(server) + freed[server] >= need - 1e-9):
            return chosen[server]
    return []
