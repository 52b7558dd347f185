"""Workload, hierarchy and cluster kinds: counts against the files, rules,
distributions, seeds, and the errors bad input gets."""

from __future__ import annotations

import copy
import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from hierfair.cli import main
from hierfair.datasets import full_binary, paper_trees
from hierfair.datasets.facebook import Params as FBParams
from hierfair.datasets.facebook import job_sizes
from hierfair.datasets.google import CALIBRATION, job_table, read_task_events
from hierfair.datasets.swim import read_swim
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment, load_spec
from hierfair.sim.model import Hierarchy

from .conftest import EXPERIMENTS, ROOT, spec_with

SWIM_ROWS = {
    "FB-2009_samples_24_times_1hr_0.tsv": 5894,
    "FB-2009_samples_24_times_1hr_1.tsv": 6638,
    "FB-2010_samples_24_times_1hr_0.tsv": 24442,
    "FB-2010_samples_24_times_1hr_withInputPaths_0.tsv": 25428,
    "FB-2009_samples_24_times_1hr_0_first50jobs.tsv": 50,
}
SWIM_SAMPLE = "FB-2009_samples_24_times_1hr_0_first50jobs.tsv"
GOOGLE_PART = "google-2011/task_events-part-00000-of-00500.csv.gz"


# -- hierarchies ----------------------------------------------------------------
def test_full_binary_matches_the_generic_builder():
    h = full_binary.build(full_binary.Params(kind="full-binary", levels=3, fanout=3))
    ref = Hierarchy.from_edges([(p, 1.0) for p in h.paths[1:]])
    assert h.n_nodes == 1 + 3 + 9 + 27 and len(h.leaves) == 27
    assert h.paths[:4] == ("", "n0", "n0/n0", "n0/n0/n0")
    assert h.children == ref.children
    np.testing.assert_array_equal(h.parent, ref.parent)
    np.testing.assert_array_equal(h.subtree_end, ref.subtree_end)
    np.testing.assert_array_equal(h.depth, ref.depth)


def test_full_binary_sizes_and_seeded_weights():
    big = full_binary.build(full_binary.Params(kind="full-binary", levels=16))
    assert len(big.leaves) == 2**16
    a = full_binary.build(full_binary.Params(kind="full-binary", levels=4, weights="random",
                                             seed=3))
    b = full_binary.build(full_binary.Params(kind="full-binary", levels=4, weights="random",
                                             seed=3))
    c = full_binary.build(full_binary.Params(kind="full-binary", levels=4, weights="random",
                                             seed=4))
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, c.weights)
    assert set(np.unique(a.weights[1:])) <= {1.0, 2.0, 3.0, 4.0}


@pytest.mark.parametrize("figure", sorted(paper_trees.FIGURES))
def test_paper_trees_build(figure):
    h = paper_trees.build(paper_trees.Params(kind="paper", figure=figure))
    assert len(h.leaves) >= 2


def test_paper_tree_weight_override():
    h = paper_trees.build(paper_trees.Params(kind="paper", figure="hdrf-fig10",
                                             weights={"n3": 2}))
    assert h.weights[h.index("n3")] == 2
    assert [h.paths[i] for i in h.leaves] == ["n1/n11", "n1/n12", "n2/n21", "n2/n22",
                                              "n2/n23", "n3/n31"]


def test_paper_tree_users_per_leaf():
    h = paper_trees.build(paper_trees.Params(kind="paper", figure="hdrf-fig10",
                                             users_per_leaf=25, weights={"n3": 2,
                                                                         "n1/n11/u0": 3}))
    figure = ["n1/n11", "n1/n12", "n2/n21", "n2/n22", "n2/n23", "n3/n31"]
    assert [h.paths[i] for i in h.leaves] == [f"{q}/u{u}" for q in figure for u in range(25)]
    assert h.n_nodes == 1 + 3 + 6 + 6 * 25
    assert not any(h.is_leaf(h.index(q)) for q in figure)
    assert h.weights[h.index("n3")] == 2 and h.weights[h.index("n1/n11/u0")] == 3
    assert {h.weights[i] for i in h.leaves} == {1.0, 3.0}
    # a leaf that is a top-level node (hdrf-fig2's n1) gets users too
    h2 = paper_trees.build(paper_trees.Params(kind="paper", figure="hdrf-fig2",
                                              users_per_leaf=2))
    assert [h2.paths[i] for i in h2.leaves] == ["n1/u0", "n1/u1", "n2/n21/u0", "n2/n21/u1",
                                                "n2/n22/u0", "n2/n22/u1", "n2/n23/u0",
                                                "n2/n23/u1"]


