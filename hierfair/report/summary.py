"""The claims as the report shows them: counted per verdict and per paper,
grouped by paper and spec, each check's measured value labelled with what
it is (algorithm, node, quantity, n, interval and method).

Shared by ``index.html`` (:mod:`hierfair.report.html`) and ``README.md``
(:mod:`hierfair.report.tables`), so both say the same.  Verdict words come
from :func:`hierfair.experiment.verdict.verdict_word` and
:func:`~hierfair.experiment.verdict.count_verdicts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hierfair.experiment.verdict import NAMES, VERDICTS, expected_verdict, verdict_word
from hierfair.report.fmt import (
    MISSING,
    PAPERS,
    condition,
    distinct,
    interval,
    num,
    numbers_in,
    paper_of,
    thousands_in,
)

#: verdict -> CSS class (``verdict-<class>`` in the page, its legend's swatch)
CSS = {"holds": "holds", "refuted": "refuted", "inconclusive": "inconclusive",
       "untestable": "untestable", "n/a": "na"}

#: The legend: each verdict's word, its CSS class, and what it means
#: (hierfair/experiment/verdict.py).
LEGEND = [
    ("holds", CSS["holds"], "holds",
     "every check's interval lies inside the region the paper claims"),
    ("refuted", CSS["refuted"], NAMES["refuted"],
     "a check's interval lies outside it: a finding (its note says why)"),
    ("inconclusive", CSS["inconclusive"], NAMES["inconclusive"],
     "an interval crosses the region's edge, or one run of a seed-dependent "
     "workload gave none: more seeds may decide"),
    ("untestable", CSS["untestable"], NAMES["untestable"],
     "the model lacks a mechanism the paper used (named), or the compared "
     "schedulers gave the identical schedule on every paired run"),
    ("n/a", CSS["n/a"], NAMES["n/a"], "runs the claim needs failed, timed out, or were not "
     "run yet (a slice, `hierfair run --only`)"),
]


def css(verdict: str) -> str:
    return CSS.get(verdict, "na")


def short_word(v: dict[str, Any]) -> str:
    """The verdict in one or two words (the badge); :func:`verdict_word` gives
    it in full, with the reason and what the spec expects."""
    return NAMES[v["verdict"]] if v["verdict"] != "holds" else "holds"


def unexpected(v: dict[str, Any]) -> bool:
    """Whether the verdict is not the one the spec expects (n/a never is: a
    failed run is reported as such)."""
    return v["verdict"] != expected_verdict(v) and v["verdict"] != "n/a"


# -- one check: its measured value, labelled -------------------------------------------

_IMPROVEMENT = re.compile(r"^(\w+) response-time improvement(?: of (.+?)'s jobs)? over "
                          r"(\S+), %$")
_PROPERTY = re.compile(r"^(\S+) \(docs/properties\.md\): (.*)$")
_ALLOCATION = re.compile(r"^(\S+) (\w+)(?=$|,| \()(.*)$")


def split_measures(measures: str) -> tuple[str, str]:
    """A check's ``measures`` (claims.json) as (node, quantity):
    ``"n3/n32 mic"`` -> (``n3/n32``, ``mic share``); ``"(root) tasks"`` ->
    (``(root)``, ``tasks``); ``"makespan (x=1)"`` -> (``cluster``,
    ``makespan (x=1)``); ``"mean response-time improvement of A's jobs over
    drf, %"`` -> (``A``, ``mean response-time improvement over drf (%)``)."""
    m = _IMPROVEMENT.match(measures)
    if m:
        stat, leaf, other = m.groups()
        return leaf or "all jobs", f"{stat} response-time improvement over {other} (%)"
    m = _PROPERTY.match(measures)
    if m:
        return "worst audited instance", f"{m.group(1)}: {m.group(2)}"
    m = _ALLOCATION.match(measures)
    if m:
        node, quantity, rest = m.groups()
        if quantity == "dominant_share":
            quantity = "dominant share"
        elif quantity != "tasks":
            quantity = f"{quantity} share"
        return node, quantity + rest
    return "cluster", measures  # a run's metric (runs.parquet)


def runs_text(seeds: int) -> str:
    """How many values a check's measurement comes from."""
    if seeds == 0:
        return "computed once"  # a static allocation or an audited property
    return f"{seeds:,} run" + "s" * (seeds != 1)


def split_method(method: str) -> tuple[str, str]:
    """``"paired t, 95 % of the difference from drf"`` -> (``paired t, 95 %``,
    ``the difference from drf``): how, and what the interval is of."""
    how, sep, of = method.partition(" of the ")
    return how, f"the {of}" if sep else ""


