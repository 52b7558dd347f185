"""A report a reviewer can read (issue 25, item 9): one number format, a
summary first (counts per verdict and per paper), every measured value
labelled, inconclusive and untestable verdicts styled and in the legend, an
expectation's history shown -- checked on a small hand-made set of
claims.json, without running anything."""

from __future__ import annotations

import html as htmlmod
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierfair.experiment.claims import read_verdicts
from hierfair.experiment.verdict import count_verdicts, verdict_word
from hierfair.report import html, tables
from hierfair.report.fmt import (
    MISSING,
    Progress,
    interval,
    num,
    numbers_in,
    paper_of,
    thousands_in,
)
from hierfair.report.summary import (
    LEGEND,
    check_view,
    claim_view,
    claim_views,
    count_rows,
    findings,
    group,
    split_measures,
)

E_NOTATION = re.compile(r"\d[eE][-+]?\d")


# -- one number format -------------------------------------------------------------------

@pytest.mark.parametrize("value, shown", [
    (0, "0"), (0.0, "0"), (3, "3"), (3.0, "3"), (-0.6, "-0.6"), (0.5, "0.5"),
    (1 / 3, "0.3333"), (0.47619047619047616, "0.4762"), (164.3, "164.3"),
    (999.96, "1,000"), (4833.2, "4,833"), (11780.4, "11,780"), (16200.0, "16,200"),
    (1234567, "1,234,567"), (np.int64(25000), "25,000"), (np.float32(2.5), "2.5"),
    (1e-6, "0.000001"), (1.234e-7, "0.00000012"),
    (-2.7755575615628914e-17, "0"),  # float noise of a difference of equal means
    (float("nan"), MISSING), (np.nan, MISSING), (None, MISSING), (pd.NA, MISSING),
    (float("inf"), "∞"), (-math.inf, "-∞"), (True, "True"), ("drf", "drf"),
])
def test_one_number_format(value, shown):
    assert num(value) == shown


def test_no_magnitude_is_written_in_e_notation():
    for exponent in range(-12, 13):
        for mantissa in (1.0, 1.5, 9.99):
            for sign in (1, -1):
                text = num(sign * mantissa * 10.0 ** exponent)
                assert not E_NOTATION.search(text) and "nan" not in text, text
                if abs(mantissa * 10.0 ** exponent) >= 1000:
                    assert "," in text, text  # thousands separated


def test_numbers_inside_text_are_rewritten_the_same_way():
    # the seeds table's old "4833 ± 1.178e+04" and the specs' tolerances
    assert numbers_in("4833 ± 1.178e+04") == "4833 ± 11,780"
    assert numbers_in("= 3 ± 1e-06; low nan") == f"= 3 ± 0.000001; low {MISSING}"
    assert numbers_in("banana, nan-free, slots-10") == "banana, nan-free, slots-10"
    # a check's expected value keeps every digit the spec gave, with separators
    assert thousands_in("< drf (5233)") == "< drf (5,233)"
    assert thousands_in("= 0.333333 ± 1e-06") == "= 0.333333 ± 0.000001"
    assert thousands_in("< slots-10 (1446.5) on 2026-11-23") == \
        "< slots-10 (1,446.5) on 2026-11-23"
    assert interval(1.0, 1.0) == "1" and interval(-197.2, -55.8) == "[-197.2, -55.8]"
    assert interval(float("nan"), float("nan")) == MISSING


# -- the paper of a claim ------------------------------------------------------------------

@pytest.mark.parametrize("source, paper", [
    ("H-DRF §5.2, Fig. 11a", "H-DRF"),
    ('"H-DRF §3.3"', "H-DRF"),
    ("H-DRF Theorems 1-2 (dynamic = static)", "H-DRF"),
    ("MCH §IV-B, Fig. 5", "MCH"),
    ("MCH letter §III-A.2, Eq. 2", "MCH"),
    ("DFF letter §3", "DFF"),
    ("DRF §4.1", "DRF"),
    ('"DRF §1"', "DRF"),
    ("PDRF note, Motivation", "PDRF"),
    ("property audit (docs/properties.md)", "property audit"),
    ("here", "other"),
    ("", "other"),
])
def test_the_paper_of_a_claim_is_read_from_its_source(source, paper):
    assert paper_of(source) == paper


