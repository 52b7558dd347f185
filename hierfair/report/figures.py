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

from hierfair.experiment.results import atomic_path  # noqa: E402
from hierfair.experiment.spec import load_spec  # noqa: E402


def leaf_dominant_shares(alloc: pd.DataFrame, resources: tuple[str, ...],
                         total: np.ndarray, leaves: set[str]) -> pd.DataFrame:
    """Rows of allocations.parquet for leaves, with their dominant share."""
    rows = alloc[alloc["path"].isin(leaves)].copy()
    rows["dominant_share"] = (rows[list(resources)].to_numpy() / total).max(axis=1)
    return rows


def plot_shares(folder: Path) -> Path | None:
    if not (folder / "allocations.parquet").exists():  # no run finished
        return None
    exp = load_spec(folder / "spec.yaml", check_workload=False)
    alloc = pd.read_parquet(folder / "allocations.parquet")
    runs = pd.read_parquet(folder / "runs.parquet")
    h = exp.hierarchy
    leaves = {h.paths[i] for i in h.leaves}
    if len(leaves) > MAX_CURVES:  # many users: draw their ancestors' shares instead
        leaves = set(curve_groups(pd.Series(sorted(leaves))))
    data = leaf_dominant_shares(alloc, exp.cluster.resources, exp.cluster.total, leaves)
    if data.empty:
        return None
    first = runs[runs["status"] == "ok"]
    if "grid_point" in first:  # one grid point and one seed keep the panels readable
        first = first[first["grid_point"] == first["grid_point"].min()]
    first = first[first["seed"] == first["seed"].min()]
    data = data[data["run"].isin(first["run"])]
    sns.set_theme(style="whitegrid", context="notebook")
    few = data["path"].nunique() <= 8  # dashes tell overlapping lines apart
    grid = sns.relplot(data=data, x="time", y="dominant_share", hue="path", col="label",
                       style="path" if few else None, kind="line", drawstyle="steps-post",
                       col_wrap=min(3, data["label"].nunique()), height=3.2, aspect=1.4,
                       facet_kws={"sharex": False})
    grid.set_axis_labels("simulated time", "dominant share")
    grid.set_titles("{col_name}")
    grid.legend.set_title("leaf")
    grid.figure.suptitle(f"{exp.spec.name}: dominant share of each leaf over time", y=1.03)
    out = folder / "shares.png"
    with atomic_path(out) as tmp:
        grid.figure.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(grid.figure)
    return out


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
    out = folder / "improvement.png"
    with atomic_path(out) as tmp:
        grid.figure.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(grid.figure)
    return out


def size_column(runs: pd.DataFrame) -> str | None:
    """The grid column that sizes the hierarchy (e.g. ``hierarchy.levels``), if
    the runs sweep one."""
    for col in runs.columns:
        if col.startswith("hierarchy.") and pd.api.types.is_numeric_dtype(runs[col]) \
                and runs[col].nunique() > 1:
            return col
    return None


def plot_cost(folder: Path) -> Path | None:
    """Scheduling cost against hierarchy size (the MCH letter's Fig. 5 axes):
    every decision's wall time summed per run, and the mean decision, one line
    per algorithm, 95 % intervals over seeds; log scale.  Only for specs that
    sweep the hierarchy's size."""
    runs = pd.read_parquet(folder / "runs.parquet")
    size = size_column(runs)
    if size is None or "scheduling_seconds" not in runs:
        return None
    ok = runs[runs["status"] == "ok"].copy()
    if ok.empty:
        return None
    ok["latency_mean_us"] = ok["latency_mean_ns"] / 1e3
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, label in ((axes[0], "scheduling_seconds", "total scheduling time (s)"),
                           (axes[1], "latency_mean_us", "mean decision time (µs)")):
        sns.lineplot(data=ok, x=size, y=col, hue="label", style="label", markers=True,
                     dashes=False, errorbar=("ci", 95), ax=ax)
        ax.set_yscale("log")
        ax.set_xlabel(size.split(".")[-1].replace("_", " ")
                      + (" (full binary tree: 2^levels leaves)" if size.endswith("levels")
                         else ""))
        ax.set_ylabel(label)
        ax.set_xticks(sorted(ok[size].unique()))
    handles, names = axes[0].get_legend_handles_labels()
    for ax in axes:
        ax.get_legend().remove()
    fig.legend(handles, names, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.suptitle(f"{folder.name}: scheduling cost against hierarchy size "
                 f"(wall clock, {ok['seed'].nunique()} seeds, 95 % intervals)")
    fig.tight_layout()
    out = folder / "cost.png"
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)
    return out
