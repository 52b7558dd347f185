"""Bad input: one line naming file, field and value; exit 2; no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hierfair.cli import main

from .conftest import EXPERIMENTS, spec_with


def _job(**kw):
    job = {"queue": "A", "tasks": 2, "demand": {"cpu": 1, "mem": 1}, "duration": 1}
    job.update(kw)
    return job


CASES = {
    "unknown top-level key": (spec_with(algoritms=["drf"]), "algoritms",
                              "allowed here: name, description, cluster, hierarchy"),
    "unknown nested key": (spec_with(workload={"jobs": [_job(demnd={"cpu": 1})]}),
                           "workload.jobs[0].demnd",
                           "unknown key; did you mean 'demand'? allowed here: queue, tasks"),
    "unknown algorithm": (spec_with(algorithms=["hdfr"]), "algorithms[0].name",
                          "did you mean 'hdrf'?"),
    "unknown algorithm param": (spec_with(algorithms=[{"name": "drf", "params": {"p": 1}}]),
                                "algorithms[0].params.p", "unknown key; allowed here: backfill"),
    "unknown queue": (spec_with(workload={"jobs": [_job(queue="A/x")]}),
                      "workload.jobs[0].queue", "'A/x'"),
    "internal node as queue": (spec_with(hierarchy={"g": {"children": {"a": {}}}},
                                         workload={"jobs": [_job(queue="g")]}),
                               "workload.jobs[0].queue", "'g'"),
    "negative demand": (spec_with(workload={"jobs": [_job(demand={"cpu": -1})]}),
                        "workload.jobs[0].demand.cpu", "-1"),
    "missing demand": (spec_with(workload={"jobs": [{"queue": "A", "duration": 1}]}),
                       "workload.jobs[0].demand", "required"),
    "unknown resource in demand": (spec_with(workload={"jobs": [_job(demand={"gpu": 1})]}),
                                   "workload.jobs[0].demand.gpu", "'gpu'"),
    "task fits on no server": (spec_with(workload={"jobs": [_job(demand={"cpu": 10})]}),
                               "workload.jobs[0].demand", "fits on no server"),
    "duration list of wrong length": (spec_with(workload={"jobs": [_job(duration=[1, 2, 3])]}),
                                      "workload.jobs[0].duration", "(got 3)"),
    # weight 0 is a shape the schema allows (Kueue defines it); drf refuses it
    "zero weight": (spec_with(hierarchy={"A": {"weight": 0}, "B": {}}), "hierarchy.A.weight",
                    "drf (algorithms[0]) divides by weights"),
    "negative weight": (spec_with(hierarchy={"A": {"weight": -1}, "B": {}}), "hierarchy.A.weight",
                        "greater than or equal to 0"),
    "slash in node name": (spec_with(hierarchy={"A/B": {}}), "hierarchy.A/B", "'A/B'"),
    "resource without capacity": (
        spec_with(cluster={"resources": ["cpu", "gpu"], "servers": [{"capacity": {"cpu": 1}}]}),
        "cluster.resources", "'gpu'"),
    "unknown workload kind": (spec_with(workload={"kind": "swimm", "files": ["x"]}),
                              "workload.kind", "did you mean 'swim'? known: jobs, facebook-bins"),
    "unknown workload option": (spec_with(workload={"kind": "facebook-bins", "job": 3}),
                                "workload.job", "did you mean 'jobs'? allowed here: kind, jobs"),
    "unknown paper figure": (spec_with(hierarchy={"kind": "paper", "figure": "fig99"}),
                             "hierarchy.figure", "'fig99'"),
    "bad full-binary levels": (spec_with(hierarchy={"kind": "full-binary", "levels": 0}),
                               "hierarchy.levels", "greater than 0"),
    "bad placement": (spec_with(cluster={"resources": ["cpu", "mem"], "placement": "worst-fit",
                                         "servers": [{"capacity": {"cpu": 9, "mem": 18}}]}),
                      "cluster.placement", "'worst-fit'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec_is_one_clear_line(case, tmp_path: Path, capsys):
    data, field, detail = CASES[case]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert str(path) in err and f" {field}:" in err and detail in err, err


@pytest.mark.parametrize("text, where", [
    ("name: x\ncluster: [unclosed\n", "line 3"),
    ("name: x\nname: y\n", "line 2: key given twice (got 'name')"),
    ("- just\n- a list\n", "a spec must be a mapping"),
])
def test_malformed_yaml(text, where, tmp_path: Path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and where in err, err


def test_missing_file(tmp_path: Path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path)]) == 2
    assert "nope.yaml: no such file" in capsys.readouterr().err


def test_run_validates_every_spec_before_running_any(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec_with(algorithms=["nope"])))
    out = tmp_path / "out"
    assert main(["run", str(EXPERIMENTS / "drf-example.yaml"), str(bad), "--out", str(out)]) == 2
    assert not out.exists()


def test_allocate_unknown_algorithm(capsys):
    assert main(["allocate", str(EXPERIMENTS / "drf-example.yaml"), "-a", "nope"]) == 2
    assert "--algorithm: unknown algorithm" in capsys.readouterr().err


def test_console_script_exits_2_without_traceback(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec_with(workload={"jobs": [_job(demand={"cpu": -1})]})))
    proc = subprocess.run([sys.executable, "-m", "hierfair", "validate", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"hierfair: error: {bad}: workload.jobs[0].demand.cpu: "
                                   "Input should be greater than or equal to 0 (got -1)")


# -- hierfair report ---------------------------------------------------------
def test_report_on_a_missing_folder_is_exit_2_and_creates_nothing(tmp_path: Path, capsys):
    assert main(["report", str(tmp_path / "nosuch")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuch: no such results folder" in err[0]
    assert not (tmp_path / "nosuch").exists()


def test_report_on_a_folder_without_results_is_exit_2(tmp_path: Path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no results in this folder" in capsys.readouterr().err
    assert not (tmp_path / "README.md").exists()


def test_report_defaults_to_runs_output_folder():
    from hierfair.cli import _parser

    p = _parser()
    assert p.parse_args(["report"]).folder == p.parse_args(["run", "x.yaml"]).out


def test_report_renders_a_folder_whose_runs_all_failed(tmp_path: Path, capsys):
    # 300,000 tasks cannot finish within 0.2 s: every run times out
    data = spec_with(algorithms=["drf"])
    data["workload"]["jobs"][0]["tasks"] = 300_000
    spec = tmp_path / "slow.yaml"
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--timeout", "0.2", "--jobs", "1"]) == 1
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = (out / "README.md").read_text()
    assert "**None of the 1 runs finished**" in text
    assert "| drf | 0 | timeout | exceeded the 0.2 s timeout |" in text
    assert f"`hierfair report {out}`" in text and "make reproduce" not in text


# -- validate reports every problem -------------------------------------------
def test_validate_reports_every_problem_with_suggestions(tmp_path: Path, capsys):
    data = spec_with(workload={"jobs": [_job(duration=-10), _job(duraton=10)]},
                     algorithms=["drf", "hdfr", {"name": "pdrf", "params": {"alpa": 3}}])
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(spec_with(algorithms=["mhc"])))
    assert main(["validate", str(path), str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("hierfair: error: ") for line in err), err
    expected = [f"{path}: workload.jobs[0].duration: Input should be greater than 0 (got -10)",
                f"{path}: workload.jobs[1].duraton: unknown key; did you mean 'duration'?",
                f"{path}: algorithms[1].name: unknown algorithm; did you mean 'hdrf'?",
                f"{path}: algorithms[2].params.alpa: unknown key; did you mean 'alpha'?",
                f"{other}: algorithms[0].name: unknown algorithm; did you mean 'mch'?"]
    for want in expected:
        assert sum(want in line for line in err) == 1, (want, err)
    assert not any("more problem" in line for line in err)


def test_validate_checks_every_grid_point(tmp_path: Path, capsys):
    data = spec_with(grid={"workload.jobs[0].tasks": [0, 5, -1],
                           "algorithms[0].params.backfill": [True]})
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert "at grid point workload.jobs[0].tasks=0" in err[0]
    assert "at grid point workload.jobs[0].tasks=-1" in err[1]
    # run refuses the same, before running anything
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()
