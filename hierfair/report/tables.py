"""Tables and the text report: ``<DIR>/README.md`` for a results folder.

It opens with a summary (claims counted per verdict and per paper, what each
verdict means), then the claims grouped by paper, the catalogue (with
``--catalogue``) and the audit; then a section per spec: what it is, which
input it used, the verdict on every published claim it checks (``claims.json``,
see :mod:`hierfair.experiment.claims`) with each check's value labelled
(quantity, n, interval, method) and the claim's expectation history, the
spread over seeds and one table row per run.  ``index.html`` says the same
with figures (:mod:`hierfair.report.html`).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import delayed

from hierfair.errors import HierfairError
from hierfair.experiment.claims import read_verdicts, verdict_word
from hierfair.experiment.results import write_text, written_by_us
from hierfair.experiment.workers import parallel, quiet_workers
from hierfair.experiment.spec import load_saved
from hierfair.experiment.stats import mean_interval
from hierfair.experiment.verdict import NAMES
from hierfair.report import html
from hierfair.report.catalogue import catalogue_table, read_catalogue
from hierfair.report.fmt import MISSING, Progress, num, numbers_in
from hierfair.report.production import MARK, PAGE, write_production_page
from hierfair.report.plots import CAPTIONS, draw
from hierfair.report.summary import (
    FINDING_KINDS,
    LEGEND,
    check_view,
    claim_views,
    count_rows,
    findings,
    group,
    with_conditions,
)


def section(folder: Path, figures: list[tuple[str, Path]] = (),
            verdicts: list[dict] | None = None) -> str:
    runs = pd.read_parquet(folder / "runs.parquet")
    exp = load_saved(folder)
    if verdicts is None:
        verdicts = with_conditions(read_verdicts(folder), exp)
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
    lines += claims_lines(verdicts)
    for name, path in figures:
        lines += ["", f"![{CAPTIONS.get(name, name)}]({folder.name}/{path.name})"]
    lines += seed_summary(runs)
    table = html.runs_frame(runs)  # grid values, parameters, human units: as index.html
    lines += ["", f"Runs ({len(runs)}):", "",
              "| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def claims_lines(verdicts: list[dict]) -> list[str]:
    """A spec's claims: each verdict in words, its expectation's history,
    then a row per check with its value labelled, every number in the one
    format (:func:`hierfair.report.fmt.num`)."""
    if not verdicts:
        return []
    lines = ["Published claims:", ""]
    for v in verdicts:
        lines.append(f"- **{numbers_in(verdict_word(v))}**: {v['claim']} ({v['source']})"
                     + (f". *{numbers_in(v['note'])}*" if v.get("note") else ""))
        for h in v.get("history") or []:
            lines.append(f"  - expected verdict {h['old']} → {h['new']} on {h['date']}: "
                         f"{numbers_in(h['why'])}")
        views = [check_view(c) for c in v["checks"]]
        at = any(k.where for k in views)  # a column for grid points only when checks have one
        lines += ["", "| algorithm | node | quantity | " + ("at (grid point) | " if at else "")
                  + "the paper | measured | n | interval | method | outcome |",
                  "|---|---|---|" + "---|" * at + "---|---:|---|---|---|---|"]
        for k in views:
            lines.append(f"| {k.algorithm} | {_md(k.node)} | {_md(k.quantity)} | "
                         + (f"{_md(k.where or 'all runs')} | " if at else "")
                         + f"{_md(k.expected)} | {k.measured} | {k.n} | {k.interval}"
                         + (f" (of {k.note})" if k.note else "")
                         + f" | {k.method} | {_md(k.outcome)} |")
        lines.append("")
    return lines


SEED_METRICS = ("makespan", "wait_mean", "completion_mean", "wait_median_mice")
#: How the spread-over-seeds table names them (seconds).
SEED_HEADERS = {"makespan": "makespan", "wait_mean": "mean wait",
                "completion_mean": "mean completion", "wait_median_mice": "median mouse wait"}


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
    for key, group_ in ok.groupby(keys, dropna=False, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = {k: html._cell(v) for k, v in zip(keys, key)} | {"seeds": len(group_)}
        for m in metrics:
            values = group_[m].dropna()
            head = f"{SEED_HEADERS[m]} (s)"
            if values.empty:
                row[head] = MISSING
                continue
            mean, half = mean_interval(values.to_numpy(dtype=float))
            row[head] = num(mean) + ("" if np.isnan(half) else f" ± {num(half)}")
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
    for _, group_ in runs.groupby(keys) if keys else [(None, runs)]:
        first = None
        for run in group_["run"]:
            path = folder / "runs" / run / "tasks.parquet"
            if not path.exists():
                return False
            tasks = pd.read_parquet(path, columns=["server", "start", "finish"])
            if first is None:
                first = tasks
            elif not first.equals(tasks):
                return False
    return True


def summary_lines(verdicts: list[tuple[str, list[dict]]]) -> list[str]:
    """The report's opening: claims counted per verdict and per paper, what
    each verdict means, and the verdicts that are not as the specs expect.
    ``verdicts``: (spec name, its claims.json) pairs."""
    claims = claim_views(verdicts)
    if not claims:
        return []
    flat = [v for _, vs in verdicts for v in vs]
    groups = group(claims)
    words = [word for _, _, word, _ in LEGEND]
    lines = ["## Summary", "", html.summary_line(flat, claims), "",
             "| paper | " + " | ".join(words) + " | claims | proxies | not as expected |",
             "|---|" + "---:|" * (len(words) + 3)]
    for r in count_rows(groups):
        name = f"**{r.title}**" if r.paper == "all" else f"[{r.title}](#{r.anchor})"
        lines.append(f"| {name} | " + " | ".join(str(n) for _, _, n in r.counts)
                     + f" | {r.total} | {r.proxies} | {r.unexpected} |")
    lines += ["", "What the verdicts mean:", ""]
    lines += [f"- **{word}**: {meaning}." for _, _, word, meaning in LEGEND]
    lines += ["- **UPPER CASE (the spec expects …)**: not the verdict the spec expects "
              "(`expect:`); a verdict that moves fails the tests.", ""]
    off = [c for c in claims if c.unexpected]
    if off:
        lines += [f"Not as the specs expect ({len(off)}):", ""]
        lines += [f"- {c.word} (expects {c.expect}): {c.claim} ([{c.spec}](#{c.spec}))"
                  for c in off]
        lines.append("")
    return lines + findings_lines(claims)


def findings_lines(claims: list) -> list[str]:
    """The findings, fluid and whole-task apart (summary.FINDING_KINDS)."""
    found = findings(claims)
    if not found:
        return []
    lines = ["### Findings", ""]
    for attr, heading, meaning in FINDING_KINDS:
        listed = getattr(found, attr)
        lines += [f"**{heading}** ({len(listed)}): {meaning}.", ""]
        lines += [f"- {_md(c.claim)} ({_md(c.source)}; [{c.spec}](#{c.spec}))" for c in listed]
        lines += [""] * bool(listed)
    return lines


def claims_table(verdicts: list[tuple[str, list[dict]]]) -> list[str]:
    """Every verdict of every spec, one row each, grouped by paper (the
    measured values, labelled, are in each spec's section)."""
    claims = claim_views(verdicts)
    if not claims:
        return []
    lines = ["## Published claims", "",
             "By paper; each spec's section gives every check's measured value with its "
             "algorithm, quantity, number of runs (n), interval and method, and the history "
             "of the claim's expected verdict.", ""]
    for g in group(claims):
        counts = ", ".join(f"{g.count(key)} {NAMES[key]}" for key, _, _, _ in LEGEND
                           if g.count(key))
        lines += [f'### <a id="{g.anchor}"></a>{g.title}', "",
                  f"{len(g.claims)} claim{'s' * (len(g.claims) != 1)}: {counts}.", "",
                  "| spec | claim | source | setting | published | verdict |",
                  "|---|---|---|---|---|---|"]
        for c in g.claims:
            setting = "proxy" if c.proxy else "faithful"
            lines.append(f"| [{c.spec}](#{c.spec}) | {_md(c.claim)} | {_md(c.source)} | "
                         f"{setting} | {_md(c.published)} | {_md(c.full)} |")
        lines.append("")
    return lines


def _rebased(markdown: str, folder: str) -> str:
    """The audit's table.md, whose links are relative to its own folder, as
    text of the folder above it: each relative link gets ``folder/``."""
    def link(m: re.Match[str]) -> str:
        target = m.group(2)
        if re.match(r"^([a-z]+:|/|#)", target):
            return m.group(0)
        return f"{m.group(1)}({posixpath.normpath(posixpath.join(folder, target))})"
    return re.sub(r"(\[[^\]]*\])\(([^)\s]+)\)", link, markdown)


def _md(text: str) -> str:
    """Text for a markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _measured(c: dict) -> str:
    """A check's value as the catalogue table writes it (labelled)."""
    return html.measured_text(c)


#: The files ``report`` writes in a results folder, and the mark each carries:
#: one without it is the user's, and is never overwritten (issue 26).
OURS = {"README.md": "# hierfair reports\n", "index.html": "<title>hierfair report</title>",
        PAGE: MARK}


#: The columns every runs.parquet of `hierfair run` has.
RUNS_COLUMNS = ("run", "label", "seed", "status")


def check_results_table(path: Path) -> None:
    """A runs.parquet that `hierfair run` did not write (truncated, another
    program's) is one line naming it, exit 2 -- read from its footer only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as exc:
        raise HierfairError(f"{path}: not a results table hierfair run wrote (cannot read it: "
                            f"{' '.join(str(exc).split())[:120]}); rerun its spec") from None
    missing = [c for c in RUNS_COLUMNS if c not in names]
    if missing:
        raise HierfairError(f"{path}: not a results table hierfair run wrote (no column "
                            f"{', '.join(missing)}); rerun its spec")


def write_report(root: Path, catalogue: Path | None = None) -> Path:
    """``root/README.md`` for every results folder below ``root``; with a
    ``catalogue`` (docs/reproductions.md), it opens with every claim of the
    papers and what checks it.  Progress goes to stderr."""
    if not root.is_dir():
        raise HierfairError(f"{root}: no such results folder (`hierfair run SPEC --out "
                            f"{root}` writes one)")
    for name, mark in OURS.items():  # never overwrite a file the user wrote
        if (root / name).exists() and not written_by_us(root / name, mark):
            raise HierfairError(f"{root / name}: not written by hierfair report; refusing to "
                                "overwrite it (report on the results folder itself)")
    folders = sorted(p.parent for p in root.glob("*/runs.parquet"))
    for folder in folders:
        check_results_table(folder / "runs.parquet")
    audit = root / "audit" / "table.md"  # `hierfair audit --out ROOT/audit`
    if not folders and not audit.exists():
        raise HierfairError(f"{root}: no results in this folder (no */runs.parquet; "
                            f"`hierfair run SPEC --out {root}` writes them)")
    parts = ["# hierfair reports", "",
             f"Generated by `hierfair report {root}`; regenerated on every run, do not edit "
             "by hand. Latency columns are wall-clock nanoseconds on the machine that ran "
             "them.", "",
             "The same report with its figures in one page: [index.html](index.html).", ""]
    specs = [load_saved(folder) for folder in folders]
    verdicts = [(folder.name, with_conditions(read_verdicts(folder), exp))
                for folder, exp in zip(folders, specs)]
    parts += summary_lines(verdicts)
    parts += claims_table(verdicts)
    if catalogue is not None:
        flat = [(name, v) for name, vs in verdicts for v in vs]
        parts += catalogue_table(read_catalogue(catalogue), flat, verdict_word, _measured)
    if audit.exists():
        parts += [_rebased(audit.read_text(), audit.parent.name), ""]
    drawn = draw_all(folders, specs)
    pages = []
    tables = Progress("tables", len(folders))
    for folder, exp, figures, (_, claims) in zip(folders, specs, drawn, verdicts):
        parts.append(section(folder, figures, claims))
        runs = pd.read_parquet(folder / "runs.parquet")
        pages.append(html.section(folder, exp, runs, figures, CAPTIONS,
                                  separation_warning(folder, runs), seed_table(runs), claims))
        tables.step(folder.name)
    production = write_production_page(root) is not None
    if production:
        parts += ["", "The production schedulers beside H-DRF, question by question: "
                  "[production.html](production.html).", ""]
    out = root / "README.md"
    write_text("\n".join(parts), out)
    html.render(root, pages,
                _rebased(audit.read_text(), audit.parent.name) if audit.exists() else None,
                f"hierfair report {root}", production=production)
    return out


def draw_all(folders: list[Path], specs: list) -> list[list[tuple[str, Path]]]:
    """Every spec's figures, one worker per core (figures are the report's
    slow part: seconds each), with a progress line per spec drawn."""
    progress = Progress("figures", len(folders))
    drawn: list[list[tuple[str, Path]]] = [[] for _ in folders]
    with quiet_workers():
        jobs = parallel(-1, (delayed(_draw)(i, folder, exp.spec.report.figures)
                             for i, (folder, exp) in enumerate(zip(folders, specs))),
                        unordered=True)
        for i, figures in jobs:
            drawn[i] = figures
            progress.step(folders[i].name)
    return drawn


def _draw(i: int, folder: Path, asked: list[str] | None) -> tuple[int, list[tuple[str, Path]]]:
    return i, draw(folder, asked)
