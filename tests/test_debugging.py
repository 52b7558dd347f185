"""Issue 27: a policy that fails can be debugged -- its traceback kept beside
its tables and in runs.parquet, ``run -x`` stopping at it, ``--jobs 0``
running in this process so that ``--pdb`` and breakpoints reach it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hierfair.cli import main

BROKEN = '''
from typing import ClassVar

from hierfair.sim.policy import LeafPriorityPolicy


class Broken(LeafPriorityPolicy):
    name: ClassVar[str] = "broken"

    def on_task_start(self, leaf, demand):
        if self.state.now >= 10:
            raise RuntimeError(f"boom at t={self.state.now}")
        super().on_task_start(leaf, demand)

    def key(self, leaf):
        return float(leaf)
'''


@pytest.fixture
def spec(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "broken_policy.py").write_text(BROKEN)
    monkeypatch.delitem(sys.modules, "broken_policy", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]))
    data = {"name": "dbg", "cluster": {"resources": ["cpu"],
                                       "servers": [{"capacity": {"cpu": 2}}]},
            "hierarchy": {"A": {}, "B": {}},
            "workload": {"jobs": [{"queue": "A", "tasks": 6, "demand": {"cpu": 1},
                                   "duration": 5},
                                  {"queue": "B", "tasks": 6, "demand": {"cpu": 1},
                                   "duration": 5}]},
            "algorithms": ["broken_policy:Broken", "drf"], "seeds": [0, 1, 2]}
    path = tmp_path / "dbg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("jobs", ["0", "2"])  # in this process, and in workers
def test_a_failed_run_keeps_its_traceback(spec, tmp_path, capsys, jobs):
    out = tmp_path / "out"
    argv = ["run", str(spec), "--out", str(out), "--jobs", jobs]
    if jobs == "0":
        assert main(argv) == 1
    else:  # a fresh process: its workers start with the PYTHONPATH set above (this
        # test process may hold workers from before, which cannot import the policy)
        done = subprocess.run([sys.executable, "-m", "hierfair", *argv], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 1, done.stderr
    runs = pd.read_parquet(out / "dbg" / "runs.parquet")
    failed = runs[runs["status"] == "failed"]
    assert list(failed["label"]) == ["Broken"] * 3 and (runs["status"] == "ok").sum() == 3
    for row in failed.itertuples():
        assert row.error == "RuntimeError: boom at t=10.0"
        assert row.traceback.startswith("Traceback (most recent call last):")
        assert "broken_policy.py" in row.traceback and "in on_task_start" in row.traceback
        assert (out / "dbg" / "runs" / row.run / "traceback.txt").read_text() == row.traceback
    assert (runs.loc[runs["status"] == "ok", "traceback"] == "").all()


def test_exitfirst_stops_at_the_first_failure_and_prints_it(spec, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "0", "-x"]) == 1
    err = capsys.readouterr().err
    assert "hierfair: stopped at the first failed run (-x): dbg/Broken-s0-" in err
    assert "Traceback (most recent call last):" in err and "boom at t=10.0" in err
    assert "traceback is kept in" in err
    runs = pd.read_parquet(out / "dbg" / "runs.parquet")
    assert list(runs["status"]) == ["failed"]  # nothing ran after it
    assert main(["run", str(spec), "--out", str(out), "--jobs", "0"]) == 1  # the rest runs
    assert len(pd.read_parquet(out / "dbg" / "runs.parquet")) == 6


def test_pdb_opens_the_debugger_at_the_policys_bug(spec, tmp_path, capsys, monkeypatch):
    import pdb

    seen = []
    monkeypatch.setattr(pdb, "post_mortem", lambda tb: seen.append(tb))
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--pdb"]) == 1
    (tb,) = seen
    while tb.tb_next is not None:  # the innermost frame: where the policy raised
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name == "on_task_start"
    assert "broken_policy.py" in tb.tb_frame.f_code.co_filename
    assert "RuntimeError: boom at t=10.0" in capsys.readouterr().err
