"""The papers' example hierarchies, by figure.

::

    hierarchy: {kind: paper, figure: hdrf-fig10}
    hierarchy: {kind: paper, figure: hdrf-fig10, weights: {n3: 2}}   # §5.3.1

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
"""

from __future__ import annotations

from typing import Any, Literal

from hierfair.datasets.tree import from_nested
from hierfair.errors import SpecError
from hierfair.limits import Weight
from hierfair.model import Hierarchy
from hierfair.spec_base import Strict


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


def build(params: Params) -> Hierarchy:
    tree = FIGURES[params.figure]
    h = from_nested(tree)
    if params.weights:
        weights = h.weights.copy()
        for path, w in params.weights.items():
            if path not in h or not path:
                raise SpecError(f"no such node in {params.figure}", where="hierarchy.weights",
                                value=path)
            weights[h.index(path)] = w
        h = Hierarchy(paths=h.paths, parent=h.parent, weights=weights, children=h.children,
                      subtree_end=h.subtree_end, depth=h.depth, _index=h._index)
    return h
