"""Write what the audit found: minimal counterexample specs and the table.

:func:`run_audit` is the whole ``hierfair audit``: audit, shrink each
violated (algorithm, property) to a small instance, write that instance as a
spec whose claim ``hierfair run`` shows refuted, and write the table
(``table.md``, ``summary.csv``, ``rows.parquet``) into the output folder.
"""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import yaml
from joblib import delayed

from hierfair.audit.instance import DEFAULT_SHAPE, Instance, Shape, draw
from hierfair.experiment.properties import PROPERTIES, Outcome
from hierfair.experiment.properties_servers import contradicts
from hierfair.audit.runner import (
    FINER,
    audit,
    default_algorithms,
    shrink,
    summarise,
    verdict,
    violation,
)
from hierfair.errors import HierfairError
from hierfair.experiment.manifest import Manifest
from hierfair.experiment.results import write_parquet, write_text, written_by_us
from hierfair.experiment.workers import parallel

FOLDER_NOTE = ("Written by `hierfair audit` (`make reproduce`); regenerated on every run, "
               "do not edit by hand.  Each spec is a minimal instance on which one algorithm "
               "violates one property; `hierfair run SPEC` shows its claim refuted.  "
               "Definitions: docs/properties.md.\n")


#: What the audit writes into its --out folder.
OUTPUTS = ("table.md", "summary.csv", "rows.parquet")


@dataclass(frozen=True)
class Found:
    algorithm: str
    prop: str
    instance: Instance
    outcome: Outcome
    origin: int  # the audit instance it was shrunk from
    file: str = ""


