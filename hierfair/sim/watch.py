"""A run's wall clock: its deadline, and its progress reports.

The loop looks at the clock once every 1,024 of its steps, and only when a
run has a deadline or a reporter: a run with neither compares one attribute
with None per step, as it did before either existed.  A reporter is called
at most once every ``every`` wall-clock seconds with where the run stands;
what it shows (a bar, a log line) is the caller's business
(:mod:`hierfair.experiment.progress`).
"""

from __future__ import annotations

import math
import warnings
from time import monotonic
from typing import NamedTuple, Protocol

from hierfair.sim.loops import RunTimeout


class Standing(NamedTuple):
    """Where a run stands: simulated time, and tasks finished of all."""

    now: float  # simulated seconds
    until: float | None  # the run's horizon (``run(until=)``), if it has one
    done: int
    total: int

    @property
    def fraction(self) -> float:
        """How far along: the simulated time over the horizon, or the tasks
        finished over all (whichever is further: a run may end early)."""
        tasks = self.done / self.total if self.total else 1.0
        if self.until is None or self.until <= 0 or math.isinf(self.until):
            return tasks
        return max(tasks, min(1.0, self.now / self.until))


class Reporter(Protocol):
    def __call__(self, standing: Standing) -> None: ...


class Watch:
    """The deadline (a ``time.monotonic()`` value) and the reporter of one run."""

    def __init__(self, deadline: float | None = None, report: Reporter | None = None,
                 every: float = 1.0) -> None:
        self.deadline = math.inf if deadline is None else deadline
        self.report = report
        self.every = every
        self._next = monotonic() + every if report is not None else math.inf
        #: the next monotonic() time at which :meth:`overdue` has work to do
        self.due = min(self.deadline, self._next)

    def overdue(self, standing: Standing) -> None:
        """Past :attr:`due`: raise :class:`RunTimeout` past the deadline,
        else report and set the next report's time."""
        t = monotonic()
        if t > self.deadline:
            raise RunTimeout(f"time ran out at simulated time {standing.now:g}")
        if self.report is not None and t >= self._next:
            try:
                self.report(standing)
            except Exception as exc:  # a closed terminal or pipe: the run goes on, unreported
                warnings.warn(f"progress reports stopped: {type(exc).__name__}: {exc}",
                              RuntimeWarning, stacklevel=2)
                self.report = None
            self._next = monotonic() + self.every if self.report is not None else math.inf
        self.due = min(self.deadline, self._next)