# -- a hand-made set of claims.json --------------------------------------------------------

def check(algorithm="drf", measures="A tasks", expected="= 3 ± 1e-06", measured=3.0,
          outcome="holds", seeds=0, low=None, high=None, method="exact", missing="",
          reason=""):
    low = measured if low is None else low
    high = measured if high is None else high
    return {"algorithm": algorithm, "measures": measures, "expected": expected,
            "measured": measured, "outcome": outcome, "missing": missing, "seeds": seeds,
            "low": low, "high": high, "method": method, "reason": reason,
            "holds": outcome == "holds"}


def claim(text, source, verdict, checks, expect="holds", history=(), untestable="",
          proxy="", reason="", note=""):
    return {"id": "", "claim": text, "source": source, "note": note, "expect": expect,
            "untestable": untestable, "proxy": proxy, "published": "",
            "verdict": verdict, "holds": verdict == "holds", "reason": reason,
            "history": list(history), "checks": checks}


HISTORY = {"date": "2026-11-23", "old": "holds", "new": "refuted",
           "why": "whole tasks: the theorem is for divisible resources"}

SPECS = {
    "a": [
        claim("H-DRF gives n1 half", "H-DRF §5.2, Fig. 11a", "holds", [check(
            algorithm="hdrf", measures="makespan", expected="< 20000", measured=16200.0,
            seeds=10, low=15000.0, high=17400.0, method="t, 95 %")]),
        claim("H-DRF is strategy-proof", "H-DRF §4.2, Theorem 3", "refuted", [check(
            algorithm="hdrf", measures="n1/n11 dominant_share", expected="= 0.5 ± 1e-06",
            measured=0.4, outcome="refuted")], expect="refuted", history=[HISTORY]),
        claim("DRF waits less", "DRF §4.1", "inconclusive", [check(
            algorithm="pdrf", measures="wait_mean", expected="< drf (5233)",
            measured=4833.0, outcome="inconclusive", seeds=2, low=-1.178e4, high=2.1e4,
            method="paired t, 95 % of the difference from drf",
            reason="the interval crosses the claimed bound (add seeds)")],
            reason="the interval crosses the claimed bound (add seeds)"),
    ],
    "b": [
        claim("MCH guarantees weights", "MCH letter §V", "untestable", [check(
            algorithm="mch", measures="(root) cpu", measured=1.0)], expect="untestable",
            untestable="no per-node heartbeat in this model",
            reason="no per-node heartbeat in this model"),
        claim("fifo is slower", "property audit (docs/properties.md)", "n/a", [check(
            algorithm="fifo", measures="makespan", expected="> drf (10)",
            measured=float("nan"), outcome="n/a", missing="2 of 2 runs of fifo failed",
            low=float("nan"), high=float("nan"), method="")],
            reason="2 of 2 runs of fifo failed"),
        claim("PDRF finishes every job", "PDRF note, Motivation", "holds", [check(
            algorithm="pdrf", measures="tasks_unfinished", expected="= 0 ± 1e-06",
            measured=0.0, seeds=10)], proxy="a smaller cluster"),
        claim("a rule of thumb", "here", "holds", [check()]),
    ],
}


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    out = []
    for name, verdicts in SPECS.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "claims.json").write_text(json.dumps(verdicts))
        out.append(folder)
    return out


def read(folders: list[Path]) -> list[tuple[str, list[dict]]]:
    return [(f.name, read_verdicts(f)) for f in folders]


def page(folders: list[Path], tmp_path: Path) -> str:
    sections = []
    for name, verdicts in read(folders):
        sections.append(html.Section(
            name=name, verdicts=[dict(v, word=verdict_word(v)) for v in verdicts],
            claims=[claim_view(name, i, v) for i, v in enumerate(verdicts)]))
    return html.render(tmp_path, sections, None, "hierfair report x").read_text()


