"""Cached results: a run is reused only as the same run of the same code.

:func:`code_version` is hierfair's version plus a hash of all its source;
a run's ``summary.json`` records its key, its row (with the code version
and the input it read) and the digest of every detail table it wrote.
:func:`cached_row` serves that row only while all of them still match;
:func:`describe_plan` says of each planned run whether it is cached.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from hierfair.version import __version__
from hierfair.experiment.detail import PARAM
from hierfair.experiment.manifest import SUMMARY, file_digest
from hierfair.experiment.plan import PlannedRun
from hierfair.experiment.runs_table import ENDED
from hierfair.experiment.slices import Only, selects


@lru_cache(maxsize=1)
def code_version() -> str:
    """hierfair's version plus a hash of its source: any code change reruns."""
    h = hashlib.sha256(__version__.encode())
    for path, name in code_files():
        h.update(name.encode())
        h.update(path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


def code_files() -> list[tuple[Path, str]]:
    """Every source file of hierfair (subpackages included) with a stable name
    relative to its package root: what :func:`code_version` hashes."""
    import hierfair.algorithms
    import hierfair.datasets

    out = []
    for pkg in (sys.modules["hierfair"], hierfair.algorithms, hierfair.datasets):
        root = Path(pkg.__file__).parent
        skip = {Path(p.__file__).parent for p in (hierfair.algorithms, hierfair.datasets)}
        for path in sorted(root.rglob("*.py")):
            if pkg is sys.modules["hierfair"] and any(d in path.parents for d in skip):
                continue  # installed inside hierfair only in a wheel; hashed as their own
            out.append((path, f"{pkg.__name__}:{path.relative_to(root).as_posix()}"))
    return out


def _identity(run: PlannedRun) -> dict[str, Any]:
    out = {"run": run.run_id, "run_index": run.index, "spec": run.spec_data["name"],
           "spec_hash": run.key[:16], "algorithm": run.algorithm["name"], "label": run.label,
           "params": json.dumps(run.algorithm.get("params") or {}, sort_keys=True),
           "seed": run.base_seed, "run_seed": run.seed, "grid_point": run.grid_point,
           "overrides": run.overrides, "hierfair_version": __version__,
           "git_commit": _git_commit()}
    out.update({k: json.dumps(v) if isinstance(v, dict | list) else v
                for k, v in run.grid.items()})
    # each parameter its own column (the JSON above is the exact identity)
    out.update({f"{PARAM}{k}": json.dumps(v) if isinstance(v, dict | list) else v
                for k, v in (run.algorithm.get("params") or {}).items()})
    return out


@lru_cache(maxsize=1)
def _git_commit() -> str:
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def cached_row(run: PlannedRun, folder: Path) -> dict[str, Any] | None:
    """The recorded row of ``run`` if it finished ok with this key and code,
    and every detail table it wrote has the bytes its manifest records."""
    path = folder / "runs" / run.run_id / SUMMARY
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    row = record.get("row", {})
    if (record.get("key") != run.key or row.get("status") not in ENDED
            or row.get("code_version") != code_version()
            or row.get("input_id") != run.input_id):  # the data changed under the run
        return None
    files = record.get("files") or {}
    for t in run.spec_data["tables"]:  # damaged or swapped tables: rerun, never serve
        table = path.parent / f"{t}.parquet"
        if f"{t}.parquet" not in files or not table.exists() \
                or file_digest(table) != files[f"{t}.parquet"]:
            return None
    return row


def describe_plan(runs: Sequence[PlannedRun], folder: Path,
                  only: Sequence[Only] = (), force: bool = False) -> list[str]:
    """A line a run for ``--dry-run``: what the command would do with it
    (``force``: a cached run of the slice is run again)."""
    lines = []
    for run in runs:
        cached = cached_row(run, folder) is not None
        if selects(only, run.grid):
            state = "to run (--force)" if cached and force else "cached" if cached else "to run"
        else:
            state = "cached" if cached else "not in --only"
        grid = " ".join(f"{k}={v}" for k, v in run.grid.items())
        lines.append(f"{run.run_id}  {run.label}  seed={run.base_seed} run_seed={run.seed}"
                     f"{'  ' + grid if grid else ''}  [{state}]")
    return lines
