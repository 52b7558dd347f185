"""YuniKorn's ``fair`` queue sorting, as its code behaves.

Concept.  Each scheduling step YuniKorn walks its queue tree from the root
(``Queue.TryAllocate``): a parent sorts the children that have pending
resources, and the first child that allocates wins; a leaf tries its apps in
order.  A queue's fairness key is the largest, over the resource types it has
allocated, of allocated/guaranteed -- or allocated/fairMax for a type with no
guarantee (an explicit guarantee or fairMax <= 0 with usage counts 1.0)::

    key(q) = max_r alloc_r(q) / (guaranteed_r(q) if set else fairMax_r(q))

A parent's allocation is the plain sum of its children's.  There are no
weights.  By default a parent sorts by *priority first* (higher first), then
the fairness key, then the larger pending resources (``resetProperties`` sets
``prioritySortEnabled`` for every queue); with ``priority_sort: false``
fairness comes first, then priority, then pending.

Upstream: apache/yunikorn-core at be3bb487298956dd70906fca15e577bbc12d23cb
(``pkg/common/resources/resources.go``: ``getFairShare``,
``getShareFairForDenominator``, ``CompUsageRatioSeparately``, ``GetShares``,
``compareShares``; ``pkg/scheduler/objects/sorters.go``: ``sortQueue``,
``sortQueuesByPriorityAndFairness``, ``sortQueuesByFairnessAndPriority``,
``sortApplications``; ``queue.go``: ``sortQueues``, ``TryAllocate``,
``GetFairMaxResource``, ``GetCurrentPriority``; all three last changed in
fac9b6ba).  Read in docs/upstream/sorters.md §3 (docs/algorithms.md,
"yunikorn-fair").

Mapping: ``quota.guaranteed`` is the guaranteed resource; fairMax is the
cluster total (YuniKorn's root max; resources with 0 left out) overridden,
resource by resource, by each ``quota.max`` on the way down (the child wins,
as ``GetFairMaxResource``).  A node's ``priority`` is its priority offset: a
leaf's current priority is offset + the highest priority of its pending jobs,
a parent's is offset + the highest of its children's.  A leaf's pending
resources are its pending tasks times its head job's demand (the view gives
no per-job pending count: exact when a leaf's jobs ask alike).  Jobs are apps:
``application_sort: fifo`` (the leaf default: priority, then submit time) or
``fair`` (usage vectors over the leaf's guarantee).  Go's map order makes
exact ties random upstream; here the earlier node in pre-order (the earlier
job) wins.  Preemption and the max-resource headroom (both off by default):
:mod:`hierfair.algorithms.yunikorn_asks`.  Not modelled: the fence priority
policy, placeholders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, ClassVar, Literal

from pydantic import Field

from hierfair.algorithms.yarn_fair import LeafAppsWalk, comparator_key
from hierfair.algorithms.yunikorn_asks import AskPreemption
from hierfair.algorithms.yunikorn_resources import fit_in
from hierfair.fields import Strict
from hierfair.sim.model import Job
from hierfair.sim.policy import PolicyView

Res = Mapping[str, float] | None  # None is Go's nil *Resource
MIN_PRIORITY, MAX_PRIORITY = -(2**31), 2**31 - 1


# -- resources.go -------------------------------------------------------------
def share_for_denominator(kind: str, allocated: float, denom: Res) -> tuple[float, bool]:
    """``getShareFairForDenominator``: (share, found)."""
    if denom is None:
        return 0.0, False
    if kind in denom and denom[kind] <= 0:  # explicit 0 or negative
        return (0.0 if allocated <= 0 else 1.0), True
    if denom.get(kind, 0) > 0:
        return allocated / denom[kind], True
    return 0.0, False


def fair_share(allocated: Res, guaranteed: Res, fair_max: Res) -> float:
    """``getFairShare``: the largest share over the allocated types, each over
    its guarantee, else over fairMax; negative usage is skipped."""
    best = 0.0
    for kind, v in (allocated or {}).items():
        if v < 0:
            continue
        s, found = share_for_denominator(kind, v, guaranteed)
        if not found:
            s, found = share_for_denominator(kind, v, fair_max)
        if found and s > best:
            best = s
    return best


def comp_usage_ratio_separately(l_alloc: Res, l_guar: Res, l_max: Res,
                                r_alloc: Res, r_guar: Res, r_max: Res) -> int:
    left, right = fair_share(l_alloc, l_guar, l_max), fair_share(r_alloc, r_guar, r_max)
    return 1 if left > right else -1 if left < right else 0


def get_shares(res: Res, total: Res) -> list[float]:
    """``GetShares``: per type usage/total (the raw usage where the total is
    nil or 0), ascending."""
    out = []
    for kind, v in (res or {}).items():
        t = (total or {}).get(kind, 0)
        out.append(0.0 if v == 0 else float(v) if t == 0 else v / t)
    return sorted(out)


def compare_shares(left: list[float], right: list[float]) -> int:
    """``compareShares``: from the largest share down; what is left of the
    longer list is compared with 0."""
    i, j = len(left) - 1, len(right) - 1
    while i >= 0 and j >= 0:
        if left[i] != right[j]:
            return 1 if left[i] > right[j] else -1
        i, j = i - 1, j - 1
    for k in range(i, -1, -1):
        if left[k]:
            return 1 if left[k] > 0 else -1
    for k in range(j, -1, -1):
        if right[k]:
            return -1 if right[k] > 0 else 1
    return 0


def strictly_greater_than_zero(res: Res) -> bool:
    values = list((res or {}).values())
    return any(v > 0 for v in values) and not any(v < 0 for v in values)


def pending_larger(left: Res, right: Res) -> bool:
    """``StrictlyGreaterThan(Sub(l.pending, r.pending), Zero)``."""
    kinds = set(left or {}) | set(right or {})
    diff = [(left or {}).get(k, 0) - (right or {}).get(k, 0) for k in kinds]
    return bool(diff) and all(d >= 0 for d in diff) and any(d > 0 for d in diff)


# -- sorters.go ---------------------------------------------------------------
@dataclass(frozen=True)
class QueueInfo:
    allocated: Res
    guaranteed: Res
    fair_max: Res
    priority: int = 0
    pending: Res = None


def queue_less(left: QueueInfo, right: QueueInfo, consider_priority: bool) -> bool:
    """The fair policy's less: ``sortQueuesByPriorityAndFairness`` (the
    default) or ``sortQueuesByFairnessAndPriority``."""
    if consider_priority and left.priority != right.priority:
        return left.priority > right.priority
    c = comp_usage_ratio_separately(left.allocated, left.guaranteed, left.fair_max,
                                    right.allocated, right.guaranteed, right.fair_max)
    if c != 0:
        return c < 0
    if not consider_priority and left.priority != right.priority:
        return left.priority > right.priority
    return pending_larger(left.pending, right.pending)


def _stable(items: Sequence[Any], less: Any) -> list[int]:
    """Go's ``sort.SliceStable`` with ``less``: indices in the sorted order."""
    def cmp(a: int, b: int) -> int:
        return -1 if less(items[a], items[b]) else 1 if less(items[b], items[a]) else 0
    return sorted(range(len(items)), key=cmp_to_key(cmp))


