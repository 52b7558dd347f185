"""The spec's fields as pydantic models: what each part of a spec may hold.

:class:`Spec` is the top level; the cluster as written out
(:class:`ClusterSpec`, :class:`ServerSpec`, :class:`HeadroomSpec`), the
algorithms (:class:`AlgorithmSpec`), preemption, faults, metrics, the report
and adaptive seeds (:class:`SeedRange`) are its parts.  Field names are a
contract other tools rely on: extend, never rename.  Building an experiment
from them is :mod:`hierfair.experiment.spec`'s.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    Discriminator,
    Field,
    PositiveInt,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)

from hierfair.experiment.claim_spec import ClaimSpec
from hierfair.experiment.limits import (
    LABEL_PATTERN,
    MAX_ADAPTIVE_SEEDS,
    MAX_NAME,
    MAX_TIME,
    NAME_PATTERN,
    Amount,
    PositiveTime,
    Seed,
    Time,
)
from hierfair.experiment.results import HOGS_MIN_TASKS, MICE_MAX_TASKS
from hierfair.experiment.spec_base import Strict
from hierfair.fields import Label
from hierfair.sim.placement_rules import Placement


class ServerSpec(Strict):
    count: PositiveInt = 1
    capacity: dict[str, Amount]
    name: str | None = None
    #: Labels placement constraints name (``requires:`` on a node or a job).
    labels: list[Label] = Field(default_factory=list)


#: What ``cluster.headroom.size`` may name besides a vector (docs/spec.md).
HEADROOM_SIZES = ("largest-task", "largest-dominant")


def _size_form(value: Any) -> str:
    """Which form ``cluster.headroom.size`` takes (an error names its problem)."""
    return "<vector>" if isinstance(value, dict) else "<name>"


class HeadroomSpec(Strict):
    """``cluster.headroom``: resources kept free on every server for the
    largest task (H-DRF §5, §5.2; docs/algorithms.md, "Per-server headroom").
    ``headroom: largest-task`` is short for ``headroom: {size: largest-task}``;
    ``headroom: none`` (or null) is no headroom."""

    #: ``largest-task``: the componentwise maximum of the workload's task
    #: demands; ``largest-dominant``: the demand of the task with the largest
    #: dominant share (ties: their componentwise maximum); or a vector
    #: ``{resource: amount}`` (resources left out: 0).
    size: Annotated[Annotated[str, Tag("<name>")] | Annotated[dict[str, Amount], Tag("<vector>")],
                    Discriminator(_size_form)]
    #: Which tasks may use the headroom: a task whose demand covers it on every
    #: resource, or whose dominant share is at least the headroom's.
    exempt: Literal["componentwise", "dominant-share"] = "componentwise"
    #: What the other tasks leave free on their server: the headroom on every
    #: resource, or only on the resources they demand.
    keep: Literal["all", "used"] = "all"
    #: Whether what the tasks that may use the headroom hold on a server counts
    #: as headroom kept there (else the others leave a whole headroom free
    #: beside them).
    count_exempt: bool = False
    #: The algorithms (by name) that keep it; None: every algorithm.
    algorithms: list[str] | None = Field(None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"size": v} if isinstance(v, str) else v

    @field_validator("size")
    @classmethod
    def _size(cls, v: str | dict[str, float]) -> str | dict[str, float]:
        if isinstance(v, str) and v not in HEADROOM_SIZES:
            raise ValueError(f"unknown headroom size; choose {' or '.join(HEADROOM_SIZES)}, "
                             "or a vector {resource: amount}")
        return v


def _no_headroom(v: Any) -> Any:
    return None if v is None or (isinstance(v, str) and v.lower() == "none") else v


class ClusterSpec(Strict):
    resources: list[str] = Field(min_length=1)
    servers: list[ServerSpec] = Field(min_length=1)
    #: Where a task goes among the servers with room (hierfair.sim.placement_rules).
    placement: Placement = "first-fit"
    #: Kept free on every server for the largest task (HeadroomSpec; docs/spec.md).
    headroom: HeadroomSpec | None = None

    _none = field_validator("headroom", mode="before")(_no_headroom)

    @field_validator("resources")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        dup = sorted({r for r in v if v.count(r) > 1})
        if dup:
            raise ValueError(f"resource listed twice: {dup[0]}")
        return v


class AlgorithmSpec(Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    label: str | None = None
    #: This algorithm's placement, over the policy's own (drfh's) and the
    #: cluster's: any fairness policy with any placement.
    placement: Placement | None = None

    @model_serializer(mode="wrap")
    def _unset_placement_left_out(self, handler: Any) -> Any:
        # an entry without one dumps as before, so earlier results keep their keys
        out = handler(self)
        if out.get("placement", 0) is None:
            del out["placement"]
        return out

    @property
    def display(self) -> str:
        """The label, else the name (a ``module:Class`` name: the class's)."""
        return self.label or self.name.rpartition(":")[2]

    @model_validator(mode="after")
    def _display_is_a_file_name(self) -> AlgorithmSpec:
        # the label names the run folders under --out: one safe path component
        if not re.match(LABEL_PATTERN, self.display) or len(self.display) > MAX_NAME:
            field = "label" if self.label is not None else "name"
            raise ValueError(
                f"{field} {self.display!r} becomes a folder name: use at most {MAX_NAME} "
                "letters, digits, '.', '_' and '-', starting with a letter, digit or '_'")
        return self


class PreemptionSpec(Strict):
    """What a preempted, killed or failed task loses."""

    mode: Literal["restart", "checkpoint"] = "restart"
    overhead: Time = 0.0  # checkpoint/restore seconds added on resume
    #: Seconds a preempted task keeps its server (terminating) before it is
    #: gone and waits again; a job's own ``eviction_latency`` overrides it.
    eviction_latency: Time = 0.0

    @model_serializer(mode="wrap")
    def _no_latency_left_out(self, handler: Any) -> Any:
        # a spec without one dumps as before, so earlier results keep their keys
        out = handler(self)
        if not out.get("eviction_latency"):
            out.pop("eviction_latency", None)
        return out


class OutageSpec(Strict):
    server: int | str  # index or name
    at: Time
    repair: PositiveTime | None = None  # seconds down; None: never repaired


class FaultSpec(Strict):
    servers: list[OutageSpec] = Field(default_factory=list)
    #: per server, exponential, seeded by the run; at least a second, or the
    #: simulation would do nothing but fail and repair servers
    mtbf: Annotated[float, Field(ge=1.0, le=MAX_TIME)] | None = None
    repair: PositiveTime = 60.0
    task_failure: float = Field(0.0, ge=0, lt=1)


FigureName = Literal["shares", "utilization", "waits", "makespan", "preemptions", "cost",
                     "improvement"]


class ReportSpec(Strict):
    """The report's figures for this spec; None: chosen by what the results
    hold (docs/report.md)."""

    figures: list[FigureName] | None = None


class MetricsSpec(Strict):
    """Thresholds of the mice/hogs wait metrics (default: Facebook bins)."""

    mice_max_tasks: int = Field(MICE_MAX_TASKS, ge=1)
    hogs_min_tasks: int = Field(HOGS_MIN_TASKS, ge=1)


#: The detail tables a run can write besides its runs.parquet row (docs/results.md).
TableName = Literal["jobs", "tasks", "allocations", "utilization", "decisions", "attempts",
                    "preemptions"]
DETAIL_TABLES: tuple[str, ...] = get_args(TableName)


def _seeds_form(value: Any) -> str:
    """Which form ``seeds:`` takes, so that an error names that form's problem."""
    return "<range>" if isinstance(value, dict | SeedRange) else "<list>"


class SeedRange(Strict):
    """Adaptive seeds: as many as the claims need to be decided, within bounds."""

    min: int = Field(ge=2, le=MAX_ADAPTIVE_SEEDS)
    max: int = Field(ge=2, le=MAX_ADAPTIVE_SEEDS)
    step: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> SeedRange:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self

    def first(self, n: int | None = None) -> list[int]:
        return list(range(self.min if n is None else n))

    def more(self, n: int) -> int | None:
        """How many seeds after ``n`` when a claim is still inconclusive (None: none)."""
        return None if n >= self.max else min(self.max, n + (self.step or self.min))


#: Top-level fields that describe the experiment, not a run: a grid over
#: them would make runs that differ in nothing or folders that clash.
NOT_GRIDDED = frozenset({"name", "description", "seeds", "interleave", "tables", "grid",
                         "metrics", "report", "claims"})


class Spec(Strict):
    name: str = Field(pattern=NAME_PATTERN, max_length=MAX_NAME)
    description: str = ""
    cluster: dict[str, Any] = Field(min_length=1)
    hierarchy: dict[str, Any] = Field(min_length=1)
    workload: dict[str, Any]
    algorithms: list[AlgorithmSpec] = Field(min_length=1)
    #: The base seeds, or ``{min, max, step}``: run seeds 0..min-1, and while a
    #: claim is inconclusive add ``step`` more (0, 1, 2, ... in order) up to max.
    seeds: Annotated[Annotated[list[Seed], Tag("<list>")] | Annotated[SeedRange, Tag("<range>")],
                     Discriminator(_seeds_form)] = Field(default_factory=lambda: [0])
    #: Simulated seconds after which a run stops (H-DRF §5.3.2 stops at
    #: 604,800 s, one week): later events are not run, and what has not
    #: finished by then stays unfinished.  None: run until everything finishes.
    stop_at: PositiveTime | None = None
    #: Run the algorithms of one seed and grid point one after another in one
    #: worker process (the first algorithm rotating with the seed), so that
    #: wall-clock claims compare measurements made alike (MCH Fig. 5).
    interleave: bool = False
    #: The detail tables each run keeps (default: all).  A long run may keep
    #: fewer: ``allocations`` alone has ~5 rows per task, and is not even
    #: recorded when left out.
    tables: list[TableName] = Field(default_factory=lambda: list(DETAIL_TABLES), min_length=1)
    #: Field path (``hierarchy.levels``, ``algorithms[0].params.p``) -> values;
    #: the sweep runs their cartesian product (hierfair.experiment.sweep).
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    preemption: PreemptionSpec = Field(default_factory=PreemptionSpec)
    faults: FaultSpec = Field(default_factory=FaultSpec)
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    #: Which figures the report draws (hierfair.report.plots; default: by the data).
    report: ReportSpec = Field(default_factory=ReportSpec)
    #: Published statements this spec reproduces, checked after a run (hierfair.experiment.claims).
    claims: list[ClaimSpec] = Field(default_factory=list)


    @property
    def seed_list(self) -> list[int]:
        """The base seeds to run first (an adaptive range's first ``min``)."""
        return self.seeds.first() if isinstance(self.seeds, SeedRange) else list(self.seeds)

    @field_validator("grid")
    @classmethod
    def _nonempty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in v.items():
            if not values:
                raise ValueError(f"grid.{key} needs at least one value")
            root = re.split(r"[.\[]", key, maxsplit=1)[0]
            if root in NOT_GRIDDED:
                raise ValueError(f"grid.{key}: {root} is not a parameter of a run (grid over "
                                 "cluster, hierarchy, workload, algorithms, preemption, faults "
                                 "or stop_at)")
        return v

    @model_validator(mode="after")
    def _claims_read_kept_tables(self) -> Spec:
        for i, claim in enumerate(self.claims):
            for j, check in enumerate(claim.checks):
                over_runs = check.node is not None and check.over == "run"
                need = ("allocations" if over_runs else
                        "jobs" if check.improvement_over is not None else None)
                if need is not None and need not in self.tables:
                    raise ValueError(f"claims[{i}].checks[{j}] reads {need}.parquet, which "
                                     f"tables leaves out (tables: {self.tables})")
        return self

    @field_validator("algorithms")
    @classmethod
    def _labels_are_unique(cls, v: list[AlgorithmSpec]) -> list[AlgorithmSpec]:
        seen: dict[str, int] = {}
        for i, a in enumerate(v):
            if a.display in seen:
                raise ValueError(f"algorithms[{i}] and algorithms[{seen[a.display]}] are both "
                                 f"labelled {a.display!r}: give one a label of its own")
            seen[a.display] = i
        return v

    @field_validator("algorithms", mode="before")
    @classmethod
    def _names_to_specs(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": a} if isinstance(a, str) else a for a in v]
        return v
