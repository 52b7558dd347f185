"""The placement rules that compare servers: which server with room takes a task.

Fairness decides *whose* task runs; placement decides *where*.  Every rule
here picks among the servers with room (``ok``) and breaks ties by the lowest
server index, so a run is the same for the same seed.  ``first-fit`` is not
here: it needs no comparison, and :class:`~hierfair.sim.placement.ServerIndex`
answers it from its block maxima without looking at every server.

* ``least-leftover`` (also ``best-fit``, its older name): the server left with
  the least free space, summed over resources as fractions of the pool total.
* ``drfh``: Best-Fit DRFH's heterogeneity (shape) distance (Wang, Li, Liang,
  INFOCOM 2014; TPDS 2015; the formula as issue 28 states it): the server whose free vector has the shape
  closest to the task's demand, ``H(n, l) = sum_r |(d_r/C_r)/(d_1/C_1) -
  (f_r/C_r)/(f_1/C_1)|`` with ``C`` the pool totals and ``f`` the server's
  free vector.  Resource 1 is the first resource the cluster lists; a task
  that does not use it is normalised by its dominant resource instead (the
  paper's tasks all use resource 1; a choice of ours, docs/algorithms.md),
  and a task that needs nothing goes to the first server.
* ``dot-product``: Tetris's alignment (Grandl et al., SIGCOMM 2014: "a
  weighted dot product between the vector of machine's available resources
  and the task's peak usage", as a summary quotes it): the server maximising
  the dot product of the task's demand and the server's free resources, both
  as fractions of that server's capacity (the weighting is our reading).
* ``random``: a server with room, uniformly, from the run's own generator.

All rules take the same arguments: ``free`` (servers x resources), the
``demand``, the mask ``ok`` of servers with room (at least one is True),
``scale`` (the pool totals, zeros replaced by 1), ``capacity`` (servers x
resources) and the generator ``rng``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

Placement = Literal["first-fit", "best-fit", "least-leftover", "drfh", "dot-product",
                    "random"]
#: Every placement a spec may name, first-fit first (the default).
PLACEMENTS: tuple[str, ...] = ("first-fit", "best-fit", "least-leftover", "drfh",
                               "dot-product", "random")
#: One line each, for ``hierfair list`` and docs/spec.md.
PLACEMENT_HELP: dict[str, str] = {
    "first-fit": "the lowest-numbered server with room",
    "best-fit": "least-leftover's older name (same servers, same results)",
    "least-leftover": "the server left with the least free space (pool fractions summed)",
    "drfh": "Best-Fit DRFH: the free vector closest in shape to the demand (INFOCOM'14)",
    "dot-product": "Tetris alignment: the largest demand . free, per server capacity",
    "random": "a server with room, uniformly, from the run's seed",
}

Rule = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                 np.random.Generator], int]


def least_leftover(free: np.ndarray, demand: np.ndarray, ok: np.ndarray, scale: np.ndarray,
                   capacity: np.ndarray, rng: np.random.Generator) -> int:
    leftover = ((free - demand) / scale).sum(axis=1)
    leftover[~ok] = np.inf
    return int(np.argmin(leftover))  # argmin takes the lowest index on ties


def shape_distance(free: np.ndarray, demand: np.ndarray, ok: np.ndarray, scale: np.ndarray,
                   capacity: np.ndarray, rng: np.random.Generator) -> int:
    d = demand / scale
    if not d.any():  # a task that needs nothing has no shape: the first server
        return int(np.argmax(ok))
    ref = 0 if d[0] > 0 else int(np.argmax(d))
    f = free / scale
    with np.errstate(divide="ignore", invalid="ignore"):
        # a server with room has f[ref] >= d[ref] > 0; the rest are masked
        distance = np.abs(f / f[:, ref:ref + 1] - d / d[ref]).sum(axis=1)
    distance[~ok] = np.inf
    return int(np.argmin(distance))


def alignment(free: np.ndarray, demand: np.ndarray, ok: np.ndarray, scale: np.ndarray,
              capacity: np.ndarray, rng: np.random.Generator) -> int:
    per_server = np.where(capacity > 0, capacity, 1.0)
    with np.errstate(invalid="ignore"):  # a server that is down (-inf free) is masked
        score = ((free / per_server) * (demand / per_server)).sum(axis=1)
    score[~ok] = -np.inf
    return int(np.argmax(score))  # argmax takes the lowest index on ties


def uniform(free: np.ndarray, demand: np.ndarray, ok: np.ndarray, scale: np.ndarray,
            capacity: np.ndarray, rng: np.random.Generator) -> int:
    candidates = np.flatnonzero(ok)
    return int(candidates[rng.integers(len(candidates))])


#: The comparing rules by name (first-fit is the index's own search).
RULES: dict[str, Rule] = {
    "best-fit": least_leftover,
    "least-leftover": least_leftover,
    "drfh": shape_distance,
    "dot-product": alignment,
    "random": uniform,
}