def visible(page_text: str) -> str:
    """The page's text as a reader sees it: no style, script, tags or images."""
    text = re.sub(r"<(style|script)\b.*?</\1>", " ", page_text, flags=re.S)
    text = re.sub(r'src="data:[^"]*"', "", text)
    return htmlmod.unescape(re.sub(r"<[^>]+>", " ", text))


def test_the_summary_counts_per_verdict_and_per_paper(folders):
    claims = claim_views(read(folders))
    rows = {r.paper: (dict((w, n) for w, _, n in r.counts), r.total, r.unexpected)
            for r in count_rows(group(claims))}
    zero = dict.fromkeys(("holds", "refuted", "inconclusive", "untestable", "n/a"), 0)
    assert rows == {
        "H-DRF": (zero | {"holds": 1, "refuted": 1}, 2, 0),
        "DRF": (zero | {"inconclusive": 1}, 1, 1),  # it expects holds
        "MCH": (zero | {"untestable": 1}, 1, 0),
        "PDRF": (zero | {"holds": 1}, 1, 0),
        "property audit": (zero | {"n/a": 1}, 1, 0),  # n/a is never "not as expected"
        "other": (zero | {"holds": 1}, 1, 0),
        "all": ({"holds": 3, "refuted": 1, "inconclusive": 1, "untestable": 1, "n/a": 1},
                7, 1)}
    # papers in the report's order, each spec's claims under it
    assert [g.paper for g in group(claims)] == ["H-DRF", "DRF", "MCH", "PDRF",
                                                "property audit", "other"]


def test_the_page_opens_with_the_summary_counts(folders, tmp_path):
    text = page(folders, tmp_path)
    parts = re.split(r'<section id="([^"]+)">', text)
    order = parts[1::2]
    assert order[:2] == ["summary", "claims"]
    summary = parts[2]
    flat = [v for _, vs in read(folders) for v in vs]
    assert count_verdicts(flat) in summary  # the words verdict.py gives
    table = re.search(r'<table class="counts">(.*?)</table>', summary, re.S).group(1)
    cells = {re.sub(r"<[^>]+>", "", r.split("</td>")[0]).strip():
             [re.sub(r"<[^>]+>", "", c).strip() for c in r.split("</td>")[1:-1]]
             for r in re.findall(r"<tr[^>]*>\s*<td(.*?)</tr>", table, re.S)}
    hdrf = next(v for k, v in cells.items() if "H-DRF" in k)
    every = next(v for k, v in cells.items() if "all papers" in k)
    # holds, refuted, inconclusive, untestable here, n/a, claims, proxies, not as expected
    assert hdrf == ["1", "1", "0", "0", "0", "2", "0", "0"]
    assert every == ["3", "1", "1", "1", "1", "7", "1", "1"]
    # the one verdict not as its spec expects is listed, linked to its claim
    assert 'href="#claim-a-3"' in summary and "expects holds" in summary
    # the README says the same
    readme = "\n".join(tables.summary_lines(read(folders)))
    assert "| **all papers** | 3 | 1 | 1 | 1 | 1 | 7 | 1 | 1 |" in readme
    assert "| [H-DRF (Bhattacharya et al., SoCC 2013)](#paper-h-drf) | 1 | 1 | 0 | 0 | 0 | " \
        "2 | 0 | 0 |" in readme


def test_claims_are_grouped_by_paper_and_spec_and_folded(folders, tmp_path):
    claims = parts_of(page(folders, tmp_path))["claims"]
    papers = re.findall(r'<details class="paper" id="(paper-[\w-]+)">', claims)
    assert papers == ["paper-h-drf", "paper-drf", "paper-mch", "paper-pdrf",
                      "paper-property-audit", "paper-other"]
    assert claims.count('<details class="claim"') == 7
    assert '<details class="paper" id="paper-h-drf" open' not in claims  # folded


def parts_of(text: str) -> dict[str, str]:
    parts = re.split(r'<section id="([^"]+)">', text)
    return dict(zip(parts[1::2], parts[2::2]))


