"""The independent static H-DRF oracle (hierfair.experiment.oracle) against the
paper's published numbers, against the reference (hierfair.algorithms.hdrf_static),
and against the hierarchical share guarantee (H-DRF §2.1, Theorem 2).

The oracle is Algorithm 1 (§3.1) run with a small epsilon; the reference is an
exact water-filling.  They were written separately, so agreement here is
evidence for both.  Two things the comparison turned up:

* Algorithm 1's limit depends on the tie rule when tied siblings are stuck on
  a saturated resource; the reference follows the paper's "randomly pick"
  (equal rates), and so does the oracle by default (test at the end);
* the reference gives a share to a leaf that needs a resource the cluster
  lacks (total 0), which Algorithm 1 never walks to (a reference bug this
  oracle found, fixed).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierfair.algorithms.hdrf import static_hdrf
from hierfair.experiment.oracle import (
    TOLERANCE,
    guarantee,
    node_dominant,
    progressive_filling,
)
from hierfair.sim.model import Hierarchy

# ---------------------------------------------------------------------------
# Random instances


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, float]]:
    """(path, weight) pairs in pre-order: depth <= 3, fan-out <= 3, weights 1-4.

    Biased towards bushy trees (the root has 2-3 children, which are internal
    two times in three), so that most examples have siblings to tie and
    subtrees to get stuck, rather than the one- or two-leaf trees a plain
    draw favours."""
    nodes: list[tuple[str, float]] = []

    def grow(prefix: str, depth: int) -> None:
        for k in range(draw(st.integers(2 if depth == 1 else 1, 3))):
            path = f"{prefix}n{k}"
            nodes.append((path, float(draw(st.integers(1, 4)))))
            if depth < 3 and draw(st.integers(0, 2 if depth == 1 else 1)) > 0:
                grow(path + "/", depth + 1)

    grow("", 1)
    return nodes


@st.composite
def instances(draw: st.DrawFn) -> tuple[Hierarchy, np.ndarray, np.ndarray]:
    h = Hierarchy.from_edges(draw(trees()))
    m = draw(st.integers(2, 4))
    demands = np.zeros((h.n_nodes, m))
    for leaf in h.leaves:
        kind = draw(st.sampled_from(["idle", "single", "mixed", "mixed"]))
        if kind == "single":  # one resource only: a GPU-only job, say
            demands[leaf, draw(st.integers(0, m - 1))] = draw(st.integers(1, 4))
        elif kind == "mixed":  # may still come out all-zero: not demanding
            demands[leaf] = [draw(st.integers(0, 4)) for _ in range(m)]
    total = np.array([float(draw(st.integers(1, 10))) for _ in range(m)])
    return h, demands, total


def leaf_alloc(h: Hierarchy, x: np.ndarray, demands: np.ndarray, total: np.ndarray) -> np.ndarray:
    """The oracle's allocation in resource units: x_i * a_i * total per leaf."""
    out = np.zeros_like(demands)
    for i in h.leaves:
        if demands[i].any():
            share = demands[i] / total
            out[i] = x[i] * share / share.max() * total
    return out


@settings(max_examples=40, deadline=None, derandomize=True)
@given(inst=instances())
def test_oracle_matches_reference_and_share_guarantee(inst):
    h, demands, total = inst
    x = progressive_filling(h, demands, total)
    ref = static_hdrf(h, demands, total)
    leaves = list(h.leaves)

    # Per-leaf dominant shares, and the allocations they stand for.
    np.testing.assert_allclose(x, ref.dominant, rtol=0, atol=TOLERANCE)
    alloc = leaf_alloc(h, x, demands, total)
    np.testing.assert_allclose(alloc[leaves], ref.alloc[leaves], rtol=0,
                               atol=TOLERANCE * total.max())

    # The oracle never over-allocates, and leaves nothing a live leaf could use.
    used = alloc[leaves].sum(axis=0) / total
    assert np.all(used <= 1 + 1e-9)
    for i in leaves:
        if demands[i].any():
            assert np.any(used[demands[i] > 0] >= 1 - 1e-9), f"{h.paths[i]} is not blocked"

    # Theorem 2: every demanding node gets at least its §2.1 guarantee.
    g = guarantee(h, demands.any(axis=1))
    dom = node_dominant(h, x, demands, total)
    short = [(h.paths[v], dom[v], g[v]) for v in range(h.n_nodes) if dom[v] < g[v] - TOLERANCE]
    assert not short, short


