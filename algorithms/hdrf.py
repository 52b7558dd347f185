"""Hierarchical Dominant Resource Fairness (H-DRF): dynamic, and with preemption.

Source: Bhattacharya, Culler, Friedman, Ghodsi, Shenker, Stoica, *Hierarchical
Scheduling for Diverse Datacenter Workloads*, SoCC 2013
(``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``).

*Static H-DRF* (§3.1, Algorithm 1) defines the allocation the dynamic
algorithm aims at; its exact water-filling (``static_hdrf``) and the
``static-hdrf`` policy live in :mod:`hierfair.algorithms.hdrf_static` and are
re-exported here.

*Dynamic H-DRF* (§3.4, Algorithms 2-4) schedules whole tasks so that the
static allocation is reached in a running system.  It changes how an internal
node's consumption is attributed (Algorithm 3): (1) *rescaling to minimum
nodes* -- every non-blocked demanding child's consumption vector is scaled so
that its weighted dominant share equals the smallest among them; (2)
*ignoring blocked nodes* -- blocked children are neither used for the minimum
nor rescaled, only added; and (3) saturated resources are left out of
dominant shares.  With whole tasks, what is blocked, saturated and rescaled
is open to reading; the ``attribution`` parameter names four
(:class:`HDRFParams`): ``literal`` (Algorithms 2-4 as printed),
``blocked-fits`` (hdrf's reading before issue 11), ``frozen`` and
``literal-frozen``, the default: Algorithm 2's W, Y and A as printed with
blocked children scaled down to the minimum and every resource counted --
the reading that did best on 300 random trees (no guarantee broken, no loss
to churn; benchmarks/hdrf_readings.py).  None converges everywhere:
experiments/hdrf-literal-frozen-counterexample.yaml is a tree where the
default does not and ``frozen`` does (docs/algorithms.md).
``hdrf-rescale-only`` keeps (1) and drops (2) and (3): the intermediate
algorithm the paper shows failing on Fig. 5.

See docs/algorithms.md for every reading we made of the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator

from hierfair.algorithms.hdrf_static import (  # noqa: F401 - the static part, re-exported
    TIE,
    StaticAllocation,
    StaticHDRF,
    static_hdrf,
    static_targets,
)
from hierfair.fields import Strict
from hierfair.sim.policy import (
    NoParams,
    PolicyView,
    room_on_one_server,
    running_by_leaf,
)
from hierfair.sim.treewalk import TreeView, TreeWalkPolicy


# ---------------------------------------------------------------------------
# Dynamic H-DRF (Algorithms 2-4)
# ---------------------------------------------------------------------------
def rescaled_shares(tree: TreeView, alloc: np.ndarray, in_set: np.ndarray,
                    inv_total: np.ndarray, demanding: np.ndarray | None = None
                    ) -> np.ndarray:
    """Algorithm 3 (UpdateS), vectorised level by level from the leaves up.

    ``alloc`` holds the leaves' consumption vectors; ``in_set`` flags the
    leaves whose shares define the minimum (the non-blocked ones);
    ``inv_total`` is ``1 / R_j`` for the resources that count in dominant
    shares and 0 for those left out.  Returns every node's (unweighted)
    dominant share of its rescaled consumption.

    With ``demanding`` None (the paper's rule) the children in the set are
    rescaled to the minimum and the others added as they are.  With
    ``demanding`` given (the *frozen* rule, docs/algorithms.md) every child
    -- blocked, non-demanding or not -- is scaled *down* to the minimum,
    never up, and below a node with no child in the set the minimum is taken
    over its demanding children: a blocked child counts with what it held
    when the resources now being allocated saturated, and a child that
    stopped demanding with no more than its siblings' level.

    Weights enter the rescaling: a child of weight ``w_c`` is scaled to
    dominant share ``w_c * M`` where ``M`` is the smallest *weighted* share
    ``s/w`` in the set -- the share it would hold if its siblings were equal.
    """
    n = tree.n
    w = tree.weights
    U = alloc.copy()
    inset = in_set.copy()
    share = np.zeros(n)
    for nodes in tree.levels:
        s = (U[nodes] * inv_total).max(axis=1)
        share[nodes] = s
        par = tree.parent[nodes]
        sel = inset[nodes]
        least = np.full(n, np.inf)
        np.minimum.at(least, par[sel], s[sel] / w[nodes[sel]])
        scale = np.ones(len(nodes))
        if demanding is None:
            ok = sel & (s > 0)
            scale[ok] = least[par[ok]] * w[nodes[ok]] / s[ok]
        else:
            dem = demanding[nodes]
            fallback = np.full(n, np.inf)
            np.minimum.at(fallback, par[dem], s[dem] / w[nodes[dem]])
            least = np.where(np.isfinite(least), least, fallback)
            ok = (s > 0) & np.isfinite(least[par])
            scale[ok] = np.minimum(1.0, least[par[ok]] * w[nodes[ok]] / s[ok])
        U[np.unique(par)] = 0.0
        np.add.at(U, par, U[nodes] * scale[:, None])
        np.logical_or.at(inset, par, inset[nodes])
    return share


#: The readings of Algorithms 2-4 (docs/algorithms.md, "hdrf"); ``paper`` is
#: the old name of ``blocked-fits`` and still accepted.
Reading = Literal["frozen", "literal", "blocked-fits", "literal-frozen"]
OLD_NAMES: dict[str, str] = {"paper": "blocked-fits"}


class HDRFParams(Strict):
    #: How Algorithm 3 attributes consumption to internal nodes
    #: (docs/algorithms.md, "hdrf", with the measurements behind the default).
    #: "literal": Algorithms 2-4 as printed -- Y is the support of the
    #: released vector W, A the demanding leaves that use only resources in Y.
    #: "blocked-fits" (formerly "paper"): a leaf is blocked when its next task
    #: cannot be placed, Y the resources some placeable task asks for.
    #: "frozen": blocked-fits's set, every child scaled *down* to the minimum,
    #: every resource counted.
    #: "literal-frozen" (default): literal's W, Y and A with frozen's scaling.
    attribution: Reading = "literal-frozen"

    @field_validator("attribution", mode="before")
    @classmethod
    def _old_name(cls, value: object) -> object:
        return OLD_NAMES.get(value, value) if isinstance(value, str) else value


@dataclass(frozen=True)
class Attribution:
    """What Algorithm 3 needs from a reading: the leaves whose shares set the
    minimum ``M`` (the non-blocked ones, the paper's set A), the resources
    that count in dominant shares (the paper's Y), whether the children
    outside the set are scaled down to ``M`` too (``frozen``), and the leaves
    Algorithm 4 may serve (``literal``: those that can use ``W``)."""

    in_set: np.ndarray  # per node (leaf rows set), bool
    counted: np.ndarray  # per resource, bool
    down_only: bool = False
    reachable: np.ndarray | None = None  # per node; None: every leaf whose task fits


class DynamicHDRF(TreeWalkPolicy[HDRFParams]):
    """Dynamic H-DRF (H-DRF §3.4, Algorithms 2-4); the reference implementation.

    Per decision: the reading (:meth:`attribution`, chosen by the
    ``attribution`` parameter) says which leaves are not blocked, which
    resources count and which leaves may be served; Algorithm 3 rescales
    every node's consumption from those (:func:`rescaled_shares`); the shared
    walk steps from the root to the schedulable child with the lowest
    weighted share (Algorithm 4).  Cost: O(n * m) per decision for n nodes,
    m resources.
    """

    name: ClassVar[str] = "hdrf"
    description: ClassVar[str] = ("dynamic H-DRF: rescale to the minimum non-blocked child, "
                                  "ignore blocked nodes and saturated resources (H-DRF Alg. 2-4)")
    Params: ClassVar[type[BaseModel]] = HDRFParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        #: W of Algorithm 2 under churn: what tasks released since the last
        #: round ended (zero once a round has allocated what it could).
        self._released = np.zeros(len(self.total))
        self._attribution: Attribution

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        super().on_task_finish(leaf, demand)
        self._released += demand

    def leaf_status(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The shared status, with this decision's attribution fixed and the
        leaves it may not serve taken out of ``fits``."""
        demanding, fits, demand = super().leaf_status()
        self._attribution = a = self.attribution(demanding, fits, demand)
        return demanding, fits if a.reachable is None else fits & a.reachable, demand

    def select(self) -> int | None:
        leaf = super().select()
        if leaf is None:  # the round is over: what was released is allocated
            self._released[:] = 0.0
        return leaf

    def scores(self, demanding: np.ndarray, fits: np.ndarray,
               demand: np.ndarray) -> np.ndarray:
        a = self._attribution
        inv = np.where(a.counted, self.inv_total, 0.0)
        share = rescaled_shares(self.tree, self.state.alloc, a.in_set, inv,
                                demanding if a.down_only else None)
        return share / self.tree.weights

    # -- the readings ----------------------------------------------------------
    def attribution(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                    demand: np.ndarray) -> Attribution:
        """The reading the ``attribution`` parameter names, from the demanding
        leaves, whether their next task fits, and its demand vector."""
        reading = self.params.attribution
        return getattr(self, "_" + reading.replace("-", "_"))(leaf_demanding, fits, demand)

    def _literal(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                 demand: np.ndarray) -> Attribution:
        """Algorithms 2-4 as printed.  ``W``, the resources to allocate, is
        what tasks released since the last round (a task's vector, under
        churn); ``Y`` = the nonzero resources of ``W``; ``A`` = the demanding
        leaves that use only resources in ``Y`` (whether or not their next
        task fits), and only they can "be scheduled using W" (Algorithm 4).
        When no leaf of ``A`` can place its task -- nothing was released (the
        first fill, arrivals), or what was is allocated -- ``W`` is every free
        resource, so a resource leaves ``Y`` once it is fully used."""
        for w in (self._released, self.state.free_total):
            y = w > TIE * self.total
            usable = leaf_demanding & ~(demand[:, ~y] > 0).any(axis=1)
            if (usable & fits).any():
                break
        return Attribution(usable, y, reachable=usable)

    def _blocked_fits(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                      demand: np.ndarray) -> Attribution:
        """Blocked: the leaf's next task cannot be placed now (the discrete form
        of "a resource it requires is saturated"); ``Y``: the resources some
        placeable pending task asks for (:func:`unsaturated_resources`)."""
        placeable = leaf_demanding & fits
        return Attribution(placeable, unsaturated_resources(demand, placeable))

    def _frozen(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                demand: np.ndarray) -> Attribution:
        """``blocked-fits``'s set, every resource counted, and every child
        scaled down (never up) to the minimum: a blocked child counts with at
        most what it held when its resources saturated, one that stopped
        demanding with at most its siblings' level."""
        return Attribution(leaf_demanding & fits, np.ones(len(self.total), dtype=bool),
                           down_only=True)

    def _literal_frozen(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                        demand: np.ndarray) -> Attribution:
        """``literal``'s W, A and the leaves it may serve, with ``frozen``'s
        attribution: every resource counted, every child scaled down (never
        up) to the minimum of A."""
        lit = self._literal(leaf_demanding, fits, demand)
        return Attribution(lit.in_set, np.ones(len(self.total), dtype=bool), down_only=True,
                           reachable=lit.reachable)


class RescaleOnlyHDRF(DynamicHDRF):
    """H-DRF with rescaling to the minimum demanding child only (H-DRF §3.4,
    "Rescaling to Minimum Nodes"): blocked children still set the minimum and
    saturated resources still count.  Fails on Fig. 5 (n3,2 gets 2/3 of the
    GPUs instead of 1/2) -- kept to show that failure."""

    # no parameters: it overrides the one reading hdrf's params choose
    Params: ClassVar[type[BaseModel]] = NoParams
    name: ClassVar[str] = "hdrf-rescale-only"
    description: ClassVar[str] = ("H-DRF with rescaling but without ignoring blocked nodes "
                                  "(the §3.4 intermediate that fails on Fig. 5)")

    def attribution(self, leaf_demanding: np.ndarray, fits: np.ndarray,
                    demand: np.ndarray) -> Attribution:
        return Attribution(leaf_demanding, np.ones(len(self.total), dtype=bool))


def unsaturated_resources(demand: np.ndarray, placeable: np.ndarray) -> np.ndarray:
    """Resources still allocatable: some demanding leaf whose next task fits
    asks for them.  Our discrete reading of "saturated" (docs/algorithms.md):
    a resource no pending task that needs it can get is saturated, even if
    crumbs of it are free."""
    return (demand[placeable] > 0).any(axis=0)


# ---------------------------------------------------------------------------
# H-DRF with preemption (our design; H-DRF §7 future work)
# ---------------------------------------------------------------------------
class PreemptiveParams(HDRFParams):
    #: Only preempt from leaves above their static share by more than this
    #: many of their own tasks (avoids ping-pong on whole-task rounding).
    margin_tasks: float = Field(1.0, ge=0)


class PreemptiveHDRF(DynamicHDRF):
    """Dynamic H-DRF that preempts to give a starving leaf its share faster.

    H-DRF's §7 suggests "pre-emptions could be added to H-DRF to enable nodes
    achieve their dominant shares faster".  Our design: before each round,
    find the demanding leaf furthest below its *static H-DRF* dominant share
    (recomputed when demand changes, as ``static-hdrf``'s oracle does) whose
    next task does not fit.  Victims are the leaves above their static share
    by more than ``margin_tasks`` of their tasks, the most over first; their
    most recently started tasks are stopped, on one server, until the starving
    task fits there -- never taking a victim below its static share.  Then
    dynamic H-DRF schedules as usual.  One beneficiary per round.

    Cost: a static H-DRF water-filling per demand change plus O(running tasks)
    per round, on top of ``hdrf``.
    """

    name: ClassVar[str] = "hdrf-preemptive"
    description: ClassVar[str] = ("H-DRF that preempts leaves above their static H-DRF share "
                                  "for a starving leaf (our design for H-DRF §7)")
    Params: ClassVar[type[BaseModel]] = PreemptiveParams
    params: PreemptiveParams

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        self._leaves = list(state.hierarchy.leaves)
        self._key: tuple | None = None
        self._target = np.zeros(state.hierarchy.n_nodes)

    def preemptions(self) -> list[tuple[int, int]]:
        state = self.state
        self._key, target = static_targets(state, self._leaves, self._key, self._target)
        self._target = target
        share = (state.alloc * self.inv_total).max(axis=1)
        starving = [(share[leaf] / target[leaf], leaf) for leaf in self._leaves
                    if state.pending(leaf) > 0 and target[leaf] > 0
                    and share[leaf] < target[leaf] and not state.fits(state.next_demand(leaf))]
        if not starving:
            return []
        _, leaf = min(starving)
        need = state.next_demand(leaf)
        by_leaf = running_by_leaf(state)
        margin = self.params.margin_tasks
        over = []
        for victim, tasks in by_leaf.items():
            one = float((state.task_info(tasks[-1]).demand * self.inv_total).max())
            if victim != leaf and share[victim] - margin * one > target[victim]:
                over.append((share[victim] - target[victim], victim, one))

        def candidates():  # most over first; never below the static share
            for room, victim, one in sorted(over, reverse=True):
                for task in reversed(by_leaf[victim]):
                    if room - one < 0:
                        break
                    room -= one
                    yield task

        return [(t, leaf) for t in room_on_one_server(state, need, candidates())]
