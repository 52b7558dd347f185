"""The papers' example hierarchies, by figure.

::

    hierarchy: {kind: paper, figure: hdrf-fig10}
    hierarchy: {kind: paper, figure: hdrf-fig10, weights: {n3: 2}}   # §5.3.1
    hierarchy: {kind: paper, figure: hdrf-fig10, users_per_leaf: 25} # §5.3.2

Trees as the figures draw them (weights in parentheses where given):

* ``hdrf-fig1`` -- ads (60) {prod (70), test (30)}, dev (40) {prod (70), test (30)}
* ``hdrf-fig2`` -- n1 (1), n2 (1) {n21 (1), n22 (2), n23 (2)}; the text's 480-slot
  example (§2.1).  Whether n1 has children the text does not say; here it is a leaf.
* ``hdrf-fig4`` -- n1 {n11}, n2 {n21, n22}
* ``hdrf-fig5`` -- n1 {n11}, n2 {n21}, n3 {n31, n32}, n4 {n41}
* ``hdrf-fig6`` -- n1 {n11}, n2 {n21, n22}
* ``hdrf-fig8`` -- n1 (4) {n11, n12}, n2 (1) {n21, n22}
* ``hdrf-fig10`` -- n1 {n11, n12}, n2 {n21, n22, n23}, n3 {n31}
* ``dff-fig1`` -- n1 {n11}, n2 {n21}, n3 {n31, n32}, n4 {n41}
* ``mch-fig1`` -- ads (60) {prod (90), test (10)}, dev (40) {prod (90), test (10)}
* ``mch-fig4`` -- n1 {n11, n12}, n2 {n21, n22, n23}, n3 {n31} (reconstructed from the
  letter's published weights and shares; docs/algorithms.md, "mch")

``users_per_leaf: N`` gives every leaf of the figure N children of weight 1,
``u0`` .. ``u{N-1}`` (H-DRF §5.3.2: "Each leaf node was assumed to have 25
users"): the figure's leaves become internal nodes (``n1/n12`` holds
``n1/n12/u0`` ..), and jobs go to the users (a workload that names the
figure's leaves spreads their jobs over the users below, e.g.
``facebook-bins``).  ``weights`` are applied after, so they may name a
figure node or a user (``{n3: 2, n1/n11/u0: 3}``).  Without it (the default)
the tree is the figure's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hierfair.datasets.tree import from_nested
from hierfair.errors import SpecError
from hierfair.fields import Strict, Weight
from hierfair.sim.model import Hierarchy


def _groups(*groups: tuple[str, float, tuple[str, ...]]) -> dict[str, Any]:
    return {name: {"weight": w, "children": {c: {} for c in kids}} for name, w, kids in groups}


def _org(top: tuple[float, float], inner: tuple[float, float]) -> dict[str, Any]:
    sub = {"prod": {"weight": inner[0]}, "test": {"weight": inner[1]}}
    return {"ads": {"weight": top[0], "children": dict(sub)},
            "dev": {"weight": top[1], "children": dict(sub)}}


FIGURES: dict[str, dict[str, Any]] = {
    "hdrf-fig1": _org((60, 40), (70, 30)),
    "hdrf-fig2": {"n1": {"weight": 1},
                  "n2": {"weight": 1, "children": {"n21": {"weight": 1}, "n22": {"weight": 2},
                                                   "n23": {"weight": 2}}}},
    "hdrf-fig4": _groups(("n1", 1, ("n11",)), ("n2", 1, ("n21", "n22"))),
    "hdrf-fig5": _groups(("n1", 1, ("n11",)), ("n2", 1, ("n21",)), ("n3", 1, ("n31", "n32")),
                         ("n4", 1, ("n41",))),
    "hdrf-fig6": _groups(("n1", 1, ("n11",)), ("n2", 1, ("n21", "n22"))),
    "hdrf-fig8": _groups(("n1", 4, ("n11", "n12")), ("n2", 1, ("n21", "n22"))),
    "hdrf-fig10": _groups(("n1", 1, ("n11", "n12")), ("n2", 1, ("n21", "n22", "n23")),
                          ("n3", 1, ("n31",))),
    "dff-fig1": _groups(("n1", 1, ("n11",)), ("n2", 1, ("n21",)), ("n3", 1, ("n31", "n32")),
                        ("n4", 1, ("n41",))),
    "mch-fig1": _org((60, 40), (90, 10)),
    "mch-fig4": _groups(("n1", 1, ("n11", "n12")), ("n2", 1, ("n21", "n22", "n23")),
                        ("n3", 1, ("n31",))),
}


class Params(Strict):
    kind: Literal["paper"]
    figure: Literal[tuple(FIGURES)]  # type: ignore[valid-type]
    #: Override weights by node path, e.g. {n3: 2} for H-DRF §5.3.1.
    weights: dict[str, Weight] = {}
    #: Give every leaf of the figure this many equal-weight children u0, u1, ...
    #: (H-DRF §5.3.2: 25).  At most 100,000: a figure has at most 6 leaves, so
    #: the tree stays well inside the node limit.
    users_per_leaf: int | None = Field(None, ge=1, le=100_000, strict=True)


def with_users(tree: dict[str, Any], n: int) -> dict[str, Any]:
    """``tree`` (nested form) with ``n`` children u0..u{n-1} of weight 1 under each leaf."""
    out: dict[str, Any] = {}
    for name, body in tree.items():
        body = dict(body or {})
        kids = body.get("children")
        body["children"] = (with_users(kids, n) if kids
                            else {f"u{i}": {"weight": 1} for i in range(n)})
        out[name] = body
    return out


def build(params: Params) -> Hierarchy:
    tree = FIGURES[params.figure]
    if params.users_per_leaf is not None:
        tree = with_users(tree, params.users_per_leaf)
    h = from_nested(tree)
    if params.weights:
        weights = h.weights.copy()
        for path, w in params.weights.items():
            if path not in h or not path:
                users = (f" with {params.users_per_leaf} users per leaf"
                         if params.users_per_leaf is not None else "")
                raise SpecError(f"no such node in {params.figure}{users}",
                                where="hierarchy.weights", value=path)
            weights[h.index(path)] = w
        h = Hierarchy(paths=h.paths, parent=h.parent, weights=weights, children=h.children,
                      subtree_end=h.subtree_end, depth=h.depth, _index=h._index)
    return h
