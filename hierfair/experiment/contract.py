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

A dataset kind with a declared size (``Kind.size``: what the memory check
reads before anything is built) builds to that size: exactly for nodes,
servers and jobs; the tasks of a random generator (400 jobs) within a
factor of 2 of the expected number, on each of three seeds.

``hierfair check NAME`` runs the policy part on any algorithm, a user's
``module:Class`` included; tests/test_contract.py runs both parts over
every registered algorithm and dataset kind.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
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
#: Each sized kind's example: its own section, and what the spec around it
#: needs (the others read a file or take a tree written out: no size).
_FIG10 = {"kind": "paper", "figure": "hdrf-fig10"}
_DFF = {"kind": "paper", "figure": "dff-fig1"}
KIND_EXAMPLES: dict[str, dict[str, Any]] = {
    "workload.jobs": {"workload": {"jobs": [{"queue": "A", "tasks": 7, "demand": {"cpu": 1},
                                             "duration": 3}]}},
    "workload.facebook-bins": {"workload": {"kind": "facebook-bins", "jobs": 400},
                               "hierarchy": _FIG10},
    "workload.google-synthetic": {"workload": {"kind": "google-synthetic", "jobs": 400}},
    "workload.cpu-mic": {"workload": {"kind": "cpu-mic"}, "hierarchy": _DFF,
                         "cluster": {"kind": "cpu-mic", "nodes": 7}},
    "hierarchy.full-binary": {"hierarchy": {"kind": "full-binary", "levels": 4},
                              "workload": {"jobs": [{"queue": "n0/n0/n0/n0", "tasks": 3,
                                                     "demand": {"cpu": 1}, "duration": 2}]}},
    "cluster.cpu-mic": {"cluster": {"kind": "cpu-mic", "nodes": 7},
                        "workload": {"kind": "cpu-mic"}, "hierarchy": _DFF},
}
#: The spec every example is set into (big enough for any of them).
_AROUND: dict[str, Any] = {
    "name": "contract-kind", "algorithms": ["fifo"],
    "cluster": {"resources": ["cpu", "mem"],
                "servers": [{"count": 100, "capacity": {"cpu": 100, "mem": 100}}]},
    "hierarchy": {"A": {}, "B": {}},
}


def sized_kinds() -> Iterator[tuple[str, str]]:
    """(section, kind name) of every kind that declares its size."""
    for section, kinds in (("workload", WORKLOAD_KINDS), ("hierarchy", HIERARCHY_KINDS),
                           ("cluster", CLUSTER_KINDS)):
        for name, kind in kinds.items():
            if kind.size is not None:
                yield section, name


def check_kind(section: str, name: str, seeds: range = range(3)) -> Outcome:
    """The kind builds to the size it declares (on a spec around it)."""
    example = KIND_EXAMPLES.get(f"{section}.{name}")
    if example is None:
        return Outcome(f"{section}.{name}", "failed", "no example parameters to build it "
                       "with: add one to contract.KIND_EXAMPLES")
    data = {**copy.deepcopy(_AROUND), **copy.deepcopy(example)}
    kinds = {"workload": WORKLOAD_KINDS, "hierarchy": HIERARCHY_KINDS,
             "cluster": CLUSTER_KINDS}
    try:
        exp = build_experiment(data)
        kind = kinds[section][name]
        params = (parse_workload(data["workload"])[1] if section == "workload"
                  else kind.Params.model_validate(data[section]))
        declared = kind.size(params)
        if section == "hierarchy":
            return _compare(section, name, declared, exp.hierarchy.n_nodes)
        if section == "cluster":
            return _compare(section, name, declared, exp.cluster.n_servers)
        jobs, tasks = declared
        for seed in seeds:
            wl = exp.workload(seed)
            if len(wl.jobs) != jobs or not tasks / 2 <= wl.n_tasks <= 2 * tasks:
                return Outcome(f"{section}.{name}", "failed",
                               f"declared {jobs} jobs, ~{tasks} tasks; seed {seed} built "
                               f"{len(wl.jobs)} jobs, {wl.n_tasks} tasks")
        return Outcome(f"{section}.{name}", "ok", f"{jobs} jobs, ~{tasks} tasks")
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return Outcome(f"{section}.{name}", "failed", f"{type(exc).__name__}: {exc}")


def _compare(section: str, name: str, declared: int, built: int) -> Outcome:
    ok = declared == built
    return Outcome(f"{section}.{name}", "ok" if ok else "failed",
                   f"declared {declared}, built {built}")
