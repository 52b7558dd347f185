"""Inputs and integrity (issue 10): every reproducer ends in one clear line and
exit 2, or runs; a cached run knows which data it came from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.limits import MAX_AMOUNT, MAX_TIME
from hierfair.experiment.memory import Size, format_bytes, parse_bytes

from .conftest import spec_with

SWIM_DAY = "FB-2009_samples_24_times_1hr_0_first50jobs.tsv"


def _job(**kw):
    job = {"queue": "A", "tasks": 2, "demand": {"cpu": 1, "mem": 1}, "duration": 1}
    job.update(kw)
    return job


def _servers(**kw):
    server = {"count": 1, "capacity": {"cpu": 9, "mem": 18}}
    server.update(kw)
    return {"resources": ["cpu", "mem"], "servers": [server]}


def one_line_error(capsys, argv: list[str]) -> str:
    """Run the CLI; assert exit 2 and exactly one stderr line without a traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and "Warning" not in err, err
    return err


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# Each: the spec, then what the one line must say (field and problem).
REFUSED = {
    "inf capacity": (spec_with(cluster=_servers(capacity={"cpu": float("inf"), "mem": 1})),
                     "cluster.servers[0].capacity.cpu: not a finite number"),
    "nan weight": (spec_with(hierarchy={"A": {"weight": float("nan")}, "B": {}}),
                   "hierarchy.A.weight: not a finite number"),
    "inf duration": (spec_with(workload={"jobs": [_job(duration=float("inf"))]}),
                     "workload.jobs[0].duration: not a finite number"),
    "inf submit": (spec_with(workload={"jobs": [_job(submit=float("inf"))]}),
                   "workload.jobs[0].submit: not a finite number"),
    "inf pdrf param": (spec_with(algorithms=[{"name": "pdrf", "params": {"alpha": float("inf")}}]),
                       "algorithms[0].params.alpha: not a finite number"),
    "negative seed": (spec_with(seeds=[-1]), "seeds[0]: Input should be greater than or equal"),
    "huge seed": (spec_with(seeds=[10**30]), "seeds[0]: too large"),
    "seed past 2^32": (spec_with(seeds=[2**32]), "seeds[0]: Input should be less than or equal"),
    "dict as kind": (spec_with(workload={"kind": {"": None}}), "workload.kind: unknown kind"),
    "10^30 tasks": (spec_with(workload={"jobs": [_job(tasks=10**30)]}), "too large"),
    "10^15 tasks": (spec_with(workload={"jobs": [_job(tasks=10**15, duration=1)]}),
                    "workload: tasks: 1,000,000,000,000,000 exceed the limit"),
    "10^30 servers": (spec_with(cluster=_servers(count=10**30)), "too large"),
    "10^12 servers": (spec_with(cluster=_servers(count=10**12)),
                      "cluster.servers: servers: 1,000,000,000,000 exceed the limit"),
    "capacity 1e308": (spec_with(cluster=_servers(capacity={"cpu": 1e308, "mem": 1})),
                       "cluster.servers[0].capacity.cpu: too large (limit 2^53)"),
    "huge duration": (spec_with(workload={"jobs": [_job(duration=1e15)]}),
                      "workload.jobs[0].duration: Input should be less than or equal"),
    "huge submit": (spec_with(workload={"jobs": [_job(submit=1e12)]}),
                    "workload.jobs[0].submit: Input should be less than or equal"),
    "generator scaled by 10^12": (
        spec_with(workload={"kind": "facebook-bins", "jobs": 10**12, "small_queues": ["A"],
                            "large_queues": ["B"], "gpu_queues": []}),
        "workload: tasks:"),
    "tiny mtbf": (spec_with(faults={"mtbf": 1e-9}), "faults.mtbf: Input should be greater"),
    "bad grid path": (spec_with(grid={"hierarchy.levles": [2]}),
                      "hierarchy.levles (at grid point hierarchy.levles=2)"),
    "bad grid value": (spec_with(grid={"workload.jobs[0].tasks": [2, -1]}),
                       "workload.jobs[0].tasks (at grid point workload.jobs[0].tasks=-1)"),
    "inf in a grid": (spec_with(grid={"cluster.servers[0].capacity.cpu": [1, float("inf")]}),
                      "grid.cluster.servers[0].capacity.cpu[1]: not a finite number"),
    "bad claim": (spec_with(claims=[{"claim": "x", "source": "y", "checks": [
        {"algorithm": "drf", "node": "nope", "equals": 1}]}]),
        "claims[0].checks[0].node: no such node"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_refuses_what_run_refuses_in_one_line(case, command, tmp_path, capsys):
    data, expected = REFUSED[case]
    path = write(tmp_path, data)
    out = tmp_path / "out"
    argv = ["validate", str(path)] if command == "validate" else \
        ["run", str(path), "--out", str(out), "--jobs", "1"]
    err = one_line_error(capsys, argv)
    assert f"{path}: " in err and expected in err, err
    assert not out.exists()  # refused before anything is written


@pytest.mark.parametrize("text, problem", [
    ("name: x\ncluster: &a {x: *a}\n", "cluster.x: a YAML alias refers to a node that contains it"),
    ("name: x\ncluster: " + "[" * 3000 + "]" * 3000 + "\n", "malformed YAML: nested too deeply"),
    ("name: x\nhierarchy: " + "{a: " * 250 + "{}" + "}" * 250 + "\n",
     "nested too deeply (limit 200 levels)"),
])
def test_recursive_or_deep_yaml_is_one_line(tmp_path, capsys, text, problem):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    assert problem in one_line_error(capsys, ["validate", str(path)])


def test_memory_estimate_names_the_field_and_can_be_raised(tmp_path, capsys):
    data = spec_with(workload={"jobs": [_job(tasks=2_000_000)]})
    path = write(tmp_path, data)
    err = one_line_error(capsys, ["validate", str(path), "--max-memory", "200M"])
    assert "workload: a run needs about" in err and "the limit is 200.0 MiB" in err, err
    assert main(["validate", str(path), "--max-memory", "8G"]) == 0
    assert "ok" in capsys.readouterr().out


def test_the_estimate_bounds_a_measured_run():
    # Measured peak of the SWIM day run in docs/spec.md: the estimate stays above it.
    size = Size(servers=100, nodes=10, depth=2, resources=2, jobs=770, tasks=6611)
    assert 150 * 2**20 < size.estimate_bytes() < 400 * 2**20


def test_sizes_parse_and_print():
    assert parse_bytes("8G") == 8 * 2**30 and parse_bytes("512MiB") == 512 * 2**20
    assert parse_bytes("1000") == 1000
    for bad in ("x", "-1G", "inf"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert format_bytes(1536) == "1.5 KiB"


def test_bad_max_memory_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["validate", str(write(tmp_path, spec_with())), "--max-memory", "lots"])
    assert exit_.value.code == 2
    assert "not a size such as 8G" in capsys.readouterr().err


def test_limits_are_the_documented_ones():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "spec.md").read_text()
    for value in (f"{MAX_TIME:g}", f"{MAX_AMOUNT:g}", "2^53", "2^32"):
        assert value in doc, value


# -- traces -----------------------------------------------------------------------
def swim_spec(tmp_path: Path, trace: str, **workload) -> Path:
    data = spec_with(cluster=_servers(count=4), hierarchy={"A": {}, "B": {}},
                     workload={"kind": "swim", "files": [trace], "max_tasks": 5,
                               "map_demand": {"cpu": 1}, "reduce_demand": {"cpu": 1},
                               **workload})
    return write(tmp_path, data)


def corrupt(tmp_path: Path, day: Path, line: int, old: str, new: str) -> Path:
    lines = day.read_text().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    path = tmp_path / "day.tsv"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("old, new, problem", [
    ("\t", "\t\x00", "the line holds a NUL byte"),
    ("\t", '\t"', "the line holds a quote character"),
])
def test_a_corrupt_trace_line_is_named(tmp_path, trace, capsys, old, new, problem):
    bad = corrupt(tmp_path, trace(SWIM_DAY), 7, old, new)
    err = one_line_error(capsys, ["validate", str(swim_spec(tmp_path, str(bad)))])
    assert f"{bad}: line 7: {problem}" in err, err
    # skipping bad lines is announced and recorded
    path = swim_spec(tmp_path, str(bad), on_bad_line="skip")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    assert "note: " in (err := capsys.readouterr().err) and "1 bad lines skipped" in err
    runs = pd.read_parquet(tmp_path / "out" / "t" / "runs.parquet")
    assert (runs["input_skipped_lines"] == 1).all()


def test_skipped_lines_are_printed_once(tmp_path, trace, capsys):
    bad = corrupt(tmp_path, trace(SWIM_DAY), 3, "\t", "\t\x00")
    path = swim_spec(tmp_path, str(bad), on_bad_line="skip")
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if line.startswith("hierfair: note: ")]
    assert notes == [f"hierfair: note: {path}: 1 bad lines skipped (on_bad_line: skip)"], err
    # the cluster's memory, which SWIM jobs never ask for, is said once too
    assert [line for line in err if line not in notes] == [
        f"hierfair: warning: {path}: no job asks for mem: util_mem will be 0 (give jobs mem "
        "demands, e.g. workload.extra_demands; docs/workloads.md)"], err


