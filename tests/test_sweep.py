"""Sweeps: grid planning, parallel backends agree, failures and timeouts are
recorded, a killed sweep resumes with exactly the missing runs."""

from __future__ import annotations

import copy
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import hierfair
from hierfair.cli import main
from hierfair.errors import SpecError
from hierfair.experiment.results import WALL_CLOCK_COLUMNS, atomic_path, remove_stale_temporaries
from hierfair.experiment.spec import read_yaml
from hierfair.experiment.sweep import plan, run_seed, sweep

from .conftest import EXPERIMENTS, ROOT, spec_with

MACHINE = set(WALL_CLOCK_COLUMNS) | {"code_version", "git_commit"}

SWEEP = {  # 12 runs, each a fraction of a second
    **read_yaml(EXPERIMENTS / "sweep-example.yaml"),
    "seeds": [0, 1],
    "grid": {"hierarchy.levels": [2, 3, 4], "workload.jobs": [40]},
}


def metrics(frame: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in frame.columns if c not in MACHINE]
    return frame[keep].sort_values("run_index").reset_index(drop=True)


def test_plan_is_the_cartesian_product_with_derived_seeds():
    data = copy.deepcopy(SWEEP)
    data["grid"] = {"hierarchy.levels": [2, 3], "workload.jobs": [10, 20, 30],
                    "algorithms[0].params.attribution": ["paper", "frozen"]}
    runs = plan(data).runs
    # hdrf: 2 x 3 x 2 grid points x 2 seeds; drf ignores attribution: 2 x 3 x 2
    assert len(runs) == 24 + 12
    assert len({r.run_id for r in runs}) == len(runs)
    by = {}
    for r in runs:
        point = {k: v for k, v in r.grid.items() if not k.startswith("algorithms")}
        by.setdefault((r.base_seed, tuple(point.items())), set()).add(r.seed)
    # all algorithms (and their params) of a grid point share its workload seed
    assert all(len(seeds) == 1 for seeds in by.values())
    assert len({s for seeds in by.values() for s in seeds}) == len(by)
    assert run_seed(7, {}) == 7 and run_seed(7, {"algorithms[0].params.p": 1}) == 7


