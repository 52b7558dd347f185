"""What README.md says about the command line and the checkout stays true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from hierfair import cli, cli_commands
from hierfair.cli import main

from .conftest import EXPERIMENTS, ROOT, spec_with

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _section(text: str, heading: str) -> str:
    """The body of the README's ``## heading`` section, up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def _layout_paths(text: str) -> set[str]:
    """The first column of the README's layout table, backticks removed."""
    return set(re.findall(r"^\| `([^`]+)` \|", _section(text, "Layout"), re.M))


def _shown_subcommands(text: str) -> set[str]:
    """Every ``hierfair WORD`` in the README's code: fenced blocks and inline
    spans (prose such as "hierfair is ..." is not a command)."""
    code = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    code += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    words = set()
    for snippet in code:
        words.update(re.findall(r"(?:^|[\s/$(])hierfair ([a-z][a-z-]*)", snippet, re.M))
    return words


def _subcommands() -> set[str]:
    parser = cli._parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return set(sub.choices)


# -- hierfair report ---------------------------------------------------------------------
def test_report_prints_index_html_path_then_readme(tmp_path: Path, capsys):
    spec = tmp_path / "t.yaml"
    spec.write_text(yaml.safe_dump(spec_with()))
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{out / 'index.html'} ")
    assert lines[1].startswith(f"{out / 'README.md'} ")
    assert (out / "index.html").is_file() and (out / "README.md").is_file()


# -- hierfair list -----------------------------------------------------------------------
def _listed(out: str) -> tuple[str, list[str]]:
    """The experiments section's header line and its spec paths."""
    lines = out.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith("experiments")]
    rows = [line.split()[0] for line in lines[start + 1:] if line.startswith("  ")]
    return lines[start], rows


def test_list_outside_the_checkout_lists_the_shipped_experiments(tmp_path: Path, capsys,
                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)  # no ./experiments here
    assert main(["list"]) == 0
    header, paths = _listed(capsys.readouterr().out)
    assert str(EXPERIMENTS) in header  # it says which folder it lists
    shipped = sorted(str(p) for p in EXPERIMENTS.glob("*.yaml"))
    assert shipped and paths == shipped  # paths that work from here


def test_list_prefers_the_experiments_folder_of_the_working_directory(tmp_path: Path, capsys,
                                                                      monkeypatch):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "mine.yaml").write_text("name: mine\ndescription: my own\n")
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 0
    header, paths = _listed(capsys.readouterr().out)
    assert header == "experiments (experiments):"
    assert paths == [str(Path("experiments") / "mine.yaml")]


def test_list_with_no_experiments_anywhere_says_where_it_looked(tmp_path: Path, capsys,
                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    nowhere = tmp_path / "site-packages" / "experiments"
    # looked up where `hierfair list` is implemented (cli.py re-exports it)
    monkeypatch.setattr(cli_commands, "_shipped_experiments", lambda: nowhere)
    assert main(["list"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("experiments: none found (looked in ./experiments and ")
    assert str(nowhere) in last and "--experiments DIR" in last


def test_list_experiments_flag_lists_that_folder(tmp_path: Path, capsys):
    assert main(["list", "--experiments", str(EXPERIMENTS / "long")]) == 0
    header, paths = _listed(capsys.readouterr().out)
    assert header == f"experiments ({EXPERIMENTS / 'long'}):"
    assert paths == sorted(str(p) for p in (EXPERIMENTS / "long").glob("*.yaml"))


# -- the README itself -------------------------------------------------------------------
def test_layout_table_names_every_docs_file():
    listed = _layout_paths(README.read_text())
    docs = sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))
    assert len(docs) >= 10
    assert [d for d in docs if d not in listed] == []
    # and names nothing that is not there
    assert [p for p in listed if not (ROOT / p).exists()] == []


def test_every_subcommand_the_readme_shows_exists():
    shown = _shown_subcommands(README.read_text())
    # the extraction finds the commands the README is known to show ...
    assert {"list", "validate", "run", "allocate", "report", "schema", "audit"} <= shown
    # ... and catches one that does not exist
    assert _shown_subcommands("run `hierfair frobnicate` or\n```sh\nhierfair list\n```\n") \
        == {"frobnicate", "list"}
    assert sorted(shown - _subcommands()) == []


# -- HIERFAIR_DEBUG (README "Using it", docs/spec.md) -----------------------------------
def _a_bug(args):
    raise ZeroDivisionError("a bug")


@pytest.mark.parametrize("value", [None, "", "0"])
def test_internal_error_is_one_line_and_exit_70(value, capsys, monkeypatch):
    if value is None:
        monkeypatch.delenv("HIERFAIR_DEBUG", raising=False)
    else:
        monkeypatch.setenv("HIERFAIR_DEBUG", value)
    monkeypatch.setattr(cli, "_schema", _a_bug)
    assert main(["schema"]) == 70
    err = capsys.readouterr().err.splitlines()
    assert err == ["hierfair: internal error: ZeroDivisionError: a bug (a bug: please report "
                   "it; HIERFAIR_DEBUG=1 shows the traceback)"]


def test_hierfair_debug_lets_the_traceback_through(monkeypatch):
    monkeypatch.setenv("HIERFAIR_DEBUG", "1")
    monkeypatch.setattr(cli, "_schema", _a_bug)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["schema"])


def test_readme_and_spec_doc_document_hierfair_debug():
    assert "HIERFAIR_DEBUG=1" in _section(README.read_text(), "Using it")
    assert "HIERFAIR_DEBUG" in (DOCS / "spec.md").read_text()