@dataclass
class CheckView:
    algorithm: str
    node: str
    quantity: str
    expected: str
    measured: str
    n: str
    interval: str
    method: str
    outcome: str
    css: str
    note: str = ""  # what the interval is of, when not the value itself
    where: str = ""  # the grid point the value is measured at ("" for all runs)

    @property
    def label(self) -> str:
        """Everything the value is, in one line (a tooltip, a text line)."""
        return f"{self.algorithm}, {self.value}"

    @property
    def value(self) -> str:
        """:attr:`label` without the algorithm: node, quantity, grid point,
        value, n, method and interval."""
        of = f" of {self.note}" if self.note else ""
        at = f" at {self.where}" if self.where else ""
        shown = "" if self.interval == self.measured else f": {self.interval}"
        return (f"{self.node}, {self.quantity}{at}: {self.measured} "
                f"(n = {self.n}; {self.method}{of}{shown})")


def check_view(c: dict[str, Any]) -> CheckView:
    node, quantity = split_measures(c.get("measures", ""))
    where = c.get("where") or {}
    full = ", ".join(f"{k}={v}" for k, v in where.items())
    if full and quantity.endswith(f" ({full})"):  # a metric names its grid point itself
        quantity = quantity[: -len(full) - 3]
    how, of = split_method(c.get("method") or "")
    missing = c.get("missing") or ""
    low, high = c.get("low"), c.get("high")
    if missing:
        shown, method = MISSING, "n/a"
    elif how in ("exact", "one run") or not how:
        shown = "no interval" if how == "one run" else interval(low, high)
        method = how or MISSING
        if how == "one run":
            of = ""
    else:
        shown, method = interval(low, high), how
    outcome = c.get("outcome", "n/a")
    reason = missing or c.get("reason") or ""
    return CheckView(
        algorithm=c["algorithm"], node=node, quantity=quantity,
        expected=thousands_in(c.get("expected", "")), measured=num(c.get("measured")),
        n=runs_text(int(c.get("seeds") or 0)), interval=shown, method=method,
        outcome=outcome + (f": {reason}" if reason and outcome != "holds" else ""),
        css=css(outcome), note=of, where=condition(where))


def with_conditions(verdicts: list[dict[str, Any]], exp: Any) -> list[dict[str, Any]]:
    """claims.json's verdicts with each check's grid point (``where``) from
    the spec, which claims.json does not repeat: the checks of claim i are
    its spec checks, each once per label (hierfair.experiment.claims.evaluate).
    Verdicts that do not line up with the spec are returned as they are."""
    claims = list(getattr(getattr(exp, "spec", None), "claims", None) or [])
    if len(claims) != len(verdicts):
        return verdicts
    grid = dict(getattr(exp.spec, "grid", None) or {})
    out = []
    for claim, v in zip(claims, verdicts):
        wheres = [{k: distinct(value, grid.get(k, [])) for k, value in check.where.items()}
                  for check in claim.checks for _ in check.labels]
        if claim.claim != v["claim"] or len(wheres) != len(v.get("checks", [])):
            out.append(v)
            continue
        out.append(dict(v, checks=[dict(c, where=w) for c, w in zip(v["checks"], wheres)]))
    return out


# -- one claim, and the claims grouped ---------------------------------------------------


@dataclass
class ClaimView:
    spec: str
    anchor: str
    paper: str
    claim: str
    source: str
    verdict: str
    css: str
    word: str  # the badge
    full: str  # verdict_word: with the reason and what the spec expects
    unexpected: bool
    published: str
    proxy: str
    note: str
    expect: str
    history: list[dict[str, str]]
    checks: list[CheckView]
    #: decided on the fluid allocation (a property of divisible resources)
    fluid: bool = False
    #: a fluid claim's verdict with whole tasks ("" for other claims)
    whole_tasks: str = ""


def claim_view(spec: str, index: int, v: dict[str, Any]) -> ClaimView:
    history = [{"date": str(h.get("date", "")), "old": h.get("old", ""),
                "new": h.get("new", ""), "why": numbers_in(h.get("why", ""))}
               for h in v.get("history") or []]
    return ClaimView(
        spec=spec, anchor=f"claim-{spec}-{index + 1}", paper=paper_of(v.get("source", "")),
        claim=v["claim"], source=v.get("source", ""), verdict=v["verdict"],
        css=css(v["verdict"]), word=short_word(v), full=numbers_in(verdict_word(v)),
        unexpected=unexpected(v), published=v.get("published") or MISSING,
        proxy=v.get("proxy") or "", note=numbers_in(v.get("note") or ""),
        expect=expected_verdict(v), history=history,
        checks=[check_view(c) for c in v.get("checks", [])],
        fluid=bool(v.get("fluid")), whole_tasks=v.get("whole_tasks_verdict") or "")


