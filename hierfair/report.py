"""Turn results folders into a report people would rather look at than read.

For every ``<DIR>/<spec>/runs.parquet`` this writes ``<DIR>/<spec>/shares.png``
(each leaf's dominant share over time, one panel per algorithm), for specs
whose claims compare response times ``improvement.png`` (the CDF over jobs of
the response-time improvement, H-DRF §5.2), for specs that sweep the
hierarchy's size ``cost.png`` (scheduling time against size, MCH Fig. 5's
axes), and adds a
section to ``<DIR>/README.md``: what the spec is, which input it used, one
table row per run, and the verdict on every published claim the spec checks
(``claims.json``, see :mod:`hierfair.claims`).  The README opens with all the
verdicts in one table.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from hierfair.catalogue import catalogue_table, read_catalogue  # noqa: E402
from hierfair.claims import (  # noqa: E402
    _aggregate,
    count_verdicts,
    expected_verdict,
    read_verdicts,
    verdict_word,
)
from hierfair.results import atomic_path, write_text  # noqa: E402
from hierfair.spec import load_spec  # noqa: E402

TABLE_COLUMNS = ("label", "seed", "status", "makespan", "wait_mean", "completion_mean",
                 "tasks_unfinished", "latency_p50_ns")


def leaf_dominant_shares(alloc: pd.DataFrame, resources: tuple[str, ...],
                         total: np.ndarray, leaves: set[str]) -> pd.DataFrame:
    """Rows of allocations.parquet for leaves, with their dominant share."""
    rows = alloc[alloc["path"].isin(leaves)].copy()
    rows["dominant_share"] = (rows[list(resources)].to_numpy() / total).max(axis=1)
    return rows


def plot_shares(folder: Path) -> Path | None:
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
    data = data.merge(first[["run", "label"]], on="run")
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
    :mod:`hierfair.improvement`), all seeds pooled: one panel per pair the
    claims compare, one curve per leaf."""
    from hierfair.improvement import improvement_between

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


def section(folder: Path) -> str:
    runs = pd.read_parquet(folder / "runs.parquet")
    exp = load_spec(folder / "spec.yaml", check_workload=False)
    lines = [f"## {exp.spec.name}", "", exp.spec.description or "", ""]
    sources = runs["workload_source"].dropna().unique().tolist()
    if len(sources) > 1:  # the same generator at many run seeds: say it once
        sources = [re.sub(r"seed \d+", "run seeds", src) for src in sources]
    lines += [f"Input: {', '.join(sorted(set(sources)))}.", ""]
    lines += separation_warning(folder, runs)
    cols = [c for c in TABLE_COLUMNS if c in runs]
    util = [c for c in runs.columns if c.startswith("util_")]
    table = runs[cols[:2] + util + cols[2:]]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    lines += seed_summary(runs)
    verdicts = read_verdicts(folder)
    if verdicts:
        lines += ["", "Published claims:", ""]
        for v in verdicts:
            lines.append(f"- **{verdict_word(v)}**: {v['claim']} ({v['source']})"
                         + (f". *{v['note']}*" if v["note"] else ""))
        lines += ["", "| algorithm | measured quantity | the paper | measured | holds |",
                  "|---|---|---|---|---|"]
        for v in verdicts:
            for c in v["checks"]:
                holds = "n/a" if c.get("missing") else "yes" if c["holds"] else "no"
                lines.append(f"| {c['algorithm']} | {c['measures']} | {c['expected']} | "
                             f"{_measured(c)} | {holds} |")
    if (folder / "shares.png").exists():
        lines += ["", f"![dominant shares]({folder.name}/shares.png)"]
    if (folder / "improvement.png").exists():
        lines += ["", f"![response-time improvement]({folder.name}/improvement.png)"]
    if (folder / "cost.png").exists():
        lines += ["", f"![scheduling cost against hierarchy size]({folder.name}/cost.png)"]
    return "\n".join(lines) + "\n"


SEED_METRICS = ("makespan", "wait_mean", "completion_mean", "wait_median_mice")


