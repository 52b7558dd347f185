"""The figures that answer an experiment's question, beyond shares, cost and
improvement (:mod:`hierfair.report.figures`): utilisation per resource over
time, wait and completion CDFs, makespan bars, preemptions and wasted work.

Each ``plot_*(folder)`` writes ``folder/<name>.png`` and returns its path, or
None when the results hold nothing for it.  :func:`choose` picks a spec's
figures: its ``report.figures`` if given, else by what the results hold.
Units are on every axis; seeds are pooled (CDFs) or give 95 % intervals (bars).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.experiment.detail import detail_table
from hierfair.report.figures import (
    plot_cost,
    plot_improvement,
    plot_shares,
    plt,
    save,
    size_column,
    sns,
)

#: Longer step series are resampled on this many instants (a figure, not a table).
MAX_POINTS = 2000


def _ok(folder: Path) -> pd.DataFrame:
    runs = pd.read_parquet(folder / "runs.parquet")
    return runs[runs["status"] == "ok"]


def _first(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per label: the first grid point, the lowest seed."""
    if "grid_point" in runs:
        runs = runs[runs["grid_point"] == runs["grid_point"].min()]
    return runs[runs["seed"] == runs["seed"].min()]


def _steps(times: np.ndarray, values: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray]:
    """A step series on at most MAX_POINTS instants (the value holding at each)."""
    if len(times) <= MAX_POINTS:
        return times, values
    grid = np.linspace(times[0], end, MAX_POINTS)
    return grid, values[np.searchsorted(times, grid, side="right") - 1]


def plot_utilization(folder: Path) -> Path | None:
    """Share of each resource in use over time, one panel per algorithm."""
    first = _first(_ok(folder))
    util = detail_table(folder, "utilization", first)
    if util is None:
        return None
    util = util[util["run"].isin(first["run"])]
    resources = [c for c in util.columns if c not in set(first.columns) | {"time", "run"}]
    labels = first.set_index("run")["label"]  # older folders' tables carry only ``run``
    if util.empty or not resources:
        return None
    frames = []
    for run, part in util.groupby("run", sort=False):
        end = float(first.loc[first["run"] == run, "makespan"].iloc[0])
        for r in resources:
            t, v = _steps(part["time"].to_numpy(float), part[r].to_numpy(float), end)
            frames.append(pd.DataFrame({"time": t, "in use": v, "resource": r,
                                        "label": labels[run]}))
    data = pd.concat(frames, ignore_index=True)
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.relplot(data=data, x="time", y="in use", hue="resource", col="label",
                       kind="line", drawstyle="steps-post", height=2.8, aspect=1.5,
                       col_wrap=min(3, data["label"].nunique()), facet_kws={"sharex": False})
    grid.set_axis_labels("simulated time (s)", "share of the cluster in use")
    grid.set(ylim=(-0.02, 1.05))
    grid.set_titles("{col_name}")
    grid.figure.suptitle(f"{folder.name}: utilisation per resource "
                         f"(seed {int(first['seed'].min())}, first grid point)", y=1.03)
    return save(grid.figure, folder / "utilization.png")


def plot_waits(folder: Path) -> Path | None:
    """CDFs over jobs of wait and completion time, all seeds pooled."""
    ok = _ok(folder)
    if "grid_point" in ok:
        ok = ok[ok["grid_point"] == ok["grid_point"].min()]
    jobs = detail_table(folder, "jobs", ok, columns=["run", "wait", "completion"])
    if jobs is None:
        return None
    jobs = jobs[jobs["run"].isin(ok["run"])]
    jobs["label"] = jobs["run"].map(ok.set_index("run")["label"])
    data = jobs.melt(id_vars=["label"], value_vars=["wait", "completion"],
                     var_name="time of", value_name="seconds").dropna()
    if data.empty or data["seconds"].max() <= 0:
        return None
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.displot(data=data, x="seconds", hue="label", col="time of", kind="ecdf",
                       height=3.2, aspect=1.4, facet_kws={"sharex": False})
    for ax in grid.axes.flat:
        ax.set_xscale("symlog", linthresh=1.0)  # many zero waits, a long tail
        ax.set_xlim(left=0)
    grid.set_axis_labels("seconds (symmetric log scale)", "fraction of jobs")
    grid.set_titles("job {col_name} time")
    grid.figure.suptitle(f"{folder.name}: job wait and completion times "
                         f"({ok['seed'].nunique()} seeds pooled, first grid point)", y=1.04)
    return save(grid.figure, folder / "waits.png")