@dataclass
class Findings:
    """The published claims that fail, kept apart by what failed (issue 25):
    a theorem about divisible resources on the fluid allocation, a claim in
    the simulation, and a fluid claim that fails only with whole tasks."""

    fluid: list[ClaimView]
    simulated: list[ClaimView]
    whole_tasks: list[ClaimView]

    def __bool__(self) -> bool:
        return bool(self.fluid or self.simulated or self.whole_tasks)


def findings(claims: list[ClaimView]) -> Findings:
    refuted = [c for c in claims if c.verdict == "refuted"]
    return Findings(fluid=[c for c in refuted if c.fluid],
                    simulated=[c for c in refuted if not c.fluid],
                    whole_tasks=[c for c in claims if c.fluid and c.verdict != "refuted"
                                 and c.whole_tasks == "refuted"])


#: (attribute of Findings, heading, what the list holds)
FINDING_KINDS = [
    ("fluid", "Fluid theorems refuted",
     "a property the paper states for divisible resources fails on the fluid allocation "
     "(tasks cut 10 and 100 times finer, or the static solver)"),
    ("simulated", "Claims refuted in the simulation",
     "a claim about whole-task runs fails at the spec's setting"),
    ("whole_tasks", "Whole tasks only",
     "a fluid theorem holds on the fluid allocation but not with whole tasks: an effect of "
     "indivisible tasks, not a refutation of the theorem"),
]


@dataclass
class SpecGroup:
    spec: str
    claims: list[ClaimView]


@dataclass
class PaperGroup:
    paper: str  # a key of fmt.PAPERS
    title: str
    specs: list[SpecGroup] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return "paper-" + re.sub(r"[^a-z0-9]+", "-", self.paper.lower()).strip("-")

    @property
    def claims(self) -> list[ClaimView]:
        return [c for s in self.specs for c in s.claims]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.claims)


def claim_views(verdicts: list[tuple[str, list[dict[str, Any]]]]) -> list[ClaimView]:
    """Every claim of every spec: ``verdicts`` is (spec name, its claims.json)."""
    return [claim_view(spec, i, v) for spec, vs in verdicts for i, v in enumerate(vs)]


def group(claims: list[ClaimView]) -> list[PaperGroup]:
    """Claims by paper (in :data:`~hierfair.report.fmt.PAPERS` order), then by
    spec (by name), each spec's claims in its own order.

    A later label (fluid or whole-task findings) adds one level here."""
    papers: dict[str, PaperGroup] = {}
    for c in claims:
        paper = papers.setdefault(c.paper, PaperGroup(c.paper, PAPERS[c.paper]))
        spec = next((s for s in paper.specs if s.spec == c.spec), None)
        if spec is None:
            spec = SpecGroup(c.spec, [])
            paper.specs.append(spec)
        spec.claims.append(c)
    for paper in papers.values():
        paper.specs.sort(key=lambda s: s.spec)
    return [papers[p] for p in PAPERS if p in papers]


@dataclass
class CountRow:
    paper: str
    title: str
    anchor: str
    counts: list[tuple[str, str, int]]  # (verdict, css, count) in VERDICTS order
    total: int
    proxies: int
    unexpected: int


def count_rows(groups: list[PaperGroup]) -> list[CountRow]:
    """Per paper, then all: how many claims got each verdict."""
    rows = []
    for g in groups:
        rows.append(CountRow(g.paper, g.title, g.anchor,
                             [(w, css(w), g.count(w)) for w in VERDICTS], len(g.claims),
                             sum(bool(c.proxy) for c in g.claims),
                             sum(c.unexpected for c in g.claims)))
    everything = [c for g in groups for c in g.claims]
    rows.append(CountRow("all", "all papers", "claims",
                         [(w, css(w), sum(c.verdict == w for c in everything))
                          for w in VERDICTS], len(everything),
                         sum(bool(c.proxy) for c in everything),
                         sum(c.unexpected for c in everything)))
    return rows


def spec_status(claims: list[ClaimView]) -> str:
    """One CSS class for a spec in the page's side bar: its most telling
    verdict (refuted, then inconclusive, untestable, n/a; all holding), or
    ``none`` when it checks no claim."""
    found = {c.verdict for c in claims}
    for word in ("refuted", "inconclusive", "untestable", "n/a", "holds"):
        if word in found:
            return css(word)
    return "none"
