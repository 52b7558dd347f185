"""Figures: one PNG per question an experiment asks, written beside its results.

``shares.png`` -- each leaf's dominant share over time, one panel per
algorithm and grid point (many users are drawn by their ancestors);
``improvement.png`` -- for specs whose claims compare response times, the CDF
over jobs of the response-time improvement (H-DRF §5.2); ``cost.png`` -- for
specs that sweep the hierarchy's size, scheduling time against size (MCH
Fig. 5's axes).

Every figure is laid out by :mod:`hierfair.report.facets`: a row of panels
per grid point, numbers as the report writes them, wrapped titles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from hierfair.experiment.detail import detail_table
from hierfair.experiment.spec import load_saved
from hierfair.report.facets import (
    facet_titles,
    facets,
    grid_columns,
    grid_points,
    plt,
    readable_ticks,
    save,
    shared_time,
    suptitle,
    t_interval,
    wrap,
)
from hierfair.report.fmt import distinct, short_key
from hierfair.report.sampled import ecdf_points


def leaf_dominant_shares(alloc: pd.DataFrame, resources: tuple[str, ...],
                         total: np.ndarray, leaves: set[str]) -> pd.DataFrame:
    """Rows of allocations.parquet for leaves, with their dominant share."""
    rows = alloc[alloc["path"].isin(leaves)].copy()
    rows["dominant_share"] = (rows[list(resources)].to_numpy() / total).max(axis=1)
    return rows


def grid_experiments(folder: Path, points: pd.Series) -> dict[int, object]:
    """The experiment at each grid point in ``points`` (runs.parquet's
    ``grid_point``): the spec with that point's values applied, as the runs
    saw it -- a grid over the cluster or the hierarchy changes the totals
    shares are taken of, and the leaves."""
    import copy
    import itertools

    from hierfair.experiment.grid import apply_grid_value
    from hierfair.experiment.spec import build_experiment

    base = load_saved(folder)
    resolved = base.spec.model_dump(mode="json")
    grid = resolved.pop("grid", {}) or {}
    changes = [k for k in grid if not k.startswith(("algorithms[", "workload"))]
    if not changes:  # the cluster and the tree are the spec's at every point
        return {int(g): base for g in points.unique()}
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    out = {}
    for g in points.unique():
        data = copy.deepcopy(resolved)
        for path, value in combos[int(g)].items():
            apply_grid_value(data, path, value)
        out[int(g)] = build_experiment(data, check_workload=False, check_algorithms=False)
    return out


def plot_shares(folder: Path) -> Path | None:
    """Each leaf's dominant share over time: one panel per algorithm and grid
    point, the lowest seed of each (shares of the cluster at that point)."""
    runs = pd.read_parquet(folder / "runs.parquet")
    ok = runs[runs["status"] == "ok"]
    if ok.empty:
        return None
    ok, points, note = grid_points(ok)
    first = ok[ok["seed"] == ok["seed"].min()]  # one seed keeps the panels readable
    alloc = detail_table(folder, "allocations", first)
    if alloc is None:  # no run finished, or the spec keeps no allocations
        return None
    point_of = (first.set_index("run")["grid_point"] if "grid_point" in first
                else pd.Series(0, index=first["run"]))
    exps = grid_experiments(folder, point_of)
    exp = next(iter(exps.values()))
    parts = []
    for g, at in exps.items():
        h = at.hierarchy
        leaves = {h.paths[i] for i in h.leaves}
        if len(leaves) > MAX_CURVES:  # many users: draw their ancestors' shares instead
            leaves = set(curve_groups(pd.Series(sorted(leaves))))
        mine = alloc[alloc["run"].isin(point_of.index[point_of == g])]
        parts.append(leaf_dominant_shares(mine, at.cluster.resources, at.cluster.total,
                                          leaves))
    data = pd.concat(parts) if parts else pd.DataFrame()
    data = data[data["run"].isin(first["run"])] if len(data) else data
    if data.empty:
        return None
    data = _held_to_end(data, first)
    data["label"] = data["run"].map(first.set_index("run")["label"])  # older folders: no tags
    data["grid"] = data["run"].map(first.set_index("run")["grid"])
    sns.set_theme(style="whitegrid", context="notebook")
    few = data["path"].nunique() <= 8  # dashes tell overlapping lines apart
    faceted = len(points) > 1
    layout = facets(data["label"].nunique(), points)
    grid = sns.relplot(data=data, x="time", y="dominant_share", hue="path", **layout,
                       style="path" if few else None, kind="line", drawstyle="steps-post",
                       height=2.6 if faceted else 3.2, aspect=1.4,
                       facet_kws={"sharex": shared_time(layout)})
    grid.set_axis_labels("simulated time (s)", "dominant share")
    for ax in grid.axes.flat:
        readable_ticks(ax)
    facet_titles(grid, layout["col"], layout.get("row"))
    grid.legend.set_title("leaf")
    seed = int(first["seed"].min())
    across = "column" if layout["col"] == "grid" else "row"
    suptitle(grid.figure, f"{exp.spec.name}: dominant share of each leaf (of the cluster) "
             f"over time (seed {seed}"
             + (f"; one {across} per grid point{', ' + note if note else ''}"
                if faceted else "") + ")")
    return save(grid.figure, folder / "shares.png")


def _held_to_end(data: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Each (run, path) step series held to its run's end (the last finish,
    or where a run with work left was stopped): a share that never changed
    is a line, not a point."""
    ends = runs.set_index("run")["makespan"].astype(float)
    if "stopped_at" in runs:
        ends = np.fmax(ends, runs.set_index("run")["stopped_at"].astype(float))
    last = data.sort_values("time").groupby(["run", "path"], sort=False).tail(1).copy()
    last["time"] = last["run"].map(ends)
    last = last[last["time"] > data.groupby(["run", "path"])["time"].transform("max")
                .loc[last.index]]
    return pd.concat([data, last], ignore_index=True) if len(last) else data


