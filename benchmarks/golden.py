"""Golden comparison: shipped specs' tables at a base revision against this
checkout's, exactly (a script, not a test: it runs whole specs twice).

    .venv/bin/python benchmarks/golden.py --base REV [--out DIR] [--data-dir DIR]
        [-j N] SPEC...

Each spec is run by ``hierfair run`` twice, with the code of ``REV`` into
``DIR/base`` and with this checkout into ``DIR/this``.  Then, per run
(matched by id), every table of ``runs/<run>/`` is
compared with ``pandas.testing.assert_frame_equal(check_exact=True)``
(dtypes included; only the decisions' ``latency_ns`` left out), and
runs.parquet without its wall-clock and provenance columns.  Exit status 1
if anything differs, or could not be compared: a side that failed, a spec
with no results, a run that did not end ``ok``.  A change that should not
move any schedule (a faster path, a memory change) is shown to by this, for
every spec it touches.  Claim verdicts (claims.json) are not compared: those
over wall-clock columns vary from run to run.

How the base runs: ``git archive REV`` into ``DIR/code``, arranged as the
package is installed (``algorithms/`` and ``datasets/`` inside ``hierfair/``),
first on ``PYTHONPATH``, from a working directory outside the checkout.
``PYTHONPATH`` pointed at a plain checkout of ``REV`` is not enough: this
checkout's editable install maps ``hierfair.algorithms`` and
``hierfair.datasets`` to its own folders, so such a "base" runs this
checkout's algorithms.  The script asserts where each side's modules come
from before it runs anything.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from pandas.testing import assert_frame_equal

from hierfair.experiment.results import WALL_CLOCK_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
#: runs.parquet columns that say with what code a run ran
PROVENANCE = ("hierfair_version", "code_version", "git_commit")
_WHERE = ("import hierfair, hierfair.algorithms, hierfair.datasets as d; "
          "print(hierfair.__file__, hierfair.algorithms.__file__, d.__file__)")


def export(rev: str, code: Path) -> None:
    """``rev``'s source under ``code``, laid out as installed."""
    code.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    for sub in ("algorithms", "datasets"):
        shutil.move(str(code / sub), str(code / "hierfair" / sub))


def environment(code: Path | None) -> dict[str, str]:
    """The environment of a side: ``code`` first on PYTHONPATH (the user's
    PYTHONPATH after it, for specs that name ``module:Class``)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code.resolve()),
                                                          env.get("PYTHONPATH")]))
    return env


def check_origin(env: dict[str, str], cwd: Path, inside: Path) -> None:
    """Exit unless hierfair and its algorithms and datasets import from
    ``inside`` (and not from an installed copy in its .venv)."""
    where = subprocess.run([sys.executable, "-c", _WHERE], env=env, cwd=cwd, check=True,
                           capture_output=True, text=True).stdout.split()
    root = inside.resolve()
    wrong = [w for w in where if not Path(w).resolve().is_relative_to(root)
             or Path(w).resolve().is_relative_to(root / ".venv")]
    if wrong:
        raise SystemExit(f"golden: modules from the wrong tree (want {inside}): {wrong}")


def run_spec(spec: Path, out: Path, env: dict[str, str], cwd: Path, args) -> int:
    cmd = [sys.executable, "-m", "hierfair", "run", str(spec), "--out", str(out),
           "-j", str(args.jobs)]
    if args.data_dir:  # the command runs elsewhere: a relative folder would miss
        cmd += ["--data-dir", str(Path(args.data_dir).resolve())]
    log = out.parent / f"{out.name}-{spec.stem}.log"
    with open(log, "w") as f:
        return subprocess.run(cmd, env=env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT).returncode


def compare_folders(a: Path, b: Path) -> int:
    """Assert two results folders of one spec hold the same tables; the
    number of run tables compared.  Runs are matched by id (a run's id is
    its spec, algorithm, seed and grid point, not its code)."""
    for f in (a, b):
        assert (f / "runs.parquet").exists(), f"{f}: no results"
    ra, rb = (pd.read_parquet(f / "runs.parquet").sort_values("run", ignore_index=True)
              for f in (a, b))
    for f, runs in ((a, ra), (b, rb)):
        ended = runs["status"].value_counts().to_dict()
        assert set(ended) == {"ok"}, f"{f}: not every run ended ok: {ended}"
    drop = [c for c in ra.columns if c in WALL_CLOCK_COLUMNS or c in PROVENANCE]
    assert_frame_equal(ra.drop(columns=drop), rb.drop(columns=drop, errors="ignore"),
                       check_exact=True, obj=f"{a.name} runs.parquet")
    n = 0
    for run in ra["run"]:
        da, db = a / "runs" / run, b / "runs" / run
        names = sorted(p.name for p in da.glob("*.parquet"))
        assert names == sorted(p.name for p in db.glob("*.parquet")), (a.name, run)
        for name in names:
            ta, tb = pd.read_parquet(da / name), pd.read_parquet(db / name)
            if name == "decisions.parquet":
                ta, tb = (t.drop(columns=["latency_ns"], errors="ignore") for t in (ta, tb))
            assert_frame_equal(ta, tb, check_exact=True, obj=f"{a.name} {run} {name}")
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="+", type=Path)
    ap.add_argument("--base", required=True, help="git revision to compare against")
    ap.add_argument("--out", type=Path, default=None, help="a new folder (default: a temp one)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    args = ap.parse_args()
    out = (args.out or Path(tempfile.mkdtemp(prefix="golden-"))).resolve()
    if args.out is not None:
        out.mkdir(parents=True)  # a new folder: this script deletes nothing
    code, work = out / "code", out / "work"
    export(args.base, code)
    work.mkdir()
    sides = {"base": environment(code), "this": environment(None)}
    check_origin(sides["base"], work, code)
    check_origin(sides["this"], work, ROOT)
    specs = [s.resolve() for s in args.specs]
    bad = 0
    for spec in specs:
        before = {side: set((out / side).glob("*/")) for side in sides}
        failed = [side for side, env in sides.items()
                  if run_spec(spec, out / side, env, work, args)]
        for side in failed:
            print(f"{spec.name}: {side} failed (log: {out}/{side}-{spec.stem}.log)")
        made = sorted(set((out / "base").glob("*/")) - before["base"])
        if failed or not made:
            bad += 1
            print(f"{spec.name}: NOT COMPARED" + ("" if made else " (no results of the base)"))
        for folder in made:
            try:
                n = compare_folders(folder, out / "this" / folder.name)
                print(f"{spec.name} -> {folder.name}: {n} tables identical", flush=True)
            except AssertionError as e:
                bad += 1
                print(f"{spec.name} -> {folder.name}: DIFFERENT: {str(e).splitlines()[0]}")
    print(f"golden: {len(specs)} specs, {bad} different or not compared; folders in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
