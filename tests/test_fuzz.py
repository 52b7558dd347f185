"""Fuzzing: mutated copies of the shipped specs and corrupted trace lines.

Whatever the input, hierfair answers with exit 0 (and then ``run`` plans the
same runs) or with exit 2 and exactly one line on stderr: never a traceback,
never a file outside ``--out``.  ``make test`` runs a budgeted number of
cases; ``HIERFAIR_FUZZ=thorough`` (``make fuzz``) runs thousands, and
actually runs one accepted spec in ten (with a timeout: a hang is a timeout,
recorded, never a stuck test).
"""

from __future__ import annotations

import io
import math
import os
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierfair.cli import main

from .conftest import EXPERIMENTS

THOROUGH = os.environ.get("HIERFAIR_FUZZ") == "thorough"
SPEC_CASES = 2500 if THOROUGH else 120
TRACE_CASES = 1000 if THOROUGH else 60
FUZZ = settings(max_examples=SPEC_CASES, deadline=None, derandomize=not THOROUGH,
                suppress_health_check=list(HealthCheck))

SHIPPED = {p.name: p.read_text() for p in sorted(EXPERIMENTS.glob("*.yaml"))}

ODD_VALUES = [None, "", "x", "ünïcødé ☃ \u202e", "n1/../n2", -1, 0, 1, 0.5, -0.0, 10**30, 2**63,
              -(2**63), 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, True, False, [],
              {}, [1, 2], {"a": 1}, {"kind": {"": None}}, [None], "1e999", "0x10", "\x00"]


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_clean(code: int, err: str, what: str) -> None:
    assert "Traceback" not in err, (what, err)
    if code == 2:
        lines = err.splitlines()
        # one line per problem (validate reports them all), after any notes
        errors = [line for line in lines if line.startswith("hierfair: error: ")]
        assert errors and lines[-len(errors):] == errors, (what, err)
        assert all(line.startswith("hierfair: note: ") for line in lines[:-len(errors)]), \
            (what, err)
    else:
        assert code == 0, (what, code, err)
        assert all(line.startswith(("hierfair: note: ", "hierfair: warning: "))
                   for line in err.splitlines()), (what, err)


# -- spec mutations ------------------------------------------------------------------
def _paths(node: Any, here: tuple = ()) -> list[tuple]:
    """Every location in the data (mapping keys and list indices), root first."""
    out = [here]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*here, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*here, i))
    return out