def seed_summary(runs: pd.DataFrame) -> list[str]:
    """Per algorithm and grid point, the mean over seeds with a 95 % interval
    (only when some label ran more than one seed)."""
    ok = runs[runs["status"] == "ok"]
    grid = [c for c in ok.columns if "." in c or "[" in c]
    keys = ["label", *grid]
    if ok.empty or ok.groupby(keys, dropna=False).size().max() < 2:
        return []
    metrics = [m for m in SEED_METRICS if m in ok and ok[m].notna().any()]
    lines = ["", "Across seeds (mean ± half-width of the 95 % interval):", "",
             "| " + " | ".join([*keys, "seeds", *metrics]) + " |",
             "|" + "---|" * (len(keys) + 1 + len(metrics))]
    for key, group in ok.groupby(keys, dropna=False, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        cells = [_cell(k) for k in key] + [str(len(group))]
        for m in metrics:
            agg = _aggregate(group[m].dropna().tolist()) if group[m].notna().any() else None
            cells.append("—" if agg is None else f"{_cell(agg.value)} ± {_cell(agg.ci95)}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def separation_warning(folder: Path, runs: pd.DataFrame) -> list[str]:
    """A loud line when the experiment cannot tell its schedulers apart."""
    ok = runs[runs["status"] == "ok"]
    if ok["label"].nunique() < 2:
        return []
    if "contended" in ok and not ok["contended"].astype(bool).any():
        return ["**No run contended for the cluster** (no task ever waited): every scheduler "
                "gives the same schedule, so this experiment does not separate them. Give it "
                "load (`workload.arrivals`, docs/workloads.md).", ""]
    if identical_schedules(folder, ok):
        return [f"**All {ok['label'].nunique()} algorithms gave identical schedules** (every "
                "task on the same server at the same times): this experiment does not "
                "separate them.", ""]
    return []


def identical_schedules(folder: Path, runs: pd.DataFrame) -> bool:
    """Whether, at every seed and grid point, every run placed every task on the
    same server at the same start and finish times."""
    keys = [c for c in ("seed", "grid_point") if c in runs]
    for _, group in runs.groupby(keys) if keys else [(None, runs)]:
        first = None
        for run in group["run"]:
            path = folder / "runs" / run / "tasks.parquet"
            if not path.exists():
                return False
            tasks = pd.read_parquet(path, columns=["server", "start", "finish"])
            if first is None:
                first = tasks
            elif not first.equals(tasks):
                return False
    return True


def claims_table(folders: list[Path]) -> list[str]:
    """Every verdict of every spec, one row each, for the top of the report."""
    rows = [(folder.name, v) for folder in folders for v in read_verdicts(folder)]
    if not rows:
        return []
    held = sum(v["verdict"] == expected_verdict(v) for _, v in rows)
    verdicts = [v for _, v in rows]
    proxies = sum(bool(v.get("proxy")) for v in verdicts)
    lines = ["## Published claims", "",
             f"{len(rows)} claims checked: {count_verdicts(verdicts)}; {proxies} of them "
             f"proxies (easier than the paper's setting). {held} of {len(rows)} verdicts are "
             "as the specs expect: a refuted claim is a finding (`expect: refuted`) or a "
             "known model difference (its section says why).", "",
             "| spec | claim | source | check | published | measured | verdict |",
             "|---|---|---|---|---|---|---|"]
    for name, v in rows:
        measured = "; ".join(f"{c['algorithm']} {_measured(c)}" for c in v["checks"])
        kind = f"proxy: {v['proxy']}" if v.get("proxy") else "faithful"
        lines.append(f"| [{name}](#{name}) | {v['claim']} | {v['source']} | {kind} | "
                     f"{v.get('published') or '—'} | {measured} | {verdict_word(v)} |")
    return [*lines, ""]


def _measured(check: dict) -> str:
    """A check's measured value, with its 95 % interval when seeds vary."""
    if check.get("missing"):
        return "n/a"
    text = _cell(check["measured"])
    if check.get("seeds", 0) > 1:
        text += f" ± {_cell(check['ci95'])} ({check['seeds']} runs)"
    return text


def _cell(v: object) -> str:
    if isinstance(v, float | np.floating):
        return f"{v:.4g}"
    return str(v)


def write_report(root: Path, catalogue: Path | None = None) -> Path:
    """``root/README.md`` for every results folder below ``root``; with a
    ``catalogue`` (docs/reproductions.md), it opens with every claim of the
    papers and what checks it."""
    folders = sorted(p.parent for p in root.glob("*/runs.parquet"))
    parts = ["# hierfair reports", "",
             "Generated by `make reproduce`; do not edit by hand. "
             "Latency columns are wall-clock nanoseconds on the machine that ran them.", ""]
    if catalogue is not None:
        verdicts = [(folder.name, v) for folder in folders for v in read_verdicts(folder)]
        parts += catalogue_table(read_catalogue(catalogue), verdicts, verdict_word, _measured)
    parts += claims_table(folders)
    for folder in folders:
        plot_shares(folder)
        plot_improvement(folder)
        plot_cost(folder)
        parts.append(section(folder))
    out = root / "README.md"
    write_text("\n".join(parts), out)
    return out
