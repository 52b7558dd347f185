"""Workload, hierarchy and cluster kinds, installed as ``hierfair.datasets``.

A spec's ``workload:`` is an explicit job list (``jobs:``) or a generator or
trace loader selected by ``kind:``; its ``hierarchy:`` is a nested mapping
written out by hand or a generator selected by ``kind:``; its ``cluster:`` is
a list of servers or, with ``kind:``, a named cluster.  Each kind owns a
pydantic ``Params`` model, so unknown options are rejected with the field
path that names them.  docs/workloads.md documents every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from hierfair.datasets import (
    arrivals,
    cpu_mic,
    extra_demands,
    facebook,
    full_binary,
    google,
    google_machines,
    gpu_servers,
    jobs,
    paper_trees,
    swf,
    swim,
    tree,
)
from hierfair.datasets.base import BuildContext
from hierfair.errors import SpecError, did_you_mean, from_pydantic
from hierfair.sim.model import Hierarchy, Workload


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    Params: type[BaseModel]
    build: Callable[..., Any]
    #: How big the built object is, from the params alone (before building):
    #: servers, hierarchy nodes, or (jobs, tasks); None when it depends on a file.
    size: Callable[[Any], Any] | None = None
    #: The workload keeps its jobs as columns (a JobTable, made as the run
    #: reads them): what a task costs before it starts is its state byte.
    columns: bool = False


def _table(*kinds: Kind) -> Mapping[str, Kind]:
    return {k.name: k for k in kinds}


WORKLOAD_KINDS = _table(
    Kind("jobs", "explicit job list written in the spec", jobs.Params, jobs.build, jobs.size),
    Kind("facebook-bins", "Facebook job sizes of H-DRF Table 1, §5.2 memory rule",
         facebook.Params, facebook.build, facebook.size, columns=True),
    Kind("swim", "SWIM Facebook 2009/2010 day traces (bytes -> map/reduce tasks)",
         swim.Params, swim.build),
    Kind("google-2011", "Google cluster-data 2011 task_events parts (sampled jobs)",
         google.Params, google.build),
    Kind("google-synthetic", "jobs drawn from distributions fitted to cluster-data 2011",
         google.SyntheticParams, google.build_synthetic, google.synthetic_size),
    Kind("cpu-mic", "the DFF letter's five CPU-MIC jobs (Table 1)", cpu_mic.WorkloadParams,
         cpu_mic.build_workload, cpu_mic.workload_size),
    Kind("swf", "Standard Workload Format traces (Parallel Workloads Archive)", swf.Params,
         swf.build),
)

HIERARCHY_KINDS = _table(
    Kind("tree", "nested mapping written in the spec (name -> {weight?, children?})",
         tree.NodeSpec, tree.from_nested),
    Kind("full-binary", "full tree of L levels, fan-out b, equal or seeded random weights",
         full_binary.Params, full_binary.build, full_binary.size),
    Kind("paper", "the papers' example trees by figure (hdrf-fig10, dff-fig1, ...)",
         paper_trees.Params, paper_trees.build),
)

CLUSTER_KINDS = _table(
    Kind("cpu-mic", "the DFF letter's CPU-MIC cluster, CPU:MIC ratio as a parameter",
         cpu_mic.ClusterParams, cpu_mic.build_cluster, cpu_mic.cluster_size),
    Kind("google-2011-machines", "the Google 2011 cell's ten CPU/memory machine "
         "configurations in their proportions, normalised to the largest",
         google_machines.ClusterParams, google_machines.build_cluster,
         google_machines.cluster_size),
    Kind("gpu-servers", "like servers, some with GPUs (label gpu): H-DRF §5.3.2's "
         "1200 of <32 GB, 16 CPUs>, 200 with 16 GPUs, by default",
         gpu_servers.ClusterParams, gpu_servers.build_cluster, gpu_servers.cluster_size),
)


def parse(kinds: Mapping[str, Kind], data: Mapping[str, Any], where: str,
          default: str | None = None) -> tuple[Kind, BaseModel]:
    """Pick the kind named by ``data['kind']`` and validate its params."""
    name = data.get("kind", default)
    if not isinstance(name, str) or name not in kinds:
        known = [k for k in kinds if k != "tree"]
        raise SpecError(f"unknown kind;{did_you_mean(name, known)} known: {', '.join(known)}",
                        where=f"{where}.kind", value=name)
    kind = kinds[name]
    try:
        return kind, kind.Params.model_validate(data)
    except ValidationError as exc:
        raise from_pydantic(exc, prefix=where, model=kind.Params) from None


def build_hierarchy(data: Mapping[str, Any]) -> Hierarchy:
    if not isinstance(data.get("kind"), str):  # a node may be called "kind"
        return tree.from_nested(data)
    kind, params = parse(HIERARCHY_KINDS, data, "hierarchy")
    if kind.name == "tree":
        raise SpecError("write the tree out as a nested mapping, without 'kind'",
                        where="hierarchy.kind", value="tree")
    return kind.build(params)


def parse_workload(data: Mapping[str, Any]
                   ) -> tuple[Kind, BaseModel, arrivals.Arrivals | None,
                              list[extra_demands.ExtraDemand]]:
    """The workload's kind, its params, and what every kind accepts:
    ``arrivals:`` and ``extra_demands:``."""
    own, how = arrivals.split(data)
    own, extra = extra_demands.split(own)
    kind, params = parse(WORKLOAD_KINDS, own, "workload", default="jobs")
    return kind, params, how, extra


def build_workload(data: Mapping[str, Any], ctx: BuildContext) -> Workload:
    kind, params, how, extra = parse_workload(data)
    workload = extra_demands.apply(kind.build(params, ctx), extra, ctx)
    return arrivals.apply(workload, how, ctx.cluster)
