"""Placement questions answered by looking at every server.

:class:`~hierfair.sim.placement.ServerIndex` finds first-fit's server from
its block maxima without a scan; everything else looks at each server's
free vector (the index's ``mirror``, shared, not copied):

* the comparing rules (least-leftover, DRFH's shape distance, Tetris's dot
  product, random: :mod:`hierfair.sim.placement_rules`);
* a placement constraint (a :class:`~hierfair.sim.model.Demand` that may
  use only some servers);
* a headroom with ``count_exempt`` (the room differs per server: what exempt
  tasks hold there counts towards it, :mod:`hierfair.sim.headroom`).

:func:`first_room` is the index's own scan of a range of servers, at the
bottom of its block search.

``random`` draws only in :meth:`ServerScan.choose`, where a task is placed;
whether a demand fits is a question of room alone (:meth:`ServerScan.any_room`),
so the draws do not depend on how often a policy asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hierfair.sim.model import TOLERANCE, eligible_servers
from hierfair.sim.placement_rules import RULES

if TYPE_CHECKING:
    from hierfair.sim.headroom import Headroom

#: The stream of the run's seed that ``random`` placement draws from.
PLACEMENT_STREAM = 0x9D1A


class ServerScan:
    """The servers with room for a demand, and the rule's pick among them."""

    def __init__(self, capacity: np.ndarray, scale: np.ndarray, placement: str,
                 headroom: Headroom | None, free: np.ndarray | None) -> None:
        self.capacity, self.scale, self.headroom = capacity, scale, headroom
        self.first = placement == "first-fit"
        self.rule = RULES.get(placement)
        #: free resources per server (the index's mirror: the same array)
        self.free = free
        #: count_exempt: what exempt tasks hold per server (servers, resources)
        self.held = (np.zeros_like(capacity) if headroom is not None and headroom.count_exempt
                     else None)
        self.use_seed(0)

    def use_seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(np.random.SeedSequence(
            seed, spawn_key=(PLACEMENT_STREAM,)))

    def room(self, demand: np.ndarray) -> np.ndarray:
        """The free space a server needs to take a task of ``demand``: the
        demand, plus the headroom unless the task may use it."""
        if self.headroom is None:
            return demand
        return self.headroom.room(demand, self.scale)

    def hold(self, server: int, need: tuple[float, ...], sign: float) -> None:
        """count_exempt: a task that may use the headroom starts (+1) or stops
        (-1) on ``server``."""
        assert self.headroom is not None and self.held is not None
        d = np.array(need)
        if self.headroom.exempts(d, self.scale):
            self.held[server] += sign * d

    def room_mask(self, demand: np.ndarray) -> np.ndarray:
        """The servers ``demand`` may use (its constraint) with room for it
        (and, with a headroom, for what it must leave free)."""
        free = self.free
        if free is None:
            raise ValueError("a placement constraint needs the free-space mirror: build "
                             "the index with mirror=True")
        servers = eligible_servers(demand)
        d = np.asarray(demand)  # the vector alone; the mask is ``servers``
        if self.held is not None:
            assert self.headroom is not None
            ok = np.all(free >= d - TOLERANCE, axis=1)
            if not self.headroom.exempts(d, self.scale):
                ok &= np.all(free - d + self.held >= self.headroom.kept(d) - TOLERANCE, axis=1)
        else:
            ok = np.all(free >= self.room(d) - TOLERANCE, axis=1)
        return ok if servers is None else ok & servers

    def any_room(self, demand: np.ndarray) -> bool:
        return bool(self.room_mask(demand).any())

    def choose(self, demand: np.ndarray) -> int | None:
        """The server the rule picks among those with room, or None."""
        ok = self.room_mask(demand)
        if not ok.any():
            return None
        if self.first or self.rule is None:
            return int(np.argmax(ok))
        assert self.free is not None
        return self.rule(self.free, np.asarray(demand), ok, self.scale, self.capacity,
                         self.rng)


def first_room(cols: list[list[float]], need: list[float], start: int, stop: int) -> int:
    """The first ``i`` in ``start..stop-1`` with ``cols[r][i] >= need[r]`` for
    every resource r, or -1: the scan at the bottom of every search, written
    out for up to three resources (a zip per server costs more than the test)."""
    m = len(cols)
    if m == 2:
        a, b = cols
        x, y = need
        for i in range(start, stop):
            if a[i] >= x and b[i] >= y:
                return i
    elif m == 3:
        a, b, c = cols
        x, y, z = need
        for i in range(start, stop):
            if a[i] >= x and b[i] >= y and c[i] >= z:
                return i
    else:
        for i in range(start, stop):
            for col, n in zip(cols, need):
                if col[i] < n:
                    break
            else:
                return i
    return -1