def test_an_empty_trace_is_an_error(tmp_path, capsys):
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    err = one_line_error(capsys, ["validate", str(swim_spec(tmp_path, str(empty)))])
    assert f"{empty}: the trace has no data lines" in err


def test_out_of_order_submits_are_sorted_with_a_note(tmp_path, trace, capsys):
    lines = trace(SWIM_DAY).read_text().splitlines(keepends=True)
    lines[4], lines[5] = lines[5], lines[4]
    swapped = tmp_path / "swapped.tsv"
    swapped.write_text("".join(lines))
    path = swim_spec(tmp_path, str(swapped))
    assert main(["validate", str(path)]) == 0
    assert "swapped.tsv: 1 lines out of submit-time order, sorted by submit time" in \
        capsys.readouterr().err


# -- the run cache knows its input --------------------------------------------------------
def test_a_run_over_a_trace_that_appears_or_changes_is_rerun(tmp_path, trace, capsys,
                                                             monkeypatch):
    day = trace(SWIM_DAY)
    monkeypatch.delenv("HIERFAIR_DATA", raising=False)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    spec = swim_spec(tmp_path, "day.tsv", fallback="synthetic", fallback_jobs=20)
    out = tmp_path / "out"
    run = ["run", str(spec), "--out", str(out), "--jobs", "1", "--data-dir", str(data_dir)]

    assert main(run) == 0  # no trace: the fallback, said on stderr and recorded
    err = capsys.readouterr().err
    assert "note: " in err and "SWIM file day.tsv not found; facebook-bins generator" in err
    first = pd.read_parquet(out / "t" / "runs.parquet")
    assert first["input_fallback"].all()

    shutil.copy(day, data_dir / "day.tsv")  # the trace appears
    assert main(run) == 0
    err = capsys.readouterr().err
    assert "cached" not in err and "not found" not in err
    second = pd.read_parquet(out / "t" / "runs.parquet")
    assert not second["input_fallback"].any()
    assert set(second["input_id"]).isdisjoint(first["input_id"])

    assert main(run) == 0  # unchanged: served from the cache
    assert "1 of 1 runs cached" in capsys.readouterr().err

    with open(data_dir / "day.tsv", "a") as f:  # the trace changes
        f.write("job_extra\t3590\t1\t1000\t0\t0\n")
    assert main(run) == 0
    assert "cached" not in capsys.readouterr().err
    third = pd.read_parquet(out / "t" / "runs.parquet")
    assert set(third["input_id"]).isdisjoint(second["input_id"])
    assert third["jobs"].iloc[0] == second["jobs"].iloc[0] + 1