def _bars(folder: Path, metrics: list[tuple[str, str]], name: str, title: str
          ) -> Path | None:
    ok = _ok(folder)
    # a metric that is zero everywhere is not drawn (its title says it)
    metrics = [(m, unit) for m, unit in metrics if m in ok and (ok[m].fillna(0) != 0).any()]
    if ok.empty or not metrics:
        return None
    grid_cols = [c for c in ok.columns if ("." in c or "[" in c) and ok[c].nunique() > 1]
    hue = grid_cols[0] if grid_cols and ok[grid_cols[0]].nunique() <= 6 else None
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 3.6), squeeze=False)
    for ax, (metric, unit) in zip(axes[0], metrics):
        sns.barplot(data=ok, x="label", y=metric, hue=hue, errorbar=("ci", 95), capsize=0.15,
                    ax=ax)
        ax.set_xlabel("")
        ax.set_ylabel(f"{metric.replace('_', ' ')} ({unit})")
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    seeds = ok["seed"].nunique()
    fig.suptitle(f"{folder.name}: {title} (mean over {seeds} seed{'s' * (seeds > 1)}"
                 + (", 95 % interval" if seeds > 1 else "") + ")")
    fig.tight_layout()
    return save(fig, folder / f"{name}.png")


def plot_makespan(folder: Path) -> Path | None:
    return _bars(folder, [("makespan", "s"), ("completion_mean", "s")], "makespan",
                 "makespan and mean completion time")


def plot_preemptions(folder: Path) -> Path | None:
    ok = _ok(folder)
    if ok.empty or not (ok.get("preemptions", pd.Series([0])).fillna(0) > 0).any() and not \
            (ok.get("wasted_work", pd.Series([0])).fillna(0) > 0).any():
        return None
    return _bars(folder, [("preemptions", "tasks"), ("wasted_work", "task-seconds"),
                          ("kills", "attempts")], "preemptions",
                 "preemptions and wasted work")


FIGURES: dict[str, Callable[[Path], Path | None]] = {
    "shares": plot_shares, "utilization": plot_utilization, "waits": plot_waits,
    "makespan": plot_makespan, "preemptions": plot_preemptions, "cost": plot_cost,
    "improvement": plot_improvement}

CAPTIONS = {
    "shares": "Dominant share of each leaf (or group of leaves) over time, per algorithm.",
    "utilization": "Share of each resource in use over time, per algorithm.",
    "waits": "Distribution over jobs of the wait (first task start − arrival) and the "
             "completion time (finish − arrival).",
    "makespan": "When the last task finished, and the mean job completion time.",
    "preemptions": "Tasks preempted and the work they lost.",
    "cost": "Scheduling cost against hierarchy size (wall clock), log–log, with the fitted "
            "slope of each algorithm.",
    "improvement": "Per-job response-time improvement of one algorithm over another "
                   "(H-DRF §5.2).",
}


def choose(folder: Path, asked: list[str] | None) -> list[str]:
    """The spec's ``report.figures``, else by what the experiment asks:
    a sweep of hierarchy size asks what scheduling costs (cost); a workload
    of many jobs asks how it ran (utilisation, waits, makespan bars when
    algorithms are compared, response-time improvement when the claims
    compare a pair); a small example asks who holds what (shares).
    Preemptions whenever any happened."""
    if asked is not None:
        return list(asked)
    ok = _ok(folder)
    if ok.empty:
        return []
    if size_column(ok) is not None and "scheduling_seconds" in ok:
        return ["cost"]
    out = ["improvement"]  # draws nothing unless the claims compare a pair
    if ok["jobs"].max() >= 10:
        out += ["utilization", "waits"]
        if ok["label"].nunique() > 1:
            out.append("makespan")
    else:
        out.append("shares")
    if (ok.get("preemptions", 0) > 0).any() or (ok.get("wasted_work", 0) > 0).any():
        out.append("preemptions")
    return out


def draw(folder: Path, asked: list[str] | None) -> list[tuple[str, Path]]:
    """Draw the chosen figures; (name, png) of those that had something to show."""
    out = []
    for name in choose(folder, asked):
        path = FIGURES[name](folder)
        if path is not None:
            out.append((name, path))
    return out
