"""The page an operator reads: the production schedulers beside H-DRF on the
same trees and workloads, one figure per question.

Reads the results of the comparison specs (``experiments/prod-compare-*``:
the paper's tree, a random tree, a Google-trace day on a contended cluster)
and writes ``production.html`` beside the report's ``index.html``, its
figures in ``production/``.  Per policy: how long queues that wanted more
sat below what their weights promise and the longest starvation
(:mod:`hierfair.experiment.guarantees`), preemptions and the most times one
job was preempted, utilisation, waits -- each explained by the rule that
causes it (:data:`RULES`, docs/algorithms.md).
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hierfair.experiment.guarantees import TABLES, leaf_guarantees  # noqa: E402
from hierfair.experiment.results import write_text  # noqa: E402
from hierfair.experiment.runs_table import ENDED  # noqa: E402
from hierfair.experiment.spec import load_saved  # noqa: E402
from hierfair.report.facets import save  # noqa: E402

PAGE = "production.html"
#: What marks the page as written by hierfair (never overwrite a user's file).
MARK = "<title>hierfair: production schedulers</title>"
PREFIX = "prod-compare"

#: How each policy aggregates a hierarchy: the rule behind its numbers.
RULES = {
    "hdrf": "H-DRF: rescales demanding children to the smallest share and ignores "
            "blocked ones (§3.4), so a parent's share is not inflated by a child that "
            "cannot use more",
    "naive-hdrf": "naive H-DRF (H-DRF §3.3): a parent's usage is the plain sum of its "
                  "children's, so a child that cannot use more inflates its parent's share "
                  "and starves its siblings",
    "kueue": "Kueue: DRS of quota borrowed above nominal, summed up the tree (naive "
             "aggregation), one head per queue per cycle, every head that fits admitted "
             "whatever its DRS",
    "kueue-reclaim": "Kueue with reclaim: every head that fits is admitted whatever its DRS, "
                     "so a queue over its share is admitted into room another queue's "
                     "finished task freed, and evicted back at once (churn)",
    "volcano": "Volcano drf: rescales unsaturated children like H-DRF but counts saturated "
               "resources and applies weights outside the rescaling",
    "volcano-capacity": "Volcano capacity: share = allocated / deserved per queue, parents "
                        "the sum of their children",
    "yarn-fair": "YARN FairScheduler DRF: parent usage = sum of its children (naive), "
                 "needy queues first",
    "mesos-drf": "Mesos DRF sorter: subtree allocation over the cluster per node path "
                 "(naive), ties by allocation count",
    "yunikorn-fair": "YuniKorn fair: the largest allocated/guaranteed ratio, no weights, "
                     "priority first",
}
QUESTIONS = [
    ("guarantee", "Did a queue that wanted more get less than its weights promise?",
     "share of the leaves' backlogged time spent below their guarantee"),
    ("starvation", "Was a queue starved (waiting, nothing running)?",
     "longest starvation of any leaf (s)"),
    ("preemptions", "How much churn?", "preemptions (bars) and most per job (dots)"),
    ("utilisation", "How full was the cluster?", "time-averaged utilisation, per resource"),
    ("waits", "How long did jobs wait?", "mean job wait (s)"),
]


def comparison_folders(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob(f"{PREFIX}*/runs.parquet"))


def measure(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per run that ended (its label and the page's quantities), and
    one per run and leaf (its guarantee, backlogged and below-guarantee time)."""
    exp = load_saved(folder)
    runs = pd.read_parquet(folder / "runs.parquet")
    rows, per_leaf = [], []
    for r in runs[runs["status"].isin(ENDED)].itertuples():
        run_dir = folder / "runs" / r.run
        row = {"label": r.label, "seed": r.seed, "preemptions": r.preemptions,
               "preemptions_max_job": r.preemptions_max_job, "wait_mean": r.wait_mean,
               "looped": getattr(r, "looped", 0)}
        for res in exp.cluster.resources:
            row[f"util_{res}"] = getattr(r, f"util_{res}")
        if all((run_dir / f"{t}.parquet").exists() for t in TABLES):
            end = r.stopped_at if r.stopped_at == r.stopped_at else r.makespan
            leaves = leaf_guarantees(run_dir, exp, int(r.run_seed), float(end))
            per_leaf += [{"label": r.label, "seed": r.seed, **x._asdict()} for x in leaves]
            # time-weighted over the leaves: a leaf that waited a moment and
            # a leaf that waited all run do not count alike
            backlogged = sum(x.backlogged for x in leaves)
            row["guarantee"] = sum(x.below for x in leaves) / backlogged if backlogged else 0.0
            row["starvation"] = max((x.longest_starvation for x in leaves), default=0.0)
            row["worst_leaf"] = max(leaves, key=lambda x: x.below / x.backlogged
                                    if x.backlogged else 0).leaf if leaves else ""
        rows.append(row)
    return pd.DataFrame(rows), pd.DataFrame(per_leaf)


