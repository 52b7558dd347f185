"""Tables and the text report: ``<DIR>/README.md`` for a results folder.

A section per spec: what it is, which input it used, one table row per run,
the spread over seeds, and the verdict on every published claim it checks
(``claims.json``, see :mod:`hierfair.experiment.claims`); the README opens with
the catalogue of the papers' claims and all the verdicts in one table.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.errors import HierfairError
from hierfair.experiment.claims import (
    _aggregate,
    count_verdicts,
    expected_verdict,
    read_verdicts,
    verdict_word,
)
from hierfair.experiment.results import write_text
from hierfair.experiment.spec import load_spec
from hierfair.report.catalogue import catalogue_table, read_catalogue
from hierfair.report.figures import plot_cost, plot_improvement, plot_shares

TABLE_COLUMNS = ("label", "seed", "status", "makespan", "wait_mean", "completion_mean",
                 "tasks_unfinished", "latency_p50_ns")


def section(folder: Path) -> str:
    runs = pd.read_parquet(folder / "runs.parquet")
    exp = load_spec(folder / "spec.yaml", check_workload=False)
    lines = [f"## {exp.spec.name}", "", exp.spec.description or "", ""]
    sources = (runs["workload_source"].dropna().unique().tolist()
               if "workload_source" in runs else [])
    if len(sources) > 1:  # the same generator at many run seeds: say it once
        sources = [re.sub(r"seed \d+", "run seeds", src) for src in sources]
    if sources:
        lines += [f"Input: {', '.join(sorted(set(sources)))}.", ""]
    lines += separation_warning(folder, runs)
    failed = runs[runs["status"] != "ok"]
    if len(failed) == len(runs):  # nothing to measure: say so, list why
        lines += [f"**None of the {len(runs)} runs finished**; nothing was measured.", "",
                  "| label | seed | status | error |", "|---|---|---|---|"]
        lines += [f"| {r.label} | {r.seed} | {r.status} | {r.error} |"
                  for r in failed.itertuples()]
        return "\n".join(lines) + "\n"
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
    if not root.is_dir():
        raise HierfairError(f"{root}: no such results folder (`hierfair run SPEC --out "
                            f"{root}` writes one)")
    folders = sorted(p.parent for p in root.glob("*/runs.parquet"))
    audit = root / "audit" / "table.md"  # `hierfair audit --out ROOT/audit`
    if not folders and not audit.exists():
        raise HierfairError(f"{root}: no results in this folder (no */runs.parquet; "
                            f"`hierfair run SPEC --out {root}` writes them)")
    parts = ["# hierfair reports", "",
             f"Generated by `hierfair report {root}`; regenerated on every run, do not edit "
             "by hand. Latency columns are wall-clock nanoseconds on the machine that ran "
             "them.", ""]
    if audit.exists():
        parts += [audit.read_text(), ""]
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
