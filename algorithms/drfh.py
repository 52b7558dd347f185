"""DRFH: Dominant Resource Fairness with heterogeneous servers.

Wang, Li and Liang, "Dominant Resource Fairness in Cloud Computing Systems
with Heterogeneous Servers" (INFOCOM 2014; TPDS 26(10), 2015).  Only the
abstracts could be read here; the formulas are issue 28's (docs/algorithms.md).  A user's
*global dominant share* is measured against the whole pool: ``G_n = x_n
max_r d_{n,r} / C_r`` with ``C_r`` the pool total of resource r, and DRFH
is max-min fair in G over every server at once, each task on one server.
With whole tasks the paper runs it as a heuristic: serve the
user with the lowest G whose task fits somewhere, and put the task on

* the fitting server whose free vector is closest in shape to the demand
  (*Best-Fit DRFH*: the heterogeneity distance ``H(n, l)``, placement
  ``drfh``, :mod:`hierfair.sim.placement_rules`), the default here, or
* the first server that fits (*First-Fit DRFH*): ``placement: first-fit`` in
  the spec's algorithm entry.

G is flat DRF's dominant share (pool totals are what ``drf`` divides by), so
the fairness half is :class:`~hierfair.algorithms.drf.WeightedDRF`'s, leaves
as users, weights the leaves' own; what DRFH adds is the placement.  Its
divisible allocation, the reference the simulation is compared with, is
``hierfair.experiment.fluid_hetero.drfh``.
"""

from __future__ import annotations

from typing import ClassVar

from hierfair.algorithms.drf import WeightedDRF


class DRFH(WeightedDRF):
    """Best-Fit DRFH (INFOCOM 2014): the lowest global dominant share
    first, placed by the heterogeneity distance (First-Fit with
    ``placement: first-fit``)."""

    name: ClassVar[str] = "drfh"
    description: ClassVar[str] = ("DRFH: lowest global dominant share first, Best-Fit "
                                  "placement by shape (INFOCOM'14)")
    placement: ClassVar[str | None] = "drfh"
