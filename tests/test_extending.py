"""docs/extending.md, run as written: a policy class of the user's own, named
from a spec as module:Class or registered as an entry-point plugin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hierfair.algorithms import available, policy_class
from hierfair.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def my_policies(tmp_path: Path, monkeypatch) -> Path:
    """The doc's module, importable here and in worker processes."""
    (tmp_path / "my_policies.py").write_text(blocks("python")[0])
    monkeypatch.delitem(sys.modules, "my_policies", raising=False)  # another test's copy
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return tmp_path


def test_the_example_is_under_40_lines():
    assert len(blocks("python")[0].strip().splitlines()) < 40


@pytest.mark.parametrize("jobs", ["1", "2"])  # in-process and in worker processes
def test_the_documented_spec_runs_the_users_policy(my_policies, tmp_path, capsys, jobs):
    spec = tmp_path / "my-round-robin.yaml"
    spec.write_text(blocks("yaml")[0])
    out = tmp_path / f"results-{jobs}"
    assert main(["validate", str(spec)]) == 0
    if jobs == "1":
        assert main(["run", str(spec), "--out", str(out), "--jobs", jobs]) == 0
        err = capsys.readouterr().err
    else:  # a fresh process: its workers start with the PYTHONPATH the user set
        done = subprocess.run([sys.executable, "-m", "hierfair", "run", str(spec), "--out",
                               str(out), "--jobs", jobs], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        err = done.stderr
    folder = out / "my-round-robin"
    runs = pd.read_parquet(folder / "runs.parquet")
    assert sorted(runs["label"]) == ["drf", "hdrf", "wrr"]
    assert (runs["status"] == "ok").all()
    (verdict,) = json.loads((folder / "claims.json").read_text())
    assert verdict["verdict"] == "holds"  # A 6 tasks, B 3: two turns to one
    assert "claim holds" in err


def test_a_users_policy_without_a_label_is_labelled_by_its_class(my_policies, tmp_path):
    data = yaml.safe_load(blocks("yaml")[0])
    data["algorithms"] = ["my_policies:WeightedRoundRobin"]
    del data["claims"]
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["run", str(spec), "--out", str(tmp_path / "r"), "--jobs", "1"]) == 0
    runs = pd.read_parquet(tmp_path / "r" / "my-round-robin" / "runs.parquet")
    assert runs["label"].tolist() == ["WeightedRoundRobin"]
    assert runs["run"].iloc[0].startswith("WeightedRoundRobin-s0-")


def test_editing_the_users_policy_reruns_its_cached_run(my_policies, tmp_path, capsys):
    data = yaml.safe_load(blocks("yaml")[0])
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "r"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--dry-run"]) == 0
    before = capsys.readouterr().out
    module = my_policies / "my_policies.py"
    module.write_text(module.read_text() + "\n# changed\n")
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--dry-run"]) == 0
    after = capsys.readouterr().out
    wrr = [line for line in before.splitlines() if "wrr-s0-" in line]
    assert wrr and wrr[0] not in after  # a new key: the run is planned afresh
    assert [x for x in before.splitlines() if "drf-s0-" in x] == \
        [x for x in after.splitlines() if "drf-s0-" in x]


@pytest.mark.parametrize(("name", "says"), [
    ("my_policies:Nope", "cannot load policy 'my_policies:Nope': AttributeError"),
    ("no_such_module_xyz:P", "cannot load policy 'no_such_module_xyz:P': "
     "ModuleNotFoundError"),
    ("my_policies:Params", "is not a policy class"),
    ("hdfr", "did you mean 'hdrf'?"),
])
def test_a_bad_policy_name_is_one_line_exit_2(my_policies, tmp_path, capsys, name, says):
    data = yaml.safe_load(blocks("yaml")[0])
    data["algorithms"] = [name]
    del data["claims"]
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "algorithms[0].name" in err[0], err


def test_a_plugin_registered_by_entry_point(my_policies, capsys):
    # what `pip install` of a package with the doc's pyproject table leaves behind
    info = my_policies / "my_policies-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-policies\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        '[hierfair.algorithms]\nwrr = "my_policies:WeightedRoundRobin"\n'.replace('"', ""))
    assert policy_class("wrr").__name__ == "WeightedRoundRobin"
    assert "wrr" in available()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "[plugin: my_policies:WeightedRoundRobin]" in out
    assert "backfill: bool = True" in out


def test_list_shows_every_parameter_with_its_default(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for line in ("p: float = 0.5", "alpha: float = 2.0", "k: int = 4",
                 "attribution: 'frozen' | 'literal' | 'blocked-fits' | 'literal-frozen' = "
                 "'literal-frozen'"):
        assert line in out, line


def test_report_needs_only_the_results_folder_not_the_policys_code(my_policies, tmp_path):
    """A user's policy ran with PYTHONPATH set; the report is made without it
    (another shell, another machine): it reads what was saved, imports nothing
    -- with a grid over the cluster too (each grid point's figures)."""
    spec = tmp_path / "my-round-robin.yaml"
    data = yaml.safe_load(blocks("yaml")[0])
    data["grid"] = {"cluster.servers[0].capacity.cpu": [9, 12]}
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "results"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1"]) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(  # without the policy's folder
        p for p in os.environ["PYTHONPATH"].split(os.pathsep) if p != str(my_policies)))
    done = subprocess.run([sys.executable, "-m", "hierfair", "report", str(out)], env=env,
                          cwd=out, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(str(out / "index.html"))
    page = (out / "index.html").read_text()
    assert "wrr" in page and "drf" in page


def test_the_documented_policy_passes_hierfair_check(my_policies, capsys):
    assert main(["check", "my_policies:WeightedRoundRobin"]) == 0
    assert "checks passed" in capsys.readouterr().err
