"""The contract every policy and every dataset kind keeps, checked the same
way for each (benchopt's test suite over every solver is the model).

A policy, on a few small clusters and trees (one server; several unequal
servers under a weighted tree of depth 2 with arrivals over time):
- its ``Params`` defaults round-trip through JSON, and the policy pickles
  (worker processes receive it that way);
- it runs: no exception, and no illegal choice (the simulator raises
  :class:`hierfair.errors.PolicyError` when a policy picks a leaf without a
  pending task or a task that does not fit);
- it finishes every task when every task fits the cluster;
- the same seed gives the same schedule (the run's ``schedule_digest``).

Every dataset kind builds on a small example (the trace readers on small
files in their formats), gives the same jobs for the same seed, each on a
leaf; a kind with a declared size (``Kind.size``: what the memory check
reads before anything is built) builds to that size: exactly for nodes,
servers and jobs; the tasks of a random generator (400 jobs) within a
factor of 2 of the expected number, on each of three seeds.

``hierfair check NAME`` runs the policy part on any algorithm, a user's
``module:Class`` included; tests/test_contract.py runs both parts over
every registered algorithm and dataset kind.
"""

from __future__ import annotations

import copy
import gzip
import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from hierfair.algorithms import make_policy, policy_class
from hierfair.datasets import CLUSTER_KINDS, HIERARCHY_KINDS, WORKLOAD_KINDS, parse_workload
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment


class Outcome(NamedTuple):
    """One check of one policy or kind: passed, failed, or not applicable."""

    check: str
    status: str  # "ok", "failed" or "n/a"
    detail: str = ""


#: Small specs a policy must run on (its name goes into ``algorithms``).
SPECS: dict[str, dict[str, Any]] = {
    "one server, two leaves": {
        "name": "contract-one",
        "cluster": {"resources": ["cpu", "mem"], "servers": [{"capacity": {"cpu": 9,
                                                                           "mem": 18}}]},
        "hierarchy": {"A": {}, "B": {}},
        "workload": {"jobs": [
            {"queue": "A", "tasks": 30, "demand": {"cpu": 1, "mem": 4}, "duration": 10},
            {"queue": "B", "tasks": 20, "demand": {"cpu": 3, "mem": 1}, "duration": 10}]},
    },
    "three unequal servers, weighted tree, arrivals": {
        "name": "contract-tree",
        "cluster": {"resources": ["cpu", "mem"], "servers": [
            {"count": 2, "capacity": {"cpu": 4, "mem": 8}},
            {"capacity": {"cpu": 8, "mem": 4}}]},
        "hierarchy": {"n1": {"weight": 2, "children": {"n11": {}, "n12": {"weight": 3}}},
                      "n2": {"children": {"n21": {}}}},
        "workload": {"jobs": [
            {"queue": "n1/n11", "tasks": 12, "demand": {"cpu": 1, "mem": 2}, "duration": 7},
            {"queue": "n1/n12", "tasks": 8, "demand": {"cpu": 2, "mem": 1}, "duration": 5,
             "submit": 3},
            {"queue": "n2/n21", "tasks": 10, "demand": {"cpu": 1, "mem": 1},
             "duration": [4, 9] * 5, "submit": 1}]},
    },
    # what the production schedulers read: quotas, priorities (job_for picks
    # among a leaf's jobs), a higher-priority job arriving at a full cluster
    "quotas, priorities, a late high-priority job": {
        "name": "contract-quotas",
        "cluster": {"resources": ["cpu", "mem"], "servers": [
            {"count": 2, "capacity": {"cpu": 4, "mem": 4}}]},
        "hierarchy": {
            "c": {"quota": {"nominal": {"cpu": 2, "mem": 2}}, "children": {
                "a": {"quota": {"nominal": {"cpu": 3, "mem": 3}, "guaranteed": {"cpu": 3}}},
                "b": {"priority": 1, "quota": {"nominal": {"cpu": 3, "mem": 3},
                                               "borrowing_limit": {"cpu": 1}}}}}},
        "workload": {"jobs": [
            {"queue": "c/a", "tasks": 7, "demand": {"cpu": 1, "mem": 1}, "duration": 6},
            {"queue": "c/b", "tasks": 3, "demand": {"cpu": 1, "mem": 0.5}, "duration": 4,
             "submit": 2},
            {"queue": "c/a", "tasks": 2, "demand": {"cpu": 1, "mem": 1}, "duration": 3,
             "submit": 2, "priority": 9}]},
    },
}


