"""The contract between the simulator and a scheduling algorithm.

The simulator owns the cluster, the queues and the clock; a *policy* owns the
allocation math.  The simulator keeps the policy informed (a job arrived, a
task started or finished, a job completed) and, whenever resources may be
assigned, repeatedly asks it one question: *which leaf's next task runs now?*
The policy answers with a leaf whose next task fits on some server, or ``None``
when it will place nothing more until something changes.  The simulator then
places that task (by the run's placement rule, or on the server the policy
names) and asks again.

Everything a policy may read about the present is its
:class:`~hierfair.sim.view.PolicyView` (``self.state`` once attached); it
never sees the simulator, the event queue or the future.

The hooks, in the order the simulator calls them (docs/extending.md):

1. ``Policy.check(params, cluster)`` (classmethod), when the spec is
   validated: refuse params that cannot work on this cluster (raise
   :class:`~hierfair.errors.SpecError`).
2. ``Policy(params)``: ``params`` is an instance of the class's ``Params``
   (a pydantic model, validated from the spec's ``params:``).  A policy must
   pickle: parallel workers receive it.
3. ``make_index(cluster, placement)``, once, *before* ``attach``: the
   placement index the run uses, or None for the usual one.  A policy that
   keeps its own (slot schedulers) builds it here; ``attach`` may then use it.
4. ``attach(view)``, once, before the first event: keep the view, size the
   policy's own structures.
5. Then, for every instant at which events happen, after all of that
   instant's events have been applied:

   * the notifications, as the events happen: ``on_job_arrival(job)``,
     ``on_task_finish(leaf, demand)`` (also when a task is stopped: preempted,
     killed with its server, failed) and then ``on_job_completion(job)``;
   * ``preemptions()``: running tasks to stop before this round, as
     ``(task, beneficiary leaf)``; each beneficiary's next task starts in the
     room made, if it fits (under an eviction latency, when the victim's
     eviction completes; until then ``view.evicting(task)`` is true, and
     asking for it again does nothing);
   * ``select()`` until it answers None; after each leaf it names,
     ``job_for(leaf)`` may name which of the leaf's pending jobs (None, the
     base's answer: the first, FIFO), ``server_for(leaf, demand)`` may name
     the server (None: the placement rule picks it), the task starts there
     and ``on_task_start(leaf, demand)`` follows at once
     (``view.last_server`` says where);
   * ``wake_at()``, after the round, only if the policy defines it: a later
     simulated time at which it wants a round although no event happens
     (a preemption timeout, YARN's and YuniKorn's); None asks for none.
     A wake-up is queued only while some task waits and some task runs.

A policy may change only its own state.  ``select`` must name a leaf with a
pending task that fits (``view.pending(leaf) > 0`` and
``view.fits(view.next_demand(leaf))``, or the demand of the job
``job_for`` names): the simulator stops the run with a PolicyError
otherwise.  ``hierfair check`` runs the contract suite
(hierfair.experiment.contract) on any policy class.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import numpy as np
from pydantic import BaseModel, ConfigDict

from hierfair.sim.model import Cluster, Hierarchy, Job
from hierfair.sim.placement import Placement
from hierfair.sim.view import JobTimes, PolicyView, RunningTask

#: The name policies written before the view was a class of its own used.
SchedulerState = PolicyView

__all__ = ["BackfillParams", "BasePolicy", "JobTimes", "LeafPriorityPolicy", "NoParams",
           "Policy", "PolicyView", "RunningTask", "SchedulerState", "own_index",
           "own_placement", "room_on_one_server", "running_by_leaf"]


class Policy(Protocol):
    """What every scheduling algorithm implements (:class:`BasePolicy`
    implements all of it; override what you need)."""

    name: ClassVar[str]
    description: ClassVar[str]

    def make_index(self, cluster: Cluster, placement: Placement) -> Any:
        """The placement index this policy needs, or None (called before attach)."""

    def attach(self, state: PolicyView) -> None:
        """Called once before the first event."""

    def on_job_arrival(self, job: Job) -> None: ...

    def on_job_completion(self, job: Job) -> None: ...

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None: ...

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None: ...

    def select(self) -> int | None:
        """The leaf whose next task should start now, or None to stop this round."""

    def job_for(self, leaf: int) -> int | None:
        """Which pending job of ``leaf`` starts a task (None: the first,
        FIFO; production schedulers order by priority, or skip a head they
        cannot admit)."""

    def server_for(self, leaf: int, demand: np.ndarray) -> int | None:
        """The server for the task :meth:`select` just named, or None to
        leave it to the placement rule (policies that decide per server)."""

    def preemptions(self) -> list[tuple[int, int]]:
        """Running tasks to stop before this round, as ``(task, beneficiary
        leaf)``; they go back to their leaf's queue.  Most policies: none."""

    def wake_at(self) -> float | None:
        """A later simulated time for another round although nothing
        happens then (a timeout), or None."""


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: A policy's parameter model.
P = TypeVar("P", bound=BaseModel)


