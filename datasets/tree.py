"""Hierarchies written out by hand as nested mappings.

::

    hierarchy:
      ads: {weight: 3, children: {prod: {weight: 7}, test: {weight: 3}}}
      dev: {weight: 2}

Each key is a node name; its value may give a ``weight`` (default 1) and
``children`` (absent or empty: the node is a leaf, i.e. a queue jobs are
submitted to).  Nodes are numbered in the order written, depth first, which
is the tie-break order of every algorithm.

The production schedulers (Kueue, Volcano, YuniKorn) also read a node's
``quota`` and ``priority``::

    team-a: {weight: 0, quota: {nominal: {cpu: 3}, borrowing_limit: {cpu: 2}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from hierfair.errors import SpecError, from_pydantic
from hierfair.fields import Amount, Label, NodeWeight, Strict
from hierfair.sim.model import Hierarchy, Quota

Amounts = dict[str, Amount]


class QuotaSpec(Strict):
    """A node's quotas per resource (hierfair.sim.model.Quota; docs/spec.md)."""

    nominal: Amounts = Field(default_factory=dict)
    borrowing_limit: Amounts | None = None
    lending_limit: Amounts | None = None
    guaranteed: Amounts = Field(default_factory=dict)
    max: Amounts | None = None


class NodeSpec(Strict):
    weight: NodeWeight = 1.0
    children: dict[str, NodeSpec | None] | None = None
    #: Server labels every task below this node needs (placement constraints).
    requires: list[Label] = Field(default_factory=list)
    #: Quotas, for the production schedulers that read them.
    quota: QuotaSpec | None = None
    #: Priority among siblings (YuniKorn's tie-break).
    priority: int = Field(0, ge=-(2**31), le=2**31 - 1)


def from_nested(data: Mapping[str, Any], where: str = "hierarchy") -> Hierarchy:
    """Build a :class:`Hierarchy` from the nested-mapping form."""
    nodes: list[tuple[str, float]] = []
    requires: dict[str, frozenset[str]] = {}
    quotas: dict[str, Quota] = {}
    priorities: dict[str, int] = {}

    def walk(mapping: Mapping[str, Any], prefix: str, where: str) -> None:
        for name, body in mapping.items():
            here = f"{where}.{name}"
            if not isinstance(name, str) or not name or "/" in name:
                raise SpecError("node names must be non-empty and contain no '/'",
                                where=here, value=name)
            try:
                node = NodeSpec.model_validate(body if body is not None else {})
            except ValidationError as exc:
                raise from_pydantic(exc, prefix=here, model=NodeSpec) from None
            path = f"{prefix}{name}"
            nodes.append((path, node.weight))
            if node.requires:
                requires[path] = frozenset(node.requires)
            if node.quota is not None:
                quotas[path] = Quota(**node.quota.model_dump())
            if node.priority:
                priorities[path] = node.priority
            if node.children:
                walk(body["children"], f"{path}/", f"{here}.children")

    if not data:
        raise SpecError("the hierarchy has no nodes", where=where)
    walk(data, "", where)
    return Hierarchy.from_edges(nodes, requires, quotas, priorities)