# Fewer examples than above: this one is an extra, and the suite has 20 s.
@settings(max_examples=20, deadline=None, derandomize=True)
@given(inst=instances(), data=st.data())
def test_oracle_matches_reference_with_caps(inst, data):
    h, demands, total = inst
    caps = np.full(h.n_nodes, np.inf)
    for leaf in h.leaves:
        caps[leaf] = data.draw(st.sampled_from([np.inf, np.inf, 0.05, 0.1, 0.25, 0.5]))
    x = progressive_filling(h, demands, total, caps=caps)
    assert np.all(x <= caps + 1e-12)
    np.testing.assert_allclose(x, static_hdrf(h, demands, total, caps=caps).dominant,
                               rtol=0, atol=TOLERANCE)


# ---------------------------------------------------------------------------
# The paper's examples


def build(nodes: list[tuple[str, float]], demands: dict[str, tuple[float, ...]],
          m: int) -> tuple[Hierarchy, np.ndarray]:
    h = Hierarchy.from_edges(nodes)
    d = np.zeros((h.n_nodes, m))
    for path, vec in demands.items():
        d[h.index(path)] = vec
    return h, d


def share_of(h: Hierarchy, x: np.ndarray, d: np.ndarray, total: np.ndarray,
             path: str) -> np.ndarray:
    """A leaf's allocation as shares of the cluster, per resource."""
    i = h.index(path)
    return leaf_alloc(h, x, d, total)[i] / total


FIG4 = [("n1", 1), ("n1/n11", 1), ("n2", 1), ("n2/n21", 1), ("n2/n22", 1)]


def test_fig4():
    # §3.1: 10 CPUs, 10 GPUs; n1,1 <1 CPU, 0 GPU>, n2,1 <1, 0>, n2,2 <0, 1>.
    # "<5 CPUs, 0 GPUs> to n1,1 and n2,1 each, and <0 CPUs, 10 GPUs> to n2,2".
    h, d = build(FIG4, {"n1/n11": (1, 0), "n2/n21": (1, 0), "n2/n22": (0, 1)}, 2)
    total = np.array([10.0, 10.0])
    x = progressive_filling(h, d, total)
    alloc = leaf_alloc(h, x, d, total)
    np.testing.assert_allclose(alloc[h.index("n1/n11")], [5, 0], atol=1e-6)
    np.testing.assert_allclose(alloc[h.index("n2/n21")], [5, 0], atol=1e-6)
    np.testing.assert_allclose(alloc[h.index("n2/n22")], [0, 10], atol=1e-6)
    # §3.3: "the internal node n2 has a dominant share of 100%".
    dom = node_dominant(h, x, d, total)
    assert dom[h.index("n2")] == pytest.approx(1.0)
    assert dom[h.index("n1")] == pytest.approx(0.5)


def test_fig5():
    # §3.4, Fig. 5(b): CPU saturates with every leaf at 1/3; then n3,2 and
    # n4,1 split the rest of the GPUs evenly (1/2 each).
    nodes = [("n1", 1), ("n1/n11", 1), ("n2", 1), ("n2/n21", 1), ("n3", 1), ("n3/n31", 1),
             ("n3/n32", 1), ("n4", 1), ("n4/n41", 1)]
    h, d = build(nodes, {"n1/n11": (1, 0), "n2/n21": (1, 0), "n3/n31": (1, 0),
                         "n3/n32": (0, 1), "n4/n41": (0, 1)}, 2)
    x = progressive_filling(h, d, np.array([10.0, 10.0]))
    got = [x[h.index(p)] for p in ("n1/n11", "n2/n21", "n3/n31", "n3/n32", "n4/n41")]
    np.testing.assert_allclose(got, [1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2], atol=TOLERANCE)


FIG6 = [("n1", 1), ("n1/n11", 1), ("n2", 1), ("n2/n21", 1), ("n2/n22", 1)]
FIG6_DEMANDS = {"n1/n11": (3, 2), "n2/n21": (1, 1), "n2/n22": (1, 3)}


