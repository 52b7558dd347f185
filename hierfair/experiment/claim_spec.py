"""What a spec's ``claims:`` say: the schema of a published claim and its
checks, and the names they must use.

Kept apart from :mod:`hierfair.experiment.claims` (which measures and decides
verdicts and so needs experiments, allocations and results) so that the spec
can validate claims without importing what evaluates them.
"""

from __future__ import annotations

import builtins
from datetime import date
from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, field_validator, model_validator

from hierfair.errors import SpecError
from hierfair.experiment.properties import PROPERTIES
from hierfair.experiment.spec_base import Strict
from hierfair.sim.model import ROOT, ROOT_NAME

Bound = float | str


class CheckSpec(Strict):
    algorithm: str | list[str]
    node: str | None = None
    resource: str = "dominant_share"
    over: Literal["allocation", "run"] = "allocation"
    churn: NonNegativeInt = 0
    without: list[str] = Field(default_factory=list)
    stat: Literal["mean", "median", "min", "max"] = "mean"
    window: tuple[NonNegativeFloat, NonNegativeFloat] | None = None
    metric: str | None = None
    #: Response-time improvement of ``algorithm`` over this label (H-DRF §5.2,
    #: hierfair.experiment.improvement), per job; ``stat`` aggregates the jobs of a seed
    #: (``leaf`` keeps one leaf's), seeds are averaged.
    improvement_over: str | None = None
    leaf: str | None = None
    #: A fairness property of the audit (hierfair.experiment.properties, e.g.
    #: ``share-guarantee``): the value is how far the worst case is from
    #: holding, in the property's unit (docs/properties.md).
    property: str | None = None
    #: With ``metric``: the ratio of ``algorithm``'s value to this label's, run
    #: by run (same seed and grid point), then averaged over seeds.
    relative_to: str | None = None
    #: With ``metric``: divide by the runs these conditions select (of
    #: ``relative_to``, or else of the same label), paired by seed -- a growth
    #: between grid points, e.g. from 2 to 5 levels.
    baseline_where: dict[str, Any] | None = None
    where: dict[str, Any] = Field(default_factory=dict)
    equals: float | None = None
    tol: NonNegativeFloat = 1e-6
    below: Bound | None = None
    above: Bound | None = None

    @field_validator("node")
    @classmethod
    def _root(cls, v: str | None) -> str | None:
        return ROOT if v == ROOT_NAME else v  # the root may be written either way

    @model_validator(mode="after")
    def _one_measure_and_a_bound(self) -> CheckSpec:
        measures = [m for m in (self.node, self.metric, self.improvement_over, self.property)
                     if m is not None]
        if len(measures) != 1:
            raise ValueError("give one of node (an allocation), metric (a runs.parquet "
                             "column), improvement_over (another algorithm's label) or "
                             "property (an audited fairness property)")
        if self.equals is None and self.below is None and self.above is None:
            raise ValueError("give what the paper says: equals, below or above")
        if (self.relative_to is not None or self.baseline_where is not None) \
                and self.metric is None:
            raise ValueError("relative_to and baseline_where divide a metric: give metric too")
        return self

    @builtins.property  # the field ``property`` shadows the builtin in this class
    def labels(self) -> list[str]:
        return [self.algorithm] if isinstance(self.algorithm, str) else list(self.algorithm)


Expectation = Literal["holds", "refuted", "inconclusive", "untestable"]
#: How a proxy check differs from the paper's own: at a smaller scale, over a
#: shorter run, by another metric, on an input rebuilt from the paper's
#: outputs, at another setting (parameters the paper leaves unsaid, another
#: workload), or on one instance of a property stated for all.
ProxyKind = Literal["smaller", "shorter", "other metric", "reconstructed", "other setting",
                    "one instance"]


class HistoryEntry(Strict):
    """One change of a claim's ``expect:``: when, from what, to what, and why
    (an expectation never follows a run silently)."""

    date: date
    old: Expectation
    new: Expectation
    why: str = Field(min_length=1)


