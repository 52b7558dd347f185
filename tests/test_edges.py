"""Issue 26, the edges of the file system and the process: names that become
paths are one safe path component, checked by
validate with the field named; a run never writes outside --out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hierfair.cli import main

from .conftest import spec_with

BAD_LABELS = ["../../../PWNED", "/tmp/PWNED", "a/b", "nul\x00byte", "x" * 101, ".hidden",
              "new\nline"]


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("label", BAD_LABELS)
def test_a_label_that_is_not_one_safe_file_name_is_refused(tmp_path, capsys, label):
    before = set(tmp_path.parent.iterdir())
    path = write(tmp_path, spec_with(algorithms=[{"name": "drf", "label": label}]))
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "out")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "algorithms[0]" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "out").exists()
    assert set(tmp_path.parent.iterdir()) == before  # nothing written beside


def test_a_name_too_long_for_a_folder_is_refused(tmp_path, capsys):
    path = write(tmp_path, spec_with(name="n" * 101))
    assert main(["validate", str(path)]) == 2
    assert "name" in capsys.readouterr().err


def test_two_algorithms_with_one_label_are_refused(tmp_path, capsys):
    path = write(tmp_path, spec_with(algorithms=[{"name": "drf", "label": "x"},
                                                 {"name": "hdrf", "label": "x"}]))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "algorithms[1] and algorithms[0] are both labelled 'x'" in err
    # an algorithm named twice without labels is the same collision
    path = write(tmp_path, spec_with(algorithms=["drf", "drf"]))
    assert main(["validate", str(path)]) == 2


def test_a_class_name_is_a_label(tmp_path):
    # module:Class labels its runs by the class's name, which is a safe name
    path = write(tmp_path, spec_with(algorithms=[{"name": "hierfair.algorithms.drf:WeightedDRF"}]))
    assert main(["validate", str(path)]) == 0


def test_two_specs_of_one_name_in_one_command_are_refused(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path in (a, b):
        path.write_text(yaml.safe_dump(spec_with(name="same")))
    out = tmp_path / "out"
    assert main(["run", str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.yaml" in err[0] and "a.yaml has the same name" in err[0]
    assert not out.exists()  # refused before anything ran


def test_validate_names_the_code_a_spec_would_import(tmp_path, capsys):
    path = write(tmp_path, spec_with(algorithms=["drf", {"name": "hierfair.algorithms.drf:WeightedDRF",
                                                        "label": "mine"}]))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "imports and runs code from: hierfair.algorithms.drf" in out
    shipped = write(tmp_path, spec_with())
    assert main(["validate", str(shipped)]) == 0
    assert "imports" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "audit"])
def test_an_out_that_is_a_file_is_one_line_and_exit_2(tmp_path, capsys, command):
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    spec = write(tmp_path, spec_with())
    args = {"run": ["run", str(spec)], "audit": ["audit", "-n", "1"]}[command]
    for out in (afile, afile / "sub"):
        assert main([*args, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        # the path is named (its middle elided when long: the file's name stays)
        assert len(err) == 1 and "--out" in err[0] and f"{afile.name}" in err[0]
        assert str(afile) in err[0] or "..." in err[0]
    assert afile.read_text() == "mine\n"


def test_a_spec_that_is_not_utf8_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: t\ndescription: caf\xe9\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "line 2" in err and "not UTF-8" in err and "\n" not in err


def test_a_closed_stdout_stops_a_run_with_one_line_and_a_rerun_completes(tmp_path):
    import os
    import subprocess
    import sys

    specs = []
    for name in ("first", "second"):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec_with(name=name)))
        specs.append(str(path))
    out = tmp_path / "out"
    read, write_end = os.pipe()
    os.close(read)  # the reader is gone before anything is printed, as after `| head -0`
    proc = subprocess.run([sys.executable, "-m", "hierfair", "run", *specs, "--out", str(out),
                           "--jobs", "1"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                          timeout=300)
    os.close(write_end)
    assert proc.returncode == 141
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hierfair:")]
    assert lines == ["hierfair: stopped: standard output was closed (e.g. by `| head`); "
                     "`hierfair run` again completes what is missing"]
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert main(["run", *specs, "--out", str(out)]) == 0
    assert (out / "first" / "runs.parquet").exists() and (out / "second" / "runs.parquet").exists()


def test_a_grid_over_what_is_not_a_run_parameter_is_refused(tmp_path, capsys):
    path = write(tmp_path, spec_with(grid={"tables": [["jobs"], ["allocations"]]}))
    assert main(["validate", str(path)]) == 2
    assert "grid.tables: tables is not a parameter of a run" in capsys.readouterr().err


def test_validate_reports_every_problem_in_one_pass_grid_paths_included(tmp_path, capsys):
    data = spec_with(algorithms=["drff"], grid={"cluster.servers[0].capcity.cpu": [1, 2]})
    data["workload"]["jobs"][0]["duration"] = -5
    path = write(tmp_path, data)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3, err
    assert any("algorithms[0].name" in e and "drff" in e for e in err)
    assert any("workload.jobs[0].duration" in e for e in err)
    assert any("grid.cluster.servers[0].capcity.cpu" in e and "capcity" in e for e in err)


def test_report_on_a_damaged_or_foreign_runs_table_is_one_line(tmp_path, capsys):
    import pandas as pd

    spec = write(tmp_path, spec_with())
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out)]) == 0
    table = out / "t" / "runs.parquet"
    good = table.read_bytes()
    for damage in (good[:len(good) // 2], None):
        if damage is None:
            pd.DataFrame({"a": [1, 2]}).to_parquet(table)
        else:
            table.write_bytes(damage)
        capsys.readouterr()
        assert main(["report", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(table) in err[0] and "not a results table" in err[0]
    table.write_bytes(good)
    assert main(["report", str(out)]) == 0


def test_a_damaged_or_swapped_cached_table_is_never_served_nor_replaced(tmp_path, capsys):
    """A table whose bytes changed since hierfair wrote it (truncated, or
    another run's swapped in) may be the user's: the rerun neither serves it
    nor overwrites it, and says which; without it the run is made again."""
    spec = write(tmp_path, spec_with(algorithms=["drf", "fifo"]))
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1"]) == 0
    drf, fifo = (next((out / "t" / "runs").glob(f"{label}-*")) for label in ("drf", "fifo"))
    a, b = drf / "jobs.parquet", fifo / "jobs.parquet"
    good_a, good_b = a.read_bytes(), b.read_bytes()
    assert good_a != good_b  # drf and fifo schedule the two jobs differently
    a.write_bytes(good_a[: len(good_a) // 2])  # truncated
    b.write_bytes(good_a)  # a valid file of another run swapped in
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{a}: was changed since hierfair wrote it" in err[0], err
    assert a.read_bytes() == good_a[: len(good_a) // 2] and b.read_bytes() == good_a
    a.unlink()
    b.unlink()
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1"]) == 0
    assert a.read_bytes() == good_a and b.read_bytes() == good_b


def test_a_file_in_a_run_folder_that_hierfair_did_not_write_is_never_replaced(tmp_path,
                                                                              capsys):
    spec = write(tmp_path, spec_with(algorithms=["drf"]))
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--set",
                 "tables=[jobs]"]) == 0
    run = next((out / "t" / "runs").glob("drf-*"))
    mine = run / "tasks.parquet"  # a name hierfair writes there, but not this run
    mine.write_bytes(b"my own table")
    notes = run / "notes.txt"  # any other name is simply left alone
    notes.write_text("mine\n")
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--force"]) == 2
    err = capsys.readouterr().err
    assert f"{mine}: is not a file hierfair wrote" in err
    assert mine.read_bytes() == b"my own table"
    mine.unlink()
    assert main(["run", str(spec), "--out", str(out), "--jobs", "1", "--force"]) == 0
    assert notes.read_text() == "mine\n" and (run / "tasks.parquet").exists()


def test_the_cache_key_covers_the_modules_a_users_policy_imports(tmp_path, monkeypatch):
    import sys

    from hierfair.algorithms import policy_code

    pkg = tmp_path / "mypolicies_e26"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def key(leaf):\n    return leaf\n")
    (pkg / "policy.py").write_text(
        "from hierfair.algorithms.drf import WeightedDRF\n"
        "from mypolicies_e26.helper import key\n\n\n"
        "class Mine(WeightedDRF):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "mypolicies_e26.policy:Mine"
    before = policy_code(name)
    assert before and policy_code(name) == before  # deterministic
    (pkg / "helper.py").write_text("def key(leaf):\n    return -leaf\n")  # only the helper
    assert policy_code(name) != before
    for mod in [m for m in sys.modules if m.startswith("mypolicies_e26")]:
        monkeypatch.delitem(sys.modules, mod)


def test_nested_yaml_aliases_are_refused_before_they_are_expanded(tmp_path, capsys):

    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    for k in range(1, 9):  # 10^9 values in about 1 KB
        lines.append(f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]")
    text = "\n".join(lines) + "\n" + yaml.safe_dump(spec_with(description="x")).replace(
        "description: x", "description: *a8")
    path = tmp_path / "laughs.yaml"
    path.write_text(text)
    assert len(text) < 2000
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expands to more than 1,000,000 values" in err[0]
