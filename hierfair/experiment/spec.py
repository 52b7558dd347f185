"""Experiment specs: YAML in, validated model objects out.

A spec pairs a cluster, a hierarchy and a workload with the algorithms to run
on them and the seeds to run them with::

    name: hdrf-fig4
    cluster:
      resources: [cpu, gpu]
      servers: [{count: 1, capacity: {cpu: 10, gpu: 10}}]
    hierarchy:
      n1: {children: {n11: {}}}
      n2: {weight: 1, children: {n21: {}, n22: {}}}
    workload:
      jobs:
        - {queue: n1/n11, tasks: 100, demand: {cpu: 1}, duration: 10}
    algorithms: [drf]
    seeds: [0]

Field names are a contract other tools rely on: extend, never rename.  Every
problem is reported as one :class:`~hierfair.errors.SpecError` naming the file,
the field path (``workload.jobs[2].demand.cpu``) and the offending value.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import Discriminator, Field, PositiveInt, Tag, ValidationError, field_validator, model_validator

from hierfair.algorithms import ALGORITHMS, make_policy
from hierfair.datasets import (
    CLUSTER_KINDS,
    HIERARCHY_KINDS,
    build_hierarchy,
    build_workload,
    parse,
    parse_workload,
)
from hierfair.datasets.base import BuildContext
from hierfair.errors import SpecError, did_you_mean, from_pydantic
from hierfair.experiment.claim_spec import ClaimSpec
from hierfair.experiment.claim_spec import validate as validate_claims
from hierfair.experiment.limits import (
    LABEL_PATTERN,
    MAX_ADAPTIVE_SEEDS,
    MAX_NAME,
    MAX_TIME,
    NAME_PATTERN,
    Amount,
    PositiveTime,
    Seed,
    Size,
    Time,
    check_expansion,
    check_memory,
    check_numbers,
    text_bytes,
)
from hierfair.experiment.spec_base import Strict
from hierfair.sim import Faults, Interruptions, Simulator
from hierfair.sim.model import Cluster, Hierarchy, Workload
from hierfair.sim.placement import PLACEMENTS, Headroom, KeepHeadroom
from hierfair.sim.policy import BasePolicy


class ServerSpec(Strict):
    count: PositiveInt = 1
    capacity: dict[str, Amount]
    name: str | None = None


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
    placement: Literal["first-fit", "best-fit"] = "first-fit"
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

    mice_max_tasks: int = Field(19, ge=1)
    hogs_min_tasks: int = Field(500, ge=1)


#: The detail tables a run can write besides its runs.parquet row (docs/results.md).
DETAIL_TABLES = ("jobs", "tasks", "allocations", "utilization", "decisions", "attempts",
                 "preemptions")
TableName = Literal["jobs", "tasks", "allocations", "utilization", "decisions", "attempts",
                    "preemptions"]


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


@dataclass(frozen=True)
class Experiment:
    """A validated spec with its cluster and hierarchy built."""

    spec: Spec
    source: str  # file the spec came from, for messages and relative traces
    cluster: Cluster
    hierarchy: Hierarchy
    placement: str = "first-fit"
    data_dir: str | None = None
    #: ``cluster.headroom`` as validated (None: no headroom).
    headroom: HeadroomSpec | None = None
    _workloads: dict[int, Workload] = field(default_factory=dict, repr=False, compare=False)

    def workload(self, seed: int) -> Workload:
        """The workload for ``seed`` (built once: traces are read once per seed)."""
        if seed not in self._workloads:
            ctx = BuildContext(cluster=self.cluster, hierarchy=self.hierarchy, seed=seed,
                               spec_path=self.source, data_dir=self.data_dir)
            self._workloads[seed] = build_workload(self.spec.workload, ctx)
        return self._workloads[seed]

    def simulator(self, policy: BasePolicy, seed: int, deadline: float | None = None
                  ) -> Simulator:
        """A simulator of this experiment's workload for ``seed`` under ``policy``."""
        f = self.spec.faults
        outages = tuple((self._server(o.server, i), o.at, o.repair)
                        for i, o in enumerate(f.servers))
        placement: str = self.placement
        hr = self.headroom
        if hr is not None and (hr.algorithms is None or type(policy).name in hr.algorithms):
            vector = self.headroom_vector(self.workload(seed))
            placement = KeepHeadroom(placement, Headroom(tuple(vector.tolist()), hr.exempt,
                                                         hr.keep, hr.count_exempt))
        return Simulator(self.cluster, self.hierarchy, self.workload(seed), policy,
                         placement=placement, deadline=deadline,  # type: ignore[arg-type]
                         interruptions=Interruptions(self.spec.preemption.mode,
                                                     self.spec.preemption.overhead),
                         faults=Faults(outages, f.mtbf, f.repair, f.task_failure, seed),
                         record_allocations="allocations" in self.spec.tables, seed=seed)

    def headroom_vector(self, workload: Workload) -> np.ndarray:
        """``cluster.headroom``'s vector for ``workload`` (its size resolved:
        the largest task is the workload's); SpecError if it does not fit on
        every server."""
        hr = self.headroom
        assert hr is not None
        cluster = self.cluster
        if isinstance(hr.size, dict):
            return cluster.vector(hr.size)  # checked against the servers when built
        demands = np.array([job.demand for job in workload.jobs if job.n_tasks > 0]
                           ).reshape(-1, cluster.n_resources)
        if not len(demands):
            return np.zeros(cluster.n_resources)
        if hr.size == "largest-task":
            vector = demands.max(axis=0)
        else:  # largest-dominant: the largest dominant share; ties: their maximum
            dominant = (demands / cluster.total).max(axis=1)
            vector = demands[dominant >= dominant.max() * (1 - 1e-9)].max(axis=0)
        small = np.flatnonzero(~np.all(cluster.capacities >= vector, axis=1))
        if small.size:
            s = int(small[0])
            raise SpecError(
                f"the {hr.size} headroom of this workload, {_vector(cluster, vector)}, is "
                f"larger than server {cluster.server_names[s]} "
                f"({_vector(cluster, cluster.capacities[s])}): it cannot be kept free there "
                "(give a smaller vector)", where="cluster.headroom.size", value=hr.size)
        return vector

    def _server(self, name: int | str, i: int) -> int:
        names = self.cluster.server_names
        if isinstance(name, int) and 0 <= name < len(names):
            return name
        if isinstance(name, str) and name in names:
            return names.index(name)
        raise SpecError(f"no such server (the cluster has {len(names)}: {names[0]} ...)",
                        where=f"faults.servers[{i}].server", value=name)

    @property
    def spec_hash(self) -> str:
        """Stable hash of the resolved spec (defaults filled in)."""
        blob = json.dumps(self.spec.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def resolved_yaml(self) -> str:
        return yaml.safe_dump(self.spec.model_dump(mode="json"), sort_keys=False)


# -- loading ---------------------------------------------------------------
class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML keeps
    the last one silently, which hides typos in hand-written specs)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise SpecError(f"line {mark.line + 1}: key given twice", value=key)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("no such file", file=str(path)) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise SpecError("not UTF-8 text (a spec is YAML in UTF-8)", file=str(path),
                        where=f"line {line}", value=exc.object[exc.start:exc.end]) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", file=str(path)) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except SpecError as exc:
        raise exc.with_file(str(path)) from None
    except RecursionError:
        raise SpecError("malformed YAML: nested too deeply", file=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
        if mark is None and isinstance(getattr(exc, "position", None), int):
            where = f"line {text.count(chr(10), 0, exc.position) + 1}"  # a bad character
        problem = " ".join(str(problem).split())  # one line, whatever PyYAML wrote
        raise SpecError(f"malformed YAML: {problem}", file=str(path), where=where) from None


def load_spec(path: str | Path, data_dir: str | None = None,
              check_workload: bool = True, max_memory: float | None = None) -> Experiment:
    """Read, validate and build a spec file; raises :class:`SpecError`.

    ``check_workload=False`` skips building the workload (reading its traces)
    when only the cluster and hierarchy are needed."""
    data = read_yaml(path)
    try:
        return build_experiment(data, source=str(path), data_dir=data_dir,
                                check_workload=check_workload, max_memory=max_memory)
    except SpecError as exc:
        raise exc.with_file(str(path)) from None


def load_saved(folder: str | Path) -> Experiment:
    """The resolved spec a results folder keeps (``spec.yaml``), as the report
    reads it: from what was saved alone -- no policy's code is imported (a
    user's ``module:Class`` need not be importable where the report is made)
    and no trace is read."""
    path = Path(folder) / "spec.yaml"
    try:
        return build_experiment(read_yaml(path), source=str(path), check_workload=False,
                                check_algorithms=False)
    except SpecError as exc:
        raise exc.with_file(str(path)) from None


def _algorithm_problems(i: int, name: str, params: Any, cluster: Cluster | None,
                        ) -> list[SpecError]:
    """What is wrong with ``algorithms[i]`` (its name, params, or their fit to
    the cluster when it is known)."""
    try:
        policy = make_policy(name, params)
        if cluster is not None:
            type(policy).check(policy.params, cluster)
    except SpecError as exc:
        out = []
        for p in exc.problems():
            where = f"algorithms[{i}]" + ("" if p.where == "algorithm" else f".{p.where}")
            out.append(SpecError(p.message, where=where + (".name" if p.where == "algorithm"
                                                            else ""), value=p.value))
        return out
    return []


def _raw_algorithm_problems(entries: Any) -> list[SpecError]:
    """Name and params problems of a spec's ``algorithms`` list as written
    (the rest of the spec failed to validate; the entries' shape pydantic checks)."""
    if not isinstance(entries, list):
        return []
    out = []
    for i, entry in enumerate(entries):
        name, params = (entry, None) if isinstance(entry, str) else (
            (entry.get("name"), entry.get("params")) if isinstance(entry, dict) else (None, None))
        if isinstance(name, str) and (params is None or isinstance(params, dict)):
            out += _algorithm_problems(i, name, params, None)
    return out


def build_experiment(data: Any, source: str = "", data_dir: str | None = None,
                     check_workload: bool = True, max_memory: float | None = None,
                     check_algorithms: bool = True) -> Experiment:
    """Validate a spec given as plain data (what ``yaml.safe_load`` returns).

    Sizes are checked before anything is built: a run that would not fit in
    ``max_memory`` bytes (default: this machine's memory) is refused, first on
    what the spec says, then on the workload as built (traces)."""
    if not isinstance(data, Mapping):
        raise SpecError("a spec must be a mapping of fields", value=type(data).__name__)
    check_expansion(data)
    check_numbers(data)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        # the algorithm names are checked too: every problem in one pass
        raise SpecError.combine([from_pydantic(exc, model=Spec),
                                 *_raw_algorithm_problems(data.get("algorithms"))]) from None
    # independent parts are all checked, so one pass reports every problem
    problems: list[SpecError] = []

    def attempt(check: Callable[[], Any]) -> Any:
        try:
            return check()
        except SpecError as exc:
            problems.append(exc)
            return None

    size = attempt(lambda: _size_from_spec(spec))
    if size is None:  # unknown size: build nothing big, report what is known
        raise SpecError.combine([*problems, *_raw_algorithm_problems(data.get("algorithms"))])
    _check_size(size, max_memory)  # too big: nothing is built
    cluster, placement, headroom = (attempt(lambda: _build_cluster(spec.cluster))
                                    or (None, None, None))
    hierarchy = attempt(lambda: build_hierarchy(spec.hierarchy))
    if check_algorithms:  # imports each policy: not for a saved spec (load_saved)
        problems += [p for i, algo in enumerate(spec.algorithms)
                     for p in _algorithm_problems(i, algo.name, algo.params, cluster)]
    if headroom is not None and not problems and check_algorithms:
        problems += _headroom_algorithm_problems(headroom, spec.algorithms)
    if cluster is not None and hierarchy is not None:
        attempt(lambda: validate_claims(spec.claims, [a.display for a in spec.algorithms],
                                        hierarchy.paths, cluster.resources))
    if problems:
        raise SpecError.combine(problems)
    experiment = Experiment(spec=spec, source=source, cluster=cluster, hierarchy=hierarchy,
                            placement=placement, data_dir=data_dir, headroom=headroom)
    for i, outage in enumerate(spec.faults.servers):
        experiment._server(outage.server, i)
    if check_workload:
        workload = experiment.workload(spec.seed_list[0])  # validates queues, demands and fit
        if headroom is not None:
            experiment.headroom_vector(workload)  # the largest task fits on every server
        _check_size(Size(cluster.n_servers, hierarchy.n_nodes, int(hierarchy.depth.max()),
                         len(cluster.resources), len(workload.jobs), workload.n_tasks,
                         text_bytes([(f.name, f.size) for f in workload.inputs])),
                    max_memory)
    else:
        parse_workload(spec.workload)  # params only
    return experiment


def _size_from_spec(spec: Spec) -> Size:
    """The size of one run as the spec states it, before anything is built (a
    trace's jobs are unknown until it is read: counted as none here)."""
    if "kind" in spec.cluster:
        kind, params = parse(CLUSTER_KINDS, _split_headroom(spec.cluster)[0], "cluster")
        servers, resources = kind.size(params), 3  # type: ignore[misc]
    else:
        try:
            cspec = ClusterSpec.model_validate(spec.cluster)
        except ValidationError as exc:
            raise from_pydantic(exc, prefix="cluster", model=ClusterSpec) from None
        servers, resources = sum(s.count for s in cspec.servers), len(cspec.resources)
    h = spec.hierarchy
    if isinstance(h.get("kind"), str):
        kind, params = parse(HIERARCHY_KINDS, h, "hierarchy")
        nodes = kind.size(params) if kind.size else 1
        depth = int(getattr(params, "levels", 3))
    else:
        nodes, depth = _count_nodes(h)
    kind, params, _, _ = parse_workload(spec.workload)
    jobs, tasks = kind.size(params) if kind.size else (0, 0)
    return Size(servers, nodes, depth, resources, jobs, tasks)


def _count_nodes(tree: Any, depth: int = 0) -> tuple[int, int]:
    """Nodes (root included) and depth of a hand-written tree; malformed parts
    count as leaves here and are reported when the tree is built."""
    nodes, deepest = 1, depth
    for body in tree.values() if isinstance(tree, Mapping) else ():
        kids = body.get("children") if isinstance(body, Mapping) else None
        n, d = _count_nodes(kids or {}, depth + 1)
        nodes, deepest = nodes + n, max(deepest, d)
    return nodes, deepest


def _check_size(size: Size, max_memory: float | None) -> None:
    """Refuse a run too big for the memory, naming the field it grows with."""
    terms = {"workload": size.tasks * 400, "cluster.servers": size.servers * 600,
             "hierarchy": size.nodes * 400}
    check_memory(size, max_memory, where=max(terms, key=terms.__getitem__))


def _split_headroom(data: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A cluster kind's own fields, and its ``headroom`` (every kind has one)."""
    rest = {k: v for k, v in data.items() if k != "headroom"}
    return rest, data.get("headroom")


class _KindHeadroom(Strict):
    headroom: HeadroomSpec | None = None

    _none = field_validator("headroom", mode="before")(_no_headroom)


def _build_cluster(data: dict[str, Any]) -> tuple[Cluster, str, HeadroomSpec | None]:
    if "kind" in data:
        rest, raw = _split_headroom(data)
        kind, params = parse(CLUSTER_KINDS, rest, "cluster")
        try:
            headroom = _KindHeadroom.model_validate({"headroom": raw}).headroom
        except ValidationError as exc:
            raise from_pydantic(exc, prefix="cluster", model=_KindHeadroom) from None
        cluster = kind.build(params)
        _check_headroom(headroom, cluster)
        return cluster, params.placement, headroom  # type: ignore[attr-defined]
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="cluster", model=ClusterSpec) from None
    resources = tuple(spec.resources)
    rows, names = [], []
    for i, server in enumerate(spec.servers):
        for r in server.capacity:
            if r not in resources:
                raise SpecError(f"unknown resource; the cluster has {list(resources)}",
                                where=f"cluster.servers[{i}].capacity.{r}", value=r)
        vec = [float(server.capacity.get(r, 0.0)) for r in resources]
        base = server.name or f"s{i}"
        for k in range(server.count):
            rows.append(vec)
            names.append(base if server.count == 1 else f"{base}-{k}")
    caps = np.array(rows)
    empty = [r for r, total in zip(resources, caps.sum(axis=0)) if total <= 0]
    if empty:
        raise SpecError("resource has no capacity on any server", where="cluster.resources",
                        value=empty[0])
    cluster = Cluster(resources=resources, capacities=caps, server_names=tuple(names))
    _check_headroom(spec.headroom, cluster)
    return cluster, spec.placement, spec.headroom


def _vector(cluster: Cluster, v: np.ndarray) -> str:
    return "<" + ", ".join(f"{r} {x:g}" for r, x in zip(cluster.resources, v.tolist())) + ">"


def _check_headroom(headroom: HeadroomSpec | None, cluster: Cluster) -> None:
    """An explicit headroom names the cluster's resources and fits on every
    server (it is kept free on each; docs/spec.md)."""
    if headroom is None or not isinstance(headroom.size, dict):
        return
    for r, amount in headroom.size.items():
        where = f"cluster.headroom.size.{r}"
        if r not in cluster.resources:
            raise SpecError(f"unknown resource; the cluster has {list(cluster.resources)}",
                            where=where, value=r)
        col = cluster.capacities[:, cluster.resources.index(r)]
        if np.any(col < amount):
            s = int(np.flatnonzero(col < amount)[0])
            raise SpecError(f"larger than server {cluster.server_names[s]}'s {r} "
                            f"({col[s]:g}): a headroom is kept free on every server",
                            where=where, value=amount)


def _headroom_algorithm_problems(headroom: HeadroomSpec, algorithms: list[AlgorithmSpec]
                                 ) -> list[SpecError]:
    """``cluster.headroom.algorithms`` names algorithms (the spec's, or any
    known one: a spec may list fewer), and each algorithm that keeps the
    headroom places tasks through the shared index."""
    policies = [make_policy(a.name, a.params) for a in algorithms]
    names = [type(p).name for p in policies]
    known = [*ALGORITHMS, *(n for n in names if n not in ALGORITHMS)]
    out = []
    for i, name in enumerate(headroom.algorithms or ()):
        if name not in known:
            out.append(SpecError(f"unknown algorithm;{did_you_mean(name, known)} this spec's: "
                                 f"{', '.join(dict.fromkeys(names))}",
                                 where=f"cluster.headroom.algorithms[{i}]", value=name))
    for i, (policy, name) in enumerate(zip(policies, names)):
        keeps = headroom.algorithms is None or name in headroom.algorithms
        if keeps and type(policy).make_index is not BasePolicy.make_index:
            hint = " (hdrf makes the same decisions)" if name == "hdrf-fast" else ""
            out.append(SpecError(
                "places tasks through its own index, which cannot keep cluster.headroom; "
                f"use another algorithm{hint} or leave it out of cluster.headroom.algorithms",
                where=f"algorithms[{i}].name", value=algorithms[i].name))
    return out


__all__ = [
    "ALGORITHMS",
    "PLACEMENTS",
    "Experiment",
    "Spec",
    "build_experiment",
    "load_spec",
    "read_yaml",
]
