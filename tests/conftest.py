"""Shared helpers: build experiments from plain dicts, run the CLI in-process."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from hierfair.datasets.base import DATA_ENV
from hierfair.experiment.spec import Experiment, build_experiment

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"

BASE_SPEC: dict[str, Any] = {
    "name": "t",
    "cluster": {"resources": ["cpu", "mem"], "servers": [{"capacity": {"cpu": 9, "mem": 18}}]},
    "hierarchy": {"A": {}, "B": {}},
    "workload": {"jobs": [
        {"queue": "A", "tasks": 30, "demand": {"cpu": 1, "mem": 4}, "duration": 10},
        {"queue": "B", "tasks": 20, "demand": {"cpu": 3, "mem": 1}, "duration": 10},
    ]},
    "algorithms": ["drf"],
}


def spec_with(**overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE_SPEC)
    data.update(copy.deepcopy(overrides))
    return data


def experiment(**overrides: Any) -> Experiment:
    return build_experiment(spec_with(**overrides))


@pytest.fixture
def drf_example() -> Experiment:
    return experiment()


# -- real traces -----------------------------------------------------------------------
# One decision, made here: the folder of real traces is the one the tool reads,
# $HIERFAIR_DATA (`make` exports it as ../shared/traces beside the checkout); a
# run without it (plain pytest) looks at ../shared/traces.  Set to a folder
# without the traces (a fresh machine, .ci/run's second pass), every test that
# needs one skips, saying which and where it looked.  Tests never name a trace
# path by hand: they ask the fixtures below.
def _trace_folder() -> tuple[Path, str]:
    value = os.environ.get(DATA_ENV)  # empty counts as unset, as for the tool
    if value:
        return Path(value).expanduser().resolve(), f"${DATA_ENV}"
    return ROOT.parent / "shared" / "traces", f"${DATA_ENV} unset: ../shared/traces"


_TRACE_FOLDER, _TRACE_FOLDER_FROM = _trace_folder()  # at start-up, before any monkeypatch
_HOW_TO_GET = (f"set ${DATA_ENV} to a folder holding the SWIM and Google traces "
               "(docs/workloads.md: where to get them), or clone hierfair beside the "
               "shared/ folder that holds them in traces/")


@pytest.fixture(scope="session")
def trace_folder() -> Path:
    """Where the tests look for real traces; it may not exist (nothing skips)."""
    return _TRACE_FOLDER


@pytest.fixture
def traces(trace_folder: Path) -> Path:
    """The folder of real traces (CI has it); skip, saying why, if absent."""
    if not trace_folder.is_dir():
        pytest.skip(f"no trace folder at {trace_folder} ({_TRACE_FOLDER_FROM}): {_HOW_TO_GET}")
    return trace_folder


class TraceFiles:
    """``trace(name)``: one trace file of the folder (a name relative to it, as
    specs give them), or a skip naming the file and the folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, name: str) -> Path:
        path = self.folder / name
        if not path.is_file():
            pytest.skip(f"no trace {name} in {self.folder} ({_TRACE_FOLDER_FROM}): "
                        f"{_HOW_TO_GET}")
        return path

    def of(self, data: dict[str, Any]) -> Path:
        """The folder, once every trace file the spec's workload names (the trace
        kinds' ``file``, ``files`` and ``job_events``) is in it: a spec with
        ``fallback: synthetic`` would otherwise quietly read no trace at all."""
        workload = data.get("workload") or {}
        names = [workload["file"]] if workload.get("file") else []
        names += [*(workload.get("files") or []), *(workload.get("job_events") or [])]
        assert names, f"the spec names no trace file: {workload}"
        for name in names:
            self(name)
        return self.folder


@pytest.fixture
def trace(traces: Path) -> TraceFiles:
    return TraceFiles(traces)


@pytest.fixture
def broken_fifo(monkeypatch):
    """Every run of ``fifo`` fails with a bug: once the plan has validated a
    spec, only a bug (or a timeout) can make a run fail."""
    # patched where the run looks it up (hierfair.experiment.execute._simulate)
    from hierfair.experiment import execute as execute_module

    real = execute_module.make_policy

    def broken(name, params=None):
        if name == "fifo":
            raise ZeroDivisionError("a bug in a policy")
        return real(name, params)

    monkeypatch.setattr(execute_module, "make_policy", broken)
