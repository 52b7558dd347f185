"""A cluster of like servers, some of them with GPUs, as a preset.

H-DRF §5.3.2 simulates "1200 servers of <32 GB, 16 CPUs>, 200 of them with
16 GPUs" (resources in its order, ⟨GB mem, CPU, GPU⟩).  This preset is that
shape at any size: ``servers`` servers of ``mem`` GB and ``cpu`` CPUs, the
last ``gpu_servers`` of which also have ``gpus`` GPUs and carry the label
``gpu`` (so a node or job can ``requires: [gpu]``; the GPU demand alone
already keeps its tasks there).  The defaults are the paper's.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from hierfair.fields import Strict
from hierfair.sim.model import Cluster
from hierfair.sim.placement_rules import Placement

RESOURCES = ("mem", "cpu", "gpu")


class ClusterParams(Strict):
    kind: Literal["gpu-servers"]
    servers: PositiveInt = 1200
    gpu_servers: NonNegativeInt = 200
    mem: PositiveFloat = 32.0
    cpu: PositiveFloat = 16.0
    gpus: PositiveFloat = 16.0
    placement: Placement = "first-fit"
    #: ``cluster.headroom``, validated by hierfair.experiment.spec (HeadroomSpec).
    headroom: str | dict[str, Any] | None = None

    @model_validator(mode="after")
    def _gpu_servers_among_servers(self) -> ClusterParams:
        if self.gpu_servers > self.servers:
            raise ValueError(f"gpu_servers ({self.gpu_servers}) is more than servers "
                             f"({self.servers})")
        return self


def cluster_size(p: ClusterParams) -> int:
    return p.servers


def build_cluster(p: ClusterParams) -> Cluster:
    plain = p.servers - p.gpu_servers
    caps = np.array([[p.mem, p.cpu, 0.0]] * plain + [[p.mem, p.cpu, p.gpus]] * p.gpu_servers)
    names = tuple(f"s{i}" for i in range(plain)) + tuple(f"gpu{i}" for i in range(p.gpu_servers))
    labels: tuple[frozenset[str], ...] = ((frozenset(),) * plain
                                          + (frozenset({"gpu"}),) * p.gpu_servers)
    return Cluster(RESOURCES, caps.reshape(-1, 3), names, labels)
