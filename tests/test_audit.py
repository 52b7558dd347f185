"""The property audit (hierfair/audit, docs/properties.md): its properties on
the papers' examples with their published numbers, the shrinker, the
counterexample specs, determinism and the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from hierfair.audit.instance import Instance, draw, size
from hierfair.experiment.probe import Probe
from hierfair.experiment.properties import PROPERTIES
from hierfair.audit.runner import FINER, Probed, Probes, _placeable, audit, refined, shrink
from hierfair.audit.write import Found, spec_text
from hierfair.cli import main
from hierfair.experiment.claims import evaluate
from hierfair.experiment.spec import build_experiment, load_spec

ROOT = Path(__file__).resolve().parents[1]
NO_RUNS = pd.DataFrame({"status": []})  # property checks probe the spec, not runs

# The MCH instance (experiments/mch-cat-guarantee.yaml): n1 = {x <0,1>},
# n2 = {a1..a5 <1,0>, b1..b4 <0,1>}, n3 = {z <1,0>} on <300, 300>.
MCH = Instance(
    nodes=(("n1", 1.0), ("n1/x", 1.0), ("n2", 1.0),
           *((f"n2/a{i}", 1.0) for i in range(1, 6)), *((f"n2/b{i}", 1.0) for i in range(1, 5)),
           ("n3", 1.0), ("n3/z", 1.0)),
    resources=("cpu", "mem"),
    demands=(("n1/x", (0.0, 1.0)), *((f"n2/a{i}", (1.0, 0.0)) for i in range(1, 6)),
             *((f"n2/b{i}", (0.0, 1.0)) for i in range(1, 5)), ("n3/z", (1.0, 0.0))),
    servers=((300.0, 300.0),))

# H-DRF Fig. 6 (Theorem 5): n1,1 <3, 2>, n2,1 <1, 1>, n2,2 <1, 3> (CPUs, GPUs).
FIG6 = Instance(nodes=(("n1", 1.0), ("n1/n1", 1.0), ("n2", 1.0), ("n2/n1", 1.0), ("n2/n2", 1.0)),
                resources=("cpu", "gpu"),
                demands=(("n1/n1", (3.0, 2.0)), ("n2/n1", (1.0, 1.0)), ("n2/n2", (1.0, 3.0))),
                servers=((60.0, 60.0),))


def outcome(inst: Instance, algorithm: str, prop: str):
    return Probed.of(inst).outcome(algorithm, PROPERTIES[prop])


def finer(inst: Instance, algorithm: str, prop: str):
    """The outcome with its magnitude on the instance with finer tasks."""
    return refined(outcome(inst, algorithm, prop), algorithm, PROPERTIES[prop],
                   Probes(inst.finer(FINER)))


def test_the_claim_schema_and_the_audit_take_their_property_names_from_the_registry():
    """No list of names is kept by hand: a claim's ``property:`` is checked
    against the registry itself (issue 27)."""
    from hierfair.experiment import claim_spec

    assert claim_spec.PROPERTIES is PROPERTIES
    assert list(PROPERTIES)[:2] == ["share-guarantee", "share-guarantee-churn"]


def test_mch_misses_n1s_guarantee_by_the_published_amount():
    # MCH gives n1 0.2 (60 of 300 GB) against 1/3; static H-DRF gives n1 0.5.
    out = outcome(MCH, "mch", "share-guarantee")
    assert out.violated
    assert out.magnitude == pytest.approx(1 / 3 - 0.2, abs=1e-9)
    assert "n1 0.2 <" in out.witness
    assert not outcome(MCH, "static-hdrf", "share-guarantee").violated
    assert outcome(MCH, "static-hdrf", "share-guarantee").magnitude == 0


def test_a_structural_miss_survives_finer_tasks():
    # MCH's miss is the tree's, not the tasks': with tasks ten times finer
    # (<3000, 3000>) n1 still holds 0.2 against 1/3.
    out = finer(MCH, "mch", "share-guarantee")
    assert out.violated
    assert out.fine == pytest.approx(1 / 3 - 0.2, abs=1e-9)


# Two siblings, weights 1:4, 3-CPU tasks on 50 CPUs.  Fluid H-DRF gives the
# heavy one 0.8 of the CPUs; whole tasks give it 12 tasks (0.72): the light one
# holds 4 tasks (0.24 > 0.2) and 2 CPUs are left over -- 1.33 tasks short.
WEIGHTED = Instance(nodes=(("a", 1.0), ("b", 4.0)), resources=("cpu", "mem"),
                    demands=(("a", (3.0, 0.0)), ("b", (3.0, 0.0))), servers=((50.0, 50.0),))


def test_a_whole_task_miss_magnified_by_weights_fades_with_finer_tasks():
    raw = outcome(WEIGHTED, "hdrf", "share-guarantee")
    assert raw.missed and raw.magnitude == pytest.approx(0.8 - 0.72)
    assert "b 0.72 < guarantee 0.8" in raw.witness
    out = finer(WEIGHTED, "hdrf", "share-guarantee")
    # on 500 CPUs: b holds 132 tasks (0.792), a 34 (0.204), 2 CPUs free
    assert out.fine == pytest.approx(0.8 - 396 / 500)
    assert out.fine < raw.tol and not out.violated
    # A task-valued property counts in the coarse instance's tasks.  b envies
    # a's bundle times 4: 48 CPUs, 16 tasks to its 12; with finer tasks
    # 4 x 102 CPUs = 136 tasks to its 132, i.e. 4 / FINER coarse tasks.
    envy = finer(WEIGHTED, "hdrf", "envy-siblings")
    assert envy.magnitude == 4 and envy.fine == pytest.approx(4 / FINER)
    assert not envy.violated


def test_hdrf_population_monotonicity_fails_as_theorem_5_says():
    # Fig. 7: n1 holds 60 % of the CPUs; once n2,2 leaves, 50 %: a fall of 0.1.
    out = outcome(FIG6, "static-hdrf", "population-monotonicity")
    assert out.magnitude == pytest.approx(0.1, abs=1e-6)
    assert "n2/n2 leaves: n1/n1 falls from 0.6 to 0.5" in out.witness
    assert out.violated  # 0.1 > one task of 3/60 = 0.05


def test_fig6_static_hdrf_keeps_the_guarantee_and_is_pareto_efficient():
    for prop in ("share-guarantee", "pareto", "strategy-proofness"):
        out = outcome(FIG6, "static-hdrf", prop)
        assert not out.violated, (prop, out)


def test_strategy_proofness_counts_useful_tasks():
    # One leaf alone on <9 CPUs, 18 GB> (DRF §4.1's A <1, 4>) and B <3, 1>:
    # the truth gives A 3 tasks and B 2 (DRF Fig. 3).
    inst = Instance(nodes=(("A", 1.0), ("B", 1.0)), resources=("cpu", "mem"),
                    demands=(("A", (1.0, 4.0)), ("B", (3.0, 1.0))), servers=((9.0, 18.0),))
    probe = Probe(Probed.of(inst).static, "drf")
    assert probe.fill().tasks[1:].tolist() == [3, 2]
    out = PROPERTIES["strategy-proofness"].check(probe)
    # a relative gain now (the misreport search); no misreport gains A or B
    # more than one whole task's rounding
    assert out.magnitude <= out.tol and not out.missed


def test_sharing_incentive_only_on_one_level_trees():
    assert isinstance(outcome(FIG6, "drf", "sharing-incentive"), str)


def test_drf_keeps_its_promises_on_pooled_one_level_instances():
    seeds = [s for s in range(0, 40, 4)][:6]  # seed = 0 mod 4: flat and pooled
    for s in seeds:
        inst = draw(s)
        assert inst.flat and inst.pooled
        for prop in ("pareto", "sharing-incentive", "share-guarantee"):
            out = outcome(inst, "drf", prop)
            assert isinstance(out, str) or not out.violated, (s, prop, out)


def test_draw_is_deterministic_and_placeable():
    for s in range(12):
        a, b = draw(s), draw(s)
        assert a == b
        assert _placeable(a) and a.demands
        assert a.pooled == (s % 2 == 0)
        assert np.allclose(a.total, np.sum(a.servers, axis=0))


def test_shrinking_keeps_the_violation_and_never_grows():
    inst, out = shrink(MCH, "mch", PROPERTIES["share-guarantee"], max_checks=40)
    assert out.violated
    assert size(inst) <= size(MCH)
    assert len(inst.nodes) < len(MCH.nodes)
    assert outcome(inst, "mch", "share-guarantee").violated


def test_counterexample_spec_reproduces_as_refuted(tmp_path):
    out = outcome(MCH, "mch", "share-guarantee")
    text = spec_text(Found("mch", "share-guarantee", MCH, out, origin=0,
                           file=str(tmp_path / "cx.yaml")))
    exp = build_experiment(yaml.safe_load(text), source="cx.yaml")
    (verdict,) = evaluate(exp, NO_RUNS)
    assert verdict.expect == "refuted" and verdict.verdict == "refuted"
    assert verdict.checks[0].measured == pytest.approx(out.magnitude)


def test_committed_counterexamples_reproduce():
    folder = ROOT / "experiments" / "counterexamples"
    specs = sorted(folder.glob("*.yaml"))
    if not specs:
        pytest.skip("no counterexamples written yet (make reproduce writes them)")
    # a sample across properties (all of them: `make reproduce` re-derives them)
    picked = {}
    for path in specs:
        picked.setdefault(path.name.split("--")[0], path)
    for path in list(picked.values())[:6]:
        exp = load_spec(path)
        for verdict in evaluate(exp, NO_RUNS):
            assert verdict.verdict == "refuted", (path.name, verdict.checks)


def test_audit_rows_are_deterministic():
    kw = dict(algorithms=["drf", "hdrf-fast"], properties=["share-guarantee", "pareto",
                                                           "strategy-proofness"], jobs=1)
    a = audit(3, seed=5, **kw).drop(columns=["cpu_s"])
    b = audit(3, seed=5, **kw).drop(columns=["cpu_s"])
    pd.testing.assert_frame_equal(a, b)
    assert set(a["status"]) <= {"ok", "violated", "n/a"}


def test_cli_audit_rejects_bad_names(capsys):
    assert main(["audit", "--properties", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--properties" in err and "nosuch" in err
    assert main(["audit", "--algorithms", "nosuch"]) == 2
    assert main(["audit", "--instances", "0"]) == 2


def test_cli_audit_writes_table_and_counterexamples(tmp_path, capsys):
    out, cx = tmp_path / "audit", tmp_path / "cx"
    assert main(["audit", "-n", "2", "--seed", "2", "--algorithms", "mch", "fifo",
                 "--properties", "share-guarantee", "pareto", "--out", str(out),
                 "--counterexamples", str(cx), "--jobs", "1"]) == 0
    table = (out / "table.md").read_text()
    assert "| mch |" in table and "| fifo |" in table
    assert (out / "rows.parquet").exists() and (out / "summary.csv").exists()
    for spec in cx.glob("*.yaml"):
        (verdict,) = evaluate(load_spec(spec), NO_RUNS)
        assert verdict.verdict == "refuted", spec.name


def test_the_audit_touches_only_the_counterexamples_it_wrote(tmp_path, capsys):
    """Issue 26: `--counterexamples DIR` over a folder of the user's own specs
    removes none of them, keeps the user's README, and refuses to overwrite a
    file of the name it needs that it did not write."""
    cx = tmp_path / "mine"
    cx.mkdir()
    own = {"drf-example.yaml": (ROOT / "experiments" / "drf-example.yaml").read_text(),
           "README.md": "my notes\n"}
    for name, text in own.items():
        (cx / name).write_text(text)
    args = ["audit", "-n", "2", "--seed", "2", "--algorithms", "fifo", "--properties",
            "pareto", "--out", str(tmp_path / "audit"), "--counterexamples", str(cx),
            "--jobs", "1"]
    assert main(args) == 0
    for name, text in own.items():
        assert (cx / name).read_text() == text
    written = sorted(p.name for p in cx.glob("*.yaml") if p.name not in own)
    assert written == ["pareto--fifo.yaml"]
    assert main(args) == 0  # a rerun rewrites its own file, nothing else
    assert sorted(p.name for p in cx.glob("*.yaml")) == sorted(["drf-example.yaml", *written])
    # a file of the name the audit needs that it did not write: refused, untouched
    (cx / "pareto--fifo.yaml").write_text("name: mine\n")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pareto--fifo.yaml" in err[0] and "refusing" in err[0]
    assert (cx / "pareto--fifo.yaml").read_text() == "name: mine\n"


def test_counterexample_links_work_wherever_out_and_counterexamples_are(tmp_path):
    """table.md links relative to its own folder; the report's README, one
    folder up, rebases them -- with --out and --counterexamples far apart."""
    import re

    from hierfair.audit.write import spec_file_name

    out, cx = tmp_path / "site" / "audit", tmp_path / "elsewhere" / "deep" / "cx"
    assert main(["audit", "-n", "3", "--algorithms", "drf", "--properties",
                 "share-guarantee", "--out", str(out), "--counterexamples", str(cx),
                 "--jobs", "1"]) == 0
    links = re.findall(r"\]\(([^)]+\.yaml)\)", (out / "table.md").read_text())
    assert links and all((out / link).resolve().is_file() for link in links)
    assert main(["report", str(out.parent)]) == 0
    links = re.findall(r"\]\(([^)]+\.yaml)\)", (out.parent / "README.md").read_text())
    assert links and all((out.parent / link).resolve().is_file() for link in links)
    # a user's module:Class names a file any file system takes
    assert spec_file_name("pareto", "my_policies:WRR") == "pareto--my_policies.WRR.yaml"
    assert spec_file_name("pareto", "drf") == "pareto--drf.yaml"
