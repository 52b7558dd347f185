"""Figures: one PNG per question an experiment asks, written beside its results.

``shares.png`` -- each leaf's dominant share over time, one panel per
algorithm (many users are drawn by their ancestors); ``improvement.png`` --
for specs whose claims compare response times, the CDF over jobs of the
response-time improvement (H-DRF §5.2); ``cost.png`` -- for specs that sweep
the hierarchy's size, scheduling time against size (MCH Fig. 5's axes).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from hierfair.experiment.detail import detail_table  # noqa: E402
from hierfair.experiment.results import atomic_path  # noqa: E402
from hierfair.experiment.spec import load_spec  # noqa: E402


def leaf_dominant_shares(alloc: pd.DataFrame, resources: tuple[str, ...],
                         total: np.ndarray, leaves: set[str]) -> pd.DataFrame:
    """Rows of allocations.parquet for leaves, with their dominant share."""
    rows = alloc[alloc["path"].isin(leaves)].copy()
    rows["dominant_share"] = (rows[list(resources)].to_numpy() / total).max(axis=1)
    return rows


def plot_shares(folder: Path) -> Path | None:
    runs = pd.read_parquet(folder / "runs.parquet")
    first = runs[runs["status"] == "ok"]
    if "grid_point" in first:  # one grid point and one seed keep the panels readable
        first = first[first["grid_point"] == first["grid_point"].min()]
    first = first[first["seed"] == first["seed"].min()]
    alloc = detail_table(folder, "allocations", first)
    if alloc is None:  # no run finished, or the spec keeps no allocations
        return None
    exp = load_spec(folder / "spec.yaml", check_workload=False)
    h = exp.hierarchy
    leaves = {h.paths[i] for i in h.leaves}
    if len(leaves) > MAX_CURVES:  # many users: draw their ancestors' shares instead
        leaves = set(curve_groups(pd.Series(sorted(leaves))))
    data = leaf_dominant_shares(alloc, exp.cluster.resources, exp.cluster.total, leaves)
    data = data[data["run"].isin(first["run"])]
    if data.empty:
        return None
    data["label"] = data["run"].map(first.set_index("run")["label"])  # older folders: no tags
    sns.set_theme(style="whitegrid", context="notebook")
    few = data["path"].nunique() <= 8  # dashes tell overlapping lines apart
    grid = sns.relplot(data=data, x="time", y="dominant_share", hue="path", col="label",
                       style="path" if few else None, kind="line", drawstyle="steps-post",
                       col_wrap=min(3, data["label"].nunique()), height=3.2, aspect=1.4,
                       facet_kws={"sharex": False})
    grid.set_axis_labels("simulated time (s)", "dominant share (of the cluster)")
    grid.set_titles("{col_name}")
    grid.legend.set_title("leaf")
    grid.figure.suptitle(f"{exp.spec.name}: dominant share of each leaf over time", y=1.03)
    return save(grid.figure, folder / "shares.png")


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
    exp = load_spec(folder / "spec.yaml", check_workload=False)
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
    from hierfair.experiment.improvement import improvement_between

    frames = []
    for a, b, where in improvement_pairs(folder):
        jobs = improvement_between(folder, a, b, where=where or None)
        # a grid path's last two parts name it; paths set together show once
        cond = ", ".join(dict.fromkeys(f"{'.'.join(k.split('.')[-2:])}={v}"
                                       for k, v in where.items()))
        frames.append(jobs[["leaf", "improvement"]].dropna().assign(
            pair=f"{a} over {b}" + (f" ({cond})" if cond else "")))
    data = pd.concat(frames) if frames else pd.DataFrame()
    if data.empty:
        return None
    data["improvement"] = data["improvement"].clip(lower=IMPROVEMENT_FLOOR)
    data["leaf"] = curve_groups(data["leaf"])  # many users: one curve per group
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.displot(data=data, x="improvement", hue="leaf", col="pair", kind="ecdf",
                       col_wrap=min(3, data["pair"].nunique()), height=3.2, aspect=1.4)
    for ax in grid.axes.flat:
        ax.axvline(0, color="0.4", lw=0.8)
    grid.set_axis_labels("response-time improvement (%)", "fraction of jobs")
    grid.set_titles("{col_name}")
    grid.figure.suptitle(f"{folder.name}: per-job response-time improvement (H-DRF §5.2), "
                         "seeds pooled; below −200 % drawn at −200 %", y=1.04)
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
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, col, label in ((axes[0], "scheduling_seconds", "total scheduling time (s)"),
                           (axes[1], "latency_mean_us", "mean decision time (µs)")):
        slopes = {lab: _slope(part["leaves"], part[col]) for lab, part in ok.groupby("label")}
        named = {lab: f"{lab} (slope {slope:.2f})" for lab, slope in slopes.items()}
        data = ok.assign(label=ok["label"].map(named))
        sns.lineplot(data=data, x="leaves", y=col, hue="label", style="label", markers=True,
                     dashes=False, errorbar=("ci", 95), ax=ax)
        ax.set_xscale("log", base=2 if levels and fanout == 2 else 10)
        ax.set_yscale("log")
        ax.set_xlabel("leaves in the hierarchy" + (f" ({fanout}^levels)" if levels else ""))
        ax.set_ylabel(label)
        ax.legend(title="algorithm (log-log slope)", fontsize="small", loc="upper center",
                  bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    fig.suptitle(f"{folder.name}: scheduling cost against hierarchy size "
                 f"(wall clock, {ok['seed'].nunique()} seeds, 95 % intervals)")
    fig.tight_layout()
    return save(fig, folder / "cost.png")


def _slope(x: pd.Series, y: pd.Series) -> float:
    """Least-squares slope of log y on log x (NaN with fewer than two sizes)."""
    good = (x > 0) & (y > 0)
    if x[good].nunique() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[good].astype(float)), np.log(y[good].astype(float)), 1)[0])


def _fanout(folder: Path) -> int:
    spec = load_spec(folder / "spec.yaml", check_workload=False).spec
    return int(spec.hierarchy.get("fanout", 2))


def save(fig, out: Path) -> Path:
    """Write a figure atomically and close it."""
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)
    return out