@pytest.mark.parametrize("bad", [0, -3, 1.5, "25", True, 100_001])
def test_paper_tree_users_per_leaf_refused(bad):
    data = spec_with(hierarchy={"kind": "paper", "figure": "hdrf-fig10", "users_per_leaf": bad})
    with pytest.raises(SpecError, match="users_per_leaf"):
        build_experiment(data)


def test_paper_tree_weights_name_users_only_when_there_are_users():
    data = spec_with(hierarchy={"kind": "paper", "figure": "hdrf-fig10",
                                "weights": {"n1/n11/u0": 2}})
    with pytest.raises(SpecError, match="no such node in hdrf-fig10"):
        build_experiment(data)
    data["hierarchy"].update(users_per_leaf=3, weights={"n1/n11/u3": 2})
    with pytest.raises(SpecError, match="with 3 users per leaf"):
        build_experiment(data)


# -- facebook-bins ----------------------------------------------------------------
def test_facebook_bin_shares_over_many_draws():
    p = FBParams(kind="facebook-bins", jobs=40_000)
    sizes = job_sizes(p, np.random.default_rng(0))
    shares = np.histogram(sizes, bins=[1, 20, 150, 500, 10**9])[0] / len(sizes)
    np.testing.assert_allclose(shares, np.array([73, 10, 7, 9]) / 99, atol=0.01)
    assert sizes.min() >= 1 and sizes.max() <= p.max_tasks


def test_facebook_exact_schedule_and_placement_rules():
    exp = load_spec(EXPERIMENTS / "facebook-bins.yaml")
    wl = exp.workload(0)
    sizes = np.array([j.n_tasks for j in wl.jobs])
    assert np.histogram(sizes, bins=[1, 20, 150, 500, 10**9])[0].tolist() == [74, 10, 6, 10]
    paths = exp.hierarchy.paths
    mem, cpu, gpu = 0, 1, 2
    for job in wl.jobs:
        leaf = paths[job.leaf]
        if job.n_tasks >= 500:
            assert leaf in ("n1/n11", "n1/n12", "n3/n31")
        else:
            assert leaf.startswith("n2/")
        assert job.demand[mem] in (1.0, 1.5)
        if leaf == "n1/n12":
            assert job.demand[gpu] == 1 and job.demand[cpu] == 0
        else:
            assert job.demand[cpu] == 1 and job.demand[gpu] == 0
    assert "seed 0" in wl.source


def test_facebook_leaf_queues_are_unchanged():
    # values the generator gave before queues could be internal nodes (issue 12):
    # a spec whose queues are leaves keeps its jobs, to the bit (recorded with
    # hdrf-fig13's task_duration_spread of 0.5 s; the spec now says 30 s)
    data = load_spec(EXPERIMENTS / "hdrf-fig13.yaml").spec.model_dump(mode="json")
    data["workload"]["task_duration_spread"] = 0.5
    exp = build_experiment(data)
    wl, paths = exp.workload(0), exp.hierarchy.paths
    assert [(paths[j.leaf], j.n_tasks, j.demand.tolist()) for j in wl.jobs[:4]] == [
        ("n2/n21", 19, [1.0, 1.0, 0.0]), ("n2/n22", 7, [1.0, 1.0, 0.0]),
        ("n2/n23", 16, [1.5, 1.0, 0.0]), ("n2/n21", 4, [1.0, 1.0, 0.0])]
    assert [round(j.submit, 6) for j in wl.jobs[:4]] == [0.0, 38.514847, 49.386269, 56.74898]
    assert round(float(wl.jobs[0].durations.sum()), 6) == 1141.755993
    assert sum(j.n_tasks for j in wl.jobs) == 38849


