"""Where a task goes once the policy has chosen whose task runs next.

Fair-sharing policies decide *whose* task runs; placement decides *which
server* holds it.  The index keeps every server's free vector and answers two
questions quickly:

* ``fits(d)`` -- does any server have room for demand ``d``?  Policies ask this
  many times per decision, then the simulator asks ``choose(d)`` for the same
  demand, so answers are cached per demand.
* ``choose(d)`` -- pick a server: *first-fit* (lowest server index with room)
  or one of the rules that compare every server with room
  (:mod:`hierfair.sim.placement_rules`: least-leftover, also called best-fit;
  DRFH's shape distance; Tetris's dot product; random).

First-fit keeps, per resource, a shallow tree of upper bounds of the
maxima over blocks of ``BRANCH`` servers (1,200 servers: 75 blocks, 5
super-blocks, one root): a block whose bounds cannot hold ``d`` is skipped
whole, so a search costs O(m B log_B S) at worst (the per-resource maxima may
come from different servers, so the search can backtrack; it never returns a
wrong server).  A release raises the bounds on its way up while they are
exceeded, usually not past its block; an allocation lowers only the server's
own row and leaves the bounds above it loose (still bounds) -- a search that
enters a block in vain tightens that block's bounds from the level below.
Cached first-fit answers are kept exact instead of dropped: only one server's
free space changes per update, so an allocation can only move an answer that
*was* that server (to a later one, searched from there), and a release can
only move an answer earlier (to that server, if it now fits).  Once a
demand fits nowhere (a contended cluster, where a search of loose or
disjoint per-resource maxima would enter blocks in vain), its answer keeps
the exact set of servers with room as a bitset, updated per change: its
first fit is then the lowest bit, with no search.  The comparing rules look
at every server and recompute after every change.

Every index (this one, or a policy's own, see ``BasePolicy.make_index``) takes
demands as ``np.ndarray`` in queries and as plain float tuples in updates.

**Headroom** (:mod:`hierfair.sim.headroom`): a ``placement`` carrying one has
the index search each demand's room (``d + H``, or ``d``) instead of ``d``;
with ``count_exempt``, scan every server per query.  Without one the index
does exactly what it did before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from hierfair.sim.model import TOLERANCE, eligible_servers
from hierfair.sim.placement_rules import PLACEMENTS, Placement
from hierfair.sim.placement_scan import ServerScan, first_room

__all__ = ["BRANCH", "PLACEMENTS", "Index", "Placement", "ServerIndex", "TOLERANCE",
           "first_room"]

if TYPE_CHECKING:  # a placement carries one; this module builds none
    from hierfair.sim.headroom import Headroom

# More cached first-fit answers than this and the cache is dropped: each update
# touches every cached answer, which only pays while there are few demands.
_MAX_ANSWERS = 64

_DOWN = -float("inf")

#: Servers per block of the first-fit maxima (and blocks per super-block).
BRANCH = 16


class Index(Protocol):
    """What the simulator needs from a placement index."""

    total: np.ndarray
    release_epoch: int  # bumped whenever resources are released

    @property
    def free_total(self) -> np.ndarray: ...

    @property
    def saturated(self) -> np.ndarray: ...

    def fits(self, demand: np.ndarray) -> bool: ...

    def choose(self, demand: np.ndarray) -> int | None: ...

    def free_of(self, server: int) -> np.ndarray: ...

    def allocate(self, server: int, need: tuple[float, ...]) -> None: ...

    def release(self, server: int, need: tuple[float, ...]) -> None: ...

    def set_down(self, server: int) -> None: ...

    def set_up(self, server: int) -> None: ...

    def duration_factor(self, server: int) -> float: ...


class ServerIndex:
    """Free resources per server, with fast fit queries and placement."""

    def __init__(self, capacities: np.ndarray, placement: Placement = "first-fit",
                 mirror: bool = False) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"unknown placement {placement!r}; choose one of {PLACEMENTS}")
        #: Kept free on every server (None: none), from a KeepHeadroom placement.
        self.headroom: Headroom | None = getattr(placement, "headroom", None)
        self.placement = str(placement)
        self._first = placement == "first-fit"
        self._random = placement == "random"
        self.capacity = np.array(capacities, dtype=np.float64)
        self.total = self.capacity.sum(axis=0)
        self._scale = np.where(self.total > 0, self.total, 1.0)
        if self.headroom is not None:
            if mirror:  # compiled code testing fits on the mirror would not see it
                raise ValueError("an index whose fits are tested on its mirror "
                                 "(mirror=True) cannot keep a headroom")
            if len(self.headroom.vector) != self.capacity.shape[1]:
                raise ValueError(f"headroom {self.headroom.vector} is not over the "
                                 f"{self.capacity.shape[1]} resources")
        #: count_exempt: every query scans the servers (the room differs per server)
        self._scan_all = self.headroom is not None and self.headroom.count_exempt
        # Plain Python floats: per-task updates touch a few numbers, where a
        # numpy call would cost more than the arithmetic.
        self._free_total: list[float] = self.total.tolist()
        self._resources = range(self.capacity.shape[1])
        # levels[k][r][i]: the most of resource r free in block i of level k;
        # level 0 holds every server's free resources
        self._levels: list[list[list[float]]] = [self.capacity.T.tolist()]
        while len(self._levels[-1][0]) > 1:
            self._levels.append([[max(col[i:i + BRANCH]) for i in range(0, len(col), BRANCH)]
                                 for col in self._levels[-1]])
        self._free = self._levels[0]
        self._upper = self._levels[1:]
        # demand bytes -> [need with tolerance, chosen server or None], updated in place
        self._answers: dict[bytes, list] = {}
        self._masked: list[bytes] = []  # keys of answers for constrained demands
        #: Free resources per server as one array, (servers, resources), the
        #: same floats as the lists: best-fit's view, and kept on request
        #: (``mirror``) for compiled code that tests fits itself (hdrf-fast).
        self.mirror = (self.capacity.copy() if mirror or not self._first or self._scan_all
                       else None)
        #: With the mirror: per block of BRANCH servers, whether its rows changed
        #: since a compiled reader last took their maxima (set here, cleared
        #: there; an allocation leaves them bounds, but loose ones prune nothing).
        self.mirror_dirty = (np.ones(-(-len(self.capacity) // BRANCH), np.uint8)
                             if self.mirror is not None else None)
        #: the questions answered by a scan of every server
        self._scanner = ServerScan(self.capacity, self._scale, self.placement, self.headroom,
                                   self.mirror)
        self.release_epoch = 0

    # -- queries -------------------------------------------------------------
    @property
    def free(self) -> np.ndarray:
        """Free resources per server, shape (servers, resources)."""
        return np.array(self._free).T.copy()

    @property
    def free_total(self) -> np.ndarray:
        return np.array(self._free_total)

    def free_total_row(self) -> list[float]:
        """``free_total`` as the plain floats kept (read it, never modify it)."""
        return self._free_total

    @property
    def saturated(self) -> np.ndarray:
        """Resources that are fully used cluster-wide (H-DRF §3.4)."""
        return self.free_total <= TOLERANCE * self._scale

    def free_of(self, server: int) -> np.ndarray:
        return np.array([col[server] for col in self._free])

    def fits(self, demand: np.ndarray) -> bool:
        key = demand.tobytes()
        hit = self._answers.get(key)
        if hit is not None:  # the usual case: one dict look-up, no second call
            return hit[1] is not None
        if self._random:  # room alone: random draws only where a task is placed
            self._answers[key] = [[], 0 if self._scanner.any_room(demand) else None, None]
            return self._answers[key][1] is not None
        return self.choose(demand) is not None

    def choose(self, demand: np.ndarray) -> int | None:
        """The server the placement rule picks for ``demand``, or None."""
        if self._random:
            return self._scanner.choose(demand)
        key = demand.tobytes()
        hit = self._answers.get(key)
        if hit is not None:
            return hit[1]
        constrained = eligible_servers(demand) is not None
        if not self._first or self._scan_all or constrained:
            server = self._scanner.choose(demand)
            self._answers[key] = [[], server, None]
            if self._first and not self._scan_all:  # dropped at the next change
                self._masked.append(key)
            return server
        need = [d - TOLERANCE for d in self.room(demand).tolist()]
        server = self._first_from(0, need)
        if len(self._answers) >= _MAX_ANSWERS:
            self._answers.clear()
        # no room anywhere: from now on keep the exact set of servers with room
        self._answers[key] = [need, server, None if server is not None else 0]
        return server

    def room(self, demand: np.ndarray) -> np.ndarray:
        """The free space a server needs to take a task of ``demand``: the
        demand, plus the headroom unless the task may use it."""
        return demand if self.headroom is None else self._scanner.room(demand)

    def use_seed(self, seed: int) -> None:
        """Draw ``random`` placements from the run's seed (the simulator calls
        this once, before the first task; a stream of its own)."""
        self._scanner.use_seed(seed)

    def duration_factor(self, server: int) -> float:
        """How much slower a task starting now on ``server`` runs (never: tasks
        here get what they demand)."""
        return 1.0

    # -- updates -------------------------------------------------------------
    # allocate and release run once per task each: written out (a call per
    # resource would cost more than the update), a resource the task does not
    # use skipped.
    def allocate(self, server: int, need: tuple[float, ...]) -> None:
        if self._scan_all:
            self._scanner.hold(server, need, 1.0)
        total, free = self._free_total, self._free
        for r in self._resources:
            n = need[r]
            if n:
                total[r] -= n
                new = free[r][server] = free[r][server] - n
                if self.mirror is not None:
                    self.mirror[server, r] = new
                    self.mirror_dirty[server // BRANCH] = 1  # type: ignore[index]
        self._shrunk(server)  # the blocks' bounds stay bounds: see _scan

    def release(self, server: int, need: tuple[float, ...]) -> None:
        if self._scan_all:
            self._scanner.hold(server, need, -1.0)
        total, free, upper = self._free_total, self._free, self._upper
        for r in self._resources:
            n = need[r]
            if not n:
                continue
            total[r] += n
            below = free[r]
            new = below[server] = below[server] + n
            if self.mirror is not None:
                self.mirror[server, r] = new
                self.mirror_dirty[server // BRANCH] = 1  # type: ignore[index]
            if not self._first:
                continue
            i = server
            for level in upper:  # up while the block's maximum rises
                col = level[r]
                i //= BRANCH
                if new <= col[i]:
                    break
                col[i] = new
        self._grew(server)

    def set_down(self, server: int) -> None:
        """The server fails: nothing fits on it until :meth:`set_up` (its
        tasks must have been released first)."""
        for r, col in enumerate(self._free):
            self._free_total[r] -= col[server]
            self._put(server, r, col[server], _DOWN)
        self._shrunk(server)

    def set_up(self, server: int) -> None:
        for r, cap in enumerate(self.capacity[server].tolist()):
            self._put(server, r, self._free[r][server], cap)
            self._free_total[r] += cap
        self._grew(server)

    # -- internals -----------------------------------------------------------
    def _put(self, server: int, r: int, old: float, new: float) -> None:
        """Set one free amount and carry it up the blocks' maxima."""
        below = self._free[r]
        below[server] = new
        if self.mirror is not None:
            self.mirror[server, r] = new
            self.mirror_dirty[server // BRANCH] = 1  # type: ignore[index]
        if not self._first:
            return
        i = server
        for level in self._upper:  # up while the block's maximum changes
            col = level[r]
            i //= BRANCH
            top = col[i]
            if new > top:
                col[i] = new
            elif new < top == old:  # the maximum itself fell: recount the block
                lo = i * BRANCH
                new = max(below[lo:lo + BRANCH])
                if new == top:
                    return
                col[i] = new
            else:
                return
            old, below = top, col

    def _drop_masked(self) -> None:
        """Forget the answers for constrained demands: first-fit's in-place
        updates below know nothing of their masks."""
        for key in self._masked:
            self._answers.pop(key, None)
        self._masked.clear()

    def _shrunk(self, server: int) -> None:
        """``server`` has less room: only answers that were it can move (later)."""
        if self._masked:
            self._drop_masked()
        if not self._first or self._scan_all:
            self._answers.clear()
            return
        free, bit = self._free, 1 << server
        for answer in self._answers.values():
            room = answer[2]
            if room is None:
                if answer[1] == server:
                    need = answer[0]
                    for col, n in zip(free, need):
                        if col[server] < n:  # no room left for it here: search on
                            found = answer[1] = self._first_from(server + 1, need)
                            if found is None:  # none has room: track who gets some
                                answer[2] = 0
                            break
            elif room & bit:
                for col, n in zip(free, answer[0]):
                    if col[server] < n:
                        room ^= bit
                        answer[2] = room
                        if answer[1] == server:  # the next server with room, or None
                            answer[1] = (room & -room).bit_length() - 1 if room else None
                        break

    def _grew(self, server: int) -> None:
        """``server`` has more room: answers after it (or none) may become it."""
        self.release_epoch += 1
        if self._masked:
            self._drop_masked()
        if not self._first or self._scan_all:
            self._answers.clear()
            return
        free, bit = self._free, 1 << server
        for answer in self._answers.values():
            room, chosen = answer[2], answer[1]
            if room is None:
                if chosen is not None and chosen <= server:
                    continue
            elif room & bit:
                continue
            for col, n in zip(free, answer[0]):
                if col[server] < n:
                    break
            else:  # room for it here
                if room is not None:
                    answer[2] = room | bit
                if chosen is None or chosen > server:
                    answer[1] = server

    def _first_from(self, lo: int, need: list[float]) -> int | None:
        """The lowest server >= ``lo`` with room for ``need``: the rest of
        ``lo``'s block, then the blocks after it, level by level upwards."""
        i = lo
        for k, level in enumerate(self._levels):
            found = self._scan(k, i, min((i // BRANCH + 1) * BRANCH, len(level[0])), need)
            if found is not None:
                return found
            i = i // BRANCH + 1
        return None

    def _scan(self, k: int, start: int, stop: int, need: list[float]) -> int | None:
        """The lowest server under blocks ``start..stop-1`` of level ``k`` with room."""
        cols = self._levels[k]
        i = start
        while (i := first_room(cols, need, i, stop)) >= 0:
            if not k:
                return i
            lo = i * BRANCH
            hi = min(lo + BRANCH, len(self._levels[k - 1][0]))
            found = self._scan(k - 1, lo, hi, need)
            if found is not None:
                return found
            # In vain: allocations left this block's bounds loose; tighten
            # them from the (tighter) bounds of the level below.
            for col, below in zip(cols, self._levels[k - 1]):
                col[i] = max(below[lo:hi])
            i += 1
        return None
