"""A deterministic discrete-event simulator of a shared cluster.

Time jumps from event to event: a job *arrives* at its leaf; a task
*finishes* (or *fails*) on its server; a server goes *down* or comes back
*up*.  All events that share a timestamp are applied first (finishes, task
failures, server failures, repairs, arrivals, then by id), and only then
does the scheduling loop run: the policy may first ask to preempt running
tasks; then the simulator asks it for the next leaf to serve, places that
leaf's next task on a server, and repeats until the policy answers ``None``.
Nothing depends on hash order or the wall clock, so the same inputs always
give the same schedule.

The kernel lives in :mod:`hierfair.sim`, one module per data path:

* :mod:`~hierfair.sim.loop` -- the event loop and the policy's view
  (:class:`Simulator`);
* :mod:`~hierfair.sim.ledger` -- tasks, jobs, leaf queues and the task state
  machine (WAITING -> PENDING -> RUNNING -> FINISHED, and back to PENDING
  when preempted, killed or failed);
* :mod:`~hierfair.sim.usage` -- each node's allocation and running tasks;
* :mod:`~hierfair.sim.placement` -- which server a task goes to;
* :mod:`~hierfair.sim.headroom` -- what every server keeps free for the
  largest task;
* :mod:`~hierfair.sim.events` -- event kinds and failures;
* :mod:`~hierfair.sim.recording` and :mod:`~hierfair.sim.result` -- what a
  run records and the tables it returns.

This package is the public entry point; it re-exports what callers use.
"""

from __future__ import annotations

from hierfair.sim.events import Faults
from hierfair.sim.ledger import TaskState
from hierfair.sim.loop import Interruptions, Livelock, RunTimeout, Simulator
from hierfair.sim.recording import OUTCOMES
from hierfair.sim.result import SimulationResult

__all__ = ["OUTCOMES", "Faults", "Interruptions", "Livelock", "RunTimeout",
           "SimulationResult", "Simulator", "TaskState"]