def test_validate_announces_a_fallback(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HIERFAIR_DATA", raising=False)
    spec = swim_spec(tmp_path, "nowhere.tsv", fallback="synthetic", fallback_jobs=20)
    assert main(["validate", str(spec)]) == 0
    captured = capsys.readouterr()
    assert "ok" in captured.out and "fallback" in captured.out
    assert captured.err.startswith(f"hierfair: note: {spec}: SWIM file nowhere.tsv not found")


def test_an_error_inside_a_run_is_printed_once(tmp_path, capsys, broken_fifo):
    path = write(tmp_path, spec_with(algorithms=["drf", "fifo"]))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--jobs", "1"]) == 1
    assert capsys.readouterr().err.count("a bug in a policy") == 1


@pytest.mark.parametrize("argv, expected", [
    (["run", "SPEC", "--out", "OUT", "--jobs", "100000000000"],
     "--jobs: must be from 0 (this process) to"),
    (["run", "SPEC", "--out", "OUT", "--timeout", "nan"], "--timeout: must be a number"),
    (["run", "SPEC", "--out", "OUT", "--timeout", "1e300"], "--timeout: must be a number"),
    (["allocate", "SPEC", "-a", "drf", "--seed", "-5"], "--seed: must be from 0 to"),
    (["allocate", "SPEC", "-a", "drf", "--churn", "-1"], "--churn: must be from 0 to"),
])
def test_command_line_numbers_are_bounded(tmp_path, capsys, argv, expected):
    path = write(tmp_path, spec_with())
    argv = [str(path) if a == "SPEC" else str(tmp_path / "out") if a == "OUT" else a
            for a in argv]
    assert expected in one_line_error(capsys, argv)
    assert not (tmp_path / "out").exists()


def test_a_bug_is_one_line_unless_debugging(tmp_path, capsys, monkeypatch):
    import hierfair.cli as cli_module

    def boom(args):
        raise KeyError("x")

    monkeypatch.setattr(cli_module, "_validate", boom)
    assert main(["validate", str(write(tmp_path, spec_with()))]) == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: KeyError" in err
    monkeypatch.setenv("HIERFAIR_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["validate", str(write(tmp_path, spec_with()))])


def test_a_control_character_in_a_key_keeps_the_error_on_one_line(tmp_path, capsys):
    path = write(tmp_path, {**spec_with(), "\x1e": 1})
    err = one_line_error(capsys, ["validate", str(path)])
    assert f"{path}: \\x1e: unknown key" in err