def test_each_measured_value_is_labelled(folders, tmp_path):
    paired = SPECS["a"][2]["checks"][0]
    k = check_view(paired)
    assert (k.algorithm, k.node, k.quantity, k.n) == ("pdrf", "cluster", "wait_mean", "2 runs")
    assert (k.measured, k.interval, k.method, k.note) == (
        "4,833", "[-11,780, 21,000]", "paired t, 95 %", "the difference from drf")
    assert k.expected == "< drf (5,233)"
    for word in ("pdrf", "wait_mean", "n = 2 runs", "paired t, 95 %", "[-11,780, 21,000]",
                 "difference from drf", "4,833"):
        assert word in k.label, (word, k.label)
    # an allocation: its node and quantity; computed once, exact
    alloc = check_view(SPECS["a"][1]["checks"][0])
    assert (alloc.node, alloc.quantity, alloc.n, alloc.method, alloc.interval) == (
        "n1/n11", "dominant share", "computed once", "exact", "0.4")
    # failed runs: no value, no interval, and why
    failed = check_view(SPECS["b"][1]["checks"][0])
    assert (failed.measured, failed.interval, failed.method) == (MISSING, MISSING, "n/a")
    assert "2 of 2 runs of fifo failed" in failed.outcome
    # in the page: one column each, and the whole label on the row
    claims = parts_of(page(folders, tmp_path))["claims"]
    head = "<th>algorithm</th><th>node</th><th>quantity</th><th>the paper</th>" \
           "<th>measured</th><th>n</th><th>interval</th><th>method</th><th>outcome</th>"
    assert head in claims
    assert f'title="{htmlmod.escape(k.label)}"' in claims
    # the README: the same columns
    readme = "\n".join(tables.claims_lines(read_verdicts(folders[0])))
    assert "| pdrf | cluster | wait_mean | < drf (5,233) | 4,833 | 2 runs | [-11,780, 21,000] " \
        "(of the difference from drf) | paired t, 95 % | inconclusive: the interval crosses " \
        "the claimed bound (add seeds) |" in readme


@pytest.mark.parametrize("measures, node, quantity", [
    ("n3/n32 mic", "n3/n32", "mic share"),
    ("(root) tasks", "(root)", "tasks"),
    ("U2 dominant_share", "U2", "dominant share"),
    ("(root) mic, mean over the run in [0, 2000] s", "(root)",
     "mic share, mean over the run in [0, 2000] s"),
    ("n1/n11 cpu (after 40 task ends)", "n1/n11", "cpu share (after 40 task ends)"),
    ("makespan (cluster.heterogeneity=16)", "cluster", "makespan (cluster.heterogeneity=16)"),
    ("wait_mean / drf's", "cluster", "wait_mean / drf's"),
    ("util_cpu", "cluster", "util_cpu"),
    ("mean response-time improvement of h1's jobs over pdrf-p1, %", "h1",
     "mean response-time improvement over pdrf-p1 (%)"),
    ("min response-time improvement over drf, %", "all jobs",
     "min response-time improvement over drf (%)"),
    ("share-guarantee (docs/properties.md): how far from holding", "worst audited instance",
     "share-guarantee: how far from holding"),
])
def test_a_checks_measures_name_its_node_and_quantity(measures, node, quantity):
    assert split_measures(measures) == (node, quantity)


def test_inconclusive_and_untestable_are_styled_and_in_the_legend(folders, tmp_path):
    text = page(folders, tmp_path)
    style = re.search(r"<style>(.*?)</style>", text, re.S).group(1)
    for cls in ("holds", "refuted", "inconclusive", "untestable", "na"):
        assert f".verdict-{cls}.badge" in style, cls  # a badge of its own
        assert f".mark-{cls}::before" in style, cls  # and a side-bar mark
    summary = parts_of(text)["summary"]
    legend = re.search(r'<dl class="legend">(.*?)</dl>', summary, re.S).group(1)
    for _, cls, word, meaning in LEGEND:
        assert f'<span class="badge verdict-{cls}">{word}</span>' in legend
        assert meaning in htmlmod.unescape(legend)
    assert "untestable here" in legend and "inconclusive" in legend
    # the side bar explains its colours
    nav = re.search(r"<nav>(.*?)</nav>", text, re.S).group(1)
    for cls in ("refuted", "inconclusive", "untestable", "na", "holds", "none"):
        assert f'class="mark mark-{cls}"' in nav
    assert 'href="#a" class="mark mark-refuted' in nav  # spec a's most telling verdict
    assert 'href="#b" class="mark mark-untestable' in nav
    claims = parts_of(text)["claims"]
    assert '<span class="badge verdict-inconclusive">inconclusive</span>' in claims
    assert '<span class="badge verdict-untestable">untestable here</span>' in claims