def sort_queues(queues: Sequence[QueueInfo], policy: Literal["fair", "fifo"],
                consider_priority: bool) -> list[int]:
    """``sortQueue``: indices of ``queues`` in YuniKorn's order."""
    if policy == "fair":
        return _stable(queues, lambda a, b: queue_less(a, b, consider_priority))
    if consider_priority:
        return _stable(queues, lambda a, b: a.priority > b.priority)
    return list(range(len(queues)))


@dataclass(frozen=True)
class AppInfo:
    allocated: Res
    pending: Res
    priority: int = 0
    submission_time: float = 0.0


def app_less(a: AppInfo, b: AppInfo, policy: Literal["fair", "fifo"], consider_priority: bool,
             total: Res) -> bool:
    if policy == "fair":
        c = compare_shares(get_shares(a.allocated, total), get_shares(b.allocated, total))
        if consider_priority:
            return a.priority > b.priority if a.priority != b.priority else c < 0
        return c < 0 if c != 0 else a.priority > b.priority
    if consider_priority and a.priority != b.priority:
        return a.priority > b.priority
    if a.submission_time != b.submission_time:
        return a.submission_time < b.submission_time
    return a.priority > b.priority


def sort_applications(apps: Sequence[AppInfo], policy: Literal["fair", "fifo"],
                      consider_priority: bool, total: Res) -> list[int]:
    """``sortApplications``: indices of the apps with pending resources, in
    order (``total`` is the leaf's guarantee)."""
    keep = [i for i, a in enumerate(apps) if strictly_greater_than_zero(a.pending)]
    order = _stable([apps[i] for i in keep],
                    lambda a, b: app_less(a, b, policy, consider_priority, total))
    return [keep[i] for i in order]