def _get(node: Any, path: tuple) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated_spec(draw) -> str:
    name = draw(st.sampled_from(sorted(SHIPPED)))
    data = yaml.safe_load(SHIPPED[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(data)[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, last = _get(data, path[:-1]), path[-1]
        kind = draw(st.sampled_from(["delete", "value", "value", "rename", "alias", "scale"]))
        if kind == "delete":
            del parent[last]
        elif kind == "value":
            parent[last] = draw(st.sampled_from(ODD_VALUES) | st.text(max_size=8)
                                | st.integers() | st.floats())
        elif kind == "rename" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = parent.pop(last)
        elif kind == "alias":  # the same object twice: yaml writes an anchor and an alias
            source = draw(st.sampled_from(_paths(data)))
            parent[last] = _get(data, source)
            if path[:len(source)] == source:  # an ancestor: the data now contains itself
                break
        elif kind == "scale" and isinstance(parent[last], int | float) \
                and not isinstance(parent[last], bool):
            parent[last] = parent[last] * draw(st.sampled_from([10**6, 10**12, -1, 0]))
    try:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, RecursionError, ValueError):
        text = SHIPPED[name]
    if draw(st.booleans()) and draw(st.booleans()):  # a key given twice
        text += text.splitlines()[0] + "\n"
    if draw(st.integers(0, 9)) == 0:  # raw text damage
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(["\t", ": :", "{", "&a", "*b", "\x00", "'"])) \
            + text[cut:]
    return text


@FUZZ
@given(text=mutated_spec(), really=st.integers(0, 9))
def test_mutated_specs_are_accepted_or_refused_in_one_line(tmp_path_factory, trace_folder,
                                                           text, really):
    root = tmp_path_factory.mktemp("fuzz")
    spec = root / "spec.yaml"
    spec.write_text(text)
    out = root / "out"
    # the real traces when there are any; without them, specs fall back or are refused
    data_dir = ["--data-dir", str(trace_folder)] if trace_folder.is_dir() else []
    data_dir += ["--max-memory", "2G"]
    code, stdout, err = cli(["validate", str(spec), *data_dir])
    assert_clean(code, err, text)
    execute = THOROUGH and really == 0 and code == 0
    command = ["run", str(spec), "--out", str(out), *data_dir, "--jobs", "1"]
    run_code, _, run_err = cli(command + (["--timeout", "5"] if execute else ["--dry-run"]))
    if code == 2:
        assert run_code == 2 and run_err.splitlines()[-1] == err.splitlines()[-1], (text, err)
    elif execute:  # accepted: every run finishes or times out, none fails
        assert run_code in (0, 1) and "failed" not in run_err, (text, run_err)
    else:
        assert run_code == 0, (text, run_err)
    assert sorted(p.name for p in root.iterdir()) in (["spec.yaml"], ["out", "spec.yaml"])


# -- trace lines --------------------------------------------------------------------
SWIM_SAMPLE = "FB-2009_samples_24_times_1hr_0_first50jobs.tsv"
DAMAGE = ["\x00", '"', "'", "\t", "\t\t", "-1", "1e999", "nan", "inf", "", "ü", "\r", " ",
          "99999999999999999999999", "0x1F", ";", ",", "\\N", "\n", "\n\n"]


@st.composite
def damaged_trace(draw, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        how = draw(st.sampled_from(["insert", "replace-field", "drop-field", "swap",
                                    "truncate", "delete"]))
        fields = line.rstrip("\n").split("\t")
        if how == "insert":
            cut = draw(st.integers(0, len(line)))
            line = line[:cut] + draw(st.sampled_from(DAMAGE) | st.text(max_size=3)) + line[cut:]
        elif how == "replace-field":
            fields[draw(st.integers(0, len(fields) - 1))] = draw(
                st.sampled_from(DAMAGE) | st.text(max_size=4))
            line = "\t".join(fields) + "\n"
        elif how == "drop-field" and len(fields) > 1:
            fields.pop(draw(st.integers(0, len(fields) - 1)))
            line = "\t".join(fields) + "\n"
        elif how == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[j], line = line, lines[j]
        elif how == "truncate":
            line = line[: draw(st.integers(0, len(line)))]
        elif how == "delete":
            line = ""
        lines[i] = line
    return "".join(lines), draw(st.sampled_from(["error", "skip"]))


@settings(max_examples=TRACE_CASES, deadline=None, derandomize=not THOROUGH,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_damaged_trace_lines_are_read_or_named(tmp_path_factory, trace, data):
    text, on_bad_line = data.draw(damaged_trace(trace(SWIM_SAMPLE).read_text()), label="case")
    root = tmp_path_factory.mktemp("trace")
    damaged = root / "day.tsv"
    damaged.write_text(text, encoding="utf-8", errors="surrogatepass")
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "t", "cluster": {"resources": ["cpu", "mem"],
                                 "servers": [{"count": 4, "capacity": {"cpu": 8, "mem": 16}}]},
        "hierarchy": {"A": {}, "B": {}},
        "workload": {"kind": "swim", "files": [str(damaged)], "max_tasks": 5,
                     "on_bad_line": on_bad_line},
        "algorithms": ["drf"]}))
    code, _, err = cli(["validate", str(spec)])
    assert_clean(code, err, text)
    if code == 2:
        assert damaged.name in err or "workload" in err, err


def test_the_fuzzer_sees_every_shipped_spec():
    assert len(SHIPPED) >= 20
    assert all(yaml.safe_load(t).get("name") for t in SHIPPED.values())