def test_bad_grid_path_is_a_clear_error(tmp_path, capsys):
    data = copy.deepcopy(SWEEP)
    data["grid"] = {"hierarchy.levles": [2]}
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(data))
    for command in (["run", str(spec), "--out", str(tmp_path), "--dry-run"],
                    ["validate", str(spec)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{spec}: hierarchy.levles (at grid point hierarchy.levles=2): unknown key" in err


def test_backends_give_identical_metrics(tmp_path):
    serial = sweep(SWEEP, tmp_path / "one", jobs=1)
    assert len(serial) == 12 and (serial["status"] == "ok").all()
    two = sweep(SWEEP, tmp_path / "two", jobs=2)
    pd.testing.assert_frame_equal(metrics(serial), metrics(two))
    dask = sweep(SWEEP, tmp_path / "dask", jobs=2, backend="dask")
    pd.testing.assert_frame_equal(metrics(serial), metrics(dask))


def test_dask_backend_on_a_running_scheduler(tmp_path, capsys):
    from dask.distributed import LocalCluster

    # a cluster started apart from the sweep, reached only by its address
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        remote = sweep(SWEEP, tmp_path / "remote", backend="dask",
                       scheduler=cluster.scheduler_address)
    serial = sweep(SWEEP, tmp_path / "one", jobs=1)
    pd.testing.assert_frame_equal(metrics(serial), metrics(remote))
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(SWEEP))
    code = main(["run", str(spec), "--out", str(tmp_path / "none"), "--backend", "dask",
                 "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 69 and "--scheduler: cannot reach the Dask scheduler" in err
    assert "tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_cached_runs_are_reused_and_force_reruns(tmp_path):
    first = sweep(SWEEP, tmp_path, jobs=1)
    again = sweep(SWEEP, tmp_path, jobs=1)
    pd.testing.assert_frame_equal(first, again)  # same rows, same start times: nothing ran
    forced = sweep(SWEEP, tmp_path, jobs=1, force=True)
    assert (forced["started_at"] != first["started_at"]).all()
    pd.testing.assert_frame_equal(metrics(first), metrics(forced))


def test_a_bad_grid_point_is_refused_before_any_run(tmp_path):
    data = spec_with(
        cluster={"resources": ["cpu", "mem"],
                 "servers": [{"count": 2, "capacity": {"cpu": 8, "mem": 16}}]},
        hierarchy={"kind": "full-binary", "levels": 2},
        workload={"kind": "swf", "file": str(ROOT / "tests/data/sample.swf")},
        algorithms=["drf", "fifo"],
        grid={"workload.file": [str(ROOT / "tests/data/sample.swf"), "missing.swf"]},
    )
    with pytest.raises(SpecError, match=r"workload.file \(at grid point workload.file="
                                        r"'missing.swf'\): trace file not found"):
        sweep(data, tmp_path, jobs=2)
    assert not (tmp_path / "t").exists()


def test_failures_and_timeouts_are_recorded_and_the_sweep_goes_on(tmp_path, capsys,
                                                                   monkeypatch, broken_fifo):
    frame = sweep(spec_with(algorithms=["drf", "fifo"], seeds=[0, 1]), tmp_path, jobs=1)
    assert (frame["status"] == "ok").sum() == 2
    failed = frame[frame["status"] == "failed"]
    assert len(failed) == 2 and (failed["error"] == "ZeroDivisionError: a bug in a policy").all()
    monkeypatch.undo()

    # Three tasks never reach the deadline check (made every 1024 steps); the
    # 100-job Facebook schedule (about 14,000 tasks) takes H-DRF seconds.
    slow = read_yaml(EXPERIMENTS / "facebook-bins.yaml")
    tiny = {"jobs": [{"queue": "n2/n21", "tasks": 3, "demand": {"cpu": 1}, "duration": 1}]}
    slow.update(algorithms=["hdrf"], grid={"workload": [tiny, slow["workload"]]})
    del slow["claims"]  # they compare algorithms this sweep leaves out
    spec = tmp_path / "slow.yaml"
    spec.write_text(yaml.safe_dump(slow))
    code = main(["run", str(spec), "--out", str(tmp_path), "--jobs", "1", "--timeout", "0.3"])
    err = capsys.readouterr().err
    runs = pd.read_parquet(tmp_path / "facebook-bins" / "runs.parquet")
    assert code == 1 and "did not finish" in err and "timeout" in err
    assert runs.set_index("grid_point")["status"].to_dict() == {0: "ok", 1: "timeout"}


def test_killed_sweep_resumes_with_exactly_the_missing_runs(tmp_path):
    data = copy.deepcopy(SWEEP)
    data["grid"] = {"hierarchy.levels": [3, 4], "workload.jobs": [150, 200]}
    data["algorithms"] = ["hdrf"]  # 8 runs of about a second each
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hierfair", "run", str(spec), "--out", str(out), "--jobs", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    summaries = out / "sweep-example" / "runs"

    def finished() -> dict[str, int]:
        """Runs whose summary holds their row (a run under way lists what it
        may write there instead)."""
        out = {}
        for p in summaries.glob("*/summary.json"):
            try:
                if "row" in json.loads(p.read_text()):
                    out[p.parent.name] = p.stat().st_mtime_ns
            except (OSError, ValueError):
                continue
        return out

    deadline = time.monotonic() + 120
    while len(finished()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = finished()
    assert 2 <= len(done) < 8
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{len(done)} of 8 runs cached" in again.stderr
    assert again.stderr.count(" ok (") == 8 - len(done)
    runs = pd.read_parquet(out / "sweep-example" / "runs.parquet")
    assert len(runs) == 8 and runs["run"].is_unique and (runs["status"] == "ok").all()
    for rid, mtime in done.items():  # finished runs were not redone
        assert (summaries / rid / "summary.json").stat().st_mtime_ns == mtime
    assert not list((out / "sweep-example").rglob("*.tmp"))


def test_only_temporaries_of_dead_writers_on_this_host_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    target = tmp_path / "runs" / "r1" / "jobs.parquet"
    with atomic_path(target) as mine:  # this process is alive: its file stays
        Path(mine).write_text("being written")
        host, _, _ = Path(mine).name[len(".jobs.parquet~"):-len(".tmp")].split("~")
        abandoned = target.with_name(f".jobs.parquet~{host}~{dead}~0123abcd.tmp")
        elsewhere = target.with_name(f".jobs.parquet~not-{host}~{dead}~0123abcd.tmp")
        for path in (abandoned, elsewhere):
            path.write_text("half")
        assert remove_stale_temporaries(tmp_path) == 1
        assert not abandoned.exists() and elsewhere.exists() and Path(mine).exists()
    assert target.read_text() == "being written"


def test_a_sweep_clears_only_its_own_dead_temporaries_under_its_own_folder(tmp_path):
    """The sweep removes, at its start and at its end (a Dask worker killed
    mid-write), only temporaries named as hierfair writes them, of a dead
    writer on this host, under the spec's own results folder."""
    import socket

    from .conftest import spec_with

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    host = socket.gethostname()
    litter = f".jobs.parquet~{host}~{dead}~0123abcd.tmp"
    out = tmp_path / "out"
    mine = out / "own" / "runs" / "gone"
    elsewhere = out / "other"  # another spec's folder under the same --out
    outside = tmp_path / "outside"
    for folder in (mine, elsewhere, outside):
        folder.mkdir(parents=True)
        (folder / litter).write_text("half")
    user = out / "own" / "notes.tmp"
    user.write_text("mine")
    hierfair.run(spec_with(name="own"), out=out, jobs=0)
    assert not (mine / litter).exists()
    assert (elsewhere / litter).exists() and (outside / litter).exists()
    assert user.read_text() == "mine"


def test_python_api(tmp_path):
    frame = hierfair.run(EXPERIMENTS / "drf-example.yaml", out=tmp_path, jobs=1)
    assert list(frame["label"]) == ["drf", "fifo"]
    assert (tmp_path / "drf-example" / "runs.parquet").exists()
    with pytest.raises(hierfair.errors.SpecError, match="no such file"):
        hierfair.run(tmp_path / "nope.yaml", out=tmp_path)


def test_the_code_version_hashes_every_loaded_hierfair_module():
    # A cached run must not survive a change to any engine module, including
    # those in subpackages (hierfair.sim, hierfair.experiment, hierfair.report).
    import sys

    import hierfair.report  # noqa: F401 - loaded so its files are checked too
    from hierfair.experiment.sweep import code_files

    hashed = {path.resolve() for path, _ in code_files()}
    loaded = {Path(m.__file__).resolve() for name, m in list(sys.modules.items())
              if name.startswith("hierfair") and getattr(m, "__file__", None)}
    assert loaded <= hashed
    assert any(p.parent.name == "sim" for p in hashed)


def test_a_spec_keeps_only_the_tables_it_names(tmp_path, capsys):
    """``tables:`` for long runs: only those are written (allocations are not
    even recorded), the metrics are the same, a cached run with more tables
    is reused, and a claim that reads a table left out is refused up front."""
    small = {**copy.deepcopy(SWEEP), "grid": {}, "seeds": [0]}
    full = sweep(small, tmp_path / "a")
    kept = sweep({**small, "tables": ["jobs", "utilization"]}, tmp_path / "b")
    assert metrics(kept).drop(columns=["run"]).equals(metrics(full).drop(columns=["run"]))
    folder = tmp_path / "b" / small["name"]
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["runs.parquet"]
    for run in kept["run"]:
        assert sorted(p.name for p in (folder / "runs" / run).glob("*.parquet")) == [
            "jobs.parquet", "utilization.parquet"]
    # the full folder's runs are reused with fewer tables; the extra ones go
    again = sweep({**small, "tables": ["jobs"]}, tmp_path / "a")
    assert (again["started_at"] == full["started_at"]).all()
    assert hierfair.load(tmp_path / "a" / small["name"]).allocations.empty
    over_run = {"claim": "a share over time", "source": "test",
                "checks": [{"algorithm": small["algorithms"][0] if isinstance(
                    small["algorithms"][0], str) else small["algorithms"][0]["name"],
                    "node": "(root)", "over": "run", "above": 0}]}
    with pytest.raises(SpecError, match=r"claims\[0\].checks\[0\] reads allocations.parquet"):
        plan({**small, "tables": ["jobs"], "claims": [over_run]})
    hierfair.report(tmp_path / "b")  # figures drawn from what is there
    assert (tmp_path / "b" / "index.html").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_is_a_bar_and_in_a_log_one_line_a_run():
    """Issue 27: tqdm's bar where a person watches (failures on lines of
    their own above it), plain lines where a log or CI reads."""
    from hierfair.experiment.progress import Progress
    from hierfair.report.fmt import Progress as ReportProgress

    rows = [{"run": f"drf-s{i}-x", "status": "ok" if i != 2 else "failed",
             "wall_seconds": 0.5} for i in range(4)]
    screen = _Terminal()
    bar = Progress("demo", stream=screen)
    bar(1, 5, None)  # one run cached
    for done, row in enumerate(rows, start=2):
        bar(done, 5, row)
    shown = screen.getvalue()
    assert "demo: 1 of 5 runs cached" in shown
    assert "\r" in shown and "5/5" in shown and "demo: drf-s2-x FAILED\n" in shown
    assert "[2/5]" not in shown  # no plain lines on a terminal
    log = io.StringIO()
    plain = Progress("demo", stream=log)
    for done, row in enumerate(rows, start=1):
        plain(done, 4, row)
    lines = log.getvalue().splitlines()
    assert len(lines) == 4 and lines[2].startswith("[3/4] demo: drf-s2-x failed (0.50s,")
    assert "\r" not in log.getvalue() and lines[2].endswith(" FAILED")
    report_screen = _Terminal()
    steps = ReportProgress("figures", 2, stream=report_screen)
    steps.step("a")
    steps.say("note")
    steps.step("b")
    assert "2/2" in report_screen.getvalue() and "report: note\n" in report_screen.getvalue()


def test_a_zombie_writer_counts_as_dead(tmp_path):
    """A SIGKILLed worker stays a zombie until its parent reaps it; its
    temporary is litter all the same (seen in the Dask test under load)."""
    import socket

    from hierfair.experiment.results import _alive, remove_stale_temporaries

    child = subprocess.Popen(["true"])
    try:
        # until it has exited, left unreaped (WNOWAIT): a zombie
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert not _alive(child.pid)
        tmp = tmp_path / f".jobs.parquet~{socket.gethostname()}~{child.pid}~abcd1234.tmp"
        tmp.write_bytes(b"half")
        assert remove_stale_temporaries(tmp_path) == 1 and not tmp.exists()
    finally:
        child.wait()
    assert _alive(os.getpid())