def run_audit(out: Path, counterexamples: Path | None, instances: int, seed: int = 0,
              shape: Shape = DEFAULT_SHAPE, algorithms: list[str] | None = None,
              properties: list[str] | None = None, jobs: int = -1,
              progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Audit, shrink, write; returns the summary table."""
    manifest = Manifest.open(out, kind="audit")
    for name in OUTPUTS:  # the user's own files of these names: refused before the work
        manifest.check(name)
    if counterexamples is not None:  # refuse before the work, not after it
        _check_not_theirs(counterexamples, [spec_file_name(prop, a)
                                            for prop in properties or PROPERTIES
                                            for a in algorithms or default_algorithms()])
    rows = audit(instances, seed, shape, algorithms, properties, jobs, progress)
    summary = summarise(rows)
    found: list[Found] = []
    if counterexamples is not None:
        found = _write_specs(counterexamples, _shrink_all(rows, shape, jobs, progress))
    out.mkdir(parents=True, exist_ok=True)
    with manifest.writing("rows.parquet") as path:
        write_parquet(rows.drop(columns=["trace"]), path)
    manifest.write_text("summary.csv", summary.to_csv(index=False))
    # links relative to table.md's own folder (the report rebases them)
    manifest.write_text("table.md", table(summary, found, instances, seed, counterexamples,
                                          out))
    return summary


# -- shrinking every violated cell ------------------------------------------
def _shrink_all(rows: pd.DataFrame, shape: Shape, jobs: int,
                progress: Callable[[str], None] | None) -> list[Found]:
    """One counterexample per violated (algorithm, property), from the first
    violating instance (a pooled one where there is one)."""
    bad = rows[rows["status"] == "violated"].sort_values(["pooled", "instance"],
                                                         ascending=[False, True])
    cells = bad.drop_duplicates(["algorithm", "property"])
    todo = [(r.algorithm, r.property, int(r.instance)) for r in cells.itertuples()]
    if progress:
        progress(f"audit: shrinking {len(todo)} violations")
    # group by property: a smaller instance found for one algorithm is tried first for the next
    by_prop: dict[str, list[tuple[str, int]]] = {}
    for algorithm, prop, origin in todo:
        by_prop.setdefault(prop, []).append((algorithm, origin))
    work = (delayed(_shrink_property)(prop, cells_, shape) for prop, cells_ in by_prop.items())
    found = [f for chunk in parallel(jobs, work) for f in chunk]
    return sorted(found, key=lambda f: (f.prop, f.algorithm))


def _shrink_property(prop: str, cells: list[tuple[str, int]], shape: Shape) -> list[Found]:
    p, small, out = PROPERTIES[prop], [], []
    for algorithm, origin in cells:
        start = next((s for s in small if violation(s, algorithm, p) is not None),
                     draw(origin, shape))
        inst, outcome = shrink(start, algorithm, p, max_checks=p.shrink_checks)
        small.append(inst)
        out.append(Found(algorithm, prop, inst, outcome, origin))
    return out


#: The first line of every counterexample spec the audit writes: what it may
#: rewrite or remove (issue 26: nothing else in the folder is touched).
MARKER = "# A minimal counterexample written by `hierfair audit` (do not edit)."


def spec_file_name(prop: str, algorithm: str) -> str:
    """``<property>--<algorithm>.yaml``, safe on every file system: a user's
    ``module:Class`` (a ':' is not allowed on Windows, a path on macOS' HFS)
    becomes ``module.Class``; any other odd character ``_``."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", algorithm.replace(":", "."))
    return f"{prop}--{safe}.yaml"


def _check_not_theirs(folder: Path, names: list[str]) -> None:
    """Refuse, naming it, a file the audit would write over that it did not write."""
    for name in sorted(names):
        if (folder / name).exists() and not written_by_us(folder / name, MARKER):
            raise HierfairError(f"{folder / name}: not a counterexample hierfair audit wrote; "
                                "refusing to overwrite it (choose another --counterexamples)")


def _write_specs(folder: Path, found: list[Found]) -> list[Found]:
    folder.mkdir(parents=True, exist_ok=True)
    _check_not_theirs(folder, [spec_file_name(f.prop, f.algorithm) for f in found])
    kept = {}  # when each counterexample was first found: its history survives a rewrite
    for old in folder.glob("*.yaml"):  # only the audit's own files are rewritten or removed
        if written_by_us(old, MARKER):
            kept[old.name] = _history(old)
            old.unlink()
    readme = folder / "README.md"
    if not readme.exists() or written_by_us(readme, "Written by `hierfair audit`"):
        write_text(FOLDER_NOTE, readme)
    written = []
    for f in found:
        f = replace(f, file=str(folder / spec_file_name(f.prop, f.algorithm)))
        write_text(spec_text(f, kept.get(Path(f.file).name)), Path(f.file))
        written.append(f)
    return written


def _history(path: Path) -> list[dict] | None:
    """The expectation history of a counterexample spec written before."""
    try:
        claims = (yaml.safe_load(path.read_text()) or {}).get("claims") or [{}]
    except (OSError, yaml.YAMLError):
        return None
    history = claims[0].get("history")
    if not history or history[-1].get("new") != "refuted":
        return None
    return [{**h, "date": str(h.get("date"))} for h in history]  # YAML may read a date


def spec_text(f: Found, history: list[dict] | None = None) -> str:
    """The counterexample as a commented spec with one refuted claim; its
    ``history:`` says when the audit first found it (kept across rewrites)."""
    p = PROPERTIES[f.prop]
    source = p.promised.get(f.algorithm) or p.disclaimed.get(f.algorithm) or \
        "property audit (docs/properties.md)"
    stance = ("promised by " + p.promised[f.algorithm] if f.algorithm in p.promised else
              "disclaimed by " + p.disclaimed[f.algorithm] if f.algorithm in p.disclaimed
              else "not promised for this algorithm by any of the papers")
    o = f.outcome
    claim = {  # no ``id``: ids name items of docs/reproductions.md
        "claim": f"{f.algorithm} has the property: {p.title}",
        "source": source,
        "published": "property",
        "expect": "refuted",
        "history": history or [{
            "date": datetime.date.today().isoformat(), "old": "holds", "new": "refuted",
            "why": f"hierfair audit found this counterexample (instance {f.origin})"}],
        "note": (f"Measured: {o.witness}; {p.unit} {o.magnitude:.4g} beyond the whole-task "
                 f"tolerance {o.tol:.4g}" + _finer(o) + "."),
        "checks": [{"algorithm": f.algorithm, "property": f.prop, "below": _bound(o.tol)}],
    }
    name = f"cx-{spec_file_name(f.prop, f.algorithm).removesuffix('.yaml')}"
    spec = f.instance.spec(name, [f.algorithm], running=p.running, claims=[claim],
                           description=f"{f.algorithm} violates {p.title}: {o.witness}")
    head = [MARKER,
            f"# Property: {p.title} ({stance}); definition in docs/properties.md.",
            f"# Shrunk from audit instance {f.origin} (seed {f.origin}); {o.witness}.",
            f"# Reproduce: hierfair run {f.file or 'THIS.yaml'} -- the claim's check is the",
            f"# property's measure ({p.unit}); it holds below {o.tol:.4g}, "
            f"measured {o.magnitude:.4g}" + _finer(o) + "."]
    body = yaml.safe_dump(spec, sort_keys=False, default_flow_style=None, width=100)
    return "\n".join(head) + "\n" + body


def _finer(o: Outcome) -> str:
    return ("" if o.fine is None else
            f"; with every task {FINER} times smaller still {o.fine:.4g} (in this "
            "instance's units), so not whole-task granularity")


def _bound(tol: float) -> float:
    """The check's strict bound: the tolerance itself is still 'holds'."""
    return float(f"{tol + 1e-9:.12g}") if math.isfinite(tol) else tol


# -- the table ---------------------------------------------------------------
def table(summary: pd.DataFrame, found: list[Found], instances: int, seed: int,
          folder: Path | None, base: Path = Path("reports")) -> str:
    """The algorithm x property table in markdown, red cells linked to their
    counterexample."""
    links = {(f.algorithm, f.prop): f.file for f in found}
    props = [p for p in PROPERTIES if p in set(summary["property"])]
    algos = list(dict.fromkeys(summary["algorithm"]))
    granular = int(summary["granular"].sum()) if "granular" in summary else 0
    lines = ["## Fairness properties (audit)", "",
             f"{instances} random instances (seeds {seed}-{seed + instances - 1}; "
             "pooled and multi-server clusters), every algorithm on the same ones; "
             "definitions and sources in docs/properties.md.  A cell gives the share of "
             "instances that violate the property on a **pooled** cluster, then on "
             "**several servers** (where packing, too, can cost a share); "
             "**bold ✗** marks a violation of a property a paper promises for that "
             "algorithm (a finding): on a pooled cluster, or, for DRFH, TSF and PS-DSF, "
             "whose papers state their properties on heterogeneous servers, on either; "
             "*(disclaimed)* one the paper says it lacks, n/a that "
             "the property does not apply or a run failed.  Each violation links to its "
             "minimal counterexample.  Whole tasks miss a fluid property by a task or "
             "so, more where weights differ; such a miss counts only if it survives every "
             f"task made {FINER} times smaller ({granular} instance-cells missed at their "
             "own grain but not with finer tasks: `granular` in summary.csv).", ""]
    short = {p: p.replace("-", " ") for p in props}
    lines.append("| algorithm | " + " | ".join(short[p] for p in props) + " |")
    lines.append("|---|" + "---|" * len(props))
    index = {(r.algorithm, r.property, r.cluster): r for r in summary.itertuples()}
    for a in algos:
        cells = []
        for p in props:
            parts = []
            for cluster in ("pooled", "servers"):
                r = index.get((a, p, cluster))
                parts.append(_cell(r, PROPERTIES[p].metric) if r is not None else "–")
            cell = " / ".join(parts)
            prop = PROPERTIES[p]
            pooled = index.get((a, p, "pooled"))
            violated = any((r := index.get((a, p, c))) is not None and r.violated
                           for c in ("pooled", "servers"))
            # most papers state their properties on pooled resources: there
            # only a pooled violation contradicts a promise (DRFH, TSF and
            # PS-DSF state theirs on heterogeneous servers)
            if a in prop.promised and any(
                    (r := index.get((a, p, c))) is not None and r.violated
                    and contradicts(a, c) for c in ("pooled", "servers")):
                cell = f"**✗ {cell}**"
            elif violated and a in prop.disclaimed:
                cell += " *(disclaimed)*"
            if (a, p) in links and folder is not None:
                cell = f"[{cell}]({os.path.relpath(links[(a, p)], base)})"
            cells.append(cell)
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += ["", f"Counterexamples: {len(found)} specs in `{folder}`." if folder else "", ""]
    return "\n".join(lines)


def _cell(r, metric: bool) -> str:
    if metric:
        return f"{r.mean:.2f}" if r.checked else "n/a"
    word = verdict(r.violated, r.checked, r.errors)
    if word == "n/a":
        return "n/a"
    if word == "holds":
        return "0"
    return f"{r.violated}/{r.checked}"
