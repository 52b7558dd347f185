"""Result tables for analysts: identity columns in every detail table,
parameters as columns, one name for the root, hierfair.load/report, and
docs/results.md documenting every column that appears."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

import hierfair
from hierfair.errors import HierfairError
from hierfair.experiment.detail import DETAIL_TABLES

from .conftest import spec_with

DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> hierfair.experiment.loading.Results:
    out = tmp_path_factory.mktemp("res")
    data = spec_with(name="api", seeds=[0, 1],
                     algorithms=["drf", {"name": "pdrf", "params": {"alpha": 3.0}}],
                     grid={"workload.jobs[0].tasks": [30, 40]})
    hierfair.run(data, out=out, jobs=1)
    return hierfair.load(out / "api")


def test_every_detail_table_says_which_run_each_row_is(results):
    runs = results.runs
    tags = ["run", "algorithm", "label", "seed", "run_seed", "grid_point",
            "workload.jobs[0].tasks", "param_alpha"]
    assert len(runs) == 8 and (runs["status"] == "ok").all()
    for name in DETAIL_TABLES:
        table = results.table(name)
        if table.empty:
            continue
        assert list(table.columns[:len(tags)]) == tags, name
        # the tags are the run's own
        merged = table[tags].drop_duplicates().merge(runs[tags], on="run", suffixes=("", "_r"))
        for col in tags[1:]:
            assert merged[col].equals(merged[f"{col}_r"]) or \
                merged[col].isna().equals(merged[f"{col}_r"].isna()), (name, col)
    jobs = results.jobs
    first = jobs[jobs["name"] == jobs["name"].iloc[0]]
    assert set(zip(first["workload.jobs[0].tasks"], first["tasks"])) == {(30, 30), (40, 40)}


def test_params_are_columns(results):
    runs = results.runs
    assert runs.loc[runs["label"] == "pdrf", "param_alpha"].tolist() == [3.0] * 4
    assert runs.loc[runs["label"] == "drf", "param_alpha"].isna().all()


def test_the_root_has_one_name(results):
    alloc = results.allocations
    assert "(root)" in set(alloc["path"]) and "" not in set(alloc["path"])
    assert results.decisions["leaf"].dropna().isin(["A", "B"]).all()


def test_load_and_report_from_python(results, tmp_path):
    assert results.spec["name"] == "api"
    assert results.verdicts == []
    readme = hierfair.report(results.folder.parent)
    assert readme == results.folder.parent / "README.md" and "## api" in readme.read_text()
    with pytest.raises(HierfairError, match=r"not one spec's results .* load one of them, "
                       r"e\.g\. load\("):
        hierfair.load(results.folder.parent)
    with pytest.raises(HierfairError, match="no such results folder"):
        hierfair.load(tmp_path / "nosuch")
    with pytest.raises(HierfairError, match="no table 'job'"):
        results.table("job")


def test_detail_rows_are_stored_once(results):
    """Each row lives in its run's folder only; the spec-level table is those
    files in plan order, tagged (nothing assembled is stored beside them)."""
    folder = results.folder
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["runs.parquet"]
    jobs = results.jobs
    per_run = {run: pd.read_parquet(folder / "runs" / run / "jobs.parquet")
               for run in results.runs["run"]}
    assert list(jobs["run"].unique()) == list(results.runs["run"])  # plan order
    assert len(jobs) == sum(len(t) for t in per_run.values())
    for run, part in jobs.groupby("run", sort=False):
        mine = part[per_run[run].columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, per_run[run])


def test_a_folder_from_before_reads_and_then_upgrades(results, tmp_path):
    """A folder an older version wrote keeps assembled tables at its top: load
    and report read them as they are; a sweep into it removes them (they
    would be stale) and the same rows are read from the runs' files."""
    old = tmp_path / "out" / "api"
    shutil.copytree(results.folder, old)
    (old / "manifest.json").unlink()  # older versions wrote none
    jobs = results.jobs
    jobs.to_parquet(old / "jobs.parquet", index=False)
    legacy = jobs.iloc[:3]
    legacy.to_parquet(old / "jobs.parquet", index=False)  # unmistakably the file's rows
    pd.testing.assert_frame_equal(hierfair.load(old).jobs, legacy)
    hierfair.report(old.parent)
    from hierfair.report.plots import plot_waits

    assert plot_waits(old) == old / "waits.png"  # from the table at the top, read once
    hierfair.run(results.spec, out=old.parent, jobs=1)  # all cached
    assert not (old / "jobs.parquet").exists()
    pd.testing.assert_frame_equal(hierfair.load(old).jobs, jobs)


def documented() -> dict[str, set[str]]:
    """Backticked column names in the first cell of each table row, per section."""
    out: dict[str, set[str]] = {}
    section = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("| `"):
            out.setdefault(section, set()).update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return out


def test_docs_results_documents_every_column(results):
    doc = documented()
    ident = doc["Identity columns (runs and every detail table)"]
    resources = set(results.spec["cluster"]["resources"])

    def covered(table: str, col: str) -> bool:
        return (col in doc.get(table, set()) or col in ident
                or col.startswith("param_") or "." in col or "[" in col  # grid, params
                or (col in resources and "<resource>" in doc.get(table, set()))
                or (col.startswith("util_") and "util_<resource>" in doc["runs"]))

    for name in ("runs", *DETAIL_TABLES):
        frame = results.runs if name == "runs" else results.table(name)
        missing = [c for c in frame.columns if not covered(name, c)]
        assert not missing, (name, missing)