def check_policy(name: str) -> list[Outcome]:
    """Every check of the policy contract for algorithm ``name``."""
    try:
        cls = policy_class(name)
        policy = make_policy(name)
    except SpecError as exc:
        return [Outcome("loads", "failed", str(exc))]
    out = [Outcome("loads", "ok", f"{cls.__module__}.{cls.__qualname__}")]
    out.append(_attempt("params round-trip", lambda: _round_trip(policy)))
    out.append(_attempt("pickles", lambda: _pickles(policy)))
    for label, spec in SPECS.items():
        out += _runs(name, label, spec)
    if not any(o.check.startswith("runs on") and o.status == "ok" for o in out):
        out.append(Outcome("runs on a contract spec", "failed", "it declined every one: "
                           "nothing of the contract could be checked"))
    return out


def _attempt(check: str, work: Any) -> Outcome:
    try:
        detail = work()
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return Outcome(check, "failed", f"{type(exc).__name__}: {exc}")
    return Outcome(check, "ok", detail or "")


def _round_trip(policy: Any) -> str:
    params = policy.params
    again = type(params).model_validate(json.loads(params.model_dump_json()))
    if again != params:
        raise AssertionError(f"{params!r} came back as {again!r}")
    return params.model_dump_json()


def _pickles(policy: Any) -> str:
    again = pickle.loads(pickle.dumps(policy))
    if type(again) is not type(policy) or again.params != policy.params:
        raise AssertionError("the unpickled policy differs")
    return ""


def _runs(name: str, label: str, spec: dict[str, Any]) -> list[Outcome]:
    data = copy.deepcopy(spec)
    data["algorithms"] = [name]
    try:
        exp = build_experiment(data)
    except SpecError as exc:  # the policy declines this cluster (its own check)
        return [Outcome(f"runs on {label}", "n/a", str(exc))]
    digests, out = [], []
    for _ in range(2):
        try:
            sim = exp.simulator(make_policy(name), 0)
            result = sim.run(until=exp.spec.stop_at)
        except Exception as exc:  # noqa: BLE001 - a PolicyError or the policy's own bug
            return [Outcome(f"runs on {label}", "failed", f"{type(exc).__name__}: {exc}")]
        digests.append(result.schedule_digest)
    out.append(Outcome(f"runs on {label}", "ok"))
    left = int(result.counts["tasks_unfinished"])
    out.append(Outcome(f"finishes every task on {label}", "ok" if left == 0 else "failed",
                       f"{left} task(s) never finished" if left else ""))
    out.append(Outcome(f"same seed, same schedule on {label}",
                       "ok" if digests[0] == digests[1] else "failed",
                       "" if digests[0] == digests[1] else "two runs of seed 0 differ"))
    return out


