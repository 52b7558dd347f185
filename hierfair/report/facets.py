"""How a figure is laid out: panels by algorithm and grid point, numbers as
the report writes them, wrapped titles, and writing it into its folder.

Every figure facets by grid point (:func:`grid_points`: one row of panels per
value, at most :data:`MAX_GRID_PANELS`), writes its numbers as the report
does (:func:`readable_ticks`: ``12,500``, never ``1e4``), wraps long panel
titles (:func:`facet_titles`) and is saved through the folder's manifest
(:func:`save`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

from hierfair.experiment.manifest import Manifest  # noqa: E402
from hierfair.experiment.results import atomic_path  # noqa: E402
from hierfair.experiment.stats import Sample  # noqa: E402
from hierfair.report.fmt import axis_names, distinct, num  # noqa: E402

#: Figures facet by grid point: beyond this many, evenly spaced ones are drawn
#: (the figure's title says how many of how many).
MAX_GRID_PANELS = 8
#: Panel titles are wrapped at this many characters.
TITLE_WIDTH = 36


def grid_columns(runs: pd.DataFrame) -> list[str]:
    """The grid columns (``workload.durations``, ``hierarchy.levels``) whose
    value differs between runs."""
    return [c for c in runs.columns if ("." in c or "[" in c)
            and runs[c].astype(str).nunique() > 1]


def grid_points(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """``runs`` with a ``grid`` column naming each run's grid point
    (``durations=[200, 200, 200, 10, 10]``: the grid path's last part; empty
    when there is one point), the points to draw in grid order, and a note for
    the title when only some of them are (more than :data:`MAX_GRID_PANELS`).

    A grid over one algorithm's parameters (``algorithms[2].params...``)
    names a variant of that algorithm, not a grid point: it is added to the
    run's ``label`` (``slots-5 (mem=2)``), so each variant is drawn once per
    point of the rest of the grid."""
    cols = grid_columns(runs)
    runs = runs.copy()
    own = [c for c in cols if c.startswith("algorithms[")]
    cols = [c for c in cols if c not in own]
    if own:
        base = runs["label"].tolist()
        runs["label"] = [row[0] + "".join(
            f" ({c.split('.')[-1]}={_value(v)})" for c, v in zip(own, row[1:]) if pd.notna(v))
            for row in runs[["label", *own]].itertuples(index=False)]
        # each algorithm's variants together, in the spec's order of algorithms
        first = {name: i for i, name in reversed(list(enumerate(base)))}
        keys = [(first[b], name) for b, name in zip(base, runs["label"])]
        runs = runs.iloc[sorted(range(len(runs)), key=keys.__getitem__)]
    if not cols:
        runs["grid"] = ""
        return runs, [""], ""
    axis = {c: list(runs[c].dropna().unique()) for c in cols}
    named = axis_names(cols)
    runs["grid"] = [", ".join(f"{named[c]}={_value(distinct(v, axis[c]))}"
                              for c, v in zip(cols, row))
                    for row in runs[cols].itertuples(index=False)]
    order = "grid_point" if "grid_point" in runs else cols[0]
    points = list(dict.fromkeys(runs.sort_values(order, kind="stable")["grid"]))
    note = ""
    if len(points) > MAX_GRID_PANELS:
        keep = np.linspace(0, len(points) - 1, MAX_GRID_PANELS).round().astype(int)
        note = f"{MAX_GRID_PANELS} of {len(points)} grid points, evenly spaced"
        points = [points[i] for i in keep]
        runs = runs[runs["grid"].isin(points)]
    return runs, points, note


def facets(labels: int, points: list[str]) -> dict:
    """How a figure of one panel per algorithm (and grid point) is laid out:
    algorithms across and grid points down, or -- with more than 3 algorithms
    and fewer grid points -- the other way round (panels too narrow to read
    otherwise); one point: algorithms across, 3 to a row."""
    if len(points) < 2:
        return {"col": "label", "col_wrap": min(3, labels)}
    if labels > 3 and len(points) < labels:
        return {"col": "grid", "col_order": points, "row": "label"}
    return {"col": "label", "row": "grid", "row_order": points}


def _value(v: object) -> str:
    return num(v) if isinstance(v, float | np.floating) else str(v)


def wrap(text: str, width: int = TITLE_WIDTH) -> str:
    return "\n".join(textwrap.fill(part, width) for part in str(text).split("\n"))


def readable_ticks(ax, which: str = "xy") -> None:
    """Ticks written as the report writes numbers (``12,500``, ``0.25``;
    on a log axis ``0.1``, ``1``, ``1,000`` rather than powers of ten), never
    in e-notation; a linear axis gets a few (at most 5 across, 6 up) so that
    they do not overlap."""
    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        scale = ax.get_xscale() if name == "x" else ax.get_yscale()
        if scale == "linear":
            axis.set_major_locator(MaxNLocator(nbins=4 if name == "x" else 5, min_n_ticks=3))
        elif scale in ("log", "symlog"):
            axis.set_minor_formatter(NullFormatter())
        else:
            continue
        axis.set_major_formatter(FuncFormatter(lambda v, _: num(float(v))))


def shared_time(layout: dict) -> str | bool:
    """Panels of one grid point share their time axis (runs at different
    points may last very different times)."""
    return "row" if layout.get("row") == "grid" else "col" if layout["col"] == "grid" \
        else False


def facet_titles(grid, col: str | None, row: str | None) -> None:
    """Each panel titled by the algorithm over the grid point (whichever is
    the row), wrapped; then the panels are laid out again so that no title
    covers the row above."""
    for key, ax in grid.axes_dict.items():
        if row and col:
            r, c = key
            first, second = (r, c) if row == "label" else (c, r)
            title = f"{first}\n{second}" if second else str(first)
        else:
            title = str(key)
        ax.set_title(wrap(title), fontsize="medium")
    grid.tight_layout()


def suptitle(fig, text: str, width: int = 110) -> None:
    """The figure's title above its panels (and outside them: call it after
    any ``tight_layout``), wrapped to the figure's width."""
    fig.suptitle(wrap(text, width), y=1.0, va="bottom")


def t_interval(values: pd.Series) -> tuple[float, float]:
    """An error bar: the t interval of the mean over seeds, the interval a
    verdict uses (:mod:`hierfair.experiment.stats`) -- not seaborn's
    bootstrap, which draws other bars at every call."""
    v = np.asarray(values, dtype=float)
    return Sample(v[~np.isnan(v)], "t").interval()


def save(fig, out: Path) -> Path:
    """Write a figure atomically, recorded in its folder's manifest (a file of
    the same name that hierfair did not write is refused), and close it."""
    try:
        with Manifest.open(out.parent).writing(out.name) as path, atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    finally:
        plt.close(fig)
    return out
