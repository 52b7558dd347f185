"""GPU (or MIC) demands for a share of a trace's jobs or queues
(datasets/extra_demands.py), and validate's warning for a resource no job
asks for."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from hierfair.cli import main
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment

from .conftest import EXPERIMENTS

SPEC = {
    "name": "gpu",
    "cluster": {"resources": ["cpu", "mem", "gpu"], "servers": [
        {"count": 4, "capacity": {"cpu": 1, "mem": 1, "gpu": 0}},
        {"count": 2, "capacity": {"cpu": 1, "mem": 1, "gpu": 4}}]},
    "hierarchy": {"n1": {"children": {"n11": {}, "n12": {}}}, "n2": {}},
    "workload": {"kind": "google-synthetic", "jobs": 60, "extra_demands": [
        {"resource": "gpu", "amount": 1, "queues": ["n1/n12"], "replaces": ["cpu"]},
        {"resource": "gpu", "amount": 2, "queues": ["n2"], "share": 0.25}]},
    "algorithms": ["drf", "hdrf"],
}


def jobs_of(data: dict, seed: int = 0):
    exp = build_experiment(copy.deepcopy(data))
    return exp, exp.workload(seed).jobs


def test_a_queues_jobs_ask_for_one_gpu_and_no_cpu():
    exp, jobs = jobs_of(SPEC)
    h, gpu, cpu = exp.hierarchy, 2, 0
    n12 = [j for j in jobs if h.paths[j.leaf] == "n1/n12"]
    n11 = [j for j in jobs if h.paths[j.leaf] == "n1/n11"]
    assert n12 and all(j.demand[gpu] == 1 and j.demand[cpu] == 0 for j in n12)
    assert n11 and all(j.demand[gpu] == 0 for j in n11)
    assert any(j.demand[cpu] > 0 for j in n11)  # the trace's CPU demand stays


def test_a_share_of_a_queues_jobs_is_seeded():
    exp, jobs = jobs_of(SPEC)
    n2 = [j for j in jobs if exp.hierarchy.paths[j.leaf] == "n2"]
    picked = [j.id for j in n2 if j.demand[2] == 2]
    assert 0 < len(picked) < len(n2)  # about a quarter of them
    assert picked == [j.id for j in jobs_of(SPEC)[1] if j.demand[2] == 2]  # same seed
    assert picked != [j.id for j in jobs_of(SPEC, seed=1)[1] if j.demand[2] == 2]
    without = copy.deepcopy(SPEC)
    without["workload"].pop("extra_demands")
    plain = jobs_of(without)[1]
    # nothing else changes: same jobs, sizes and arrivals
    assert [(j.id, j.submit, j.n_tasks) for j in plain] == \
        [(j.id, j.submit, j.n_tasks) for j in jobs]
    assert all(np.array_equal(a.demand[:2], b.demand[:2]) for a, b in zip(plain, jobs)
               if b.demand[2] == 0)


@pytest.mark.parametrize(("change", "where", "says"), [
    ({"resource": "gpus"}, "workload.extra_demands[0]", "did you mean 'gpu'?"),
    ({"queues": ["n1/n13"]}, "workload.extra_demands[0].queues", "no such node"),
    ({"amount": 5}, "workload.extra_demands[0]", "fits on no server"),
    ({"amount": 0}, "workload.extra_demands[0].amount", "greater than 0"),
    ({"share": 1.5}, "workload.extra_demands[0].share", "less than or equal to 1"),
])
def test_bad_extra_demands_are_named(change, where, says):
    data = copy.deepcopy(SPEC)
    data["workload"]["extra_demands"][0].update(change)
    with pytest.raises(SpecError) as err:
        build_experiment(data)
    assert err.value.where == where and says in str(err.value), str(err.value)


def test_gpu_demands_for_google_trace_jobs(trace):
    data = yaml.safe_load((EXPERIMENTS / "google-2011.yaml").read_text())
    data["cluster"] = SPEC["cluster"]
    data["hierarchy"] = {"kind": "full-binary", "levels": 2}
    data["workload"].pop("fallback")
    data["workload"]["extra_demands"] = [{"resource": "gpu", "amount": 1, "share": 0.3}]
    exp = build_experiment(data, data_dir=str(trace.of(data)))
    wl = exp.workload(0)
    assert "google-2011" in wl.source and not wl.fallback
    with_gpu = sum(j.demand[2] > 0 for j in wl.jobs)
    assert 0 < with_gpu < len(wl.jobs)


def test_validate_warns_about_a_resource_no_job_asks_for(tmp_path, capsys):
    data = copy.deepcopy(SPEC)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
    data["workload"].pop("extra_demands")
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hierfair: warning: {path}: no job asks for gpu: util_gpu will be 0 "
                   "(give jobs gpu demands, e.g. workload.extra_demands; docs/workloads.md)"]