@pytest.mark.parametrize("demanding, published", [
    # Fig. 7 left, all three demanding: n1 60% CPU / 40% GPU, n2,1 30% / 30%,
    # n2,2 10% / 30% -- "HDRF gives n1 60% share of its dominant resource".
    (("n1/n11", "n2/n21", "n2/n22"),
     {"n1/n11": (0.6, 0.4), "n2/n21": (0.3, 0.3), "n2/n22": (0.1, 0.3)}),
    # Fig. 7 right, n2,2 non-demanding: n1 50% / 33%, n2,1 50% / 50% --
    # "the dominant resource share of n1 reduces to 50%".
    (("n1/n11", "n2/n21"), {"n1/n11": (0.5, 1 / 3), "n2/n21": (0.5, 0.5)}),
])
def test_fig6_fig7(demanding, published):
    # Fig. 6: <i, j> = i CPUs, j GPUs; Fig. 7's shares imply equal totals.
    h, d = build(FIG6, {p: FIG6_DEMANDS[p] for p in demanding}, 2)
    total = np.array([100.0, 100.0])
    x = progressive_filling(h, d, total)
    for path, shares in published.items():
        np.testing.assert_allclose(share_of(h, x, d, total, path), shares, atol=TOLERANCE)


FIG8 = [("n1", 4), ("n1/n11", 1), ("n1/n12", 1), ("n2", 1), ("n2/n21", 1), ("n2/n22", 1)]
FIG8_DEMANDS = {"n1/n11": (1, 1, 0), "n1/n12": (1, 0, 1), "n2/n21": (1, 1, 0),
                "n2/n22": (1, 1, 0)}


@pytest.mark.parametrize("present, published", [
    # §5.1, all four leaves active: n1,1 0.8 of the CPUs, n2,1 and n2,2 0.1
    # each, n1,2 1.0 of the GPUs.
    (("n1/n11", "n1/n12", "n2/n21", "n2/n22"),
     {"n1/n11": 0.8, "n1/n12": 1.0, "n2/n21": 0.1, "n2/n22": 0.1}),
    # n1,1 done: "n2,1 and n2,2, taking their dominant resource (CPU) share to
    # 0.5 each.  The share of n1,2 remains 1.0".
    (("n1/n12", "n2/n21", "n2/n22"), {"n1/n12": 1.0, "n2/n21": 0.5, "n2/n22": 0.5}),
    # n2,2 done too: "n2,1 increases its share to use all the CPUs".
    (("n1/n12", "n2/n21"), {"n1/n12": 1.0, "n2/n21": 1.0}),
])
def test_fig8_fig9(present, published):
    # Fig. 8: weights n1:n2 = 4:1; <GB, CPUs, GPUs>; 49 servers of 16 GB,
    # 4 CPUs, 4 GPUs.
    h, d = build(FIG8, {p: FIG8_DEMANDS[p] for p in present}, 3)
    x = progressive_filling(h, d, 49 * np.array([16.0, 4.0, 4.0]))
    for path, dominant in published.items():
        assert x[h.index(path)] == pytest.approx(dominant, abs=TOLERANCE)


def test_guarantee_section_2_1():
    # §2.1, Fig. 2, 480 slots: n1 and n2 (weight 1) get 240 each; n2,1 (1),
    # n2,2 (2), n2,3 (2) get 48, 96, 96; when n2,3 leaves, n2,1 and n2,2 get
    # 48 + 32 and 96 + 64.  (The text does not give n1's children; one leaf.)
    nodes = [("n1", 1), ("n1/n11", 1), ("n2", 1), ("n2/n21", 1), ("n2/n22", 2),
             ("n2/n23", 2)]
    h = Hierarchy.from_edges(nodes)
    every = np.array([not h.children[i] for i in range(h.n_nodes)])
    g = guarantee(h, every) * 480
    assert [g[h.index(p)] for p in ("n1", "n2", "n2/n21", "n2/n22", "n2/n23")] == \
        pytest.approx([240, 240, 48, 96, 96])
    without = every.copy()
    without[h.index("n2/n23")] = False
    g = guarantee(h, without) * 480
    assert [g[h.index(p)] for p in ("n1", "n2/n21", "n2/n22", "n2/n23")] == \
        pytest.approx([240, 80, 160, 0])
    # Per-leaf input (leaves in pre-order) means the same.
    assert np.array_equal(guarantee(h, without[list(h.leaves)]), guarantee(h, without))