# -- dataset kinds -------------------------------------------------------------------
#: Each kind's example: its own section, and what the spec around it needs.
_FIG10 = {"kind": "paper", "figure": "hdrf-fig10"}
_DFF = {"kind": "paper", "figure": "dff-fig1"}
_TWO = {"A": {}, "B": {}}
KIND_EXAMPLES: dict[str, dict[str, Any]] = {
    "workload.jobs": {"workload": {"jobs": [{"queue": "A", "tasks": 7, "demand": {"cpu": 1},
                                             "duration": 3}]}},
    "workload.facebook-bins": {"workload": {"kind": "facebook-bins", "jobs": 400},
                               "hierarchy": _FIG10},
    "workload.google-synthetic": {"workload": {"kind": "google-synthetic", "jobs": 400}},
    "workload.cpu-mic": {"workload": {"kind": "cpu-mic"}, "hierarchy": _DFF,
                         "cluster": {"kind": "cpu-mic", "nodes": 7}},
    # the trace readers read the small files :func:`write_trace_examples` writes
    "workload.swim": {"workload": {"kind": "swim", "files": ["swim.tsv"]}},
    "workload.google-2011": {"workload": {"kind": "google-2011",
                                          "files": ["task_events.csv.gz"]}},
    "workload.swf": {"workload": {"kind": "swf", "file": "log.swf", "queues": ["A", "B"]}},
    "hierarchy.full-binary": {"hierarchy": {"kind": "full-binary", "levels": 4},
                              "workload": {"jobs": [{"queue": "n0/n0/n0/n0", "tasks": 3,
                                                     "demand": {"cpu": 1}, "duration": 2}]}},
    "hierarchy.tree": {"hierarchy": {"A": {"weight": 2, "children": {"A1": {}, "A2": {}}},
                                     "B": {}},
                       "workload": {"jobs": [{"queue": "A/A2", "tasks": 3,
                                              "demand": {"cpu": 1}, "duration": 2}]}},
    "hierarchy.paper": {"hierarchy": _FIG10,
                        "workload": {"kind": "facebook-bins", "jobs": 40}},
    "cluster.cpu-mic": {"cluster": {"kind": "cpu-mic", "nodes": 7},
                        "workload": {"kind": "cpu-mic"}, "hierarchy": _DFF},
    "cluster.google-2011-machines": {
        "cluster": {"kind": "google-2011-machines", "servers": 40},
        "workload": {"kind": "jobs", "jobs": [{"queue": "a", "tasks": 50, "duration": 2,
                                               "demand": {"cpu": 0.1, "mem": 0.05}}]},
        "hierarchy": {"a": {}}},
    "cluster.gpu-servers": {
        "cluster": {"kind": "gpu-servers", "servers": 12, "gpu_servers": 2},
        "workload": {"kind": "jobs", "jobs": [
            {"queue": "a", "tasks": 20, "duration": 2, "demand": {"cpu": 1, "mem": 2}},
            {"queue": "b", "tasks": 20, "duration": 2, "demand": {"gpu": 1}}]},
        "hierarchy": {"a": {}, "b": {"requires": ["gpu"]}}},
}
#: The spec every example is set into (big enough for any of them).
_AROUND: dict[str, Any] = {
    "name": "contract-kind", "algorithms": ["fifo"],
    "cluster": {"resources": ["cpu", "mem"],
                "servers": [{"count": 100, "capacity": {"cpu": 100, "mem": 100}}]},
    "hierarchy": _TWO,
}
_SECTIONS = {"workload": WORKLOAD_KINDS, "hierarchy": HIERARCHY_KINDS,
             "cluster": CLUSTER_KINDS}


def write_trace_examples(folder: Path) -> None:
    """Small files in each trace format, for the trace readers' examples: a
    SWIM day (tab-separated), a Google task_events part (gzipped CSV; submit,
    schedule and finish of each task), a Standard Workload Format log.  Each
    is created new: a file of that name already in ``folder`` is never
    replaced (FileExistsError)."""
    swim = [f"job{i}\t{30 * i}\t30\t{(i + 1) * 2**27}\t{i * 2**24}\t{2**20}"
            for i in range(12)]
    with (folder / "swim.tsv").open("x") as f:
        f.write("\n".join(swim) + "\n")
    events = []
    for job in range(4):
        for task in range(3 + job):
            t0 = (1 + job) * 10**6
            for event, t in ((0, t0), (1, t0 + 10**6), (4, t0 + (5 + task) * 10**6)):
                events.append(f"{t},,{1000 + job},{task},,{event},user{job % 2},0,0,"
                              f"0.0{1 + job},0.02,0.0,0")
    with gzip.open(folder / "task_events.csv.gz", "xt") as f:
        f.write("\n".join(events) + "\n")
    swf = ["; Version: 2.2", "; hierfair contract example"]
    for i in range(8):
        swf.append(f"{i + 1} {5 * i} 0 {20 + i} {1 + i % 3} -1 -1 {1 + i % 3} 100 -1 1 "
                   f"{1 + i % 2} 1 -1 1 -1 -1 -1")
    with (folder / "log.swf").open("x") as f:
        f.write("\n".join(swf) + "\n")


