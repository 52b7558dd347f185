"""What a property check is and what it returns (:mod:`hierfair.experiment.properties`
holds the checks; this leaf lets the per-server checks share the types)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hierfair.experiment.probe import Probe

EPS = 1e-9


@dataclass(frozen=True)
class Outcome:
    magnitude: float  # worst distance from holding; <= tol: holds
    tol: float
    witness: str = ""  # the worst case in words
    #: the magnitude on the same instance with tasks ``FINER`` times smaller,
    #: in this instance's units (None: not refined)
    fine: float | None = None

    @property
    def missed(self) -> bool:
        """Beyond the tolerance at this instance's grain."""
        return self.magnitude > self.tol + EPS

    @property
    def violated(self) -> bool:
        """Missed, and (where refined) still missed with finer tasks."""
        return self.missed and (self.fine is None or self.fine > self.tol + EPS)


Check = Callable[["Probe"], "Outcome | str"]


@dataclass(frozen=True)
class Property:
    name: str
    title: str
    unit: str
    check: Check
    #: algorithm -> where a paper promises the property for it
    promised: dict[str, str] = field(default_factory=dict)
    #: algorithm -> where a paper says it does *not* have it
    disclaimed: dict[str, str] = field(default_factory=dict)
    running: bool = False  # probed on the running instance (tasks of unequal lengths)
    metric: bool = False  # a number beside the pass/fail properties
    #: how the magnitude scales when every task is made k times smaller:
    #: "share" (an absolute share, compare as is), "tasks" (a count, divide by
    #: k), "" (not refined by the runner: exact counts or times, or a
    #: check that measures finer tasks itself and sets ``fine``)
    refine: str = ""
    #: how many smaller instances the shrinker may try (a search-based check
    #: costs a search per try: fewer, so that make reproduce's audit fits)
    shrink_checks: int = 150
