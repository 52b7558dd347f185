"""Workload and hierarchy kinds, installed as ``hierfair.datasets``.

A spec's ``workload:`` is either an explicit job list (``jobs:``) or a
generator/loader selected by ``kind:``; its ``hierarchy:`` is either a nested
mapping written out by hand or, later, a generator selected by ``kind:``.
Each kind owns a pydantic ``Params`` model, so unknown options are rejected
with the field path that names them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from hierfair.datasets import jobs, tree
from hierfair.errors import SpecError, from_pydantic
from hierfair.model import Cluster, Hierarchy, Workload


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    description: str
    Params: type[BaseModel]
    build: Callable[..., Workload]


WORKLOAD_KINDS: Mapping[str, WorkloadKind] = {
    "jobs": WorkloadKind("jobs", "explicit job list written in the spec", jobs.Params, jobs.build),
}

HIERARCHY_KINDS: Mapping[str, str] = {
    "tree": "nested mapping written in the spec (name -> {weight?, children?})",
}


def build_hierarchy(data: Mapping[str, Any]) -> Hierarchy:
    kind = data.get("kind")
    if isinstance(kind, str):
        raise SpecError(f"unknown hierarchy kind; write the tree out as a nested mapping "
                        f"(kinds: {', '.join(HIERARCHY_KINDS)})", where="hierarchy.kind",
                        value=kind)
    return tree.from_nested(data)


def build_workload(data: Mapping[str, Any], cluster: Cluster, hierarchy: Hierarchy,
                   seed: int, source: str = "") -> Workload:
    name = data.get("kind", "jobs")
    if name not in WORKLOAD_KINDS:
        raise SpecError(f"unknown workload kind; known: {', '.join(WORKLOAD_KINDS)}",
                        where="workload.kind", value=name)
    kind = WORKLOAD_KINDS[name]
    try:
        params = kind.Params.model_validate(data)
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="workload", model=kind.Params) from None
    return kind.build(params, cluster, hierarchy, seed, source)
