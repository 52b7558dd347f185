"""What a spec's ``claims:`` say: the schema of a published claim and its
checks, and the names they must use.

Kept apart from :mod:`hierfair.experiment.claims` (which measures and decides
verdicts and so needs experiments, allocations and results) so that the spec
can validate claims without importing what evaluates them.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, field_validator, model_validator

from hierfair.audit.names import PROPERTY_NAMES
from hierfair.errors import SpecError
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
    #: A fairness property of the audit (hierfair.audit.properties, e.g.
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


class ClaimSpec(Strict):
    claim: str = Field(min_length=1)
    source: str = Field(min_length=1)
    checks: list[CheckSpec] = Field(min_length=1)
    #: False for a claim known not to hold in this model; ``note`` says why.
    #: Tests hold every spec to it, so a change that alters a verdict is seen.
    reproduced: bool = True
    #: "refuted" for a published claim that our checks show to be false (a
    #: finding, not a model difference); tests hold every spec to it.
    expect: Literal["holds", "refuted"] = "holds"
    #: Why a claim may not hold here (a model difference), shown with the verdict.
    note: str = ""
    #: Set when the checks test something easier than the paper states (a
    #: smaller setting, another metric): how they differ.  Empty: faithful.
    proxy: str = ""
    #: The paper's number(s) as printed, for the report's table ("250 %").
    published: str = ""
    #: The item of docs/reproductions.md this claim checks.
    id: str = ""


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
                if check.property not in PROPERTY_NAMES:
                    raise SpecError(f"choose one of {list(PROPERTY_NAMES)}",
                                    where=f"{where}.property", value=check.property)
            if check.leaf is not None and check.leaf not in paths:
                raise SpecError("no such leaf in the hierarchy", where=f"{where}.leaf",
                                value=check.leaf)