# -- the policy ---------------------------------------------------------------
class YuniKornParams(Strict):
    #: ``application.sort.priority`` on the parents: priority before fairness
    #: (True, YuniKorn's default) or after it.
    priority_sort: bool = True
    #: ``application.sort.policy`` of the leaves (YuniKorn's default: fifo).
    application_sort: Literal["fifo", "fair"] = "fifo"
    #: Enforce ``quota.max`` as YuniKorn's headroom (``getHeadRoom``): a task
    #: starts only within every max on its path.  Upstream always does; off
    #: by default so that earlier results stay as they were.
    headroom: bool = False
    #: The partition's ``preemption.enabled`` (off: earlier results unchanged).
    preemption: bool = False
    #: The queues' ``preemption.delay``: an ask preempts only once this old.
    preemption_delay: float = Field(30.0, ge=0)
    #: ``preemptAttemptFrequency``: an ask is checked again only this long
    #: after its last check.
    attempt_frequency: float = Field(15.0, ge=0)
    #: ``maxPreemptionsPerQueue``: preemption attempts per leaf per walk.
    max_attempts: int = Field(10, ge=0)


class YuniKornFair(AskPreemption, LeafAppsWalk[YuniKornParams]):
    """TryAllocate's walk: at each parent the first, in the fair sort, of the
    children with pending resources whose subtree can place a task."""

    name: ClassVar[str] = "yunikorn-fair"
    description: ClassVar[str] = ("YuniKorn's fair queue sort as coded: priority, then max "
                                  "alloc/guaranteed (fairMax where none), then pending; "
                                  "plain-sum parents, no weights")
    Params = YuniKornParams
    #: YuniKorn has no weights: a weight of 0 means nothing to it.
    zero_weights: ClassVar[bool] = True

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        res = state.cluster.resources
        # a tree without quotas: the guarantees its weights promise
        h = state.hierarchy.with_implied_quotas(res, state.cluster.total)
        self._res = res
        self._guar: list[Res] = [dict(q.guaranteed) or None for q in h.quotas]
        root_max = {r: t for r, t in zip(res, state.cluster.total.tolist()) if t > 0}
        self._fair_max: list[dict[str, float]] = []
        for n in range(h.n_nodes):  # pre-order: a parent is done before its children
            inherited = root_max if n == 0 else self._fair_max[int(h.parent[n])]
            self._fair_max.append({**inherited, **dict(h.quotas[n].max or {})})
        # what the headroom and the preemptor read (docs/upstream/yunikorn-preemption.md)
        self._names = ["root" + ("." + p.replace("/", ".") if p else "") for p in h.paths]
        self._max: list[Res] = [root_max] + [None if q.max is None else dict(q.max)
                                             for q in h.quotas[1:]]
        self._checked: dict[int, float] = {}  # job -> its last preemption check
        self._triggered: set[int] = set()  # jobs whose ask triggered a preemption
        self._swap: dict[int, int] = {}  # leaf -> the job its victims made room for

    def __init__(self, params: YuniKornParams | None = None) -> None:
        super().__init__(params)
        if self.params.preemption:
            # walk again after every round of an instant, as YuniKorn schedules
            # step after step: an ask that needs preemption may come after
            # asks that fit (the simulator runs rounds until one does nothing)
            self.cycles = True  # type: ignore[misc]

    def _priorities(self, demanding: Any) -> list[int]:
        """``GetCurrentPriority`` per node: offset + the highest priority
        below (pending jobs at a leaf), clamped."""
        h, state = self.state.hierarchy, self.state
        prio = [MIN_PRIORITY] * h.n_nodes
        for n in range(h.n_nodes - 1, -1, -1):  # children before parents
            if h.is_leaf(n):
                jobs = state.pending_jobs(n)
                below = max((self._jobs[j].priority for j in jobs), default=MIN_PRIORITY)
            else:
                below = max((prio[c] for c in h.children[n]), default=MIN_PRIORITY)
            if below > MIN_PRIORITY:
                prio[n] = max(MIN_PRIORITY, min(MAX_PRIORITY, h.priorities[n] + below))
        return prio

    def queues(self, demanding: Any, demand: Any) -> list[QueueInfo]:
        """Every node's :class:`QueueInfo` on the simulator's present."""
        h, state, res = self.state.hierarchy, self.state, self._res
        pending = [[0.0] * len(res) for _ in range(h.n_nodes)]
        for leaf in h.leaves:
            head = state.next_demand(leaf)
            if head is not None:
                for node in h.path_from_root(leaf):
                    pending[node] = [p + state.pending(leaf) * d
                                     for p, d in zip(pending[node], head.tolist())]
        prio = self._priorities(demanding)
        return [QueueInfo(dict(zip(res, state.alloc_row(n))), self._guar[n], self._fair_max[n],
                          prio[n], dict(zip(res, pending[n]))) for n in range(h.n_nodes)]

    def walk_keys(self, demanding: Any, fits: Any, demand: Any) -> list:
        consider = self.params.priority_sort
        return comparator_key(
            lambda a, b: -1 if queue_less(a, b, consider) else 1 if queue_less(b, a, consider)
            else 0, self.queues(demanding, demand))

    def app_order(self, leaf: int, jobs: list[Job]) -> list[Job]:
        res = self._res
        fair = self.params.application_sort == "fair"
        apps = [AppInfo(dict(zip(res, self.job_usage(j.id).tolist())) if fair else None,
                        {r: d for r, d in zip(res, j.demand.tolist()) if d}, j.priority,
                        j.submit) for j in jobs]
        # leaves keep prioritySortEnabled (resetProperties); the total is the leaf's guarantee
        order = sort_applications(apps, self.params.application_sort, True, self._guar[leaf])
        rest = [i for i in range(len(jobs)) if i not in order]  # nothing pending: never sorted
        return [jobs[i] for i in order + rest]

    # -- headroom and preemption (docs/upstream/yunikorn-preemption.md) ----------------
    def _dict(self, vector: Any, keep_zero: bool = False) -> dict[str, float]:
        return {r: float(v) for r, v in zip(self._res, vector) if keep_zero or v}

    def _in_headroom(self, leaf: int, ask: dict[str, float]) -> bool:
        """``headRoom.FitInMaxUndef(ask)``: within every max on the path."""
        room: Res = None
        for n in self.state.hierarchy.path_from_root(leaf):
            if self._max[n] is not None:
                own = {k: v - self.state.alloc_row(n)[self._res.index(k)]
                       for k, v in self._max[n].items()}
                room = own if room is None else {**own, **room, **{
                    k: min(v, room[k]) for k, v in own.items() if k in room}}
        return fit_in(room, ask, skip_undef=True)

    def leaf_status(self) -> tuple[Any, Any, Any]:
        demanding, fits, demand = super().leaf_status()
        if self.params.headroom:  # the first app whose ask fits a node *and* the headroom
            state = self.state
            for leaf in [x for x in self._choice]:
                jobs = [self._jobs[j] for j in state.pending_jobs(leaf)]
                chosen = next((j for j in self.app_order(leaf, jobs) if state.fits(j.demand)
                               and self._in_headroom(leaf, self._dict(j.demand))), None)
                if chosen is None:
                    del self._choice[leaf]
                    fits[leaf] = False
                else:
                    self._choice[leaf], demand[leaf] = chosen.id, chosen.demand
        return demanding, fits, demand

    def _walk_leaves(self) -> list[int]:
        """``TryAllocate``'s order: depth first, each parent's children with
        pending resources in the fair sort (stable: pre-order on ties)."""
        h, state = self.state.hierarchy, self.state
        infos = self.queues(None, None)
        consider = self.params.priority_sort
        def cmp(a: int, b: int) -> int:
            return (-1 if queue_less(infos[a], infos[b], consider)
                    else 1 if queue_less(infos[b], infos[a], consider) else 0)
        key = cmp_to_key(cmp)
        out: list[int] = []

        def walk(n: int) -> None:
            if h.is_leaf(n):
                if state.pending(n) > 0:
                    out.append(n)
                return
            kids = [c for c in h.children[n] if strictly_greater_than_zero(infos[c].pending)]
            for c in sorted(kids, key=key):
                walk(c)
        walk(0)
        return out