def test_an_expectations_history_is_shown(folders, tmp_path):
    claims = parts_of(page(folders, tmp_path))["claims"]
    refuted = claims[claims.index('id="claim-a-2"'):claims.index('id="claim-a-3"')]
    assert '<td class="date">2026-11-23</td><td>holds → refuted</td>' in refuted
    assert HISTORY["why"] in refuted
    readme = "\n".join(tables.claims_lines(read_verdicts(folders[0])))
    assert f"expected verdict holds → refuted on 2026-11-23: {HISTORY['why']}" in readme


def test_the_page_shows_no_e_notation_and_no_nan(folders, tmp_path):
    text = visible(page(folders, tmp_path))
    assert not E_NOTATION.search(text), E_NOTATION.search(text)
    assert not re.search(r"\bnan\b", text, re.I)
    assert "[-11,780, 21,000]" in text and "0.000001" in text


def test_the_spread_over_seeds_is_written_in_the_one_format():
    runs = pd.DataFrame({"label": ["drf"] * 2, "seed": [0, 1], "status": ["ok"] * 2,
                         "makespan": [12000.0, -2334.0]})
    table = tables.seed_table(runs)
    cell = table.loc[0, "makespan (s)"]
    assert re.fullmatch(r"4,833 ± \d{2},\d{3}", cell), cell  # was 4833 ± 9.1e+04


def test_progress_is_written_while_report_runs():
    out = io.StringIO()
    progress = Progress("figures", 2, stream=out)
    progress.step("hogs-and-mice")
    progress.step()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("report: figures 1/2 specs (hogs-and-mice, 0:00:0")
    assert lines[1].startswith("report: figures 2/2 specs (0:00:0")


def test_figures_facet_by_grid_point_and_write_ticks_in_the_one_format():
    import matplotlib.pyplot as plt

    from hierfair.report.facets import MAX_GRID_PANELS, grid_points, readable_ticks

    runs = pd.DataFrame({"label": ["drf", "hdrf"] * 10, "seed": 0,
                         "grid_point": np.repeat(np.arange(10), 2),
                         "workload.durations": np.repeat([f"[{k}, 10]" for k in range(10)], 2)})
    kept, points, note = grid_points(runs)
    assert len(points) == MAX_GRID_PANELS and points[0] == "durations=[0, 10]"
    assert points[-1] == "durations=[9, 10]" and note == "8 of 10 grid points, evenly spaced"
    one, points, note = grid_points(runs[runs["grid_point"] == 0])
    assert points == [""] and note == ""  # one point: no facets
    # a grid over one algorithm's parameter names variants of it, not grid points
    own = pd.DataFrame({"label": ["hdrf", "slots-5", "hdrf", "slots-5", "slots-5"],
                        "seed": 0, "grid_point": [0, 0, 1, 1, 2],
                        "algorithms[1].params.penalty.mem": [np.nan, 5.0, np.nan, 1.0, 2.0],
                        "workload.fraction": [0.6, 0.6, 0.8, 0.8, 0.8]})
    kept, points, note = grid_points(own)
    assert points == ["fraction=0.6", "fraction=0.8"]
    assert list(dict.fromkeys(kept["label"])) == ["hdrf", "slots-5 (mem=1)", "slots-5 (mem=2)",
                                                  "slots-5 (mem=5)"]
    fig, ax = plt.subplots()
    ax.plot([0, 520000], [0, 1e-5])
    readable_ticks(ax)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    plt.close(fig)
    assert any("," in t for t in labels) and not any(E_NOTATION.search(t) for t in labels)
    assert not ax.yaxis.get_offset_text().get_text()  # no "1e-5" above the axis