def all_kinds() -> Iterator[tuple[str, str]]:
    """(section, kind name) of every registered dataset kind."""
    for section, kinds in _SECTIONS.items():
        for name in kinds:
            yield section, name


def sized_kinds() -> Iterator[tuple[str, str]]:
    """(section, kind name) of every kind that declares its size."""
    for section, name in all_kinds():
        if _SECTIONS[section][name].size is not None:
            yield section, name


def check_kind(section: str, name: str, folder: Path, seeds: range = range(3)) -> Outcome:
    """The kind builds on its example (trace files from ``folder``, written by
    :func:`write_trace_examples`); the same seed builds the same jobs, each on
    a leaf; and a kind that declares its size builds to it."""
    check = f"{section}.{name}"
    example = KIND_EXAMPLES.get(check)
    if example is None:
        return Outcome(check, "failed", "no example parameters to build it with: add one "
                       "to contract.KIND_EXAMPLES")
    data = {**copy.deepcopy(_AROUND), **copy.deepcopy(example)}
    try:
        exp = build_experiment(data, data_dir=str(folder))
        for seed in seeds:
            jobs = exp.workload(seed).jobs
            again = build_experiment(data, data_dir=str(folder)).workload(seed).jobs
            if _jobs_key(jobs) != _jobs_key(again):
                return Outcome(check, "failed", f"seed {seed} built two different workloads")
            if not jobs or any(not exp.hierarchy.is_leaf(j.leaf) or not j.n_tasks for j in jobs):
                return Outcome(check, "failed", f"seed {seed}: no jobs, a job off the "
                               "leaves, or a job without tasks")
        kind = _SECTIONS[section][name]
        if kind.size is None:
            return Outcome(check, "ok", "builds, the same for the same seed (its size is "
                           "known only once built: "
                           f"{'a file it reads' if section == 'workload' else 'a tree'})")
        return _declared_size(check, section, data, exp, kind, seeds)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return Outcome(check, "failed", f"{type(exc).__name__}: {exc}")


def _jobs_key(jobs: Any) -> list[tuple[Any, ...]]:
    return [(j.leaf, j.submit, j.demand.tolist(), j.durations.tolist(), j.after) for j in jobs]


def _declared_size(check: str, section: str, data: dict[str, Any], exp: Any, kind: Any,
                   seeds: range) -> Outcome:
    """Nodes, servers and jobs exactly; a random generator's tasks within a
    factor of 2 of the expected number, on every seed."""
    params = (parse_workload(data["workload"])[1] if section == "workload"
              else kind.Params.model_validate(data[section]))
    declared = kind.size(params)
    if section == "hierarchy":
        return _compare(check, declared, exp.hierarchy.n_nodes)
    if section == "cluster":
        return _compare(check, declared, exp.cluster.n_servers)
    jobs, tasks = declared
    for seed in seeds:
        wl = exp.workload(seed)
        if len(wl.jobs) != jobs or not tasks / 2 <= wl.n_tasks <= 2 * tasks:
            return Outcome(check, "failed", f"declared {jobs} jobs, ~{tasks} tasks; seed "
                           f"{seed} built {len(wl.jobs)} jobs, {wl.n_tasks} tasks")
    return Outcome(check, "ok", f"{jobs} jobs, ~{tasks} tasks")


def _compare(check: str, declared: int, built: int) -> Outcome:
    return Outcome(check, "ok" if declared == built else "failed",
                   f"declared {declared}, built {built}")
