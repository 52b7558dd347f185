"""Issue 26, attacked as an adversarial user would: a sweep of a shipped spec
stopped at random moments (Ctrl-C, SIGTERM, SIGKILL, a closed pipe) leaves a
consistent folder -- each run's row with its tables, or neither -- that a rerun
completes to the same bytes; no file outside --out changes; the user's own
files in a results folder are never overwritten.

``make test`` stops a sweep at a few moments; ``make fuzz``
(HIERFAIR_FUZZ=thorough) at many more.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.manifest import file_digest
from hierfair.experiment.results import WALL_CLOCK_COLUMNS

from .conftest import EXPERIMENTS

THOROUGH = os.environ.get("HIERFAIR_FUZZ") == "thorough"
#: How a sweep is stopped, and the exit status each must give.
WAYS = {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -signal.SIGKILL, "pipe": (0, 141)}
#: Moments per way: make test a few, make fuzz 6 x 4 = 24.
MOMENTS = 6 if THOROUGH else 1
SPEC = "server-failure"  # 15 short runs of a shipped spec, with faults and failures
#: Files whose bytes carry wall-clock time or hashes of such files.
_CLOCKED = {"manifest.json", "summary.json"}


def _snapshot(root: Path, skip: Path) -> dict[str, str]:
    """Every file under ``root`` but ``skip`` (the --out folder), with its hash."""
    return {str(p.relative_to(root)): file_digest(p) for p in sorted(root.rglob("*"))
            if p.is_file() and skip not in p.parents}


def _tables(folder: Path) -> dict[str, bytes | pd.DataFrame]:
    """What a results folder holds, to compare: each file's bytes; a table with
    wall-clock columns (runs, decisions) as its other columns; the bookkeeping
    files that record times (and hashes of such tables) by name only."""
    out: dict[str, bytes | pd.DataFrame] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(folder))
        clocked = [c for c in _columns(path) if c in WALL_CLOCK_COLUMNS or c == "latency_ns"]
        if clocked:  # runs.parquet, decisions.parquet: every other column, exactly
            out[name] = pd.read_parquet(path).drop(columns=clocked)
        else:
            out[name] = b"" if path.name in _CLOCKED else path.read_bytes()
    return out


def _columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_schema(path).names if path.suffix == ".parquet" else []


def _same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)  # no file missing, none left over (temporaries)
    for name, value in a.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(value, b[name])
        else:
            assert value == b[name], name


def _consistent(folder: Path) -> None:
    """Each row of runs.parquet has its summary and the very tables it recorded."""
    if not (folder / "runs.parquet").exists():
        return
    for run in pd.read_parquet(folder / "runs.parquet")["run"]:
        summary = json.loads((folder / "runs" / run / "summary.json").read_text())
        assert summary["row"]["run"] == run
        for name, digest in summary["files"].items():
            assert file_digest(folder / "runs" / run / name) == digest, (run, name)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> tuple[Path, dict]:
    """A copy of the shipped spec, and what an uninterrupted sweep writes."""
    root = tmp_path_factory.mktemp("shipped")
    spec = root / f"{SPEC}.yaml"
    shutil.copy(EXPERIMENTS / f"{SPEC}.yaml", spec)
    assert main(["run", str(spec), "--out", str(root / "ref"), "--jobs", "2"]) == 0
    return spec, _tables(root / "ref" / SPEC)


def _moments() -> list[tuple[str, float]]:
    rng = random.Random(26)
    return [(way, rng.uniform(1.0, 7.0)) for way in WAYS for _ in range(MOMENTS)]


@pytest.mark.parametrize("way,after", _moments(),
                         ids=[f"{w}-{t:.2f}s" for w, t in _moments()])
def test_a_sweep_stopped_at_any_moment_resumes_to_the_same_bytes(shipped, tmp_path, way,
                                                                  after):
    spec, reference = shipped
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(spec, work / spec.name)
    (work / "notes.txt").write_text("the user's own file beside --out\n")
    out = work / "out"
    before = _snapshot(work, out)
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "hierfair", "run", str(work / spec.name),
                             "--out", str(out), "--jobs", "2"], stdout=write,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    os.close(write)
    time.sleep(after)
    if way == "pipe":
        os.close(read)  # as `| head` exiting
    elif proc.poll() is None:
        sig = getattr(signal, way)
        if way == "SIGTERM":  # `kill PID`: the command alone
            proc.send_signal(sig)
        else:  # Ctrl-C and kill -9 of the job: every process of the group
            os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    printed = ""
    if way != "pipe":
        with os.fdopen(read) as stdout:
            printed = stdout.read()
    expected = WAYS[way]
    # a signal in the last milliseconds, while Python finalises (its handlers
    # are gone), ends the process by that signal: the work was done by then
    late = (-getattr(signal, way),) if way in ("SIGINT", "SIGTERM") else ()
    if proc.returncode not in (0, *late,
                               *(expected if isinstance(expected, tuple) else (expected,))):
        pytest.fail(f"exit {proc.returncode} after {way}: {err}")
    if proc.returncode in late:
        assert str(out / SPEC) in printed  # it had finished
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode > 0:  # stopped: one line says so
        said = [ln for ln in err.splitlines() if ln.startswith("hierfair: ")]
        assert len(said) == 1 and ("interrupted" in said[0] or "terminated" in said[0]
                                   or "standard output was closed" in said[0]), err
    time.sleep(0.5)  # a worker of a killed sweep may still be finishing a run
    assert _snapshot(work, out) == before  # nothing outside --out changed
    if (out / SPEC).exists():
        _consistent(out / SPEC)
    assert main(["run", str(work / spec.name), "--out", str(out), "--jobs", "2"]) == 0
    _same(_tables(out / SPEC), reference)


@pytest.mark.parametrize("after", [random.Random(27).uniform(1.5, 6.0)
                                   for _ in range(4 if THOROUGH else 1)])
def test_a_forced_rerun_killed_midway_leaves_no_old_row_beside_a_new_table(shipped, tmp_path,
                                                                           after):
    """--force rewrites every run's tables: killed midway, runs.parquet must not
    list the old rows of runs whose tables are being replaced (it listed 35
    rows beside 90 runs' tables before), and a rerun completes it."""
    spec, reference = shipped
    out = tmp_path / "out"
    shutil.copytree(spec.parent / "ref", out)  # a finished sweep of the spec file at
    shutil.copy(spec, tmp_path / spec.name)  # ../server-failure.yaml, as this one is
    proc = subprocess.Popen([sys.executable, "-m", "hierfair", "run", str(tmp_path / spec.name),
                             "--out", str(out), "--jobs", "2", "--force"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    time.sleep(after)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=120)
    time.sleep(0.5)
    _consistent(out / SPEC)
    assert main(["run", str(tmp_path / spec.name), "--out", str(out), "--jobs", "2"]) == 0
    _same(_tables(out / SPEC), reference)


# -- the user's own files --------------------------------------------------------
def _spec(tmp_path: Path, name: str = "mine") -> Path:
    data = yaml.safe_load((EXPERIMENTS / "drf-example.yaml").read_text())
    data["name"] = name
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("theirs", ["runs.parquet", "spec.yaml", "claims.json",
                                    "manifest.json"])
def test_a_file_of_the_users_in_a_results_folder_is_never_overwritten(tmp_path, capsys,
                                                                     theirs):
    spec = _spec(tmp_path)
    folder = tmp_path / "out" / "mine"
    folder.mkdir(parents=True)
    (folder / theirs).write_text("mine\n")
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and theirs in err and "Traceback" not in err
    assert (folder / theirs).read_text() == "mine\n"


def test_a_users_figure_name_is_never_overwritten_by_report(tmp_path, capsys):
    spec = _spec(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    drawn = sorted((out / "mine").glob("*.png"))
    assert drawn
    drawn[0].write_bytes(b"the user's own picture")
    manifest = json.loads((out / "mine" / "manifest.json").read_text())
    del manifest["files"][drawn[0].name]  # as if the user had put it there
    (out / "mine" / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(out)]) == 2
    assert drawn[0].name in capsys.readouterr().err
    assert drawn[0].read_bytes() == b"the user's own picture"


def test_results_of_another_spec_file_of_the_same_name_need_replace(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _spec(tmp_path / "a"), _spec(tmp_path / "b")
    out = tmp_path / "out"
    assert main(["run", str(first), "--out", str(out)]) == 0
    tables = _tables(out / "mine")
    capsys.readouterr()
    assert main(["run", str(second), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "a/mine.yaml" in err and "--replace" in err
    _same(_tables(out / "mine"), tables)  # untouched
    assert main(["run", str(first), "--out", str(out)]) == 0  # its own: fine
    assert main(["run", str(second), "--out", str(out), "--replace"]) == 0
    assert main(["run", str(second), "--out", str(out)]) == 0  # now its own


def test_an_audit_never_overwrites_the_users_table(tmp_path, capsys):
    out = tmp_path / "audit"
    out.mkdir()
    (out / "summary.csv").write_text("mine\n")
    assert main(["audit", "-n", "2", "--algorithms", "drf", "--properties", "pareto",
                 "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "summary.csv" in err
    assert (out / "summary.csv").read_text() == "mine\n"
    assert not (out / "table.md").exists()


def test_too_many_runs_are_refused_before_any_is_built(tmp_path, capsys):
    data = yaml.safe_load((EXPERIMENTS / "drf-example.yaml").read_text())
    data["seeds"] = list(range(3000))
    data["grid"] = {"cluster.servers[0].count": list(range(1, 11))}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    start = time.monotonic()
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "over the limit of 10,000" in err and "--max-runs" in err
    assert time.monotonic() - start < 5  # refused before 60,000 runs were planned
    assert main(["validate", str(path), "--max-runs", "0"]) == 2
    assert "--max-runs" in capsys.readouterr().err


def test_no_command_changes_a_file_outside_the_folder_it_was_given(tmp_path, capsys):
    """run, report, audit and allocate, on copies of shipped specs in a folder
    that also holds the user's files: everything outside --out (and the
    counterexamples folder) keeps its bytes, and nothing appears beside."""
    work = tmp_path / "work"
    shutil.copytree(EXPERIMENTS, work / "experiments",
                    ignore=shutil.ignore_patterns("counterexamples"))
    (work / "README.md").write_text("the user's readme\n")
    (work / "out").mkdir()
    (work / "out" / "notes.md").write_text("the user's notes beside the results\n")
    specs = [str(work / "experiments" / f"{s}.yaml") for s in ("drf-example", "hdrf-fig3")]
    commands = {
        "run": (["run", *specs, "--out", str(work / "out" / "res"), "--jobs", "1"],
                work / "out" / "res"),
        "report": (["report", str(work / "out" / "res")], work / "out" / "res"),
        "audit": (["audit", "-n", "3", "--algorithms", "drf", "--properties",
                   "share-guarantee", "--out",
                   str(work / "out" / "audit"), "--counterexamples", str(work / "out" / "cx"),
                   "--jobs", "1"], work / "out"),
        "allocate": (["allocate", specs[0], "-a", "drf"], None),
    }
    for name, (argv, owned) in commands.items():
        skip = owned if owned is not None else tmp_path / "nothing"
        before = _snapshot(tmp_path, skip)
        assert main(argv) == 0, (name, capsys.readouterr().err)
        assert _snapshot(tmp_path, skip) == before, name
    assert (work / "out" / "notes.md").read_text() == "the user's notes beside the results\n"
    assert (work / "out" / "cx" / "share-guarantee--drf.yaml").exists()  # it did write


def test_a_long_validation_says_how_far_it_is(tmp_path, capsys, monkeypatch):
    import hierfair.cli

    monkeypatch.setattr(hierfair.cli._Checking, "EVERY", 0.0)  # every point, not every 3 s
    data = yaml.safe_load((EXPERIMENTS / "drf-example.yaml").read_text())
    data["grid"] = {"cluster.servers[0].count": [1, 2, 3, 4]}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0
    said = [ln for ln in capsys.readouterr().err.splitlines() if "grid point" in ln]
    assert said == [f"hierfair: checking {path}: grid point {k} of 4" for k in (1, 2, 3, 4)]


def test_a_write_stopped_before_its_record_is_completed_by_a_rerun(tmp_path, monkeypatch):
    """The manifest lists a file before its bytes land: stopped between the
    two, the rerun writes it again instead of refusing it as the user's."""
    from hierfair.experiment.manifest import Manifest

    spec, out = _spec(tmp_path), tmp_path / "out"
    record = Manifest.record

    def stopped(self, *names):
        if "runs.parquet" in names:
            raise KeyboardInterrupt
        return record(self, *names)

    monkeypatch.setattr(Manifest, "record", stopped)
    assert main(["run", str(spec), "--out", str(out)]) == 130
    monkeypatch.setattr(Manifest, "record", record)
    assert main(["run", str(spec), "--out", str(out)]) == 0
    assert json.loads((out / "mine" / "manifest.json").read_text())["files"]["runs.parquet"] \
        == file_digest(out / "mine" / "runs.parquet")


def test_a_changed_or_forged_entry_is_refused_and_a_users_table_never_served(tmp_path,
                                                                            capsys):
    spec, out = _spec(tmp_path), tmp_path / "out"
    folder = out / "mine"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    (folder / "claims.json").write_text("my notes on the claims\n")  # changed since
    assert main(["run", str(spec), "--out", str(out), "--force"]) == 2
    assert "claims.json: changed since hierfair wrote it" in capsys.readouterr().err
    assert (folder / "claims.json").read_text() == "my notes on the claims\n"
    (folder / "claims.json").unlink()
    pd.DataFrame({"x": [1, 2, 3]}).to_parquet(folder / "jobs.parquet")  # the user's table
    assert main(["run", str(spec), "--out", str(out)]) == 0
    import hierfair

    assert "x" not in hierfair.load(folder).jobs.columns  # the runs' rows, not the user's
    assert (folder / "jobs.parquet").exists()  # and it is left alone
    forged = tmp_path / "forged" / "mine"
    forged.mkdir(parents=True)
    (forged / "spec.yaml").write_text("my own spec\n")
    (forged / "manifest.json").write_text(json.dumps({"tool": "hierfair",
                                                      "files": {"spec.yaml": "0"}}))
    assert main(["run", str(spec), "--out", str(tmp_path / "forged")]) == 2
    assert (forged / "spec.yaml").read_text() == "my own spec\n"


def test_a_linked_runs_folder_is_never_written_through(tmp_path, capsys):
    spec, out = _spec(tmp_path), tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "mine").mkdir(parents=True)
    (out / "mine" / "runs").symlink_to(elsewhere)
    assert main(["run", str(spec), "--out", str(out)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert not any(elsewhere.iterdir())


def test_a_spec_given_as_data_shares_a_folder_with_its_file(tmp_path):
    import hierfair

    spec, out = _spec(tmp_path), tmp_path / "out"
    hierfair.run(yaml.safe_load(spec.read_text()), out=out, jobs=1)
    assert main(["run", str(spec), "--out", str(out)]) == 0  # the data had no file
    hierfair.run(yaml.safe_load(spec.read_text()), out=out, jobs=1)  # nor is it refused