def test_findings_keep_fluid_and_whole_task_failures_apart(tmp_path):
    """Issue 25: a fluid theorem refuted, a simulated claim refuted and a
    fluid claim that fails only with whole tasks are three separate lists."""
    fluid_refuted = dict(claim("H-DRF is strategy-proof", "H-DRF §4.2, Theorem 3", "refuted",
                               [check(outcome="refuted")], expect="refuted",
                               history=[HISTORY]), fluid=True, whole_tasks_verdict="refuted")
    whole_only = dict(claim("DRF is envy-free", "DRF §4.1", "holds", [check()]),
                      fluid=True, whole_tasks_verdict="refuted")
    fluid_holds = dict(claim("DRF is Pareto-efficient", "DRF §4.1", "holds", [check()]),
                       fluid=True, whole_tasks_verdict="holds")
    simulated = claim("H-DRF improves n1,2 by 250 %", "H-DRF §5.2", "refuted",
                      [check(outcome="refuted")], expect="refuted", history=[HISTORY])
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "claims.json").write_text(json.dumps(
        [fluid_refuted, whole_only, fluid_holds, simulated]))
    found = findings(claim_views(read([folder])))
    assert [c.claim for c in found.fluid] == ["H-DRF is strategy-proof"]
    assert [c.claim for c in found.simulated] == ["H-DRF improves n1,2 by 250 %"]
    assert [c.claim for c in found.whole_tasks] == ["DRF is envy-free"]
    readme = "\n".join(tables.summary_lines(read([folder])))
    assert "**Fluid theorems refuted** (1)" in readme
    assert "**Whole tasks only** (1)" in readme
    whole = readme[readme.index("**Whole tasks only**"):]
    assert "DRF is envy-free" in whole and "Pareto" not in whole
    shown = visible(page([folder], tmp_path))
    assert "Claims refuted in the simulation (1)" in shown
    assert "Whole tasks only (1)" in shown


def test_a_mapping_grid_value_is_named_by_the_fields_that_differ():
    from hierfair.report.fmt import distinct as _distinct

    base = {"size": "largest-task", "exempt": "dominant-share", "algorithms": ["hdrf"]}
    readings = [{**base, "keep": "used"}, {**base, "keep": "all"},
                {**base, "keep": "used", "count_exempt": True}]
    assert [_distinct(r, readings) for r in readings] == [
        "{keep: used}", "{keep: all}", "{keep: used, count_exempt: true}"]
    assert _distinct(0.6, [0.6, 0.8]) == 0.6
    # as runs.parquet keeps it: JSON
    import json
    assert _distinct(json.dumps(readings[1]), [json.dumps(r) for r in readings]) == "{keep: all}"


def test_grid_axes_are_named_so_they_can_be_told_apart():
    """A grid over two jobs' queues names each by enough of its path
    (prod-y3's panels read "queue=..., queue=..." before)."""
    from hierfair.report.fmt import axis_names

    assert axis_names(["workload.jobs[0].queue", "workload.jobs[1].queue"]) == {
        "workload.jobs[0].queue": "jobs[0].queue", "workload.jobs[1].queue": "jobs[1].queue"}
    assert axis_names(["cluster.heterogeneity", "workload.arrivals.offered_load"]) == {
        "cluster.heterogeneity": "heterogeneity", "workload.arrivals.offered_load": "offered_load"}
    assert axis_names(["a.b.x", "c.b.x"]) == {"a.b.x": "a.b.x", "c.b.x": "c.b.x"}


