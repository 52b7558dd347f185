"""PS-DSF: Per-Server Dominant-Share Fairness (Khamse-Ashari, Lambadaris,
Kesidis, Urgaonkar and Zhao, arXiv 1611.00404, ICC 2017).

On server i, user n's *virtual dominant share* is ``s_{n,i} = x_n / (w_n
gamma_{n,i})``: its tasks on every server, ``x_n``, over the tasks it could
run had it server i alone, ``gamma_{n,i} = min_r c_{i,r} / d_{n,r}``.  An
allocation is PS-DSF when every server is max-min fair in s among the users
it can serve: a user that could use more on server i is held back there only
by users whose s on i is no larger (the per-server bottleneck condition).

``x_n / gamma_{n,i} = max_r x_n d_{n,r} / c_{i,r}``: the user's *total*
holdings as a dominant share of server i's capacity, over the resources its
task uses; that form is what the key computes, so a leaf whose tasks differ
in size is counted by what it holds.  Online, with the shared mechanism of
:class:`~hierfair.algorithms.per_server.PerServerPolicy`: among every server
with room and every demanding leaf, the lowest ``s_{n,i}`` starts a task
there.  This is progressive filling done once, in the order tasks arrive
and finish; it is not the paper's allocation in general (that is a fixed
point, ``hierfair.experiment.fluid_hetero.psdsf``), and docs/algorithms.md
measures the difference.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.algorithms.per_server import PerServerPolicy


class PSDSF(PerServerPolicy):
    """Lowest virtual dominant share ``x_n / (w_n gamma_{n,i})`` per server."""

    name: ClassVar[str] = "psdsf"
    description: ClassVar[str] = ("PS-DSF: per server, lowest virtual dominant share "
                                  "x/(w gamma) (arXiv 1611.00404)")

    def keys(self, rows: np.ndarray, demands: np.ndarray) -> np.ndarray:
        total = self._held[rows].sum(axis=1, keepdims=True)  # leaves x 1 x resources
        return self.server_share(total, demands) / self._weight[rows, None]