def _bars(ax, frame: pd.DataFrame, column: str, title: str) -> None:
    mean = frame.groupby("label", sort=False)[column].mean()
    ax.barh(mean.index, mean.to_numpy(), color="#4c78a8")
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.invert_yaxis()


def figure(question: str, xlabel: str, measured: dict[str, pd.DataFrame], out: Path) -> Path:
    """One question, a panel per comparison spec."""
    cols = min(3, len(measured))  # at most three panels a row: legible at page width
    rows = -(-len(measured) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(measured):]:
        ax.set_visible(False)
    for ax, (name, frame) in zip(axes.flat, measured.items()):
        if question == "utilisation":
            cols = [c for c in frame if c.startswith("util_")]
            mean = frame.groupby("label", sort=False)[cols].mean()
            y = np.arange(len(mean))
            for k, c in enumerate(cols):
                ax.barh(y + k * 0.8 / len(cols), mean[c], height=0.8 / len(cols),
                        label=c[5:])
            ax.set_yticks(y + 0.4 - 0.4 / len(cols), mean.index)
            ax.invert_yaxis()
            ax.legend(fontsize=7)
            ax.set_title(name, fontsize=9)
            ax.tick_params(labelsize=8)
        elif question == "preemptions":
            _bars(ax, frame, "preemptions", name)
            most = frame.groupby("label", sort=False)["preemptions_max_job"].max()
            ax.plot(most.to_numpy(), most.index, "o", color="#e45756", label="most per job")
            ax.legend(fontsize=7)
        else:
            column = {"guarantee": "guarantee", "starvation": "starvation",
                      "waits": "wait_mean"}[question]
            if column not in frame:
                ax.set_title(f"{name}: no detail tables", fontsize=9)
                continue
            _bars(ax, frame, column, name)
        ax.set_xlabel(xlabel, fontsize=8)
    fig.tight_layout()
    return save(fig, out)


_COLUMN = {"guarantee": "guarantee", "starvation": "starvation", "preemptions": "preemptions",
           "waits": "wait_mean"}


def _rule(label: str) -> str:
    return next((RULES[k] for k in sorted(RULES, key=len, reverse=True)
                 if label == k or label.startswith(k + "-")), "")


def _because(label: str) -> str:
    """" -- " and the rule behind ``label``'s number, or nothing (a policy
    the page has no rule for)."""
    rule = _rule(label)
    return f" -- {html.escape(rule)}" if rule else ""


def _fmt(question: str, v: float) -> str:
    if v != v:
        return "–"
    return f"{v:.0%}" if question == "guarantee" else f"{v:,.0f}"


def _explain(question: str, measured: dict[str, pd.DataFrame]) -> str:
    """A table of the numbers behind the figure (policy x spec, mean over
    seeds), and the rule behind each spec's extremes."""
    column = _COLUMN.get(question)
    if column is None:
        return ""
    means = {name: frame.groupby("label", sort=False)[column].mean()
             for name, frame in measured.items() if column in frame and not frame.empty}
    if not means:
        return ""
    labels = list(dict.fromkeys(lab for m in means.values() for lab in m.index))
    rows = ["<table><tr><th>policy</th>" + "".join(f"<th>{html.escape(n)}</th>"
                                                   for n in means) + "</tr>"]
    for lab in labels:
        rows.append(f"<tr><td>{html.escape(lab)}</td>" + "".join(
            f"<td>{_fmt(question, float(m.get(lab, np.nan)))}</td>" for m in means.values())
            + "</tr>")
    lines = []
    for name, mean in means.items():
        worst, best = mean.idxmax(), mean.idxmin()
        if mean[worst] == mean[best]:
            lines.append(f"<li><b>{html.escape(name)}</b>: every policy "
                         f"{_fmt(question, mean[worst])}.</li>")
            continue
        lines.append(f"<li><b>{html.escape(name)}</b>: most {html.escape(worst)} "
                     f"({_fmt(question, mean[worst])}){_because(worst)}; least "
                     f"{html.escape(best)} ({_fmt(question, mean[best])}){_because(best)}.</li>")
    return "".join(rows) + "</table><ul>" + "".join(lines) + "</ul>"