def test_facebook_jobs_spread_over_the_users_below_a_queue():
    fig13 = load_spec(EXPERIMENTS / "hdrf-fig13.yaml").spec.model_dump(mode="json")
    data = copy.deepcopy(fig13)
    data["hierarchy"]["users_per_leaf"] = 25
    data["workload"]["jobs"] = 2000
    fig13["workload"]["jobs"] = 2000
    flat, users = build_experiment(fig13), build_experiment(data)
    a, b = flat.workload(0).jobs, users.workload(0).jobs
    fp, up = flat.hierarchy.paths, users.hierarchy.paths
    assert len(a) == len(b)
    counts: dict[str, int] = {}
    for x, y in zip(a, b, strict=True):
        # the same job (size, demand incl. n1/n12's GPU, durations, submit), one user
        # of the same queue
        assert (x.n_tasks, x.submit, x.demand.tolist(), x.durations.tolist()) == \
            (y.n_tasks, y.submit, y.demand.tolist(), y.durations.tolist())
        queue, user = up[y.leaf].rsplit("/", 1)
        assert queue == fp[x.leaf] and user.startswith("u") and 0 <= int(user[1:]) < 25
        counts[up[y.leaf]] = counts.get(up[y.leaf], 0) + 1
    # n2's leaves take ~90 % of 2000 jobs, ~600 each: every user gets some, roughly evenly
    small = [counts.get(f"n2/{q}/u{u}", 0) for q in ("n21", "n22", "n23") for u in range(25)]
    assert min(small) > 5 and max(small) < 50
    again = build_experiment(copy.deepcopy(data)).workload(0).jobs
    assert [j.leaf for j in again] == [j.leaf for j in b]
    assert [j.leaf for j in users.workload(1).jobs] != [j.leaf for j in b]


def test_facebook_queue_not_in_the_tree_is_named():
    data = spec_with(cluster={"resources": ["mem", "cpu"], "servers": [
                         {"count": 2, "capacity": {"mem": 32, "cpu": 16}}]},
                     hierarchy={"kind": "paper", "figure": "hdrf-fig10", "users_per_leaf": 2},
                     workload={"kind": "facebook-bins", "jobs": 5,
                               "small_queues": ["n2/n29"]})
    with pytest.raises(SpecError, match="no such queue"):
        build_experiment(data).workload(0)


def test_generators_reproduce_by_seed():
    exp = load_spec(EXPERIMENTS / "full-binary-scaling.yaml")
    a, b = exp.workload(0), load_spec(EXPERIMENTS / "full-binary-scaling.yaml").workload(0)
    c = exp.workload(1)
    key = [(j.leaf, j.submit, j.demand.tolist(), j.durations.tolist()) for j in a.jobs]
    assert key == [(j.leaf, j.submit, j.demand.tolist(), j.durations.tolist()) for j in b.jobs]
    assert key != [(j.leaf, j.submit, j.demand.tolist(), j.durations.tolist()) for j in c.jobs]


def test_google_synthetic_follows_its_calibration():
    exp = build_experiment(spec_with(
        cluster={"resources": ["cpu", "mem"], "servers": [{"count": 4,
                                                           "capacity": {"cpu": 1, "mem": 1}}]},
        workload={"kind": "google-synthetic", "jobs": 4000, "max_tasks": None}))
    jobs = exp.workload(0).jobs
    med = np.median([j.n_tasks for j in jobs])
    assert med == pytest.approx(np.interp(0.5, np.linspace(0, 1, 41), CALIBRATION["tasks"]),
                                abs=1)
    cpu = np.median([j.demand[0] for j in jobs])
    assert cpu == pytest.approx(np.interp(0.5, np.linspace(0, 1, 41), CALIBRATION["cpu"]),
                                rel=0.2)


# -- cpu-mic -----------------------------------------------------------------------
def test_cpu_mic_cluster_and_heterogeneity():
    exp = load_spec(EXPERIMENTS / "dff-heterogeneity.yaml")
    assert exp.cluster.n_servers == 7
    np.testing.assert_allclose(exp.cluster.total, [336, 952, 21])
    data = spec_with(cluster={"kind": "cpu-mic", "heterogeneity": 32, "pooled": True},
                     hierarchy={"kind": "paper", "figure": "dff-fig1"},
                     workload={"kind": "cpu-mic"})
    wide = build_experiment(data)
    np.testing.assert_allclose(wide.cluster.total, [336, 952, 10.5])
    jobs = wide.workload(0).jobs
    assert [j.n_tasks for j in jobs] == [300, 370, 260, 180, 280]
    assert jobs[3].demand.tolist() == [1, 4, 2]