# ---------------------------------------------------------------------------
# Ties


@pytest.mark.parametrize("wa, wb, wc, wd, random, lowest", [
    # Equal weights: a2 = b2 = 1/4 with random ties; a2 = 1/3, b2 = 1/6 lowest first.
    (2, 2, 2, 3, [1 / 3, 1 / 4, 1 / 3, 1 / 4, 1 / 3, 1 / 2],
     [1 / 3, 1 / 3, 1 / 3, 1 / 6, 1 / 3, 1 / 2]),
    # Unequal weights: random picks are uniform, not weighted -- a2 and b2 both
    # gain 1/24 of the 1/12 GPUs left (weight-proportional rates would give
    # 1/60 and 4/60); lowest first, A takes all 1/12.
    (1, 4, 1, 3, [1 / 6, 1 / 8, 2 / 3, 3 / 8, 1 / 6, 1 / 2],
     [1 / 6, 1 / 6, 2 / 3, 1 / 3, 1 / 6, 1 / 2]),
])
def test_tied_stuck_siblings_follow_the_papers_random_tie_rule(wa, wb, wc, wd, random, lowest):
    """The epsilon -> 0 limit of Algorithm 1 depends on how ties are broken.

    Leaves a1, b1, c1 need only CPU, a2, b2 and D only GPU (1 CPU, 1 GPU).
    CPU runs out first, with A, B, C, D tied at weighted share mu =
    1 / (wa + wb + wc); a1, b1, c1 are blocked.  A and B are then stuck at
    their CPU share (w * mu) while a2, b2 (weight 1 against 2, so at half of
    that) catch up, and D's share moves with its first step.  The GPUs left
    are fewer than a2 and b2 need to catch up, so the order in which A and B
    get them shows: §3.1's "in case of tie, randomly pick a node" gives them
    picks at equal rates; picking the lowest index first gives A all it
    needs.  The reference follows the paper's rule.
    """
    nodes = [("A", wa), ("A/a1", 2), ("A/a2", 1), ("B", wb), ("B/b1", 2), ("B/b2", 1),
             ("C", wc), ("C/c1", 1), ("D", wd)]
    h, d = build(nodes, {"A/a1": (1, 0), "A/a2": (0, 1), "B/b1": (1, 0), "B/b2": (0, 1),
                         "C/c1": (1, 0), "D": (0, 1)}, 2)
    total = np.array([1.0, 1.0])
    idx = [h.index(p) for p in ("A/a1", "A/a2", "B/b1", "B/b2", "C/c1", "D")]

    np.testing.assert_allclose(progressive_filling(h, d, total)[idx], random, atol=TOLERANCE)
    np.testing.assert_allclose(progressive_filling(h, d, total, ties="lowest")[idx], lowest,
                               atol=TOLERANCE)
    np.testing.assert_allclose(static_hdrf(h, d, total).dominant[idx], random,
                               atol=TOLERANCE)


# ---------------------------------------------------------------------------
# A resource the cluster lacks


def test_oracle_gives_nothing_to_a_leaf_needing_a_missing_resource():
    # Algorithm 1 only walks to a node "which also has a task in its subtree
    # that can be scheduled": c's tasks need a GPU and the cluster has none.
    h, d = build([("a", 1), ("c", 1)], {"a": (1, 0), "c": (1, 1)}, 2)
    x = progressive_filling(h, d, np.array([1.0, 0.0]))
    assert x[h.index("a")] == pytest.approx(1.0)
    assert x[h.index("c")] == 0.0


# Found by this oracle: static_hdrf used to drop a resource whose cluster total
# is 0 from the leaf's demand, giving c half the CPUs though its every task needs
# a GPU the cluster lacks (fixed in algorithms/hdrf.py, now algorithms/hdrf_static.py).
def test_reference_gives_nothing_to_a_leaf_needing_a_missing_resource():
    h, d = build([("a", 1), ("c", 1)], {"a": (1, 0), "c": (1, 1)}, 2)
    total = np.array([1.0, 0.0])
    np.testing.assert_allclose(static_hdrf(h, d, total).dominant,
                               progressive_filling(h, d, total), atol=TOLERANCE)
