"""A fresh machine (issue 24): a clone with no traces anywhere, so
``$HIERFAIR_DATA`` names an empty folder and nothing is beside the checkout.

Every spec of ``make reproduce`` (the same glob as its recipe) validates, with
no ``--data-dir``: exit 0, and every spec that looks for a trace the checkout
does not ship says on stderr that its synthetic generator stands in
(``fallback: synthetic``).  Validate only: a few seconds for all of them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hierfair.datasets.base as datasets_base
from hierfair.cli import main
from hierfair.datasets import WORKLOAD_KINDS
from hierfair.datasets.base import DATA_ENV
from hierfair.experiment.spec import read_yaml

from .conftest import ROOT


def reproduce_specs() -> list[str]:
    """The specs ``make reproduce`` runs: the Makefile recipe's ``hierfair run``
    arguments, globbed in the checkout as make's shell does (paths relative to it)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^reproduce:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe, "no reproduce target in the Makefile"
    run = re.search(r"hierfair run (.*?)(?: --|$)", recipe.group(1), re.MULTILINE)
    assert run, f"reproduce runs no specs:\n{recipe.group(1)}"
    specs = [str(path.relative_to(ROOT)) for pattern in run.group(1).split()
             for path in sorted(ROOT.glob(pattern))]
    assert len(specs) >= 20, (run.group(1), specs)
    return specs


SPECS = reproduce_specs()


def fallback_note(spec: str, missing: str) -> re.Pattern:
    """What validate prints for a trace that ``fallback: synthetic`` replaces
    (datasets/swim.py, datasets/google.py: ``<kind> file NAME not found;
    <generator> generator stands in (N jobs, fallback: synthetic)``)."""
    return re.compile(rf"^hierfair: note: {re.escape(spec)}: .*\bfile {re.escape(missing)} "
                      r"not found; [\w-]+ generator stands in \(\d+ jobs, fallback: "
                      r"synthetic\)$", re.MULTILINE)


def reads_a_file(spec: str) -> bool:
    """Whether the spec's workload kind reads a file (its size "depends on a
    file": hierfair.datasets.WORKLOAD_KINDS)."""
    kind = (read_yaml(ROOT / spec).get("workload") or {}).get("kind")
    return kind in WORKLOAD_KINDS and WORKLOAD_KINDS[kind].size is None


@pytest.fixture
def fresh_machine(tmp_path, monkeypatch) -> Path:
    """$HIERFAIR_DATA at an empty folder; the working directory the checkout,
    as under make."""
    empty = tmp_path / "no-traces"
    empty.mkdir()
    monkeypatch.setenv(DATA_ENV, str(empty))
    monkeypatch.chdir(ROOT)
    return empty


@pytest.fixture
def lookups(monkeypatch) -> dict[str, Path | None]:
    """Every trace file a workload looks for (as the spec names it) and where it
    was found (None: nowhere), seen at hierfair's one lookup, resolve_trace."""
    seen: dict[str, Path | None] = {}
    real = datasets_base.resolve_trace

    def spy(name, *args, **kwargs):
        try:
            path = real(name, *args, **kwargs)
        except Exception:
            seen[name] = None
            raise
        seen[name] = Path(path).resolve()
        return path

    for module in list(sys.modules.values()):  # also where it is imported by name
        if (module is not None and module.__name__.startswith("hierfair")
                and getattr(module, "resolve_trace", None) is real):
            monkeypatch.setattr(module, "resolve_trace", spy)
    return seen


@pytest.mark.parametrize("spec", SPECS)
def test_a_reproduce_spec_validates_without_traces(spec, fresh_machine, lookups, capsys):
    code = main(["validate", spec])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"{spec}: ok ("), out
    others = [line for line in err.splitlines()
              if not line.startswith((f"hierfair: note: {spec}: ",
                                      f"hierfair: warning: {spec}: "))]
    assert not others, err
    if reads_a_file(spec):  # the spy sees the lookups the datasets code makes
        assert lookups, f"{spec}: a trace kind, but no trace file was looked for"
    for name, found in lookups.items():
        if found is None:  # not shipped: the fallback stands in, and says so
            assert fallback_note(spec, name).search(err), (name, err)
            assert " -- fallback: " in out and name in out, out
        else:  # found on a machine without traces: it must be in the checkout
            assert found.is_relative_to(ROOT), (f"{spec} reads {name} from {found}, "
                                                "which a fresh clone does not have")


def test_make_reproduce_specs_validate_in_one_process_without_traces(tmp_path):
    """As a newcomer would: the installed command, the whole list at once."""
    empty = tmp_path / "no-traces"
    empty.mkdir()
    script = Path(sys.executable).with_name("hierfair")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "hierfair"]
    env = {**os.environ, DATA_ENV: str(empty)}
    done = subprocess.run([*command, "validate", *SPECS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    ok = [line.split(": ok (", 1)[0] for line in done.stdout.splitlines() if ": ok (" in line]
    assert ok == SPECS, done.stdout
    assert all(line.startswith(("hierfair: note: ", "hierfair: warning: "))
               for line in done.stderr.splitlines()), done.stderr
    fallbacks = [spec for spec in SPECS if re.search(
        rf"^hierfair: note: {re.escape(spec)}: .* generator stands in \(.*fallback: "
        r"synthetic\)$", done.stderr, re.MULTILINE)]
    # the specs that fall back are those that read a trace the checkout lacks
    assert fallbacks and set(fallbacks) <= {s for s in SPECS if reads_a_file(s)}, \
        (fallbacks, done.stderr)
