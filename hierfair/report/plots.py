"""The figures that answer an experiment's question, beyond shares, cost and
improvement (:mod:`hierfair.report.figures`): utilisation per resource over
time, wait and completion CDFs, makespan bars, preemptions and wasted work.

Each ``plot_*(folder)`` writes ``folder/<name>.png`` and returns its path, or
None when the results hold nothing for it.  :func:`choose` picks a spec's
figures: its ``report.figures`` if given, else by what the results hold.
Units are on every axis; seeds are pooled (CDFs) or give 95 % intervals (bars);
a grid gives one row of panels per grid point (never only the first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

from hierfair.experiment.detail import run_columns
from hierfair.report.facets import (
    facet_titles,
    facets,
    grid_points,
    plt,
    readable_ticks,
    save,
    shared_time,
    suptitle,
    t_interval,
    wrap,
)
from hierfair.report.figures import plot_cost, plot_improvement, plot_shares, size_column
from hierfair.report.sampled import (
    MAX_POINTS,
    ecdf_points,
    span_edges,
    span_means,
    steps,
)


def _ok(folder: Path) -> pd.DataFrame:
    runs = pd.read_parquet(folder / "runs.parquet")
    return runs[runs["status"] == "ok"]


def _lowest_seed(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per label and grid point: the lowest seed."""
    return runs[runs["seed"] == runs["seed"].min()]


def _utilization_steps(folder: Path, runs: pd.DataFrame) -> Iterator[tuple[str, list]]:
    """Per run of ``runs``: its id and each resource's step series to its end
    (the last finish, or where a run with work left was stopped), as
    :func:`~hierfair.report.sampled.steps` draws it, a run and a row group at a time."""
    for row, table in run_columns(folder, "utilization", runs):
        stopped = getattr(row, "stopped_at", float("nan"))
        end = float(row.makespan) if stopped != stopped else max(float(row.makespan),
                                                                  float(stopped))
        resources = [r for r in table.names if r != "time"]
        rows = table.rows()
        if rows == 0:
            continue
        if rows <= MAX_POINTS:
            times = table.column("time")
            yield row.run, [(r, *steps(times, table.column(r), end)) for r in resources]
            continue
        edges = span_edges(*table.bounds("time"), end)
        means = span_means(table.batches(["time", *resources]), edges)
        yield row.run, [(r, edges, np.append(m, m[-1])) for r, m in zip(resources, means)]


def _rows_note(points: list[str], note: str, across: bool = False) -> str:
    if len(points) < 2:
        return ""
    return f"; one {'column' if across else 'row'} per grid point" + (
        f", {note}" if note else "")


def plot_utilization(folder: Path) -> Path | None:
    """Share of each resource in use over time: one panel per algorithm
    (columns) and grid point (rows), the lowest seed of each."""
    ok, points, note = grid_points(_ok(folder))
    first = _lowest_seed(ok)
    labels = first.set_index("run")["label"]  # older folders' tables carry only ``run``
    grid_of = first.set_index("run")["grid"]
    frames = []
    for run, series in _utilization_steps(folder, first):
        for r, t, v in series:
            frames.append(pd.DataFrame({"time": t, "in use": v, "resource": r,
                                        "label": labels[run], "grid": grid_of[run]}))
    if not frames:
        return None
    data = pd.concat(frames, ignore_index=True)
    faceted = len(points) > 1
    layout = facets(data["label"].nunique(), points)
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.relplot(data=data, x="time", y="in use", hue="resource", **layout,
                       kind="line", drawstyle="steps-post",
                       height=2.4 if faceted else 2.8, aspect=1.5,
                       facet_kws={"sharex": shared_time(layout)})
    grid.set_axis_labels("simulated time (s)", "share in use")
    # over-commitment (slot schedulers) shows above 1
    grid.set(ylim=(-0.02, max(1.05, float(data["in use"].max()) * 1.05)))
    for ax in grid.axes.flat:
        readable_ticks(ax)
    facet_titles(grid, layout["col"], layout.get("row"))
    suptitle(grid.figure, f"{folder.name}: share of the cluster's resources in use "
             f"(seed {int(first['seed'].min())}"
             f"{_rows_note(points, note, layout['col'] == 'grid')})")
    return save(grid.figure, folder / "utilization.png")