# -- swim ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, rows", sorted(SWIM_ROWS.items()))
def test_swim_row_counts(trace, name, rows):
    frame, skipped = read_swim(trace(name))
    assert len(frame) == rows and skipped == 0


def _swim_spec(**workload):
    return spec_with(hierarchy={"kind": "paper", "figure": "hdrf-fig10"},
                     cluster={"resources": ["cpu", "mem"],
                              "servers": [{"count": 10, "capacity": {"cpu": 16, "mem": 32}}]},
                     workload={"kind": "swim", **workload})


def test_swim_bytes_become_tasks(trace):
    day = trace(SWIM_SAMPLE)
    exp = build_experiment(_swim_spec(files=[SWIM_SAMPLE], assign="round-robin"),
                           data_dir=str(trace.folder))
    jobs = {j.name: j for j in exp.workload(0).jobs}
    # job2 (SWIM example row): 53088744165 input bytes = 50629.6 MB -> 396 blocks
    # of 128 MB; 1510005522 shuffle bytes = 1440.0 MB -> 2 reduces of 1 GB.
    frame, _ = read_swim(day)
    row = frame.iloc[0]
    maps = max(1, int(np.ceil(row["map_input_bytes"] / 2**20 / 128)))
    first = jobs[f"{row['job']}-map"]
    assert first.n_tasks == min(maps, 2000)
    assert first.submit == row["submit"]
    expect = 2 + row["map_input_bytes"] / 2**20 / maps / 50
    assert first.durations[0] == pytest.approx(expect)
    assert len([j for j in jobs if j.endswith("-map")]) == 50


def test_swim_week_and_determinism(trace):
    spec = _swim_spec(files=[SWIM_SAMPLE], repeat=7)
    data_dir = str(trace.of(spec))
    a = build_experiment(spec, data_dir=data_dir).workload(5)
    b = build_experiment(spec, data_dir=data_dir).workload(5)
    assert [(j.leaf, j.submit) for j in a.jobs] == [(j.leaf, j.submit) for j in b.jobs]
    assert max(j.submit for j in a.jobs) > 6 * 86_400
    assert sum(j.name.endswith("-map") for j in a.jobs) == 7 * 50


def _broken_copy(day: Path, tmp_path: Path) -> Path:
    lines = day.read_text().splitlines()
    fields = lines[6].split("\t")
    fields[3] = "12x4"
    lines[6] = "\t".join(fields)
    broken = tmp_path / "broken.tsv"
    broken.write_text("\n".join(lines) + "\n")
    return broken


def test_swim_bad_line_names_file_line_and_field(trace, tmp_path, capsys):
    broken = _broken_copy(trace(SWIM_SAMPLE), tmp_path)
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(_swim_spec(files=[str(broken)])))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"hierfair: error: {broken}: line 7: field map_input_bytes: not a finite "
                   "non-negative number (use on_bad_line: skip to drop such lines) (got '12x4')")
    skip = build_experiment(_swim_spec(files=[str(broken)], on_bad_line="skip")).workload(0)
    assert "1 bad lines skipped" in skip.source
    assert sum(j.name.endswith("-map") for j in skip.jobs) == 49


def test_missing_trace_says_where_it_looked(tmp_path):
    with pytest.raises(SpecError) as err:
        build_experiment(_swim_spec(files=["nope.tsv"]), data_dir=str(tmp_path))
    text = str(err.value)
    assert "workload.files[0]: trace file not found" in text and str(tmp_path) in text
    assert "SWIMProjectUCB/SWIM" in text and "'nope.tsv'" in text


def test_fallback_is_named_in_the_source(tmp_path):
    wl = build_experiment(_swim_spec(files=["nope.tsv"], fallback="synthetic", limit=40),
                          data_dir=str(tmp_path)).workload(0)
    assert "fallback: SWIM file nope.tsv not found" in wl.source
    assert len(wl.jobs) == 40


