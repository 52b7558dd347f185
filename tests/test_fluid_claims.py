"""Fluid theorems are judged fluid (issue 25, item 4): a claim about a
property the papers state for divisible resources (``fluid: true``) is decided
on the allocation with every task cut 100 times finer, and its whole-task
verdict is reported beside it, a separate finding.

Two refutations that were whole-task effects, read back from claims.json as
``hierfair run`` writes it: H-DRF's Theorem 3 against a <4, 4> size lie, and
DRF's strategy-proofness against a bundle of four tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hierfair.experiment.claims import FLUID_GRAINS
from hierfair.experiment.spec import read_yaml
from hierfair.experiment.sweep import sweep

from .conftest import EXPERIMENTS


def claims_of(name: str, out: Path) -> list[dict[str, Any]]:
    sweep(read_yaml(EXPERIMENTS / f"{name}.yaml"), out,
          source=str(EXPERIMENTS / f"{name}.yaml"), jobs=1)
    return json.loads((out / name / "claims.json").read_text())


def test_theorem3_size_lie_holds_fluid_and_is_refuted_with_whole_tasks_only(tmp_path):
    """n2,1 reports <4, 4> for its <1, 1> on Fig. 6 (60 CPUs, 60 GPUs):
    truthful it runs 18 tasks, 0.3 of the CPUs."""
    assert FLUID_GRAINS[-1] == 100  # the numbers below are the 100x finer tasks'
    static, dynamic = claims_of("hdrf-cat-thm3-size", tmp_path)

    # static H-DRF is fluid by construction: 0.3 either way
    assert static["fluid"] and static["verdict"] == "holds"
    assert static["whole_tasks_verdict"] == "holds"
    assert [c["measured"] for c in static["checks"]] == pytest.approx([0.3, 0.3])
    assert [c["whole_tasks"] for c in static["checks"]] == pytest.approx([0.3, 0.3])

    # dynamic H-DRF: decided fluid, whole tasks beside it
    assert dynamic["fluid"] and dynamic["expect"] == "holds"
    assert dynamic["verdict"] == "holds"
    assert dynamic["whole_tasks_verdict"] == "refuted"
    cpu, cpu_churn, tasks = dynamic["checks"]
    for check in (cpu, cpu_churn):  # before and after 40 task ends (4000 finer ones)
        assert check["measured"] == pytest.approx(0.3, abs=1e-9)
        assert check["outcome"] == "holds"
        assert "100× finer (fluid)" in check["method"]
        assert check["whole_tasks"] == pytest.approx(1 / 3, abs=1e-9)
        assert check["whole_outcome"] == "refuted"
    # useful tasks = 4 per declared <4, 4> task: 18 fluid (as truthful), 20 whole
    assert 4 * tasks["measured"] == pytest.approx(18, abs=1e-9)
    assert tasks["outcome"] == "holds"
    assert 4 * tasks["whole_tasks"] == pytest.approx(20, abs=1e-9)
    assert tasks["whole_outcome"] == "refuted"
    # the expectation moved with a history entry naming both readings
    last = dynamic["history"][-1]
    assert (last["old"], last["new"]) == ("refuted", "holds")
    assert "fluid" in last["why"] and "whole-task finding" in last["why"]
    assert "whole tasks only" in dynamic["note"].lower()


def test_drf_bundle_lie_gains_with_whole_tasks_only(tmp_path):
    """DRF §4.1's example (9 CPUs, 18 GB; A <1, 4>, B <3, 1>): A declares one
    task of <4, 16>, four of its true tasks.  Truthful, A runs 3 tasks."""
    truthful, bundle = claims_of("drf-cat-sp", tmp_path)

    # the truth, fluid and whole alike: A 3 tasks, B 2
    assert truthful["fluid"] and truthful["verdict"] == "holds"
    assert truthful["whole_tasks_verdict"] == "holds"
    a, b = truthful["checks"][:2]
    assert (a["measured"], a["whole_tasks"]) == pytest.approx((3, 3))
    assert (b["measured"], b["whole_tasks"]) == pytest.approx((2, 2))

    # the bundle: fluid 0.75 declared task = 3 true tasks (no gain);
    # whole tasks 1 declared task = 4 true tasks (a gain of one)
    assert bundle["fluid"] and bundle["verdict"] == "holds"
    assert bundle["whole_tasks_verdict"] == "refuted"
    lie, = bundle["checks"]
    assert lie["algorithm"] == "drf"
    assert 4 * lie["measured"] == pytest.approx(3, abs=1e-9)
    assert lie["outcome"] == "holds"
    assert 4 * lie["whole_tasks"] == pytest.approx(4)
    assert lie["whole_outcome"] == "refuted"


def test_a_fluid_gain_is_not_hidden_by_whole_task_slack(tmp_path):
    """A fluid check sees fractions of a task: the bundle's bound moved 0.01
    declared task (1/25 of a true task) below the fluid 0.75 refutes it."""
    data = read_yaml(EXPERIMENTS / "drf-cat-sp.yaml")
    data["claims"] = [data["claims"][1]]
    data["claims"][0]["checks"][0]["below"] = 0.74
    sweep(data, tmp_path, source=str(EXPERIMENTS / "drf-cat-sp.yaml"), jobs=1)
    verdict, = json.loads((tmp_path / "drf-cat-sp" / "claims.json").read_text())
    assert verdict["verdict"] == "refuted"
    assert verdict["checks"][0]["measured"] == pytest.approx(0.75, abs=1e-9)