def test_a_long_step_series_is_drawn_as_its_mean_over_each_span():
    """A week's utilisation changes ~70 M times: the figure draws each of
    MAX_POINTS spans' mean, which keeps the series' integral."""
    from hierfair.report.sampled import MAX_POINTS
    from hierfair.report.sampled import steps as _steps

    rng = np.random.default_rng(3)
    times = np.cumsum(rng.exponential(1.0, 20 * MAX_POINTS))
    values = rng.uniform(0, 1, len(times))
    end = times[-1] + 5
    t, v = _steps(times, values, end)
    assert len(t) == len(v) == MAX_POINTS + 1 and t[0] == times[0] and t[-1] == end
    width = (end - times[0]) / MAX_POINTS
    whole = np.sum(values * np.diff(np.append(times, end)))
    assert np.sum(v[:-1]) * width == pytest.approx(whole, rel=1e-9)
    # one span by brute force: the overlap of each step with it
    lo, hi = t[7], t[7] + width
    steps_end = np.append(times[1:], end)
    overlap = np.clip(np.minimum(steps_end, hi) - np.maximum(times, lo), 0, None)
    assert v[7] == pytest.approx(np.sum(values * overlap) / width, rel=1e-9)
    # read a row group at a time: the same means, whatever the batches
    from hierfair.report.sampled import span_edges, span_means

    cuts = np.sort(rng.choice(np.arange(1, len(times)), 9, replace=False))
    batches = [(t_, [v_, 2 * v_]) for t_, v_ in zip(np.split(times, cuts), np.split(values, cuts))]
    batches.insert(3, (times[:0], [values[:0], values[:0]]))  # an empty row group
    means, doubled = span_means(batches, span_edges(times[0], times[-1], end))
    assert np.allclose(means, v[:-1], rtol=1e-9) and np.allclose(doubled, 2 * v[:-1], rtol=1e-9)
    alternating = _steps(np.arange(10 * MAX_POINTS, dtype=float),
                         np.tile([0.0, 1.0], 5 * MAX_POINTS), 10.0 * MAX_POINTS)[1]
    assert np.allclose(alternating, 0.5)


def test_a_large_set_of_jobs_is_drawn_from_points_exact_at_each():
    """A paper-scale week pools ~100 M jobs: the waits figure draws at most
    MAX_POINTS weighted values whose ECDF equals the jobs' at each of them."""
    from hierfair.report.sampled import MAX_POINTS
    from hierfair.report.sampled import ecdf_points as _ecdf_points

    rng = np.random.default_rng(5)
    few = np.append(rng.integers(0, 50, 10_000).astype(float), [np.nan] * 7)
    x, w = _ecdf_points(few)  # few distinct values: each with its count, exact
    assert list(x) == sorted(set(few[~np.isnan(few)])) and w.sum() == 10_000
    assert w[3] == np.count_nonzero(few == x[3])
    many = np.concatenate([np.zeros(30_000), rng.exponential(100.0, 170_000), [np.nan]])
    x, w = _ecdf_points(many)
    kept = many[~np.isnan(many)]
    assert len(x) <= MAX_POINTS and x[0] == 0 and x[-1] == kept.max()
    assert w.sum() == len(kept) and w[0] == 30_000  # the zero waits, one step
    exact = np.searchsorted(np.sort(kept), x, side="right") / len(kept)
    assert np.array_equal(np.cumsum(w) / w.sum(), exact)
    # between two drawn values at most one step of rank is hidden
    assert np.diff(exact[1:]).max() <= 1 / (MAX_POINTS - 1) + 2 / len(kept)


def test_a_runs_file_is_read_a_row_group_at_a_time_empty_ones_too(tmp_path):
    """The utilisation figure reads a week's file a row group at a time:
    the same means as the series read whole, an empty row group included."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hierfair.experiment.detail import FileTable
    from hierfair.report.sampled import MAX_POINTS, span_edges, span_means, steps

    rng = np.random.default_rng(8)
    times = np.cumsum(rng.exponential(1.0, 3 * MAX_POINTS))
    values = rng.uniform(0, 1, len(times))
    path = tmp_path / "utilization.parquet"
    with pq.ParquetWriter(path, pa.schema([("time", pa.float64()), ("cpu", pa.float64())])) as w:
        for part in (slice(0, 0), slice(0, 2500), slice(2500, None), slice(0, 0)):
            w.write_table(pa.table({"time": times[part], "cpu": values[part]}))
    table = FileTable(path)
    assert table.bounds("time") == (times[0], times[-1]) and table.rows() == len(times)
    edges = span_edges(*table.bounds("time"), times[-1] + 3)
    assert np.allclose(span_means(table.batches(["time", "cpu"]), edges)[0],
                       steps(times, values, times[-1] + 3)[1][:-1], rtol=1e-12)
