"""Hierarchies written out by hand as nested mappings.

::

    hierarchy:
      ads: {weight: 3, children: {prod: {weight: 7}, test: {weight: 3}}}
      dev: {weight: 2}

Each key is a node name; its value may give a ``weight`` (default 1) and
``children`` (absent or empty: the node is a leaf, i.e. a queue jobs are
submitted to).  Nodes are numbered in the order written, depth first, which
is the tie-break order of every algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from hierfair.errors import SpecError, from_pydantic
from hierfair.fields import Label, Strict, Weight
from hierfair.sim.model import Hierarchy


class NodeSpec(Strict):
    weight: Weight = 1.0
    children: dict[str, NodeSpec | None] | None = None
    #: Server labels every task below this node needs (placement constraints).
    requires: list[Label] = Field(default_factory=list)


def from_nested(data: Mapping[str, Any], where: str = "hierarchy") -> Hierarchy:
    """Build a :class:`Hierarchy` from the nested-mapping form."""
    nodes: list[tuple[str, float]] = []
    requires: dict[str, frozenset[str]] = {}

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
            if node.children:
                walk(body["children"], f"{path}/", f"{here}.children")

    if not data:
        raise SpecError("the hierarchy has no nodes", where=where)
    walk(data, "", where)
    return Hierarchy.from_edges(nodes, requires)
