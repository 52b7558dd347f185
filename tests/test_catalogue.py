"""The catalogue of the papers' claims and its place at the top of the report."""

from __future__ import annotations

import re
from pathlib import Path

from hierfair.experiment.spec import read_yaml
from hierfair.experiment.sweep import sweep
from hierfair.report import write_report
from hierfair.report.catalogue import catalogue_table, read_catalogue

from .conftest import EXPERIMENTS, ROOT, spec_with

CATALOGUE = ROOT / "docs" / "reproductions.md"


def test_the_catalogue_lists_every_paper_with_unique_ids():
    items = read_catalogue(CATALOGUE)
    ids = [item.id for item in items]
    assert len(ids) == len(set(ids)) >= 80
    assert {i.split("-")[0] for i in ids} == {"hdrf", "mch", "dff", "drf", "pdrf", "drfh",
                                              "psdsf",
                                              # production schedulers' tests and reports
                                              "kueue", "volcano", "yarn", "mesos", "yunikorn"}
    assert all(item.claim for item in items)


def test_every_claim_id_in_the_specs_is_in_the_catalogue():
    known = {item.id for item in read_catalogue(CATALOGUE)}
    for path in sorted(EXPERIMENTS.glob("**/*.yaml")):
        for claim in read_yaml(path).get("claims") or []:
            if claim.get("id"):
                assert claim["id"] in known, (path.name, claim["id"])


def test_the_report_opens_with_every_item_checked_or_not(tmp_path):
    data = spec_with(algorithms=["drf"], claims=[{
        "id": "drf-sec41-example", "claim": "A gets 3 tasks", "source": "DRF §4.1",
        "published": "3 tasks", "checks": [
            {"algorithm": "drf", "node": "A", "resource": "tasks", "equals": 3}]}])
    sweep(data, tmp_path, jobs=1)
    write_report(tmp_path, catalogue=CATALOGUE)
    readme = (tmp_path / "README.md").read_text()
    items = read_catalogue(CATALOGUE)
    assert f"{len(items)} checkable statements" in readme
    assert f"1 checked at the paper's own setting, 0 only by a proxy, {len(items) - 1} not " \
        "checked yet" in readme
    row = next(line for line in readme.splitlines() if line.startswith("| `drf-sec41-example`"))
    assert "[t](#t), faithful" in row and "| 3 tasks |" in row and row.endswith("| holds |")
    assert sum(line.endswith("| not checked | — | — |") for line in readme.splitlines()) \
        == len(items) - 1


def test_a_small_catalogue_by_hand(tmp_path: Path):
    text = ("# x\n\n### `a-1` — §1 · missing\n- **Claim.** It holds,\n  mostly.\n"
            "- **Published.** 42 %\n- **Setting.** any\n\n### `a-2` — §2 · proxy\n"
            "- **Claim.** Another.\n")
    path = tmp_path / "c.md"
    path.write_text(text)
    a1, a2 = read_catalogue(path)
    assert (a1.id, a1.where, a1.claim, a1.published) == ("a-1", "§1", "It holds, mostly.", "42 %")
    assert (a2.id, a2.label, a2.published) == ("a-2", "proxy", "")
    verdict = {"id": "a-2", "proxy": "smaller", "published": "", "checks": [
        {"algorithm": "x", "measured": 1.0}], "verdict": "refuted"}
    rows = catalogue_table([a1, a2], [("s", verdict)], lambda v: v["verdict"],
                           lambda c: str(c["measured"]))
    assert "0 checked at the paper's own setting, 1 only by a proxy, 1 not checked yet" in rows[2]
    assert rows[-2] == ("| `a-2` | §2 | Another. | — | [s](#s), proxy: smaller | x 1.0 | "
                        "refuted |")


def test_the_catalogue_labels_agree_with_the_specs():
    """Each item's label in docs/reproductions.md (heading and summary table)
    is what the spec claims carrying its id make it: faithful, proxy or partly
    proxy (and in what ways), or missing (issue 25: the page had drifted)."""
    from hierfair.experiment.coverage import claims_by_item, disagreements, spec_files

    by_item = claims_by_item(spec_files(EXPERIMENTS))
    items = read_catalogue(CATALOGUE)
    headings = {item.id: item.label for item in items}
    assert disagreements(headings, by_item) == []
    tables = dict(re.findall(r"^\| `([a-z0-9-]+)` \| [^|]+ \| ([^|]+) \|$",
                             CATALOGUE.read_text(), re.M))
    assert set(tables) == set(headings)
    assert disagreements({k: v.strip() for k, v in tables.items()}, by_item) == []


def test_every_proxy_claim_says_how_it_differs():
    for path in sorted(EXPERIMENTS.glob("**/*.yaml")):
        for claim in read_yaml(path).get("claims") or []:
            if claim.get("proxy"):
                assert claim.get("proxy_kind"), (path.name, claim["claim"][:60])


def test_production_claims_are_filed_under_their_system():
    """A production scheduler's claim is grouped under its system in the
    report (its source names it first), not under "other sources"."""
    import yaml

    from hierfair.report.fmt import paper_of

    systems = {"KUEUE", "VOLCANO", "YARN", "MESOS", "YUNIKORN"}
    for path in sorted(EXPERIMENTS.glob("prod-*.yaml")):
        for claim in yaml.safe_load(path.read_text()).get("claims") or []:
            assert paper_of(claim["source"]) in systems, (path.name, claim["source"])