#: Improvements below this are drawn at the left edge (a job can finish many
#: times later; 100 % is the most it can gain).
IMPROVEMENT_FLOOR = -200.0
MAX_PAIRS = 6
#: More curves than this in one panel are unreadable: leaves are then drawn
#: by their ancestor at the deepest level that has at most this many nodes.
MAX_CURVES = 12


def curve_groups(leaves: pd.Series) -> pd.Series:
    """Each leaf path, or its ancestor at the deepest level with at most
    :data:`MAX_CURVES` distinct nodes (e.g. 150 users -> the paper's 6 leaves)."""
    if leaves.nunique() <= MAX_CURVES:
        return leaves
    depth = int(leaves.str.count("/").max())
    for keep in range(depth, 0, -1):
        cut = leaves.str.split("/").str[:keep].str.join("/")
        if cut.nunique() <= MAX_CURVES:
            return cut
    return leaves.str.split("/").str[0]


def improvement_pairs(folder: Path) -> list[tuple[str, str, dict]]:
    """(A, B, where) for every response-time comparison the spec's claims make."""
    exp = load_saved(folder)
    pairs: list[tuple[str, str, dict]] = []
    for claim in exp.spec.claims:
        for check in claim.checks:
            for label in check.labels if check.improvement_over else ():
                pair = (label, check.improvement_over, dict(check.where))
                if pair not in pairs:
                    pairs.append(pair)
    return pairs[:MAX_PAIRS]


def plot_improvement(folder: Path) -> Path | None:
    """CDF over jobs of A's response-time improvement over B (H-DRF §5.2,
    :mod:`hierfair.experiment.improvement`), all seeds pooled: one panel per pair the
    claims compare, one curve per leaf."""
    from hierfair.experiment.improvement import NoPairedRuns, improvement_between

    frames = []
    runs = pd.read_parquet(folder / "runs.parquet")
    gridded = bool(grid_columns(runs))
    for a, b, where in improvement_pairs(folder):
        try:
            jobs = improvement_between(folder, a, b, where=where or None)
        except NoPairedRuns:  # failed, or not run yet (a slice): its claim says n/a
            continue
        # a grid path's last two parts name it; paths set together show once
        cond = ", ".join(dict.fromkeys(
            f"{short_key(k)}={distinct(v, list(runs[k].dropna().unique()) if k in runs else [])}"
            for k, v in where.items()))
        if not cond and gridded:
            cond = "all grid points pooled"
        jobs = jobs[["leaf", "improvement"]].dropna()
        jobs["leaf"] = curve_groups(jobs["leaf"].astype(str))  # many users: a curve a group
        for leaf, part in jobs.groupby("leaf", sort=False):  # a week: millions of jobs
            x, weight = ecdf_points(part["improvement"].clip(lower=IMPROVEMENT_FLOOR).to_numpy())
            frames.append(pd.DataFrame({"leaf": leaf, "improvement": x, "jobs": weight,
                                        "pair": f"{a} over {b}" + (f"\n{cond}" if cond else "")}))
    data = pd.concat(frames) if frames else pd.DataFrame()
    if data.empty:
        return None
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.displot(data=data, x="improvement", weights="jobs", hue="leaf", col="pair",
                       kind="ecdf", col_wrap=min(3, data["pair"].nunique()), height=3.2,
                       aspect=1.4)
    for ax in grid.axes.flat:
        ax.axvline(0, color="0.4", lw=0.8)
        readable_ticks(ax)
    grid.set_axis_labels("response-time improvement (%)", "fraction of jobs")
    facet_titles(grid, "pair", None)
    suptitle(grid.figure, f"{folder.name}: per-job response-time improvement (H-DRF §5.2), "
             "seeds pooled; below -200 % drawn at -200 %")
    return save(grid.figure, folder / "improvement.png")


