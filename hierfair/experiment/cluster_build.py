"""Building a spec's cluster, and checking its headroom: the servers written
out or a cluster kind become a :class:`~hierfair.sim.model.Cluster`, with the
placement and the ``cluster.headroom`` kept free on every server (an explicit
vector must fit each server; the algorithms that keep it must place tasks
through the shared index)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import ValidationError, field_validator

from hierfair.algorithms import ALGORITHMS, make_policy
from hierfair.datasets import CLUSTER_KINDS, parse
from hierfair.datasets.base import no_server_carries
from hierfair.errors import SpecError, did_you_mean, from_pydantic
from hierfair.experiment.spec_base import Strict
from hierfair.experiment.spec_models import AlgorithmSpec, ClusterSpec, HeadroomSpec, _no_headroom
from hierfair.sim.model import Cluster, Hierarchy
from hierfair.sim.policy import CONSTRAINTS_REFUSED, own_index, own_placement


def _split_headroom(data: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A cluster kind's own fields, and its ``headroom`` (every kind has one)."""
    rest = {k: v for k, v in data.items() if k != "headroom"}
    return rest, data.get("headroom")


class _KindHeadroom(Strict):
    headroom: HeadroomSpec | None = None

    _none = field_validator("headroom", mode="before")(_no_headroom)


def _build_cluster(data: dict[str, Any]) -> tuple[Cluster, str, HeadroomSpec | None]:
    if "kind" in data:
        rest, raw = _split_headroom(data)
        kind, params = parse(CLUSTER_KINDS, rest, "cluster")
        try:
            headroom = _KindHeadroom.model_validate({"headroom": raw}).headroom
        except ValidationError as exc:
            raise from_pydantic(exc, prefix="cluster", model=_KindHeadroom) from None
        cluster = kind.build(params)
        _check_headroom(headroom, cluster)
        return cluster, params.placement, headroom  # type: ignore[attr-defined]
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="cluster", model=ClusterSpec) from None
    resources = tuple(spec.resources)
    rows, names, labels = [], [], []
    for i, server in enumerate(spec.servers):
        for r in server.capacity:
            if r not in resources:
                raise SpecError(f"unknown resource; the cluster has {list(resources)}",
                                where=f"cluster.servers[{i}].capacity.{r}", value=r)
        vec = [float(server.capacity.get(r, 0.0)) for r in resources]
        base = server.name or f"s{i}"
        for k in range(server.count):
            rows.append(vec)
            names.append(base if server.count == 1 else f"{base}-{k}")
            labels.append(frozenset(server.labels))
    caps = np.array(rows)
    empty = [r for r, total in zip(resources, caps.sum(axis=0)) if total <= 0]
    if empty:
        raise SpecError("resource has no capacity on any server", where="cluster.resources",
                        value=empty[0])
    cluster = Cluster(resources=resources, capacities=caps, server_names=tuple(names),
                      labels=tuple(labels))
    _check_headroom(spec.headroom, cluster)
    return cluster, spec.placement, spec.headroom


def _vector(cluster: Cluster, v: np.ndarray) -> str:
    return "<" + ", ".join(f"{r} {x:g}" for r, x in zip(cluster.resources, v.tolist())) + ">"


def _check_headroom(headroom: HeadroomSpec | None, cluster: Cluster) -> None:
    """An explicit headroom names the cluster's resources and fits on every
    server (it is kept free on each; docs/spec.md)."""
    if headroom is None or not isinstance(headroom.size, dict):
        return
    for r, amount in headroom.size.items():
        where = f"cluster.headroom.size.{r}"
        if r not in cluster.resources:
            raise SpecError(f"unknown resource; the cluster has {list(cluster.resources)}",
                            where=where, value=r)
        col = cluster.capacities[:, cluster.resources.index(r)]
        if np.any(col < amount):
            s = int(np.flatnonzero(col < amount)[0])
            raise SpecError(f"larger than server {cluster.server_names[s]}'s {r} "
                            f"({col[s]:g}): a headroom is kept free on every server",
                            where=where, value=amount)


