"""Dask, for real (docs/dask.md): a scheduler and two workers started as
their own processes (``dask scheduler``, ``dask worker --nthreads 1
--memory-limit``), not an in-process LocalCluster; ``hierfair run --scheduler``
sweeps onto them, one worker is SIGKILLed (nanny and worker: a lost machine)
in the middle of a run, and the sweep still completes -- that run again, on
the other worker -- every run once, with the tables a local run writes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.results import WALL_CLOCK_COLUMNS

pytest.importorskip("distributed", reason="dask.distributed is not installed "
                    "(pip install 'hierfair[cluster]'): no Dask cluster to start")

BIN = Path(sys.executable).parent
NAME = "dask-kill"
SPEC = {  # 6 runs of about a second each (hdrf is the slow one)
    "name": NAME,
    "cluster": {"resources": ["cpu", "mem"],
                "servers": [{"count": 4, "capacity": {"cpu": 1, "mem": 1}}]},
    "hierarchy": {"kind": "full-binary", "levels": 3},
    "workload": {"kind": "google-synthetic", "jobs": 200, "max_tasks": 100,
                 "arrivals": {"offered_load": 2.0}},
    "algorithms": ["hdrf", {"name": "hdrf", "params": {"attribution": "frozen"},
                            "label": "hdrf-frozen"}],
    "seeds": [0, 1, 2],
}
RUNS = 6
START = 60.0  # seconds a process may take to start on a loaded machine
SWEEP = 150.0  # the whole sweep, at most (it takes about 15 s)


def _start(command: list[str], log: Path) -> subprocess.Popen:
    """A process in its own group (its children go with it when killed)."""
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=log.parent,
                                start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the process's group: a dask worker is a nanny and the worker
    process it started.  Only while the leader is not yet waited for: its pid
    (the group's id) cannot have been reused."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _wait(what: str, ready, procs: list[subprocess.Popen], logs: list[Path]):
    deadline = time.monotonic() + START
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        for proc, log in zip(procs, logs):
            if proc.poll() is not None:
                pytest.fail(f"{what}: {proc.args[:2]} exited {proc.returncode}:\n"
                            + log.read_text()[-3000:])
        time.sleep(0.1)
    pytest.fail(f"{what}: not ready in {START:g} s:\n"
                + "\n".join(log.read_text()[-2000:] for log in logs))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, subprocess.Popen]]]:
    """A scheduler on a free port of 127.0.0.1 and two workers of one thread
    and 1 GiB each; every process is killed at teardown, whatever happened."""
    from dask.distributed import Client

    folder = tmp_path / "cluster"
    folder.mkdir()
    address_file = folder / "scheduler.json"
    procs: list[subprocess.Popen] = []
    logs: list[Path] = []
    client = None
    try:
        logs.append(folder / "scheduler.log")
        procs.append(_start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                             "--port", "0", "--no-dashboard", "--scheduler-file",
                             str(address_file)], logs[-1]))

        def address() -> str | None:
            try:
                return json.loads(address_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                return None

        scheduler = _wait("dask scheduler", address, procs, logs)
        workers = {}
        for name in ("w1", "w2"):
            logs.append(folder / f"{name}.log")
            workers[name] = _start([
                str(BIN / "dask"), "worker", scheduler, "--name", name, "--host", "127.0.0.1",
                "--nthreads", "1", "--nworkers", "1", "--memory-limit", "1GiB",
                "--no-dashboard", "--local-directory", str(folder / name)], logs[-1])
            procs.append(workers[name])
        client = Client(scheduler, timeout="30s")
        _wait("dask workers", lambda: len(client.scheduler_info()["workers"]) == 2,
              procs, logs)
        client.close()
        client = None
        yield scheduler, workers
    finally:
        if client is not None:
            client.close()
        for proc in reversed(procs):  # workers first, then the scheduler
            _kill(proc)


def _summaries(runs: Path, key: str) -> set[str]:
    """Runs whose summary.json has ``key``: "key" once the run is written,
    "pending" while it runs (hierfair.experiment.manifest.clear_run)."""
    found = set()
    for path in runs.glob("*/summary.json"):
        try:
            if key in json.loads(path.read_text()):
                found.add(path.parent.name)
        except (OSError, ValueError):  # being replaced right now
            pass
    return found


def _signal(proc: subprocess.Popen, sig: int) -> None:
    if proc.returncode is None:
        os.killpg(proc.pid, sig)


def _kill_a_worker_mid_run(workers: dict[str, subprocess.Popen], sweep: subprocess.Popen,
                           runs: Path) -> tuple[datetime, set[str], set[str]]:
    """Once a run has finished and both workers are in the middle of one (two
    summaries pending), SIGKILL worker w1 -- both stopped (SIGSTOP) while that
    is checked, so it is still true at the kill.  When it died, the runs
    finished and the two in progress (one of them w1's, lost)."""
    deadline = time.monotonic() + SWEEP
    while sweep.poll() is None and time.monotonic() < deadline:
        if _summaries(runs, "key") and len(_summaries(runs, "pending")) == 2:
            for proc in workers.values():
                _signal(proc, signal.SIGSTOP)
            try:
                running, finished = _summaries(runs, "pending"), _summaries(runs, "key")
                if len(running) == 2:
                    at = datetime.now(UTC)
                    _kill(workers["w1"])
                    return at, finished, running
            finally:
                for proc in workers.values():
                    _signal(proc, signal.SIGCONT)
        time.sleep(0.02)
    pytest.fail(f"no worker was killed: the sweep {'ended' if sweep.poll() is not None else 'hung'}"
                f" first (exit {sweep.returncode}):\n" + "".join(_output(sweep)))


def _output(sweep: subprocess.Popen) -> tuple[str, str]:
    try:
        return sweep.communicate(timeout=SWEEP)
    except subprocess.TimeoutExpired:
        _kill(sweep)
        return sweep.communicate()


#: What differs between two runs of one spec without being a result: wall-clock
#: columns (runs.parquet's timings and host, decisions' latency_ns) and the code's
#: identity, which an edit or a commit during the test would change (as test_sweep).
MACHINE = {*WALL_CLOCK_COLUMNS, "latency_ns", "code_version", "git_commit"}


def _tables(folder: Path) -> dict[str, pd.DataFrame]:
    """Every table of a results folder, without the :data:`MACHINE` columns."""
    out = {}
    for path in sorted(folder.rglob("*.parquet")):
        frame = pd.read_parquet(path)
        clocked = [c for c in frame.columns if c in MACHINE]
        out[str(path.relative_to(folder))] = frame.drop(columns=clocked)
    return out


def test_a_sweep_on_real_dask_workers_survives_a_killed_worker(tmp_path, cluster, capsys):
    scheduler, workers = cluster
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    a, b = tmp_path / "A", tmp_path / "B"
    runs = a / NAME / "runs"

    # --scheduler alone means that cluster (no --backend dask needed)
    sweep = subprocess.Popen([str(BIN / "hierfair"), "run", str(spec), "--out", str(a),
                              "--scheduler", scheduler], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        killed_at, finished, running = _kill_a_worker_mid_run(workers, sweep, runs)
        out, err = _output(sweep)
    finally:
        _kill(sweep)
    # not vacuous: w1 died mid-sweep, in the middle of a run
    assert workers["w1"].returncode == -signal.SIGKILL
    assert finished and len(finished) + len(running) < RUNS, (finished, running)
    assert sweep.returncode == 0, err
    # every run once, ok: a line each, one row each, no half-written file
    lines = re.findall(rf"^\[(\d+)/{RUNS}\] {NAME}: (\S+) ok", err, re.MULTILINE)
    assert sorted(int(n) for n, _ in lines) == list(range(1, RUNS + 1)), err
    assert len({run for _, run in lines}) == RUNS, err
    remote = pd.read_parquet(a / NAME / "runs.parquet")
    assert len(remote) == RUNS and remote["run"].is_unique
    assert (remote["status"] == "ok").all(), remote[["run", "status", "error"]]
    assert _summaries(runs, "key") == set(remote["run"]) and not _summaries(runs, "pending")
    assert not [p for p in a.rglob(".*") if p.is_file()], "temporaries left behind"
    # w1's run was lost and run again, on w2, after the kill; w2's was not
    started = pd.to_datetime(remote.set_index("run").loc[sorted(running), "started_at"])
    assert sorted(started > pd.Timestamp(killed_at)) == [False, True], (killed_at, started)

    # the same spec in this process, one run at a time
    assert main(["run", str(spec), "--out", str(b), "--jobs", "1"]) == 0
    capsys.readouterr()
    local, there = _tables(b / NAME), _tables(a / NAME)
    assert sorted(there) == sorted(local)
    assert len(local) == 1 + RUNS * 7  # runs.parquet; jobs, tasks, ... of each run
    for name, frame in local.items():
        pd.testing.assert_frame_equal(there[name], frame, obj=name)
    assert sorted(p.name for p in (a / NAME).iterdir()) == \
        sorted(p.name for p in (b / NAME).iterdir())


def _exit_or_echo(x: int) -> int:
    if x:  # the worker process dies, as past its memory limit
        os._exit(1)
    return x


def test_a_task_that_kills_its_workers_is_reported_and_the_others_go_on():
    """Dask gives up on a task whose workers all died (KilledWorker, after
    distributed.scheduler.allowed-failures more); joblib's dask backend then
    waited for ever.  The sweep records it (sweep._lost) and goes on."""
    import dask

    from hierfair.experiment.workers import _backend

    # one death is too many; two workers, a task each
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            _backend("dask", 2, None) as run_all:  # a LocalCluster
        results = list(run_all(_exit_or_echo, [(1,), (0,)],
                               lambda task, why: ("lost", task, why)))
    assert len(results) == 2 and 0 in results
    lost = next(r for r in results if r != 0)
    assert lost[:2] == ("lost", (1,)) and "every Dask worker that ran it died" in lost[2]


def test_a_lost_group_keeps_the_rows_of_its_runs_that_finished(tmp_path):
    """A group (interleaved runs) whose worker died after its first run had
    written its summary: that run keeps its row; only the rest are lost."""
    from hierfair.experiment.plan import plan
    from hierfair.experiment.sweep import _lost, sweep

    from .conftest import spec_with

    data = spec_with(name="lostgroup", algorithms=["drf", "fifo"])
    sweep(data, tmp_path, jobs=0)
    runs = plan(data).runs
    folder = tmp_path / "lostgroup"
    done = folder / "runs" / runs[1].run_id
    for f in done.iterdir():  # the second run never finished
        f.unlink()
    rows = _lost((runs, str(folder)), "lost: every Dask worker that ran it died")
    assert [r["status"] for r in rows] == ["ok", "failed"]
    assert rows[0]["run"] == runs[0].run_id and rows[1]["error"].startswith("lost:")