def size_column(runs: pd.DataFrame) -> str | None:
    """The grid column that sizes the hierarchy (e.g. ``hierarchy.levels``), if
    the runs sweep one."""
    for col in runs.columns:
        if col.startswith("hierarchy.") and pd.api.types.is_numeric_dtype(runs[col]) \
                and runs[col].nunique() > 1:
            return col
    return None


def plot_cost(folder: Path) -> Path | None:
    """Scheduling cost against hierarchy size (the MCH letter's Fig. 5 axes),
    log-log: every decision's wall time summed per run, and the mean
    decision, one line per algorithm with the slope of a least-squares fit of
    log cost on log leaves (1: linear in the tree), 95 % intervals over seeds.
    Only for specs that sweep the hierarchy's size."""
    runs = pd.read_parquet(folder / "runs.parquet")
    size = size_column(runs)
    if size is None or "scheduling_seconds" not in runs:
        return None
    ok = runs[runs["status"] == "ok"].copy()
    if ok.empty:
        return None
    ok["latency_mean_us"] = ok["latency_mean_ns"] / 1e3
    levels = size.endswith("levels")
    fanout = _fanout(folder) if levels else 1
    ok["leaves"] = fanout ** ok[size] if levels else ok[size]
    # the rest of the grid (e.g. the offered load): one row of panels per point
    ok, points, note = grid_points(ok.drop(columns=[size]))
    sns.set_theme(style="whitegrid", context="notebook")
    fig, rows = plt.subplots(len(points), 2, figsize=(11, 4.6 * len(points)), squeeze=False)
    for axes, point in zip(rows, points):
        part = ok[ok["grid"] == point]
        for ax, col, label in ((axes[0], "scheduling_seconds", "total scheduling time (s)"),
                               (axes[1], "latency_mean_us", "mean decision time (µs)")):
            slopes = {lab: _slope(p["leaves"], p[col]) for lab, p in part.groupby("label")}
            named = {lab: f"{lab} (slope {slope:.2f})" for lab, slope in slopes.items()}
            data = part.assign(label=part["label"].map(named))
            sns.lineplot(data=data, x="leaves", y=col, hue="label", style="label",
                         markers=True, dashes=False, errorbar=t_interval, ax=ax)
            ax.set_xscale("log", base=2 if levels and fanout == 2 else 10)
            ax.set_yscale("log")
            readable_ticks(ax)
            ax.set_xlabel("leaves in the hierarchy" + (f" ({fanout}^levels)" if levels else ""))
            ax.set_ylabel(label)
            if point:
                ax.set_title(wrap(point, 60), fontsize="medium")
            ax.legend(title="algorithm (log-log slope)", fontsize="small", loc="upper center",
                      bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    fig.tight_layout()
    rows_note = (f"; one row per {'grid point' if ', ' in points[0] else points[0].split('=')[0]}"
                 + (f", {note}" if note else "")) if len(points) > 1 else ""
    suptitle(fig, f"{folder.name}: scheduling cost against hierarchy size "
             f"(wall clock, {ok['seed'].nunique()} seeds, 95 % intervals{rows_note})")
    return save(fig, folder / "cost.png")


def _slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y on log x (NaN with fewer than two sizes)."""
    good = (x > 0) & (y > 0)
    if x[good].nunique() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[good].astype(float)), np.log(y[good].astype(float)), 1)[0])


def _fanout(folder: Path) -> int:
    spec = load_saved(folder).spec
    return int(spec.hierarchy.get("fanout", 2))

