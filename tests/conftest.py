"""Shared helpers: build experiments from plain dicts, run the CLI in-process."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

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


TRACES = ROOT.parent / "shared" / "traces"


@pytest.fixture
def traces() -> Path:
    """The real traces beside the checkout (CI has them); skip, saying why, if absent."""
    if not TRACES.is_dir():
        pytest.skip(f"no trace folder at {TRACES}: clone hierfair beside the shared/ folder "
                    "(see ../shared/traces/PROVENANCE.md) to run trace tests")
    return TRACES


@pytest.fixture
def broken_fifo(monkeypatch):
    """Every run of ``fifo`` fails with a bug: once the plan has validated a
    spec, only a bug (or a timeout) can make a run fail."""
    from hierfair.experiment import sweep as sweep_module

    real = sweep_module.make_policy

    def broken(name, params=None):
        if name == "fifo":
            raise ZeroDivisionError("a bug in a policy")
        return real(name, params)

    monkeypatch.setattr(sweep_module, "make_policy", broken)
