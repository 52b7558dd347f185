"""Issue 27: the contract every policy and every dataset kind keeps, run over
each registered algorithm and each sized kind (hierfair.experiment.contract),
and on a user's own policy through ``hierfair check``."""

from __future__ import annotations

import sys

import pytest

from hierfair.algorithms import available
from hierfair.cli import main
from hierfair.experiment.contract import (
    all_kinds,
    check_kind,
    check_policy,
    sized_kinds,
    write_trace_examples,
)


@pytest.mark.parametrize("name", list(available()))
def test_every_algorithm_keeps_the_policy_contract(name):
    outcomes = check_policy(name)
    failed = [o for o in outcomes if o.status == "failed"]
    assert not failed, failed
    ran = [o for o in outcomes if o.check.startswith("runs on") and o.status == "ok"]
    assert ran, f"{name} ran on none of the contract's specs: {outcomes}"


@pytest.fixture(scope="module")
def trace_examples(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traces")
    write_trace_examples(folder)
    return folder


@pytest.mark.parametrize("section,name", list(all_kinds()))
def test_every_dataset_kind_builds_the_same_for_a_seed_and_to_its_declared_size(
        section, name, trace_examples):
    outcome = check_kind(section, name, trace_examples)
    assert outcome.status == "ok", outcome
    sized = (section, name) in set(sized_kinds())
    assert outcome.detail.startswith("builds, the same") != sized, outcome


def test_the_trace_examples_never_replace_a_file(tmp_path):
    (tmp_path / "log.swf").write_text("my own log\n")
    with pytest.raises(FileExistsError):
        write_trace_examples(tmp_path)
    assert (tmp_path / "log.swf").read_text() == "my own log\n"


def test_the_kind_contract_covers_every_kind_and_fails_a_wrong_size(trace_examples,
                                                                    monkeypatch):
    assert len(list(all_kinds())) == 13  # 7 workload, 3 hierarchy, 3 cluster kinds
    import dataclasses

    from hierfair.datasets import HIERARCHY_KINDS

    kind = HIERARCHY_KINDS["full-binary"]
    monkeypatch.setitem(HIERARCHY_KINDS, "full-binary",  # a size off by one
                        dataclasses.replace(kind, size=lambda p: kind.size(p) + 1))
    outcome = check_kind("hierarchy", "full-binary", trace_examples)
    assert outcome.status == "failed" and "declared 32, built 31" in outcome.detail


BROKEN = '''
from typing import ClassVar

from hierfair.sim.policy import LeafPriorityPolicy


class Lazy(LeafPriorityPolicy):
    """Schedules nothing after t=5: never finishes its work."""

    name: ClassVar[str] = "lazy"

    def select(self):
        return None if self.state.now >= 5 else super().select()

    def key(self, leaf):
        return float(leaf)
'''


def test_check_passes_a_good_policy_and_names_what_a_bad_one_breaks(tmp_path, capsys,
                                                                   monkeypatch):
    (tmp_path / "lazy_policy.py").write_text(BROKEN)
    monkeypatch.delitem(sys.modules, "lazy_policy", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "drf"]) == 0
    assert "drf: 12 of 12 checks passed" in capsys.readouterr().err
    assert main(["check", "lazy_policy:Lazy"]) == 1
    out, err = capsys.readouterr()
    assert "failed finishes every task on one server, two leaves" in out
    assert "lazy_policy:Lazy:" in err and "failed" in err
    (tmp_path / "picky_policy.py").write_text(
        "from hierfair.errors import SpecError\n"
        "from hierfair.sim.policy import LeafPriorityPolicy\n\n\n"
        "class Picky(LeafPriorityPolicy):\n"
        "    name = 'picky'\n\n"
        "    @classmethod\n"
        "    def check(cls, params, cluster):\n"
        "        raise SpecError('runs on no cluster', where='algorithm')\n")
    monkeypatch.delitem(sys.modules, "picky_policy", raising=False)
    assert main(["check", "picky_policy:Picky"]) == 1  # declined everything: nothing checked
    assert "failed runs on a contract spec" in capsys.readouterr().out
    assert main(["check", "nosuch"]) == 1
    assert "failed loads" in capsys.readouterr().out


def test_a_random_policy_draws_from_the_runs_own_generator():
    """PolicyView.rng: seeded from the run, so a policy that draws from it
    gives one schedule per seed -- and another for another seed."""
    from typing import ClassVar

    from hierfair.experiment.contract import SPECS
    from hierfair.experiment.spec import build_experiment
    from hierfair.sim.policy import LeafPriorityPolicy

    class Dice(LeafPriorityPolicy):
        name: ClassVar[str] = "dice"

        def key(self, leaf):
            return float(self.state.rng.random())

    data = dict(SPECS["three unequal servers, weighted tree, arrivals"], algorithms=["drf"])
    exp = build_experiment(data)

    def digest(seed):
        return exp.simulator(Dice(), seed).run().schedule_digest

    assert digest(0) == digest(0) and digest(1) == digest(1)
    assert len({digest(s) for s in range(4)}) > 1
