"""What stops a run early: a preemption loop (found here and stopped), a
task stopped too often (:class:`Livelock`), the wall-clock deadline
(:class:`RunTimeout`); and what a stopped task loses (:class:`Interruptions`).

Preemption loops: a run that would go round forever, found and stopped.

Production schedulers have shipped such loops (Kueue #6774: two weight-0
queues preempt each other for ever; docs/algorithms.md, "kueue").  A run is
in a loop when, within one instant, the same tasks run and the same tasks
wait, with the same work left, as after an earlier round of preemptions,
and nothing finished, arrived or failed since -- no time has passed, so
nothing a policy reads has changed: the policy sees what it saw then and, being deterministic,
will do what it did then, again and again.  (Under ``restart`` each round
also throws the preempted work away, so no task ever finishes.)

:class:`LoopWatch` keeps a digest of that state after each round of
preemptions within the instant; the simulator asks it after every round and
stops the run with its one-line reason.  States at different times are
never compared: a policy may read the clock (PDRF's thresholds, task ages),
so a repeat at a later time is not a loop -- a loop that spans time
(thrashing while evictions take time, Kueue #13662) is not caught here; a task stopped
:data:`MAX_ATTEMPTS` times stops the run as a loop too (a :class:`Livelock`).
Under ``checkpoint`` with an overhead the work left grows with every swap,
so a same-instant swap loop ends as a Livelock, not here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, NamedTuple

from hierfair.sim.ledger import Ledger
from hierfair.sim.model import Hierarchy, shown


class RunTimeout(Exception):
    """The run passed its wall-clock deadline (``Simulator(deadline=...)``)."""


class Livelock(RuntimeError):
    """A task was stopped :data:`MAX_ATTEMPTS` times without finishing: the
    run would never end (a policy that preempts faster than work completes,
    e.g. PDRF with a small threshold; docs/algorithms.md, "pdrf"; or queues
    that thrash while evictions take time, Kueue #13662).  The simulator stops
    the run there as a loop (status ``loop``, tables kept), as it does a
    same-instant one."""


#: Attempts of one task after which a run is declared livelocked.  Outages
#: and failures stop a task a few times; a thousand is a loop.
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class Interruptions:
    """What happens to a task that stops before finishing."""

    mode: Literal["restart", "checkpoint"] = "restart"
    overhead: float = 0.0  # checkpoint: seconds added to resume
    #: seconds a preempted task keeps its server before it is gone (a job's
    #: own ``eviction_latency`` overrides it); 0: at once
    eviction_latency: float = 0.0


#: Victims remembered for the message.
_KEEP = 1000


class Seen(NamedTuple):
    time: float
    preemptions: int


class LoopWatch:
    """Fingerprints of the run's state at preemptions since the last
    progress (a task finished or a job arrived)."""

    def __init__(self) -> None:
        self._seen: dict[bytes, Seen] = {}
        self._progress: tuple[float, int, int] = (-1.0, -1, -1)
        self._victims: list[int] = []  # the leaves preempted last, in order
        #: The loop found, in one line ("" while none).
        self.reason = ""
        #: When it was found (None while none).
        self.found_at: float | None = None

    def stop(self, reason: str, now: float) -> None:
        """A loop found elsewhere (a livelock: a task stopped
        :data:`MAX_ATTEMPTS` times, a loop that spans time) stops the run too."""
        self.reason, self.found_at = reason, now

    def preempted(self, leaf: int) -> None:
        self._victims.append(leaf)
        if len(self._victims) > 2 * _KEEP:  # only a loop's last round is named
            del self._victims[:-_KEEP]

    def check(self, ledger: Ledger, hierarchy: Hierarchy, now: float, arrived: int,
              preempted: int) -> bool:
        """Whether the state now repeats one seen after fewer preemptions
        with no progress in between (then :attr:`reason` says so).
        ``arrived`` counts arrivals and fault events (outages, failures):
        whatever changes the run from outside the policy."""
        progress = (now, ledger.unfinished, arrived)
        if progress != self._progress:  # time moved, a finish, an arrival: all may change
            self._seen.clear()
            self._progress = progress
        # the work left too: under checkpoints a repeat with less left is progress;
        # a digest, not the bytes: a state is O(tasks)
        state = hashlib.blake2b(b"".join((
            ledger.state[:ledger.filled].tobytes(), ledger.job_next.tobytes(),
            ledger.left[:ledger.filled].tobytes(),
            repr(sorted((j, tuple(q)) for j, q in ledger.job_requeued.items() if q)).encode(),
        )), digest_size=16).digest()
        before = self._seen.get(state)
        if before is not None and preempted > before.preemptions:
            leaves = ", ".join(dict.fromkeys(shown(hierarchy.paths[x])
                                             for x in self._victims[-(preempted - before.preemptions):]))
            self.reason = (f"preemption loop: at simulated time {now:g} the same tasks run and "
                           f"wait as at {before.time:g}, after {preempted - before.preemptions} "
                           f"preemption(s) (of {leaves}) with nothing finished or arrived; "
                           "the run would never end, so it stops here")
            self.found_at = now
            return True
        if before is None:
            self._seen[state] = Seen(now, preempted)
        return False
