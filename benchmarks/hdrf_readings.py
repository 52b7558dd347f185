"""Readings of dynamic H-DRF on random trees: share guarantee and convergence
after churn (a script, not a test).

    .venv/bin/python benchmarks/hdrf_readings.py [--trees 200] [--seed 0] [--jobs 2]

H-DRF's Algorithms 2-3 (SoCC 2013, §3.4) leave room for readings once tasks
are whole (docs/algorithms.md, "hdrf"); ``hdrf``'s ``attribution`` parameter
names them.  For every reading this script builds the same random trees
(depth 1-3, fan-out 1-4, two resources, per-task demands of 0-3 units of
each -- single-resource and complementary ones among them -- on one pooled
server, every leaf insatiable) and measures, after the cluster is filled and
then ``churn`` times the earliest-started task ends and is reallocated
(exactly ``hierfair allocate SPEC -a hdrf --churn N``):

(a) the hierarchical share guarantee (H-DRF §2.1, Theorem 2): every node's
    dominant share against its guarantee ``g_parent * w / sum of the
    siblings' weights`` (every node is demanding here).  A node *violates* it
    when it is more than one task short (one task of the largest leaf task
    below it: whole tasks cannot do better); *starved* counts trees where a
    leaf holds no task although static H-DRF gives it at least one;
(b) convergence to static H-DRF (Theorem 1): the largest per-leaf gap between
    the dynamic and the static (``static-hdrf``) dominant shares; *apart*
    counts trees where some leaf's gap exceeds the discreteness slack of
    tests/test_hdrf_properties.py (its own task plus the weight ratio times
    the sum of every leaf's task).

Trees are drawn from ``numpy.random.default_rng([seed, i])``, so tree ``i``
is the same whatever ``--trees`` or ``--jobs`` is; ``--show i`` prints tree
``i``'s spec as YAML.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from hierfair.experiment.allocate import allocate
from hierfair.experiment.spec import AlgorithmSpec, Experiment, build_experiment
from hierfair.sim.model import Hierarchy

READINGS = ("literal", "blocked-fits", "frozen", "literal-frozen")
RESOURCES = ("r0", "r1")


# -- random instances ---------------------------------------------------------
def random_tree(rng: np.random.Generator, max_depth: int = 3, max_fanout: int = 4,
                max_weight: int = 1) -> list[tuple[str, float]]:
    """(path, weight) pairs in pre-order: depth 1 to ``max_depth`` (drawn),
    1 to ``max_fanout`` children per internal node, an inner node below the
    root split further with probability 1/2 while the depth allows."""
    depth = int(rng.integers(1, max_depth + 1))
    nodes: list[tuple[str, float]] = []

    def grow(prefix: str, level: int) -> None:
        for k in range(int(rng.integers(1, max_fanout + 1))):
            path = f"{prefix}n{k}"
            nodes.append((path, float(rng.integers(1, max_weight + 1))))
            if level < depth and rng.random() < 0.5:
                grow(path + "/", level + 1)

    grow("", 1)
    return nodes


def random_demands(rng: np.random.Generator, leaves: list[str]) -> dict[str, tuple[int, int]]:
    """Per leaf a task of 0-3 units of each resource, not both 0 (uniform over
    the 15 vectors: 6 use one resource, ⟨3,1⟩ and ⟨1,3⟩ are complementary)."""
    choices = [(a, b) for a in range(4) for b in range(4) if a or b]
    return {leaf: choices[int(rng.integers(len(choices)))] for leaf in leaves}


def tree_spec(nodes: list[tuple[str, float]], demands: dict[str, tuple[int, int]],
              capacity: float = 600.0, tasks: int = 100_000,
              readings: tuple[str, ...] = READINGS) -> dict[str, Any]:
    """A spec (plain data, as in experiments/*.yaml) for one random instance."""
    tree: dict[str, Any] = {}
    for path, weight in nodes:
        *heads, name = path.split("/")
        where = tree
        for part in heads:
            where = where[part].setdefault("children", {})
        where[name] = {"weight": weight} if weight != 1 else {}
    jobs = [{"queue": leaf, "tasks": tasks, "duration": 1,
             "demand": {r: v for r, v in zip(RESOURCES, d) if v}}
            for leaf, d in demands.items()]
    algorithms = ["static-hdrf"] + [
        {"name": "hdrf", "label": f"hdrf-{r}", "params": {"attribution": r}} for r in readings]
    return {"name": "random-tree", "hierarchy": tree, "workload": {"jobs": jobs},
            "cluster": {"resources": list(RESOURCES),
                        "servers": [{"capacity": {r: capacity for r in RESOURCES}}]},
            "algorithms": algorithms, "seeds": [0]}


def instance(seed: int, index: int, max_weight: int = 1, capacity: float = 600.0
             ) -> dict[str, Any]:
    """Tree ``index`` of the run seeded ``seed``, as a spec."""
    rng = np.random.default_rng([seed, index])
    nodes = random_tree(rng, max_weight=max_weight)
    h = Hierarchy.from_edges(nodes)
    leaves = [h.paths[i] for i in h.leaves]
    return tree_spec(nodes, random_demands(rng, leaves), capacity)


# -- measures -----------------------------------------------------------------
def guarantees(h: Hierarchy) -> np.ndarray:
    """Hierarchical share guarantee per node when every node is demanding
    (H-DRF §2.1): the parent's times ``w / sum of the siblings' weights``."""
    g = np.zeros(h.n_nodes)
    g[0] = 1.0
    for node in range(h.n_nodes):
        kids = h.children[node]
        total = sum(h.weights[c] for c in kids)
        for c in kids:
            g[c] = g[node] * h.weights[c] / total
    return g


def task_shares(exp: Experiment) -> np.ndarray:
    """Per node: the dominant share of the largest single task of a leaf below
    it (a leaf: its own task) -- the resolution whole tasks allow."""
    h = exp.hierarchy
    one = np.zeros(h.n_nodes)
    for job in exp.workload(exp.spec.seeds[0]).jobs:
        one[job.leaf] = max(one[job.leaf], float((job.demand / exp.cluster.total).max()))
    for node in range(h.n_nodes - 1, 0, -1):
        one[h.parent[node]] = max(one[h.parent[node]], one[node])
    return one


def discreteness_slack(exp: Experiment) -> np.ndarray:
    """Per node: how far whole tasks may leave it from the fluid allocation --
    its own largest task plus the overshoot of every leaf (when a resource
    saturates each may hold a task more than the fluid level, and a sibling
    of weight w answers with w times as much).  The slack of
    tests/test_hdrf_properties.py, for internal nodes too."""
    one = task_shares(exp)
    leaves = np.array(exp.hierarchy.leaves)
    w = exp.hierarchy.weights
    return one + w.max() / w.min() * one[leaves].sum() + 1e-9


@dataclass(frozen=True)
class Outcome:
    """One reading on one tree, after churn."""

    violations: int  # nodes below their guarantee by more than the slack
    lost: int  # nodes churn pushed below their guarantee: > 1 task below it and
    #            > 1 task below what they held after the first fill
    starved: int  # leaves with no task where static H-DRF gives one or more
    gap: float  # max per-leaf |dynamic - static| dominant share
    apart: bool  # some leaf's gap exceeds the slack


def measure(exp: Experiment, algorithm: AlgorithmSpec, static_dominant: np.ndarray,
            static_tasks: np.ndarray, churn_factor: float = 1.0) -> Outcome:
    """Fill, churn ``churn_factor`` times the first fill's task count, compare."""
    h = exp.hierarchy
    first = allocate(exp, algorithm)
    churn = int(round(churn_factor * first.tasks[0]))
    after = allocate(exp, algorithm, churn=churn).dominant
    one, slack = task_shares(exp), discreteness_slack(exp)
    g = guarantees(h)
    nodes = np.arange(1, h.n_nodes)
    leaves = np.array(h.leaves)
    gaps = np.abs(after[leaves] - static_dominant[leaves])
    lost = (after < g - one - 1e-9) & (after < first.dominant - one - 1e-9)
    return Outcome(
        violations=int((after[nodes] < g[nodes] - slack[nodes]).sum()),
        lost=int(lost[nodes].sum()),
        starved=int(((after[leaves] < 1e-12) & (static_tasks[leaves] >= 1)).sum()),
        gap=float(gaps.max()),
        apart=bool((gaps > slack[leaves]).any()),
    )


def measure_tree(args: tuple[int, int, int, float, tuple[str, ...]]
                 ) -> dict[str, Outcome]:
    """Every reading on tree ``index`` (a picklable job for the pool)."""
    seed, index, max_weight, churn_factor, readings = args
    exp = build_experiment(instance(seed, index, max_weight))
    static = allocate(exp, "static-hdrf")
    out = {}
    for algo in exp.spec.algorithms[1:]:
        reading = algo.params["attribution"]
        if reading in readings:
            out[reading] = measure(exp, algo, static.dominant, static.tasks, churn_factor)
    return out


# -- the table ----------------------------------------------------------------
def table(results: list[dict[str, Outcome]], readings: tuple[str, ...]) -> str:
    """The counts as a markdown table, one row per reading."""
    lines = ["| reading | trees | guarantee broken (trees) | lost to churn (trees / nodes) "
             "| a leaf starved (trees) | gap to static: median | 90th pct | max "
             "| apart from static (trees) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in readings:
        rows = [res[r] for res in results]
        gaps = np.array([o.gap for o in rows])
        lines.append(
            f"| {r} | {len(rows)} | {sum(o.violations > 0 for o in rows)} "
            f"| {sum(o.lost > 0 for o in rows)} / {sum(o.lost for o in rows)} "
            f"| {sum(o.starved > 0 for o in rows)} "
            f"| {np.median(gaps):.4f} | {np.quantile(gaps, 0.9):.4f} | {gaps.max():.4f} "
            f"| {sum(o.apart for o in rows)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=200, help="random trees (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the trees (default 0)")
    ap.add_argument("--max-weight", type=int, default=1,
                    help="node weights drawn from 1..W (default 1: equal weights)")
    ap.add_argument("--churn", type=float, default=1.0, metavar="F",
                    help="task ends after the first fill, as a multiple of the tasks it "
                         "started (default 1: every first-fill task ends once)")
    ap.add_argument("--readings", nargs="+", default=list(READINGS), choices=READINGS)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--show", type=int, metavar="I", help="print tree I's spec and exit")
    ap.add_argument("--list", action="store_true",
                    help="also list, per reading, the trees that break the guarantee")
    args = ap.parse_args(argv)
    if args.show is not None:
        print(yaml.safe_dump(instance(args.seed, args.show, args.max_weight),
                             sort_keys=False, allow_unicode=True))
        return 0
    readings = tuple(args.readings)
    work = [(args.seed, i, args.max_weight, args.churn, readings) for i in range(args.trees)]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(measure_tree, work, chunksize=4))
    else:
        results = [measure_tree(w) for w in work]
    print(f"{args.trees} trees, seed {args.seed}, weights 1..{args.max_weight}, "
          f"churn {args.churn:g} x first fill")
    print(table(results, readings))
    if args.list:
        for r in readings:
            broken = [i for i, res in enumerate(results) if res[r].violations]
            lost = [i for i, res in enumerate(results) if res[r].lost]
            apart = [i for i, res in enumerate(results) if res[r].apart]
            print(f"{r}: guarantee broken on trees {broken}, lost to churn on {lost}, "
                  f"apart from static on {apart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