class BasePolicy(Generic[P]):
    """The base every policy here derives from, generic in its params:
    ``class Mine(BasePolicy[MineParams])`` with ``Params = MineParams`` types
    ``self.params`` as MineParams.  It keeps the view as ``self.state`` and
    funnels every notification into :meth:`leaf_changed`, which is all most
    policies need."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: The pydantic model of ``params:`` (the class P stands for).
    Params: ClassVar[type[BaseModel]] = NoParams
    #: The placement the mechanism is defined with (``drfh``: DRFH's shape
    #: distance), used unless the spec's algorithm entry names one; None:
    #: the cluster's.  Ignored by a policy that names its servers itself.
    placement: ClassVar[str | None] = None
    #: Whether :meth:`server_for` always names the server (the placement
    #: rule is then never asked, and a spec may not name one).
    places_tasks: ClassVar[bool] = False
    #: Whether the policy defines a hierarchy weight of 0 (Kueue: "only what
    #: the others leave"); the others divide by weights and refuse it.
    zero_weights: ClassVar[bool] = False
    #: Whether the policy works in admission cycles (Kueue): each call of
    #: :meth:`preemptions` plans one cycle (its victims returned, its
    #: admissions served by :meth:`select`), and the simulator runs cycles
    #: at an instant until one neither preempts nor starts anything.
    cycles: ClassVar[bool] = False
    params: P
    state: PolicyView

    @classmethod
    def check(cls, params: Any, cluster: Cluster) -> None:
        """Reject params that cannot work on this cluster (raise SpecError)."""

    @classmethod
    def check_hierarchy(cls, params: Any, hierarchy: Hierarchy) -> None:
        """Reject params that cannot work on this hierarchy (raise SpecError:
        e.g. per-queue settings naming a leaf the tree lacks)."""

    def make_index(self, cluster: Cluster, placement: Placement) -> Any:
        """The placement index this policy needs, or None for the usual
        resource-fitting one (slot schedulers bring their own).  Called once,
        before :meth:`attach`."""
        return None

    def __init__(self, params: P | None = None) -> None:
        self.params = params if params is not None else cast(P, self.Params())

    def attach(self, state: PolicyView) -> None:
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

    def job_for(self, leaf: int) -> int | None:
        """The job of ``leaf`` whose task starts (one of
        ``view.pending_jobs(leaf)``): None, the base's answer, starts the
        first (FIFO by arrival)."""
        return None

    def server_for(self, leaf: int, demand: np.ndarray) -> int | None:
        """The server for the task :meth:`select` just named: None lets the
        run's placement rule choose (every policy but the per-server ones).
        The server named must have room for ``demand``."""
        return None

    def preemptions(self) -> list[tuple[int, int]]:
        return []

    def wake_at(self) -> float | None:
        """A later simulated time (> ``view.now``) at which to run a round
        although no event happens then (a preemption timeout), or None.  The
        simulator calls it after each round only for a policy that defines
        its own, so the base costs nothing."""
        return None


class BackfillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: When the first leaf in priority order cannot fit its next task, try the
    #: next one (True), or stop this round (False: head-of-line blocking).
    backfill: bool = True


class LeafPriorityPolicy(BasePolicy[P], Generic[P]):
    """Serve the demanding leaf with the smallest :meth:`key` whose task fits.

    One mechanism for every flat policy: a binary heap of demanding leaves keyed
    by ``(key(leaf), leaf)`` (the leaf's pre-order index breaks ties, so runs
    are deterministic).  Entries are invalidated lazily by a per-leaf version
    number, so a notification costs O(log n).  A leaf whose task does not fit
    is *parked* until resources are released -- free space only shrinks in
    between -- so a full cluster costs O(1) per decision, not a scan.
    """

    Params: ClassVar[type[BaseModel]] = BackfillParams

    def attach(self, state: PolicyView) -> None:
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


#: Why a policy with its own index cannot run a workload with placement constraints.
CONSTRAINTS_REFUSED = ("tests where tasks fit with its own index, which knows no placement "
                       "constraints (requires: in this spec); use another algorithm (hdrf "
                       "makes hdrf-fast's decisions)")


def own_index(cls: type) -> bool:
    """Whether the policy class tests where tasks fit with an index of its
    own (``make_index``: slot schedulers, hdrf-fast), which knows neither a
    headroom nor placement constraints."""
    return getattr(cls, "make_index", None) is not BasePolicy.make_index


def own_placement(cls: type) -> str:
    """Why a placement rule named for the policy class would do nothing
    ("": it places by the run's rule)."""
    if getattr(cls, "places_tasks", False):
        return "names every task's server itself (fairness per server)"
    if own_index(cls):
        return "places tasks through its own index"
    return ""


# -- preemption helpers shared by the preemptive policies -------------------
def running_by_leaf(state: PolicyView) -> dict[int, list[int]]:
    """Running task ids per leaf, earliest started first."""
    out: dict[int, list[int]] = {}
    for task in state.running_tasks():
        out.setdefault(state.task_info(task).leaf, []).append(task)
    return out


def room_on_one_server(state: PolicyView, need: np.ndarray, tasks: Iterable[int]) -> list[int]:
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
