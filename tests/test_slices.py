"""Issue 30, item 4: a long sweep run a slice at a time (``--only PATH=VALUE``),
each slice's claims decided as the whole sweep decides them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.results import WALL_CLOCK_COLUMNS

GRID = "workload.jobs[0].tasks"


def _claim(tasks: int) -> dict:
    return {"id": f"c{tasks}", "claim": f"drf finishes job 1's {tasks} tasks", "source": "test",
            "checks": [{"algorithm": "drf", "metric": "completion_mean",
                        "where": {GRID: tasks}, "below": 10_000}]}


@pytest.fixture
def spec(tmp_path):
    data = {"name": "sliced", "cluster": {"resources": ["mem", "cpu"],
                                          "servers": [{"count": 1, "capacity": {"mem": 10,
                                                                                "cpu": 10}}]},
            "hierarchy": {"a": {}, "b": {}},
            "workload": {"jobs": [
                {"queue": "a", "tasks": 10, "demand": {"mem": 3, "cpu": 2}, "duration": 10},
                {"queue": "b", "tasks": 20, "demand": {"mem": 2, "cpu": 3}, "duration": 5}]},
            "algorithms": ["drf", "fifo"], "seeds": [0], "grid": {GRID: [10, 30]},
            "claims": [_claim(10), _claim(30)]}
    path = tmp_path / "sliced.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _verdicts(folder) -> dict[str, str]:
    return {v["id"]: v["verdict"] for v in json.loads((folder / "claims.json").read_text())}


def _runs(folder) -> pd.DataFrame:
    runs = pd.read_parquet(folder / "runs.parquet")
    return runs.drop(columns=[c for c in runs if c in WALL_CLOCK_COLUMNS]
                     + ["created", "overrides"], errors="ignore")


def test_slices_add_up_to_the_whole_sweep(spec, tmp_path, capsys):
    out, whole = tmp_path / "out", tmp_path / "whole"
    assert main(["run", spec, "--out", str(out), "-j", "1", "--only", f"{GRID}=10"]) == 0
    err = capsys.readouterr().err
    assert "sliced: 2 of 4 runs not run (--only workload.jobs[0].tasks=10" in err
    runs = pd.read_parquet(out / "sliced" / "runs.parquet")
    assert sorted(zip(runs["label"], runs[GRID])) == [("drf", 10), ("fifo", 10)]
    assert _verdicts(out / "sliced") == {"c10": "holds", "c30": "n/a"}
    c30 = json.loads((out / "sliced" / "claims.json").read_text())[1]
    assert c30["reason"] == (f"no run of drf at {GRID}=30 yet (`hierfair run --only` ran "
                             "other grid points)")

    assert main(["run", spec, "--out", str(out), "--dry-run", "--only", f"{GRID}=30"]) == 0
    listed = capsys.readouterr().out
    assert listed.count("[cached]") == 2 and listed.count("[to run]") == 2
    assert main(["run", spec, "--out", str(out), "--dry-run", "--only", f"{GRID}=10"]) == 0
    assert capsys.readouterr().out.count("[not in --only]") == 2

    assert main(["run", spec, "--out", str(out), "-j", "1", "--only", f"{GRID}=30"]) == 0
    err = capsys.readouterr().err
    assert "2 of 4 runs cached" in err and "not run" not in err
    assert main(["run", spec, "--out", str(whole), "-j", "1"]) == 0
    assert _verdicts(out / "sliced") == _verdicts(whole / "sliced") == {"c10": "holds",
                                                                          "c30": "holds"}
    pd.testing.assert_frame_equal(_runs(out / "sliced"), _runs(whole / "sliced"))
    for run in _runs(whole / "sliced")["run"]:
        for table in ("jobs", "tasks"):
            a, b = (pd.read_parquet(f / "sliced" / "runs" / run / f"{table}.parquet")
                    for f in (out, whole))
            pd.testing.assert_frame_equal(a, b)
    # the whole sweep over the slices' folder reuses every run
    assert main(["run", spec, "--out", str(out), "-j", "1"]) == 0
    assert "4 of 4 runs cached" in capsys.readouterr().err


@pytest.mark.parametrize("flag, said", [
    ("nosuch=1", "--only: not a key of the spec's grid (workload.jobs[0].tasks) (got 'nosuch')"),
    (f"{GRID}=20", f"--only {GRID}: not one of grid.{GRID}'s values (10, 30) (got 20)"),
    ("nothing", "--only: give PATH=VALUE"),
    (f"{GRID}=[", f"--only {GRID}: the value is not YAML"),
])
def test_a_slice_that_selects_nothing_is_refused(spec, tmp_path, capsys, flag, said):
    for command in (["validate", spec], ["run", spec, "--out", str(tmp_path / "o")]):
        assert main([*command, "--only", flag]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