def plot_waits(folder: Path) -> Path | None:
    """CDFs over jobs of wait and completion time, all seeds pooled: one row
    of panels per grid point.  Read an algorithm and grid point at a time,
    two columns, and drawn from :func:`~hierfair.report.sampled.ecdf_points`
    (the paper-scale week's sweep is ~50 M jobs)."""
    ok, points, note = grid_points(_ok(folder))
    frames = []
    tables = {row.run: table for row, table in  # files not read yet
              run_columns(folder, "jobs", ok, ["wait", "completion"])}
    for (label, point), group in ok.groupby(["label", "grid"], sort=False):
        pooled: dict[str, list[np.ndarray]] = {"wait": [], "completion": []}
        for table in (tables[run] for run in group["run"] if run in tables):
            for col, arrays in pooled.items():
                if col in table.names:
                    arrays.append(table.column(col).astype(float))
        for col, arrays in pooled.items():
            if arrays:
                x, weight = ecdf_points(np.concatenate(arrays))
                frames.append(pd.DataFrame({"label": label, "grid": point,
                                            "time of": f"job {col} time",
                                            "seconds": x, "jobs": weight}))
    if not frames:
        return None
    data = pd.concat(frames, ignore_index=True)
    if data.empty or data["seconds"].max() <= 0:
        return None
    faceted = len(points) > 1
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.displot(data=data, x="seconds", weights="jobs", hue="label", col="time of",
                       kind="ecdf", row="grid" if faceted else None,
                       row_order=points if faceted else None,
                       height=2.8 if faceted else 3.2, aspect=1.4,
                       facet_kws={"sharex": False})
    for ax in grid.axes.flat:
        ax.set_xscale("symlog", linthresh=1.0)  # many zero waits, a long tail
        ax.set_xlim(left=0)
        readable_ticks(ax)
    grid.set_axis_labels("seconds (symmetric log scale)", "fraction of jobs")
    facet_titles(grid, "time of", "grid" if faceted else None)
    grid.legend.set_title("algorithm")
    suptitle(grid.figure, f"{folder.name}: job wait and completion times "
             f"({ok['seed'].nunique()} seeds pooled{_rows_note(points, note)})")
    return save(grid.figure, folder / "waits.png")


def _bars(folder: Path, metrics: list[tuple[str, str]], name: str, title: str
          ) -> Path | None:
    """Horizontal bars (algorithms on the y axis: long labels never overlap,
    no legend hides a bar): one panel per metric (columns) and grid point
    (rows), the mean over seeds with its 95 % interval."""
    ok = _ok(folder)
    # a metric that is zero everywhere is not drawn (its title says it)
    metrics = [(m, unit) for m, unit in metrics if m in ok and (ok[m].fillna(0) != 0).any()]
    if ok.empty or not metrics:
        return None
    ok, points, note = grid_points(ok)
    labels = list(dict.fromkeys(ok["label"]))
    sns.set_theme(style="whitegrid", context="notebook")
    height = 0.9 + 0.32 * len(labels)
    fig, axes = plt.subplots(len(points), len(metrics), squeeze=False,
                             figsize=(5.4 * len(metrics), height * len(points) + 0.4))
    for row, point in zip(axes, points):
        part = ok[ok["grid"] == point]
        for ax, (metric, unit) in zip(row, metrics):
            sns.barplot(data=part, y="label", x=metric, order=labels, errorbar=t_interval,
                        capsize=0.2, ax=ax, color=sns.color_palette()[0],
                        err_kws={"linewidth": 1.2})
            ax.set_ylabel("")
            ax.set_xlabel(f"{metric.replace('_', ' ')} ({unit})")
            readable_ticks(ax, "x")
            if point:
                ax.set_title(wrap(point, 60), fontsize="medium")
    seeds = ok["seed"].nunique()
    fig.tight_layout()
    suptitle(fig, f"{folder.name}: {title} (mean over {seeds} seed{'s' * (seeds > 1)}"
             + (", 95 % interval" if seeds > 1 else "") + _rows_note(points, note) + ")",
             width=45 * len(metrics))
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
    "shares": "Dominant share of each leaf (or group of leaves) over time, per algorithm "
              "(and grid point).",
    "utilization": "Share of each resource in use over time, per algorithm (and grid point); "
                   f"a run of more than {MAX_POINTS:,} changes as the mean over each of "
                   f"{MAX_POINTS:,} equal spans.",
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