class ClaimSpec(Strict):
    claim: str = Field(min_length=1)
    source: str = Field(min_length=1)
    checks: list[CheckSpec] = Field(min_length=1)
    #: The model gap that makes this claim untestable here (a mechanism the
    #: paper used that hierfair does not model); the verdict is then
    #: "untestable", never "refuted".  ``reproduced: false`` is its old
    #: spelling (``note`` then names the gap).
    untestable: str = ""
    reproduced: bool = True
    #: The verdict this spec expects: "holds" for a published claim, the
    #: gap's "untestable" for a named gap; any other value, or a change of it,
    #: carries a ``history:`` entry.  Tests hold every spec to it.
    expect: Expectation | None = None
    history: list[HistoryEntry] = Field(default_factory=list)
    #: The claim states a property of divisible resources (DRF's SI, EF, SP;
    #: H-DRF's Theorems 1-4; scale invariance; MCH's guarantee): its
    #: allocation checks are decided on the fluid allocation (every task cut
    #: 100 times finer, in the whole task's units), and the verdict with whole
    #: tasks is reported beside it -- a difference is a whole-task finding,
    #: never a refutation of the theorem.
    fluid: bool = False
    #: What a reader should know besides (how the check reads the paper).
    note: str = ""
    #: Set when the checks test something else than the paper states (a
    #: smaller setting, another metric, a reconstructed input): how they
    #: differ.  Empty: faithful.
    proxy: str = ""
    #: In what ways a proxy differs, as docs/reproductions.md labels it.
    proxy_kind: list[ProxyKind] = Field(default_factory=list)
    #: The paper's number(s) as printed, for the report's table ("250 %").
    published: str = ""
    #: The item of docs/reproductions.md this claim checks.
    id: str = ""

    @model_validator(mode="after")
    def _expectation_has_a_history(self) -> ClaimSpec:
        if bool(self.proxy) != bool(self.proxy_kind) and self.proxy_kind:
            raise ValueError("proxy_kind says how a proxy differs: give the proxy text too")
        if not self.reproduced and not self.untestable:
            self.untestable = self.note or "a known model difference"
        default = "untestable" if self.untestable else "holds"
        if self.expect is None:
            self.expect = self.history[-1].new if self.history else default
        h = self.history
        for k, entry in enumerate(h):
            if k and entry.old != h[k - 1].new:
                raise ValueError(f"history[{k}].old is {entry.old!r} but history[{k - 1}] "
                                 f"changed the expectation to {h[k - 1].new!r}")
            if k and entry.date < h[k - 1].date:
                raise ValueError(f"history[{k}] is dated before history[{k - 1}]")
        last = h[-1].new if h else default
        if self.expect != last:
            raise ValueError(
                f"expect is {self.expect!r} but " + (
                    f"the last history entry changed it to {last!r}" if h else
                    f"a claim expects {default!r} unless a history entry "
                    "(date, old, new, why) records the change"))
        return self


def validate(claims: list[ClaimSpec], labels: list[str], paths: tuple[str, ...],
             resources: tuple[str, ...]) -> None:
    """Names in checks must exist in the spec: a typo is an error, not a refuted claim."""
    quantities = (*resources, "dominant_share", "tasks")
    for i, claim in enumerate(claims):
        for j, check in enumerate(claim.checks):
            where = f"claims[{i}].checks[{j}]"
            for label in check.labels:
                if label not in labels:
                    raise SpecError(f"not one of the spec's algorithms {labels}",
                                    where=f"{where}.algorithm", value=label)
            for key in ("below", "above"):
                bound = getattr(check, key)
                if isinstance(bound, str) and bound not in labels:
                    raise SpecError(f"a bound is a number or one of {labels}",
                                    where=f"{where}.{key}", value=bound)
            if check.node is not None and check.node not in paths:
                raise SpecError("no such node in the hierarchy", where=f"{where}.node",
                                value=check.node)
            if check.resource not in quantities:
                raise SpecError(f"choose one of {list(quantities)}", where=f"{where}.resource",
                                value=check.resource)
            for leaf in check.without:
                if leaf not in paths:
                    raise SpecError("no such node in the hierarchy", where=f"{where}.without",
                                    value=leaf)
            for key in ("improvement_over", "relative_to"):
                other = getattr(check, key)
                if other is not None and other not in labels:
                    raise SpecError(f"not one of the spec's algorithms {labels}",
                                    where=f"{where}.{key}", value=other)
            if check.property is not None:
                if check.property not in PROPERTIES:
                    raise SpecError(f"choose one of {list(PROPERTIES)}",
                                    where=f"{where}.property", value=check.property)
            if check.leaf is not None and check.leaf not in paths:
                raise SpecError("no such leaf in the hierarchy", where=f"{where}.leaf",
                                value=check.leaf)
