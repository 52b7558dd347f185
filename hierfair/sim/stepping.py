"""Stepping a run by hand: everything arrives at once, then tasks finish one
at a time (``hierfair allocate`` replays the papers' static examples so,
and the property probes fill allocations so).  The steps are not time: an
eviction latency is not applied (:mod:`hierfair.sim.stops`).
:class:`HandStepping` is that half of :class:`~hierfair.sim.loop.Simulator`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hierfair.sim.loop import Simulator

    _Base = Simulator
else:
    _Base = object


class HandStepping(_Base):
    """``submit_all`` and ``finish_earliest``."""

    def submit_all(self) -> None:
        """Every job arrives now; then schedule until nothing more fits."""
        self._manual = True
        for job in range(len(self.workload.jobs)):
            self._arrive(job)
        self._schedule()
        self._record_step()

    def finish_earliest(self) -> bool:
        """The earliest-started running task finishes; then schedule again.

        Returns False when no task is running.
        """
        self._manual = True
        running = self._ledger.running_tasks()
        if not running:
            return False
        self._now += 1.0  # one churn step per unit of (fictitious) time
        self.view.now = self._now
        self._finish(running[0])
        self._schedule()
        self._record_step()
        return True
