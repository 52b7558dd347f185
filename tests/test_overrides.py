"""Issue 27: a spec's runs narrowed or changed from the command line
(``-a``, ``--seeds``, ``--set``), recorded with every run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from hierfair.cli import main

from .conftest import EXPERIMENTS

SPEC = str(EXPERIMENTS / "hdrf-fig3.yaml")  # drf, static-hdrf, hdrf; 2 jobs of 100 tasks


def test_algorithms_seeds_and_a_field_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["run", SPEC, "--out", str(out), "--jobs", "1", "-a", "hdrf,drf", "--seeds", "0-2",
            "--set", "workload.jobs[0].tasks=20"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "-a: the spec's claims are checked only when all its algorithms run" in err
    runs = pd.read_parquet(out / "hdrf-fig3" / "runs.parquet")
    assert sorted(zip(runs["label"], runs["seed"])) == [(a, s) for a in ("drf", "hdrf")
                                                        for s in (0, 1, 2)]
    assert set(runs["overrides"]) == {"-a hdrf,drf --seeds 0,1,2 "
                                      "--set workload.jobs[0].tasks=20"}
    saved = yaml.safe_load((out / "hdrf-fig3" / "spec.yaml").read_text())
    assert saved["workload"]["jobs"][0]["tasks"] == 20 and not saved["claims"]
    jobs = pd.read_parquet(out / "hdrf-fig3" / "runs" / runs["run"][0] / "jobs.parquet")
    assert list(jobs["tasks"]) == [20, 100]
    assert main(argv) == 0  # the same again: every run cached
    assert "6 of 6 runs cached" in capsys.readouterr().err
    # without the change the field is the spec's: other runs, not the cached ones
    assert main(["run", SPEC, "--out", str(out), "--jobs", "1", "-a", "drf", "--seeds", "0"]) == 0
    assert "cached" not in capsys.readouterr().err
    runs = pd.read_parquet(out / "hdrf-fig3" / "runs.parquet")
    assert list(runs["overrides"]) == ["-a drf --seeds 0"]


def test_a_grid_over_an_algorithm_follows_it_and_a_grid_field_is_not_set(tmp_path, capsys):
    data = yaml.safe_load(open(SPEC).read())
    data.pop("claims")
    data["algorithms"] = ["drf", {"name": "slots-k", "params": {"k": 2}, "label": "s2"},
                          {"name": "slots-k", "params": {"k": 3}, "label": "s3"}]
    data["grid"] = {"algorithms[2].params.k": [3, 4]}
    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "-a", "s3,drf"]) == 0
    runs = pd.read_parquet(out / "hdrf-fig3" / "runs.parquet")
    swept = runs[runs["label"] == "s3"]
    assert sorted(swept["param_k"]) == [3, 4]  # the grid followed s3 to algorithms[0]
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "-a", "s2"]) == 0
    assert "-a: grid.algorithms[2].params.k sweeps an algorithm left out" in \
        capsys.readouterr().err
    assert main(["validate", str(spec), "--set", "algorithms[2].params.k=9"]) == 2
    assert "--set algorithms[2].params.k: the spec's grid sets this field" in \
        capsys.readouterr().err


def test_a_cached_row_says_what_this_command_changed(tmp_path):
    out = tmp_path / "out"
    assert main(["run", SPEC, "--out", str(out), "--jobs", "1", "-a", "drf", "--seeds", "0"]) == 0
    assert main(["run", SPEC, "--out", str(out), "--jobs", "1", "-a", "drf,hdrf",
                 "--seeds", "0"]) == 0
    runs = pd.read_parquet(out / "hdrf-fig3" / "runs.parquet")
    assert set(runs["overrides"]) == {"-a drf,hdrf --seeds 0"}  # drf's row too (cached)


def test_an_algorithm_the_spec_does_not_name_joins_it(tmp_path):
    assert main(["run", SPEC, "--out", str(tmp_path), "--jobs", "1", "-a", "drf,fifo",
                 "--seeds", "0"]) == 0
    runs = pd.read_parquet(tmp_path / "hdrf-fig3" / "runs.parquet")
    assert list(runs["label"]) == ["drf", "fifo"]


@pytest.mark.parametrize("flags, said", [
    (["--seeds", "4-1"], "--seeds: seeds as 0-4 or 0,2,7 (got '4-1')"),
    (["--seeds", "x"], "--seeds: seeds as 0-4 or 0,2,7"),
    (["--seeds", "0-4294967295"], "--seeds: at most 200 seeds"),
    (["--set", "workload.jobs"], "--set: give PATH=VALUE"),
    (["--set", "workload.nosuch[3].x=1"], "--set workload.nosuch[3].x: no such field"),
    (["-a", ","], "-a: name at least one algorithm"),
    (["-a", "drf,nosuch"], "-a: unknown algorithm"),
])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_overrides_are_one_line_and_exit_2(tmp_path, capsys, flags, said, command):
    argv = [command, SPEC, *flags] + (["--out", str(tmp_path)] if command == "run" else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("hierfair: error")]
    assert len(errors) == 1 and said in errors[0] and "Traceback" not in err
    assert not any(tmp_path.iterdir())
