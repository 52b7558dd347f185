"""Per-server headroom: resources every server keeps free for the largest task.

H-DRF §5 and §5.2 (docs/algorithms.md, "Per-server headroom").  A
:class:`Headroom` keeps a vector ``H`` free on every server: a task that may
not use the headroom is placed on a server only if the server still has ``H``
free after it (on every resource, or only on those the task demands); a task
"as large as the largest task" may use it.  It changes one thing: the room a
demand is searched for (:meth:`Headroom.room`, ``d + H`` or ``d``), which the
placement index computes once per demand, on a cache miss; everything else (the
search, the cache kept exact, allocations and releases of the real demand)
is unchanged.  (With ``count_exempt`` -- what largest-size tasks hold on a
server counts as headroom kept -- the room differs per server: the index
then scans every server per query, as best-fit does.)  It reaches the
index through the ``placement`` argument, as a
:class:`KeepHeadroom` (a ``str``, the rule's name, carrying the headroom), so
``Simulator(placement=...)`` and ``BasePolicy.make_index`` pass it on as
they are.  Without one the index does exactly what it did before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from hierfair.sim.model import TOLERANCE

#: Which tasks may use the headroom (docs/algorithms.md, "Per-server headroom"):
#: ``componentwise`` -- a task whose demand is at least the headroom on every
#: resource; ``dominant-share`` -- a task whose dominant share (of the
#: cluster's totals) is at least the headroom's.
Exempt = Literal["componentwise", "dominant-share"]
EXEMPTS: tuple[str, ...] = ("componentwise", "dominant-share")
#: What every other task must leave free on its server: ``all`` -- the
#: headroom on every resource; ``used`` -- only on the resources it demands.
Keep = Literal["all", "used"]
KEEPS: tuple[str, ...] = ("all", "used")


@dataclass(frozen=True)
class Headroom:
    """Resources kept free on every server for the largest task (H-DRF §5:
    "H-DRF maintains a headroom equal to the size of the largest task on each
    server, to ensure that large tasks do not get starved out")."""

    vector: tuple[float, ...]  # over the cluster's resources, in order
    exempt: Exempt = "componentwise"
    keep: Keep = "all"
    #: Whether what the tasks that may use the headroom hold on a server
    #: counts as headroom kept there: False -- the others must leave the whole
    #: headroom free even beside a largest-size task using it; True -- only
    #: what those tasks do not already hold of it.
    count_exempt: bool = False

    def __post_init__(self) -> None:
        if self.exempt not in EXEMPTS:
            raise ValueError(f"unknown headroom exemption {self.exempt!r}; "
                             f"choose one of {EXEMPTS}")
        if self.keep not in KEEPS:
            raise ValueError(f"unknown headroom keep {self.keep!r}; choose one of {KEEPS}")
        if any(not (h >= 0) for h in self.vector):
            raise ValueError(f"a headroom is never negative (got {self.vector})")

    def exempts(self, demand: np.ndarray, total: np.ndarray) -> bool:
        """Whether a task of ``demand`` may use the headroom (``total``: the
        cluster's totals, for dominant shares; every one positive)."""
        h = np.asarray(self.vector)
        if self.exempt == "componentwise":
            return bool(np.all(demand >= h - TOLERANCE))
        mine, largest = float(np.max(demand / total)), float(np.max(h / total))
        return mine >= largest * (1 - 1e-9)

    def kept(self, demand: np.ndarray) -> np.ndarray:
        """The headroom a task that may not use it must leave free: on every
        resource, or on the ones it demands."""
        h = np.asarray(self.vector)
        return h if self.keep == "all" else np.where(demand > 0, h, 0.0)

    def room(self, demand: np.ndarray, total: np.ndarray) -> np.ndarray:
        """The free space a server needs to take a task of ``demand`` (not
        counting what exempt tasks hold): the demand itself if the task may
        use the headroom, else the demand plus the headroom it must keep."""
        if self.exempts(demand, total):
            return demand
        return demand + self.kept(demand)


class KeepHeadroom(str):
    """A placement rule (``"first-fit"`` or ``"best-fit"``, which it equals)
    that keeps ``headroom`` on every server: what to pass as ``placement`` to
    :class:`~hierfair.sim.placement.ServerIndex` (and so to the simulator) for a
    headroom."""

    headroom: Headroom | None

    def __new__(cls, rule: str, headroom: Headroom | None = None) -> KeepHeadroom:
        self = super().__new__(cls, rule)
        self.headroom = headroom
        return self

    def __repr__(self) -> str:
        return f"KeepHeadroom({str(self)!r}, {self.headroom!r})"
