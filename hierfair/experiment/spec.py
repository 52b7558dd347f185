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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from pydantic import ValidationError

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
from hierfair.errors import SpecError, from_pydantic
from hierfair.experiment.claim_spec import validate as validate_claims
from hierfair.experiment.cluster_build import (  # noqa: F401 - re-exported
    _build_cluster,
    _check_headroom,
    _headroom_algorithm_problems,
    _KindHeadroom,
    _split_headroom,
    _vector,
    hierarchy_problems,
    label_problems,
    own_index_problems,
    quota_problems,
    zero_weight_problems,
)
from hierfair.experiment.limits import check_expansion, check_numbers
from hierfair.experiment.memory import PER_TASK_TABLES, Size, check_memory, text_bytes
from hierfair.experiment.spec_models import (  # noqa: F401 - re-exported
    DETAIL_TABLES,
    HEADROOM_SIZES,
    NOT_GRIDDED,
    AlgorithmSpec,
    ClusterSpec,
    FaultSpec,
    FigureName,
    HeadroomSpec,
    MetricsSpec,
    OutageSpec,
    PreemptionSpec,
    ReportSpec,
    SeedRange,
    ServerSpec,
    Spec,
    TableName,
    _no_headroom,
    _seeds_form,
    _size_form,
)
from hierfair.experiment.spec_yaml import _UniqueKeyLoader, read_yaml  # noqa: F401 - re-exported
from hierfair.sim import Faults, Interruptions, SimulationResult, Simulator
from hierfair.sim.headroom import Headroom, KeepHeadroom
from hierfair.sim.model import Cluster, Hierarchy, Workload, job_columns
from hierfair.sim.watch import Watch
from hierfair.sim.placement import PLACEMENTS
from hierfair.sim.policy import BasePolicy, own_placement


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
        """The workload for ``seed``, kept until another seed's is asked for
        (runs of one seed read their traces once; a process holds one
        workload at a time: a paper-scale week's is 2.1 M jobs, ~130 MB, at
        every offered load)."""
        if seed not in self._workloads:
            self._workloads.clear()  # first: the old one is freed before the new is built
            ctx = BuildContext(cluster=self.cluster, hierarchy=self.hierarchy, seed=seed,
                               spec_path=self.source, data_dir=self.data_dir)
            self._workloads[seed] = build_workload(self.spec.workload, ctx)
        return self._workloads[seed]

    def simulate(self, algo: AlgorithmSpec, seed: int) -> SimulationResult:
        """One run in this process: a fresh ``algo`` policy on a fresh
        simulator for ``seed``, to ``stop_at`` (nothing written; ``hierfair.run``
        runs and records every run of a spec)."""
        return self.simulator(make_policy(algo.name, algo.params), seed,
                              placement=algo.placement).run(until=self.spec.stop_at)

    def simulator(self, policy: BasePolicy, seed: int, deadline: float | None = None,
                  placement: str | None = None, watch: Watch | None = None,
                  spill_dir: str | None = None,
                  table_sink: Callable[[str, pd.DataFrame], None] | None = None) -> Simulator:
        """A simulator of this experiment's workload for ``seed`` under
        ``policy``, placing by ``placement`` (an algorithm entry's), else the
        policy's own (drfh), else the cluster's; ``watch``: its deadline and
        progress reports (else ``deadline`` alone).  ``spill_dir``: the run
        will only write the spec's tables, so what they leave out may go as
        the run goes (finished tasks without a tasks or attempts table, whose
        digested columns go to an unnamed file there; utilisation rows
        without a utilization table; docs/performance.md, "Streaming");
        ``table_sink``: where a kept table's rows go, a row group at a time,
        once it outgrows one (:class:`~hierfair.experiment.table_files.TableFiles`)."""
        f = self.spec.faults
        tables = self.spec.tables
        outages = tuple((self._server(o.server, i), o.at, o.repair)
                        for i, o in enumerate(f.servers))
        placement = placement or type(policy).placement or self.placement
        hr = self.headroom
        if hr is not None and (hr.algorithms is None or type(policy).name in hr.algorithms):
            vector = self.headroom_vector(self.workload(seed))
            placement = KeepHeadroom(placement, Headroom(tuple(vector.tolist()), hr.exempt,
                                                         hr.keep, hr.count_exempt))
        return Simulator(self.cluster, self.hierarchy, self.workload(seed), policy,
                         placement=placement, deadline=deadline,  # type: ignore[arg-type]
                         interruptions=Interruptions(self.spec.preemption.mode,
                                                     self.spec.preemption.overhead,
                                                     self.spec.preemption.eviction_latency),
                         faults=Faults(outages, f.mtbf, f.repair, f.task_failure, seed),
                         record_allocations="allocations" in self.spec.tables, seed=seed,
                         watch=watch, record_decisions="decisions" in self.spec.tables,
                         record_utilization=spill_dir is None or "utilization" in tables,
                         retire_finished=spill_dir is not None and not (
                             {"tasks", "attempts"} & set(tables)),
                         spill_dir=spill_dir, table_sink=table_sink)

    def headroom_vector(self, workload: Workload) -> np.ndarray:
        """``cluster.headroom``'s vector for ``workload`` (its size resolved:
        the largest task is the workload's); SpecError if it does not fit on
        every server."""
        hr = self.headroom
        assert hr is not None
        cluster = self.cluster
        if isinstance(hr.size, dict):
            return cluster.vector(hr.size)  # checked against the servers when built
        cols = job_columns(workload.jobs)
        demands = np.array([d for d, n in zip(cols.demand, cols.size.tolist()) if n > 0]
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
                        placement: str | None = None) -> list[SpecError]:
    """What is wrong with ``algorithms[i]`` (its name, params, or their fit to
    the cluster when it is known)."""
    try:
        policy = make_policy(name, params)
        if placement is not None and (why := own_placement(type(policy))):
            return [SpecError(f"{type(policy).name} {why}: a placement here would do "
                              "nothing; remove it", where=f"algorithms[{i}].placement",
                              value=placement)]
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
                     for p in _algorithm_problems(i, algo.name, algo.params, cluster,
                                                    algo.placement)]
    if headroom is not None and not problems and check_algorithms:
        problems += _headroom_algorithm_problems(headroom, spec.algorithms)
    if cluster is not None and hierarchy is not None:
        problems += label_problems(cluster, hierarchy) + quota_problems(cluster, hierarchy)
        if check_algorithms and not problems:
            problems += (zero_weight_problems(hierarchy, spec.algorithms)
                         + hierarchy_problems(hierarchy, spec.algorithms))
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
        if check_algorithms and workload.constrained:
            if own := own_index_problems(spec.algorithms):
                raise SpecError.combine(own)
        _check_size(Size(cluster.n_servers, hierarchy.n_nodes, int(hierarchy.depth.max()),
                         len(cluster.resources), len(workload.jobs), workload.n_tasks,
                         text_bytes([(f.name, f.size) for f in workload.inputs]),
                         lean=not PER_TASK_TABLES & set(spec.tables),
                         columns=hasattr(workload.jobs, "columns")),
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
    return Size(servers, nodes, depth, resources, jobs, tasks,
                lean=not PER_TASK_TABLES & set(spec.tables), columns=kind.columns)


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


__all__ = [
    "ALGORITHMS",
    "PLACEMENTS",
    "Experiment",
    "Spec",
    "build_experiment",
    "load_spec",
    "read_yaml",
]
