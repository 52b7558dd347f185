"""Full trees: every internal node has the same fan-out, every leaf the same depth.

::

    hierarchy: {kind: full-binary, levels: 3}                 # 8 leaves
    hierarchy: {kind: full-binary, levels: 16}                # 65,536 leaves
    hierarchy: {kind: full-binary, levels: 4, fanout: 3, weights: random, seed: 7}

``levels`` counts the levels below the root (the MCH letter's "full binary
trees with 2 to 5 levels": 2 levels are 2 + 4 nodes, 4 leaves).  Node names
are ``n0``, ``n1``, ... among siblings, so a leaf's path reads like
``n0/n1/n1``.  ``weights: random`` draws integer weights 1..``max_weight``
for every node from ``seed``.

Built with arrays, not node by node: 2^16 leaves take a fraction of a second.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, PositiveInt

from hierfair.fields import Strict
from hierfair.sim.model import Hierarchy


class Params(Strict):
    kind: Literal["full-binary"]
    levels: PositiveInt = Field(le=24)
    fanout: int = Field(2, ge=2, le=64)
    weights: Literal["equal", "random"] = "equal"
    max_weight: PositiveInt = 4
    seed: int = 0


def size(params: Params) -> int:
    """Nodes of the tree, root included."""
    return sum(params.fanout**level for level in range(params.levels + 1))


def build(params: Params) -> Hierarchy:
    b, depth_max = params.fanout, params.levels
    # Pre-order numbering of a full b-ary tree, level by level: a node's
    # subtree size depends only on its depth.
    size = [0] * (depth_max + 1)
    size[depth_max] = 1
    for d in range(depth_max - 1, -1, -1):
        size[d] = 1 + b * size[d + 1]
    n = size[0]
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    paths: list[str] = [""] * n
    children: list[tuple[int, ...]] = [()] * n
    names = [f"n{k}" for k in range(b)]
    stack = [0]
    while stack:
        node = stack.pop()
        d = int(depth[node])
        if d == depth_max:
            continue
        step = size[d + 1]
        kids = tuple(node + 1 + k * step for k in range(b))
        children[node] = kids
        prefix = paths[node] + "/" if node else ""
        for k, c in enumerate(kids):
            parent[c] = node
            depth[c] = d + 1
            paths[c] = prefix + names[k]
        stack.extend(reversed(kids))
    end = np.arange(n, dtype=np.int64) + np.array([size[d] for d in depth.tolist()])
    if params.weights == "random":
        rng = np.random.default_rng(params.seed)
        weights = rng.integers(1, params.max_weight + 1, n).astype(float)
        weights[0] = 1.0
    else:
        weights = np.ones(n)
    return Hierarchy(paths=tuple(paths), parent=parent, weights=weights,
                     children=tuple(children), subtree_end=end, depth=depth,
                     _index={p: i for i, p in enumerate(paths)})
