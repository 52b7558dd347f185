"""reports/index.html: one self-contained page with the claims and property
tables and each experiment's figures, rendered in headless Chromium."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import hierfair
from hierfair.audit.write import run_audit
from hierfair.errors import SpecError
from hierfair.experiment.spec import build_experiment

from .conftest import EXPERIMENTS, spec_with

PNG = b"\x89PNG\r\n\x1a\n"
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                 "google-chrome"))), None)
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reports")
    jobs = [{"queue": q, "tasks": 6, "demand": {"cpu": c, "mem": m}, "duration": 10,
             "submit": 5 * k} for k, (q, c, m) in enumerate([("A", 1, 4), ("B", 3, 1)] * 6)]
    workload = spec_with(name="load", seeds=[0, 1], workload={"jobs": jobs},
                         algorithms=["drf", {"name": "pdrf", "params": {"alpha": 3.0}}],
                         claims=[{"claim": "A gets 3 tasks", "source": "DRF §4.1",
                                  "checks": [{"algorithm": "drf", "node": "A",
                                              "resource": "tasks", "equals": 3}]}])
    scaling = spec_with(name="scaling", hierarchy={"kind": "full-binary", "levels": 1},
                        workload={"kind": "google-synthetic", "jobs": 12},
                        algorithms=["drf", "hdrf"], grid={"hierarchy.levels": [1, 2, 3]})
    chosen = spec_with(name="chosen", report={"figures": ["shares"]})
    for spec in (workload, scaling, chosen):
        hierfair.run(spec, out=root, jobs=1)
    run_audit(root / "audit", None, instances=2, algorithms=["drf"],
              properties=["share-guarantee"], jobs=1)
    hierfair.report(root)
    return root / "index.html"


def sections(page: str) -> dict[str, str]:
    parts = re.split(r'<section id="([^"]+)">', page)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_page_is_self_contained_and_every_figure_is_a_png(report):
    page = report.read_text()
    assert "http://" not in page and "https://" not in page.replace(
        "https://json-schema", "")  # no network
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page)
    assert images and all(base64.b64decode(i)[:8] == PNG for i in images)
    assert f'data-figures="{len(images)}"' in page


def test_each_experiment_gets_the_figures_that_answer_it(report):
    found = {name: re.findall(r'<figure id="[^"]+-(\w+)"', body)
             for name, body in sections(report.read_text()).items()}
    assert found["scaling"] == ["cost"]  # a size sweep asks what scheduling costs
    assert found["load"] == ["utilization", "waits", "makespan"]  # 12 jobs, 2 algorithms
    assert found["chosen"] == ["shares"]  # the spec's report: block


def test_the_page_opens_with_the_summary_claims_and_properties_then_sections(report):
    page = report.read_text()
    order = list(sections(page))
    assert order[:3] == ["summary", "claims", "properties"] and set(order[3:]) == {
        "load", "scaling", "chosen"}
    body = sections(page)
    assert "1 hold, 0 refuted" in body["summary"] and "verdict-holds" in body["summary"]
    assert "A gets 3 tasks" in body["claims"] and "verdict-holds" in body["claims"]
    # grouped by paper (DRF §4.1 -> DRF), then spec, each claim folded over its checks
    assert 'id="paper-drf"' in body["claims"] and '<a href="#load">load</a>' in body["claims"]
    assert '<details class="claim" id="claim-load-1">' in body["claims"]
    assert "Fairness properties (audit)" in body["properties"]
    assert "<table>" in body["properties"] and "|---" not in body["properties"]
    runs = body["load"]
    # grid values, parameters and human units in the runs table
    for head in ("<th>alpha</th>", "<th>makespan (s)</th>", "<th>decision p50 (µs)</th>",
                 "<th>cpu in use</th>"):
        assert head in runs, head
    assert "<th>hierarchy.levels</th>" in body["scaling"]
    assert "Across seeds" in runs
    assert '<details class="runs">' in runs  # the runs table is folded under the figures


def test_report_block_names_are_validated():
    with pytest.raises(SpecError, match=r"report\.figures\[0\]: Input should be .shares."):
        build_experiment(spec_with(report={"figures": ["pie"]}))


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium on this machine: "
                    "`apt-get install chromium` (Debian) to run the browser test")
def test_chromium_renders_every_figure_and_table(report, tmp_path):
    dom = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path}",
                          "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    attrs = dict(re.findall(r'([\w-]+)="(\d+)"', body.group(1)))
    assert int(attrs["data-figures"]) >= 5
    assert attrs["data-figures-rendered"] == attrs["data-figures"]  # every PNG decoded
    assert int(attrs["data-tables-rendered"]) >= int(attrs["data-tables"]) > 0


def test_report_never_overwrites_a_readme_or_page_it_did_not_write(tmp_path, capsys):
    """Issue 26: `hierfair report .` in a folder holding the user's own
    README.md (or index.html) refuses, naming it, and changes nothing."""
    from hierfair.cli import main

    spec = EXPERIMENTS / "drf-example.yaml"
    assert main(["run", str(spec), "--out", str(tmp_path)]) == 0
    assert main(["report", str(tmp_path)]) == 0  # its own files: rewritten freely
    assert main(["report", str(tmp_path)]) == 0
    for name in ("README.md", "index.html"):
        theirs = tmp_path / name
        kept = theirs.read_text()
        theirs.write_text("my own notes\n")
        capsys.readouterr()
        assert main(["report", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and name in err[0] and "refusing" in err[0]
        assert theirs.read_text() == "my own notes\n"
        theirs.write_text(kept)


def test_error_bars_are_the_verdicts_t_interval_and_drawn_the_same_every_time(
        tmp_path, monkeypatch):
    """A bar's error bar is the t interval of its mean over seeds (what a
    verdict is decided by), not seaborn's bootstrap, which drew other bars
    -- other bytes -- at every call."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    from hierfair.report import facets, plots

    values = np.array([3.0, 5.0, 4.0, 9.0])
    low, high = stats.t.interval(0.95, 3, loc=values.mean(), scale=stats.sem(values))
    assert facets.t_interval(pd.Series([*values, np.nan])) == pytest.approx((low, high))
    assert facets.t_interval(pd.Series([2.0])) == (2.0, 2.0)  # one seed: no bar
    runs = pd.DataFrame({"label": ["a"] * 4 + ["b"] * 4, "seed": [0, 1, 2, 3] * 2,
                         "status": "ok", "makespan": [*values, *(values * 2)],
                         "completion_mean": [*values, *(values + 1)]})
    runs.to_parquet(tmp_path / "runs.parquet", index=False)
    real, bars = plots.sns.barplot, []

    def barplot(*args, **kwargs):  # the error bar each panel asks for, for "a"
        data = kwargs["data"]
        bars.append(kwargs["errorbar"](data[kwargs["x"]][data["label"] == "a"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(plots.sns, "barplot", barplot)
    drawn = [plots.plot_makespan(tmp_path).read_bytes() for _ in range(2)]
    assert bars[0] == pytest.approx((low, high))  # makespan's panel
    assert drawn[0] == drawn[1]
