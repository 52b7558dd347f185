"""Fairness decided per server: the shared mechanism, and per-server DRF.

Some mechanisms for heterogeneous servers judge fairness *on each server*:
a user's standing differs from server to server, so the scheduler chooses a
(user, server) pair, not a user that the placement rule then places.
:class:`PerServerPolicy` is that mechanism: at every decision, among the
demanding leaves and the servers with room for their next task, it starts
the task of the pair with the lowest :meth:`~PerServerPolicy.keys` value
(ties: the lower leaf, then the lower server), and names the server through
``server_for``.  Filling every server at once by the lowest key is
progressive filling run online; subclasses say only what the key is.

* :class:`PerServerDRF` (``per-server-drf``): DRF (Ghodsi et al., NSDI 2011,
  Algorithm 1) on each server alone: the key on server i is the leaf's
  dominant share of what it holds *on i*, over i's capacity.  The baseline
  DRFH and PS-DSF are measured against (on DRFH's two-server example it
  gives 6 and 6 tasks where DRFH gives 10 and 10, issue 28).
* PS-DSF and rPS-DSF (:mod:`hierfair.algorithms.psdsf`).

Users are the leaves, weighted by their own weight; the hierarchy above them
is not used (as in ``drf``).  A decision costs O(leaves x servers x
resources) in numpy; the per-server accounts hold leaves x servers x
resources floats (docs/algorithms.md).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from hierfair.algorithms.drf import KEY_DECIMALS  # equal shares tie exactly, as in drf
from hierfair.sim.model import TOLERANCE, eligible_servers
from hierfair.sim.policy import BasePolicy, NoParams, PolicyView



class PerServerPolicy(BasePolicy[NoParams]):
    """Start the (leaf, server) pair with the lowest key among the
    demanding leaves and the servers with room for their next task."""

    places_tasks: ClassVar[bool] = True

    def attach(self, state: PolicyView) -> None:
        super().attach(state)
        h, cluster = state.hierarchy, state.cluster
        self._leaves = np.array(h.leaves, dtype=np.int64)
        self._row = {int(leaf): k for k, leaf in enumerate(self._leaves)}
        self._caps = cluster.capacities.astype(np.float64)
        #: 1 / capacity per server and resource (0 where a server has none)
        self._inv_caps = np.divide(1.0, self._caps, out=np.zeros_like(self._caps),
                                   where=self._caps > 0)
        self._weight = h.weights[self._leaves].astype(np.float64)
        #: what each leaf holds on each server: leaves x servers x resources
        self._held = np.zeros((len(self._leaves), cluster.n_servers, cluster.n_resources))
        self._demanding: set[int] = set()
        self._server: int | None = None

    # -- accounts ------------------------------------------------------------
    def leaf_changed(self, leaf: int) -> None:
        if self.state.pending(leaf) > 0:
            self._demanding.add(leaf)
        else:
            self._demanding.discard(leaf)

    def on_task_start(self, leaf: int, demand: np.ndarray) -> None:
        self._held[self._row[leaf], self.state.last_server] += demand
        self.leaf_changed(leaf)

    def on_task_finish(self, leaf: int, demand: np.ndarray) -> None:
        held = self._held[self._row[leaf], self.state.last_server]
        held -= demand
        np.maximum(held, 0.0, out=held)  # float dust from many adds and removes
        self.leaf_changed(leaf)

    # -- the decision ----------------------------------------------------------
    def keys(self, rows: np.ndarray, demands: np.ndarray) -> np.ndarray:
        """The key of every (leaf, server) pair, leaves x servers: ``rows``
        index the demanding leaves in :attr:`_held`; ``demands`` are their
        next tasks' demands (leaves x resources)."""
        raise NotImplementedError

    def select(self) -> int | None:
        state = self.state
        if not self._demanding:
            return None
        leaves = sorted(self._demanding)
        heads = [state.next_demand(leaf) for leaf in leaves]
        demands = np.array(heads)
        free = state.free
        fits = np.all(free[None, :, :] >= demands[:, None, :] - TOLERANCE, axis=2)
        for k, head in enumerate(heads):  # placement constraints: only its servers
            servers = eligible_servers(head)
            if servers is not None:
                fits[k] &= servers
        if not fits.any():
            return None
        rows = np.array([self._row[leaf] for leaf in leaves])
        keys = np.round(self.keys(rows, demands), KEY_DECIMALS)
        keys[~fits] = np.inf
        k, server = divmod(int(np.argmin(keys)), keys.shape[1])  # row-major: leaf, server
        self._server = server
        return leaves[k]

    def server_for(self, leaf: int, demand: np.ndarray) -> int | None:
        return self._server

    # -- shares ----------------------------------------------------------------
    def server_share(self, amounts: np.ndarray, demands: np.ndarray) -> np.ndarray:
        """``max_r amounts[.., i, r] / c_{i,r}`` over the resources each
        leaf's next task uses: leaves x servers (``amounts`` leaves x
        servers x resources, or leaves x 1 x resources for one amount per leaf)."""
        used = (demands > 0)[:, None, :]
        return np.where(used, amounts * self._inv_caps[None, :, :], 0.0).max(axis=2)


class PerServerDRF(PerServerPolicy):
    """Weighted DRF on each server alone (NSDI 2011 Algorithm 1, per server):
    on server i, the leaf with the lowest dominant share of its holdings
    there, ``max_r held_{n,i,r} / c_{i,r} / w_n``."""

    name: ClassVar[str] = "per-server-drf"
    description: ClassVar[str] = "DRF run on each server alone (the heterogeneous baseline)"

    def keys(self, rows: np.ndarray, demands: np.ndarray) -> np.ndarray:
        dominant = (self._held[rows] * self._inv_caps[None, :, :]).max(axis=2)
        return dominant / self._weight[rows, None]