def _headroom_algorithm_problems(headroom: HeadroomSpec, algorithms: list[AlgorithmSpec]
                                 ) -> list[SpecError]:
    """``cluster.headroom.algorithms`` names algorithms (the spec's, or any
    known one: a spec may list fewer), and each algorithm that keeps the
    headroom places tasks through the shared index."""
    policies = [make_policy(a.name, a.params) for a in algorithms]
    names = [type(p).name for p in policies]
    known = [*ALGORITHMS, *(n for n in names if n not in ALGORITHMS)]
    out = []
    for i, name in enumerate(headroom.algorithms or ()):
        if name not in known:
            out.append(SpecError(f"unknown algorithm;{did_you_mean(name, known)} this spec's: "
                                 f"{', '.join(dict.fromkeys(names))}",
                                 where=f"cluster.headroom.algorithms[{i}]", value=name))
    for i, (policy, name) in enumerate(zip(policies, names)):
        keeps = headroom.algorithms is None or name in headroom.algorithms
        if keeps and (why := own_placement(type(policy))):
            hint = " (hdrf makes the same decisions)" if name == "hdrf-fast" else ""
            out.append(SpecError(
                f"{why}, which cannot keep cluster.headroom; "
                f"use another algorithm{hint} or leave it out of cluster.headroom.algorithms",
                where=f"algorithms[{i}].name", value=algorithms[i].name))
    return out


def label_problems(cluster: Cluster, hierarchy: Hierarchy) -> list[SpecError]:
    """Every node's ``requires:`` names labels some server carries (all of them)."""
    out = []
    for node, own in enumerate(hierarchy.requires):
        need = hierarchy.requires_of(node)
        if own and not cluster.carrying(need).any():
            where = "hierarchy." + ".children.".join(hierarchy.paths[node].split("/"))
            out.append(SpecError(no_server_carries(need, cluster), where=f"{where}.requires",
                                 value=sorted(own)))
    return out


def _node_where(hierarchy: Hierarchy, node: int) -> str:
    return "hierarchy." + ".children.".join(hierarchy.paths[node].split("/"))


def quota_problems(cluster: Cluster, hierarchy: Hierarchy) -> list[SpecError]:
    """Every quota names resources the cluster has."""
    out = []
    for node, quota in enumerate(hierarchy.quotas):
        for field_name, amounts in quota._asdict().items():
            for res in amounts or {}:
                if res not in cluster.resources:
                    out.append(SpecError(
                        f"unknown resource; the cluster has {list(cluster.resources)}",
                        where=f"{_node_where(hierarchy, node)}.quota.{field_name}.{res}",
                        value=res))
    return out


def zero_weight_problems(hierarchy: Hierarchy, algorithms: list[AlgorithmSpec]
                         ) -> list[SpecError]:
    """A weight of 0 ("only what others leave", Kueue) runs only under the
    policies that define it (``zero_weights``); the others divide by it."""
    zero = [n for n in range(1, hierarchy.n_nodes) if hierarchy.weights[n] == 0]
    refusing = [f"{algo.name} (algorithms[{i}])" for i, algo in enumerate(algorithms)
                if not getattr(type(make_policy(algo.name, algo.params)), "zero_weights", False)]
    if not zero or not refusing:
        return []
    takes = sorted(name for name, cls in ALGORITHMS.items() if getattr(cls, "zero_weights", False))
    return [SpecError(f"a weight of 0 is defined only by {', '.join(takes)}; "
                      f"{', '.join(refusing)} divides by weights: give a positive weight",
                      where=f"{_node_where(hierarchy, n)}.weight", value=0.0) for n in zero]


def hierarchy_problems(hierarchy: Hierarchy, algorithms: list[AlgorithmSpec]
                       ) -> list[SpecError]:
    """Each policy's ``check_hierarchy`` on the tree (per-queue settings)."""
    out = []
    for i, algo in enumerate(algorithms):
        policy = make_policy(algo.name, algo.params)
        check = getattr(type(policy), "check_hierarchy", None)
        try:
            if check is not None:
                check(policy.params, hierarchy)
        except SpecError as exc:
            out.append(SpecError(exc.message, where=f"algorithms[{i}].{exc.where}",
                                 value=exc.value))
    return out


def own_index_problems(algorithms: list[AlgorithmSpec]) -> list[SpecError]:
    """A workload with placement constraints runs only under policies that
    place through the shared index (hdrf-fast and slots-k test fits with
    their own, which knows no constraints)."""
    return [SpecError(CONSTRAINTS_REFUSED, where=f"algorithms[{i}].name", value=algo.name)
            for i, algo in enumerate(algorithms)
            if own_index(type(make_policy(algo.name, algo.params)))]
