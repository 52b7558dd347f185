"""What a claim's verdict says, and why: the vocabulary of claims.json.

A *check* ends in one outcome:

* ``holds`` -- its interval lies inside the claimed region;
* ``refuted`` -- its interval lies outside it;
* ``inconclusive`` -- its interval crosses the region's edge (more seeds may decide);
* ``untestable`` -- the comparison it makes cannot be made here: every
  compared scheduler gave the identical schedule on every paired run;
* ``n/a`` -- runs it needs failed, timed out, or were not run (a slice, ``--only``).

A *claim* is ``untestable`` when its spec names a model gap (``untestable:
why``: a mechanism the paper used is missing here), ``n/a`` when a check
could not be measured, else ``refuted`` when a check is, ``untestable`` when
a check is, ``inconclusive`` when a check is, and ``holds`` when every check
holds.  Each spec says which verdict it expects (``expect:``, with a
``history:`` of every change), so the tests notice a verdict that moves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Every verdict, in the order counts are printed.
VERDICTS = ("holds", "refuted", "inconclusive", "untestable", "n/a")
#: How a verdict is named in counts and reports.
NAMES = {"holds": "hold", "refuted": "refuted", "inconclusive": "inconclusive",
         "untestable": "untestable here", "n/a": "n/a"}


@dataclass(frozen=True)
class CheckResult:
    algorithm: str
    measures: str  # what was measured, in words
    expected: str
    measured: float  # the point estimate (a mean, or a mean difference for paired checks)
    outcome: str  # holds / refuted / inconclusive / untestable / n/a
    #: Why the check could not be measured (failed or timed-out runs): n/a.
    missing: str = ""
    seeds: int = 0  # how many runs (seeds, grid points) the value comes from
    #: The interval the outcome was decided on, and how it was made
    #: (hierfair.experiment.stats: exact, t, paired t, Welch, ratio, TOST).
    low: float = float("nan")
    high: float = float("nan")
    method: str = ""
    #: Why the outcome is untestable (or inconclusive), in words.
    reason: str = ""
    #: A fluid claim's allocation check: the value with whole tasks, and the
    #: outcome it would give (the outcome above is the fluid allocation's).
    whole_tasks: float | None = None
    whole_outcome: str = ""

    @property
    def holds(self) -> bool:
        return self.outcome == "holds"


@dataclass(frozen=True)
class Verdict:
    claim: str
    source: str
    note: str
    checks: tuple[CheckResult, ...]
    expect: str = "holds"
    #: The model gap that makes the claim untestable here ("" when none is named).
    untestable: str = ""
    proxy: str = ""
    published: str = ""
    id: str = ""
    history: tuple[dict[str, str], ...] = ()
    #: The claim states a property of divisible resources: its allocation
    #: checks are decided on the fluid allocation (tasks cut finer).
    fluid: bool = False
    #: How a proxy differs from the paper's setting (claim_spec.ProxyKind).
    proxy_kind: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The claim's coverage label: faithful, or proxy (and in what ways)."""
        if not self.proxy:
            return "faithful"
        return f"proxy ({', '.join(self.proxy_kind)})" if self.proxy_kind else "proxy"

    @property
    def whole_tasks_verdict(self) -> str:
        """A fluid claim's verdict with whole tasks ("" for other claims):
        where it differs from the fluid verdict, a whole-task finding."""
        if not self.fluid or self.untestable:
            return ""
        return self._combined([c.whole_outcome or c.outcome for c in self.checks])

    @property
    def verdict(self) -> str:
        if self.untestable:
            return "untestable"
        return self._combined([c.outcome for c in self.checks])

    def _combined(self, outcomes: list[str]) -> str:
        """The checks' outcomes as one verdict: n/a if a run is missing, else
        the first of refuted, untestable, inconclusive present, else holds."""
        if any(c.missing for c in self.checks):
            return "n/a"
        for word in ("refuted", "untestable", "inconclusive"):
            if word in outcomes:
                return word
        return "holds"

    def to_json(self) -> dict[str, Any]:
        reasons = sorted({c.missing for c in self.checks if c.missing})
        if self.untestable:
            reasons = [self.untestable]
        elif self.verdict in ("untestable", "inconclusive"):
            reasons = sorted({c.reason for c in self.checks
                              if c.outcome == self.verdict and c.reason})
        return {"id": self.id, "claim": self.claim, "source": self.source, "note": self.note,
                "expect": self.expect, "untestable": self.untestable, "proxy": self.proxy,
                "proxy_kind": list(self.proxy_kind), "label": self.label,
                "published": self.published, "verdict": self.verdict,
                "holds": self.verdict == "holds", "reason": "; ".join(reasons),
                "history": list(self.history), "fluid": self.fluid,
                "whole_tasks_verdict": self.whole_tasks_verdict,
                "checks": [asdict(c) | {"holds": c.holds} for c in self.checks]}


def expected_verdict(verdict: dict[str, Any]) -> str:
    """What the spec says the verdict should be (its ``expect:``)."""
    return verdict["expect"]


def verdict_word(verdict: dict[str, Any]) -> str:
    """How a verdict (as in claims.json) reads in a report or a log line."""
    word = verdict["verdict"]
    shown = NAMES[word] if word != "holds" else "holds"
    if word != expected_verdict(verdict) and word != "n/a":
        shown = f"{shown.upper()} (the spec expects {verdict['expect']})"
    if word in ("n/a", "untestable", "inconclusive") and verdict.get("reason"):
        shown = f"{shown}: {verdict['reason']}" if "expects" in shown else \
            f"{shown} ({verdict['reason']})"
    return shown


def count_verdicts(verdicts: list[dict[str, Any]]) -> str:
    """``3 hold, 1 refuted, 2 inconclusive, 0 untestable here, 0 n/a``."""
    words = [v["verdict"] for v in verdicts]
    return ", ".join(f"{words.count(w)} {NAMES[w]}" for w in VERDICTS)