# -- google-2011 ---------------------------------------------------------------------
def test_google_part_event_counts(trace):
    part = trace(GOOGLE_PART)
    events, skipped = read_task_events(part)
    assert len(events) == 450146 and skipped == 0
    counts = events["event"].value_counts()
    assert counts[0] == 201491 and counts[1] == 189994 and counts[4] == 43237


def test_google_jobs_have_real_durations_and_demands(trace):
    events, _ = read_task_events(trace(GOOGLE_PART))
    jobs = job_table(events)
    assert (jobs["duration"] > 0).all() and (jobs["tasks"] >= 1).all()
    assert jobs["cpu"].between(0, 1).all() and jobs["mem"].between(0, 1).all()
    assert jobs["tasks"].sum() <= 43237  # at most one run per FINISH


def test_google_sample_by_seed(trace):
    spec = EXPERIMENTS / "google-2011.yaml"
    data_dir = str(trace.of(yaml.safe_load(spec.read_text())))
    exp = load_spec(spec, data_dir=data_dir)
    a, b = exp.workload(0), exp.workload(1)
    assert len(a.jobs) == 80 and "Google cluster-data 2011" in a.source and not a.fallback
    assert {j.name for j in a.jobs} != {j.name for j in b.jobs}
    again = load_spec(spec, data_dir=data_dir).workload(0)
    assert [j.name for j in again.jobs] == [j.name for j in a.jobs]
    caps = exp.cluster.capacities.max(axis=0)
    assert all((j.demand <= caps).all() for j in a.jobs)


def test_a_changed_google_part_is_parsed_again(trace, tmp_path):
    # Parts are memoised per process by (path, size, mtime): rewriting a part
    # in place must give the new jobs, never the cached table.
    src = trace(GOOGLE_PART)
    with gzip.open(src, "rt") as f:
        lines = f.read().splitlines()
    part = tmp_path / "part.csv.gz"
    data = yaml.safe_load((EXPERIMENTS / "google-2011.yaml").read_text())
    data["workload"].update(files=[str(part)], job_events=[], sample=None)
    data["workload"].pop("arrivals", None)  # a part's first jobs may all arrive at once

    def jobs(n: int) -> set[str]:
        with gzip.open(part, "wt") as f:
            f.write("\n".join(lines[-n:]) + "\n")
        return {j.name for j in build_experiment(data).workload(0).jobs}

    few, many = jobs(100_000), jobs(300_000)
    assert few and few < many
    assert jobs(100_000) == few


def test_google_gzip_corruption_is_one_clear_error(trace, tmp_path):
    src = trace("google-2011/task_events-part-00001-of-00500.csv.gz")
    with gzip.open(src, "rt") as f:
        lines = f.read().splitlines()[:100]
    lines[41] = lines[41].replace(",", ",abc,", 1).rsplit(",", 1)[0]
    bad = tmp_path / "bad.csv.gz"
    with gzip.open(bad, "wt") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(SpecError) as err:
        read_task_events(bad)
    assert str(err.value).startswith(f"{bad}: line 42: field ")


# -- swf -------------------------------------------------------------------------------
def test_swf_sample(tmp_path):
    exp = load_spec(EXPERIMENTS / "swf-sample.yaml")
    wl = exp.workload(0)
    assert "2 jobs that never ran dropped" in wl.source
    by_name = {j.name: j for j in wl.jobs}
    assert sorted(by_name) == ["swf1", "swf2", "swf4", "swf5"]
    assert exp.hierarchy.paths[by_name["swf1"].leaf] == "n0/n1"  # user 1 -> leaves[1]
    assert by_name["swf4"].n_tasks == 1  # allocated -1: requested processors
    assert by_name["swf4"].demand.tolist() == [1.0, 2.0]  # 2097152 KB = 2 GB
    assert by_name["swf2"].demand.tolist() == [1.0, 0.5]  # used memory when none requested
    gz = tmp_path / "sample.swf.gz"
    with open(ROOT / "tests/data/sample.swf", "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    data = spec_with(cluster={"resources": ["cpu", "mem"],
                              "servers": [{"capacity": {"cpu": 8, "mem": 16}}]},
                     workload={"kind": "swf", "file": str(gz)})
    assert len(build_experiment(data).workload(0).jobs) == 4
