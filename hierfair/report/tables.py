"""Tables and the text report: ``<DIR>/README.md`` for a results folder.

A section per spec: what it is, which input it used, one table row per run,
the spread over seeds, and the verdict on every published claim it checks
(``claims.json``, see :mod:`hierfair.experiment.claims`); the README opens with
the catalogue of the papers' claims and all the verdicts in one table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

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
from hierfair.report import html
from hierfair.report.catalogue import catalogue_table, read_catalogue
from hierfair.report.plots import CAPTIONS, draw


def section(folder: Path, figures: list[tuple[str, Path]] = ()) -> str:
    runs = pd.read_parquet(folder / "runs.parquet")
    exp = load_spec(folder / "spec.yaml", check_workload=False)
    lines = [f"## {exp.spec.name}", "", exp.spec.description or "", ""]
    if sources := html.input_text(runs):  # the same generator at many run seeds: once
        lines += [f"Input: {sources}.", ""]
    lines += separation_warning(folder, runs)
    failed = runs[runs["status"] != "ok"]
    if len(failed) == len(runs):  # nothing to measure: say so, list why
        lines += [f"**None of the {len(runs)} runs finished**; nothing was measured.", "",
                  "| label | seed | status | error |", "|---|---|---|---|"]
        lines += [f"| {r.label} | {r.seed} | {r.status} | {r.error} |"
                  for r in failed.itertuples()]
        return "\n".join(lines) + "\n"
    table = html.runs_frame(runs)  # grid values, parameters, human units: as index.html
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
    for name, path in figures:
        lines += ["", f"![{CAPTIONS.get(name, name)}]({folder.name}/{path.name})"]
    return "\n".join(lines) + "\n"


SEED_METRICS = ("makespan", "wait_mean", "completion_mean", "wait_median_mice")


def seed_table(runs: pd.DataFrame) -> pd.DataFrame | None:
    """Per algorithm and grid point, the mean over seeds with a 95 % interval
    (None unless some label ran more than one seed); times in seconds."""
    ok = runs[runs["status"] == "ok"]
    grid = [c for c in ok.columns if "." in c or "[" in c]
    keys = ["label", *grid]
    if ok.empty or ok.groupby(keys, dropna=False).size().max() < 2:
        return None
    metrics = [m for m in SEED_METRICS if m in ok and ok[m].notna().any()]
    rows = []
    for key, group in ok.groupby(keys, dropna=False, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = {k: _cell(v) for k, v in zip(keys, key)} | {"seeds": len(group)}
        for m in metrics:
            agg = _aggregate(group[m].dropna().tolist()) if group[m].notna().any() else None
            row[f"{m} (s)"] = "—" if agg is None else f"{_cell(agg.value)} ± {_cell(agg.ci95)}"
        rows.append(row)
    return pd.DataFrame(rows)


def seed_summary(runs: pd.DataFrame) -> list[str]:
    """:func:`seed_table` as markdown lines."""
    table = seed_table(runs)
    if table is None:
        return []
    return ["", "Across seeds (mean ± half-width of the 95 % interval):", "",
            "| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns),
            *("| " + " | ".join(str(v) for v in row) + " |"
              for row in table.itertuples(index=False))]


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
        r = html.claim_row(name, v)
        lines.append(f"| [{name}](#{name}) | {r['claim']} | {r['source']} | {r['kind']} | "
                     f"{r['published']} | {r['measured']} | {r['verdict']} |")
    return [*lines, ""]


_measured = html.measured_text  # the catalogue table writes measured values the same way


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
    pages = []
    specs = [load_spec(folder / "spec.yaml", check_workload=False) for folder in folders]
    # figures are the report's slow part (seconds each): one worker per core
    drawn = Parallel(n_jobs=-1)(delayed(draw)(folder, exp.spec.report.figures)
                                for folder, exp in zip(folders, specs))
    for folder, exp, figures in zip(folders, specs, drawn):
        parts.append(section(folder, figures))
        runs = pd.read_parquet(folder / "runs.parquet")
        pages.append(html.section(folder, exp, runs, figures, CAPTIONS,
                                  separation_warning(folder, runs), seed_table(runs)))
    parts.insert(3, "The same report with its figures in one page: [index.html](index.html).\n")
    out = root / "README.md"
    write_text("\n".join(parts), out)
    html.render(root, pages, audit.read_text() if audit.exists() else None,
                f"hierfair report {root}")
    return out