def leaf_table(name: str, leaves: pd.DataFrame) -> str:
    """Guarantee violations per node: each leaf's time below its guarantee
    as a share of its backlogged time (summed over seeds), per policy; the
    cells where a policy leaves a leaf below it over a tenth of the time
    more than H-DRF does (with preemption, where the spec runs it) are
    marked, and the rule behind each is named."""
    if leaves.empty:
        return ""
    sums = leaves.groupby(["leaf", "label"], sort=False)[["below", "backlogged"]].sum()
    frac = (sums["below"] / sums["backlogged"].where(sums["backlogged"] > 0)).unstack("label")
    labels = list(dict.fromkeys(leaves["label"]))
    frac = frac.reindex(columns=labels)
    guarantee = leaves.groupby("leaf", sort=False)["guarantee"].first()
    # H-DRF with preemption where the spec runs it (the like-for-like baseline)
    ref = next((b for b in ("hdrf-preemptive", "hdrf") if b in frac), None)
    base = frac[ref] if ref else pd.Series(0.0, index=frac.index)
    head = "".join(f"<th>{html.escape(lab)}</th>" for lab in labels)
    rows = [f"<table><tr><th>leaf (guarantee)</th>{head}</tr>"]
    marked: dict[str, list[str]] = {}
    for leaf in frac.index:
        cells = []
        for lab in labels:
            v = float(frac.at[leaf, lab])
            worse = v == v and v - float(np.nan_to_num(base.get(leaf, 0.0))) > 0.1
            if worse:
                marked.setdefault(lab, []).append(leaf)
            cells.append(f"<td{' class=worse' if worse else ''}>{_fmt('guarantee', v)}</td>")
        rows.append(f"<tr><td>{html.escape(leaf)} ({guarantee[leaf]:.0%})</td>"
                    + "".join(cells) + "</tr>")
    notes = "".join(f"<li><b>{html.escape(lab)}</b> leaves {html.escape(', '.join(ls))} "
                    "below its guarantee more than H-DRF does"
                    + _because(lab).replace(" -- ", ": ", 1) + ".</li>"
                    for lab, ls in marked.items())
    return (f"<h3>{html.escape(name)}</h3>" + "".join(rows) + "</table>"
            + (f"<ul>{notes}</ul>" if notes else "<p>No policy leaves a leaf below its "
               "guarantee a tenth of its backlogged time more than H-DRF does.</p>"))


def write_production_page(root: Path) -> Path | None:
    """``root/production.html`` from the comparison specs' results there
    (None, and nothing written, when there are none)."""
    folders = comparison_folders(root)
    if not folders:
        return None
    both = {f.name: measure(f) for f in folders}
    measured = {k: v for k, (v, _) in both.items() if not v.empty}
    if not measured:
        return None
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>{MARK}",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;"
             "line-height:1.45}img{max-width:100%}td,th{padding:2px 8px;text-align:right}"
             "table{border-collapse:collapse;margin:0.5em 0}tr:nth-child(even){background:#f3f3f3}"
             ".worse{background:#f8d0c8;font-weight:bold}</style></head><body>",
             "<h1>Production schedulers beside H-DRF</h1>",
             "<p>The same trees and workloads under H-DRF and under Kueue, Volcano, YARN, "
             "Mesos and YuniKorn as their code behaves (docs/algorithms.md, \"Production "
             "schedulers\"). A leaf's guarantee is its weighted share of the cluster "
             "(H-DRF §2.1); the quota-reading policies get the same numbers as their quotas "
             "when a tree gives none. Specs: "
             + ", ".join(f"<a href='{f.name}/'>{f.name}</a>" for f in folders) + ".</p>",
             "<p>Without preemption no scheduler can give a queue that arrives at a full "
             "cluster its share before running tasks end: on the trace-driven specs much "
             "of the time below the guarantee is that wait, alike for all.  The policies "
             "run at their defaults (no preemption configured), except in "
             "<code>prod-compare-preempt</code>, where each runs with its own preemption "
             "as configured there (Mesos has none) and evictions take 5 s.</p>",
             "<h2>The rules</h2><ul>"
             + "".join(f"<li><b>{k}</b>: {html.escape(v)}</li>" for k, v in RULES.items())
             + "</ul>"]
    for key, question, xlabel in QUESTIONS:
        out = figure(key, xlabel, measured, root / "production" / f"{key}.png")
        parts += [f"<h2>{html.escape(question)}</h2>",
                  f"<img src='production/{out.name}' alt='{html.escape(question)}'>",
                  _explain(key, measured)]
    parts.append("<h2>Which queue, under which policy? Guarantee violations per node</h2>"
                 "<p>Each leaf's time below its guarantee while it wanted more, as a share of "
                 "its backlogged time (all seeds); a marked cell is over a tenth of that time "
                 "more than under H-DRF.</p>")
    parts += [leaf_table(name, leaves) for name, (_, leaves) in both.items()]
    parts.append("</body></html>")
    page = root / PAGE
    write_text("\n".join(parts), page)
    return page
