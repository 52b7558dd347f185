"""The fairness properties the papers promise, each a check on a :class:`Probe`.

Every check returns an :class:`Outcome` -- how far the worst case is from
holding (``magnitude``, in the property's unit) against the granularity whole
tasks allow (``tol``) -- or a string saying why the property does not apply.
Definitions, units and sources: docs/properties.md (keep the two in step).

Whole tasks: a share-valued property misses only when it misses by more than
one task of the instance's largest task (``Probe.grain``); a task-valued one
by more than one task.  Smaller misses are the granularity of whole tasks (the
catalogue's ``drf-cat-*`` specs show them one by one), not the structure the
papers argue about.  Weights magnify that granularity (a sibling of weight 4
answers one extra task of a weight-1 sibling with up to four), so a property
with a ``refine`` unit counts a miss as a violation only when it survives
tasks made finer (:func:`hierfair.audit.runner.refined`; Theorem 1's "small
tasks").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hierfair.experiment import misreport
from hierfair.experiment.oracle import guarantee, progressive_filling
from hierfair.experiment.properties_servers import (
    SERVERS_PROMISED,
    envy_servers,
    fluid_gap,
    sharing_incentive_servers,
    shortfall,
)
from hierfair.experiment.property_types import EPS, Check, Outcome, Property
from hierfair.experiment.stats import time_statistic

# A check reads the probe it is given: the registry imports no simulation, so
# the spec's claim schema can name its properties (claim_spec imports it).
if TYPE_CHECKING:
    from hierfair.experiment.probe import Fill, Probe

HDRF = ("static-hdrf", "hdrf", "hdrf-fast")


# -- shared pieces -----------------------------------------------------------
def _demanding(p: Probe) -> np.ndarray:
    return p.demands.any(axis=1)


def _guarantees(p: Probe) -> np.ndarray:
    return guarantee(p.exp.hierarchy, _demanding(p))


def _tasks_from(bundle: np.ndarray, demand: np.ndarray, total: np.ndarray) -> float:
    """How many tasks of ``demand`` a bundle of cluster shares holds."""
    used = demand > 0
    return float(np.floor(np.min(bundle[used] * total[used] / demand[used]) + EPS))


def _leaves(p: Probe) -> list[int]:
    return [int(i) for i in np.flatnonzero(_demanding(p))]


def _short(p: Probe, fill: Fill, what: str) -> Outcome:
    """The hierarchical share guarantee on one allocation."""
    g, dom, paths = _guarantees(p), fill.dominant, p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for node in np.flatnonzero(g > 0):
        if node and g[node] - dom[node] > worst:
            worst = float(g[node] - dom[node])
            witness = f"{paths[node]} {dom[node]:.4g} < guarantee {g[node]:.4g} ({what})"
    return Outcome(worst, p.grain, witness)


# -- the properties ----------------------------------------------------------
def share_guarantee(p: Probe) -> Outcome:
    return _short(p, p.fill(), "cluster full")


def share_guarantee_churn(p: Probe) -> Outcome:
    churn = p.first_fill_tasks()
    return _short(p, p.fill(churn=churn), f"after {churn} task ends")


def share_guarantee_time(p: Probe) -> Outcome:
    until, frame = p.horizon, p.run(p.horizon)
    g, paths = _guarantees(p), p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for node in np.flatnonzero(g > 0):
        if not node:
            continue
        avg = _time_mean(_dominant_series(p, frame, paths[node]), until)
        if g[node] - avg > worst:
            worst = float(g[node] - avg)
            witness = (f"{paths[node]} time-average {avg:.4g} < guarantee {g[node]:.4g} "
                       f"over [0, {until:g}] s")
    return Outcome(worst, p.grain, witness)


def convergence(p: Probe) -> Outcome | str:
    if not p.pooled:
        return "static H-DRF is defined on a pooled cluster"
    static = p.shared("static", lambda: progressive_filling(
        p.exp.hierarchy, p.demands, p.total))
    churn = 2 * p.first_fill_tasks()
    dom, paths = p.fill(churn=churn).dominant, p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for leaf in _leaves(p):
        gap = abs(dom[leaf] - static[leaf])
        if gap > worst:
            worst = float(gap)
            witness = (f"{paths[leaf]} {dom[leaf]:.4g} vs static H-DRF {static[leaf]:.4g} "
                       f"after {churn} task ends")
    return Outcome(worst, p.grain, witness)


def pareto(p: Probe) -> Outcome:
    paths = p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for churn in (0, p.first_fill_tasks()):
        fill = p.fill(churn=churn)
        idle = [leaf for leaf in _leaves(p)
                if (fill.free >= p.demands[leaf] - EPS * p.total).all(axis=1).any()]
        if len(idle) > worst:
            worst = float(len(idle))
            names = ", ".join(paths[i] for i in idle)
            witness = f"a task of {names} fits in what is left free (after {churn} task ends)"
    return Outcome(worst, 0.0, witness)


def _envy(p: Probe, pairs: Callable[[int, int], float | None], what: str) -> Outcome:
    fill, paths = p.fill(), p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for i in _leaves(p):
        for j in _leaves(p):
            q = pairs(i, j) if i != j else None
            if q is None:
                continue
            theirs = _tasks_from(fill.shares[j] * q, p.demands[i], p.total)
            if theirs - fill.tasks[i] > worst:
                worst = float(theirs - fill.tasks[i])
                witness = (f"{paths[i]} holds {fill.tasks[i]:g} tasks; {paths[j]}'s bundle "
                           f"({what}) would hold {theirs:g}")
    return Outcome(worst, 1.0, witness)


def envy_siblings(p: Probe) -> Outcome:
    h = p.exp.hierarchy
    return _envy(p, lambda i, j: (h.weights[i] / h.weights[j]
                                  if h.parent[i] == h.parent[j] else None), "scaled by weight")


def envy_leaves(p: Probe) -> Outcome:
    g = _guarantees(p)
    return _envy(p, lambda i, j: g[i] / g[j], "scaled by guarantee")


def strategy_proofness(p: Probe) -> Outcome | str:
    return _misreports(p, group=False)


def group_strategy_proofness(p: Probe) -> Outcome | str:
    return _misreports(p, group=True)


def _misreports(p: Probe, group: bool) -> Outcome | str:
    """The largest relative gain in useful tasks a misreport search found
    (:mod:`hierfair.experiment.misreport`), and the misreport, as the witness."""
    found = misreport.assess(p, group)
    if isinstance(found, str):
        return found
    r, paths = found.result, p.exp.hierarchy.paths
    names = p.exp.cluster.resources
    lies = []
    for x in r.liars:
        said, got = r.declared[x.leaf], x.truth + r.gains[x.leaf] * x.scale
        how = (f"truthful {_vec(x.demand)}" if np.array_equal(said, x.demand) else
               f"declaring {_vec(said)} for {_vec(x.demand)} "
               f"({_kind(x.demand, said, names)})")
        lies.append(f"{paths[x.leaf]} {how}: {x.truth:.4g} -> {got:.4g} useful tasks, "
                    f"{r.gains[x.leaf]:+.2%}")
    witness = "; ".join(lies) if r.gain > 1e-9 else "no misreport gained anything"
    witness += f" ({found.evaluations} allocations over {found.sets} liar sets"
    if found.fine is not None:
        same = found.fine_declared == r.declared
        witness += (f"; with tasks {misreport.REFINE}x finer "
                    f"{'this misreport' if same else 'exact static H-DRF best misreport'} "
                    f"gains {found.fine:+.2%}")
    witness += ")"
    return Outcome(r.gain, r.tol, witness, fine=found.fine)


def sharing_incentive(p: Probe) -> Outcome | str:
    h = p.exp.hierarchy
    if int(h.depth.max()) > 1:
        return "defined on one-level trees (the share guarantee generalises it)"
    return shortfall(p, p.fill().tasks, _leaves(p), "every resource", lambda i, part:
                     _tasks_from(np.full(len(p.total), part), p.demands[i], p.total))


def population_monotonicity(p: Probe) -> Outcome | str:
    leaves = _leaves(p)
    if len(leaves) < 2:
        return "fewer than two demanding leaves"
    before, paths = p.fill().dominant, p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for gone in sorted({leaves[0], leaves[-1]}):
        after = p.fill(without=(paths[gone],)).dominant
        for leaf in leaves:
            if leaf != gone and before[leaf] - after[leaf] > worst:
                worst = float(before[leaf] - after[leaf])
                witness = (f"{paths[gone]} leaves: {paths[leaf]} falls from "
                           f"{before[leaf]:.4g} to {after[leaf]:.4g}")
    return Outcome(worst, p.grain, witness)


def starvation(p: Probe) -> Outcome:
    until, frame = p.horizon, p.run(p.horizon)
    g, paths = _guarantees(p), p.exp.hierarchy.paths
    worst, witness = 0.0, ""
    for leaf in _leaves(p):
        if g[leaf] <= 0:
            continue
        longest, start = _longest_zero(frame[frame["path"] == paths[leaf]], until)
        if longest > worst:
            worst, witness = longest, (f"{paths[leaf]} ran no task for {longest:g} s "
                                       f"(from {start:g} s; guarantee {g[leaf]:.3g})")
    return Outcome(worst, 2.0 * p.longest_task, witness)


def jain(p: Probe) -> Outcome:
    """Jain's index of the demanding leaves' dominant shares over their guarantees."""
    g, dom = _guarantees(p), p.fill().dominant
    x = np.array([dom[i] / g[i] for i in _leaves(p) if g[i] > 0])
    value = float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if len(x) and x.any() else 0.0
    return Outcome(value, math.inf, f"{len(x)} leaves")


# -- helpers ---------------------------------------------------------------
def _dominant_series(p: Probe, frame: pd.DataFrame, path: str) -> pd.DataFrame:
    rows = frame[frame["path"] == path]
    shares = rows[list(p.exp.cluster.resources)].to_numpy(float) / p.total
    return pd.DataFrame({"time": rows["time"].to_numpy(float),
                         "value": shares.max(axis=1) if len(rows) else np.zeros(0)})


def _time_mean(series: pd.DataFrame, until: float) -> float:
    """Mean over [0, until] of a step function given at its change points,
    zero before the first (a node with no task yet holds nothing)."""
    if not len(series) or series["time"].iloc[0] > 0:
        series = pd.concat([pd.DataFrame({"time": [0.0], "value": [0.0]}), series])
    return time_statistic(series, series["value"].to_numpy(float), "mean", (0.0, until), until)


def _longest_zero(rows: pd.DataFrame, until: float) -> tuple[float, float]:
    """The longest stretch in [0, until] at zero tasks (zero before the first
    row) and when it began."""
    times, tasks = rows["time"].to_numpy(float), rows["tasks"].to_numpy()
    if not len(times) or times[0] > 0:
        times, tasks = np.insert(times, 0, 0.0), np.insert(tasks, 0, 0)
    longest, start, since = 0.0, 0.0, None
    for t0, t1, n in zip(times, np.append(times[1:], until), tasks):
        if n:
            since = None
            continue
        since = min(t0, until) if since is None else since
        if min(t1, until) - since > longest:
            longest, start = min(t1, until) - since, since
    return longest, start


def _kind(true: np.ndarray, declared: Sequence[float], names: Sequence[str]) -> str:
    """What a declaration changes: added or dropped resources, other ratios
    among the kept ones, or only the scale."""
    d, t = np.asarray(declared, dtype=float), np.asarray(true, dtype=float)
    added = [names[r] for r in np.flatnonzero((d > 0) & (t <= 0))]
    dropped = [names[r] for r in np.flatnonzero((d <= 0) & (t > 0))]
    both = (d > 0) & (t > 0)
    ratio = d[both] / t[both]
    parts = (["adds " + "+".join(added)] if added else []) + \
        (["drops " + "+".join(dropped)] if dropped else [])
    if len(ratio) > 1 and ratio.max() > ratio.min() * (1 + 1e-6):
        parts.append("other ratios")
    return ", ".join(parts) if parts else "scaled"


def _vec(v) -> str:
    return "<" + ", ".join(f"{x:g}" for x in v) + ">"


GUARANTEE = {"static-hdrf": "H-DRF §4.1, Theorem 2",
             "hdrf": "H-DRF Theorems 1-2 (dynamic = static)",
             "hdrf-fast": "H-DRF Theorems 1-2 (dynamic = static)",
             "mch": "MCH letter §II-A, §V"}
DYNAMIC_GUARANTEE = {k: v for k, v in GUARANTEE.items() if k != "static-hdrf"}
BROKEN_GUARANTEE = {"collapsed": "H-DRF §3.2", "naive-hdrf": "H-DRF §3.3"}
PROPERTIES: dict[str, Property] = {p.name: p for p in (
    Property("share-guarantee", "hierarchical share guarantee (cluster full)",
             "dominant share", share_guarantee, promised=GUARANTEE,
             disclaimed={"collapsed": "H-DRF §3.2"}, refine="share"),
    Property("share-guarantee-churn", "hierarchical share guarantee after churn",
             "dominant share", share_guarantee_churn,
             promised=DYNAMIC_GUARANTEE,
             disclaimed=BROKEN_GUARANTEE, refine="share"),
    Property("share-guarantee-time", "hierarchical share guarantee, time-average of a run",
             "dominant share", share_guarantee_time,
             promised=DYNAMIC_GUARANTEE,
             disclaimed=BROKEN_GUARANTEE, running=True, refine="share"),
    Property("convergence", "converges to static H-DRF after churn", "dominant share",
             convergence,
             promised={"hdrf": "H-DRF §3.4, Theorem 1", "hdrf-fast": "H-DRF §3.4, Theorem 1",
                       "mch": "MCH letter §III-A.3 (t = t*)"},
             disclaimed={"naive-hdrf": "H-DRF §3.3",
                         "hdrf-rescale-only": "H-DRF §3.4, Fig. 5"}, refine="share"),
    Property("pareto", "Pareto efficiency (no demanding leaf's task fits in what is free)",
             "leaves", pareto,
             promised={"drf": "DRF §1", "static-hdrf": "H-DRF §5.2 (footnote 5)",
                       "hdrf": "H-DRF §5.2 (footnote 5)", "hdrf-fast": "H-DRF §5.2 (footnote 5)",
                       "naive-hdrf": "H-DRF §3.3, §5.2 (Pareto-efficient C.S)",
                       "drfh": "DRFH (INFOCOM 2014), abstract",
                       "tsf": "TSF (SC 2016), abstract",
                       "psdsf": "PS-DSF (arXiv 1712.10114), abstract: under conditions"},
             disclaimed={"capacity-current": "H-DRF §5.2"}),
    Property("envy-siblings", "envy-freeness between sibling leaves (weighted)", "tasks",
             envy_siblings, promised={"drf": "DRF §1 (flat: every leaf a sibling)"},
             refine="tasks"),
    Property("envy-leaves", "envy-freeness between any leaves (scaled by guarantee)", "tasks",
             envy_leaves, refine="tasks"),
    # the misreport search re-measures whole-task misses with finer tasks itself
    Property("strategy-proofness", "strategy-proofness (one leaf misreports)",
             "relative gain in useful tasks", strategy_proofness, shrink_checks=40,
             promised={"drf": "DRF §1", **{a: "H-DRF §4.2, Theorem 3" for a in HDRF},
                       "drfh": "DRFH (INFOCOM 2014), abstract",
                       "tsf": "TSF (SC 2016), abstract"}),
    Property("group-strategy-proofness",
             "group strategy-proofness (2-3 sibling leaves misreport)",
             "relative gain in useful tasks", group_strategy_proofness, shrink_checks=40,
             promised={**{a: "H-DRF §4.2, Theorem 3" for a in HDRF},
                       "drfh": "DRFH (TPDS 2015), abstract"}),
    Property("sharing-incentive", "sharing incentive (one-level trees)", "tasks",
             sharing_incentive,
             promised={"drf": "DRF §1", **{a: "H-DRF §4.1 (implied by Theorem 2)" for a in HDRF}},
             refine="tasks"),
    Property("sharing-incentive-servers",
             "sharing incentive over servers (one-level trees, every server split by weight)",
             "tasks", sharing_incentive_servers,
             promised=SERVERS_PROMISED["sharing-incentive-servers"], refine="tasks"),
    Property("envy-servers", "envy-freeness over servers (bundles counted server by server)",
             "tasks", envy_servers, promised=SERVERS_PROMISED["envy-servers"], refine="tasks"),
    Property("fluid-gap", "tasks from the fluid allocation (the oracle), tasks 10x finer",
             "tasks", fluid_gap, metric=True),
    Property("population-monotonicity", "population monotonicity (a leaf leaves)",
             "dominant share", population_monotonicity,
             disclaimed={a: "H-DRF §4.3, Theorem 5" for a in HDRF}, refine="share"),
    Property("starvation", "no starvation (a demanding leaf at zero tasks)", "seconds",
             starvation,
             promised={"hdrf": "H-DRF §1, §3.4", "hdrf-fast": "H-DRF §1, §3.4",
                       "dff": "DFF letter §1", "pdrf": "PDRF note, Motivation"},
             disclaimed={"naive-hdrf": "H-DRF §3.3", "fifo": "DRF §1 (other solutions)"},
             running=True),
    Property("jain", "Jain's index of dominant share / guarantee (cluster full)", "index",
             jain, metric=True),
)}
