"""What hierfair wrote in a folder: the manifest that lets it tell its own
files from the user's.

A results folder (``OUT/<spec name>/``, ``audit --out``) holds
``manifest.json``: every file hierfair wrote there, with its SHA-256, the
run folders it made under ``runs/`` (each run's ``summary.json`` is the
manifest of that run's tables), and the spec file the results came from.
hierfair overwrites or removes a file only when the manifest lists it;
anything else in the folder is the user's, and a write that would replace it
is refused, naming it (exit 2).

A folder written by a version before manifests (``spec.yaml`` and a readable
``runs.parquet`` at its top; an audit's ``table.md``) is adopted: the files
such a version wrote are listed once, and nothing else.  A folder may hold
the user's own files beside hierfair's: they are left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hierfair.errors import SpecError
from hierfair.experiment.results import write_text, written_by_us

MANIFEST = "manifest.json"
#: What a sweep writes at the top of a results folder.
SWEEP_FILES = ("spec.yaml", "runs.parquet", "claims.json")
#: What identifies the manifest as ours (a user's manifest.json is not).
_TOOL = "hierfair"
#: Top-level files a results folder of an older version may hold (adopted).
_LEGACY = ("spec.yaml", "runs.parquet", "claims.json")
_LEGACY_SUFFIXES = (".png", ".parquet")
#: The first line of the audit's table.md (an older audit folder is adopted by it).
AUDIT_MARK = "## Fairness properties (audit)"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Manifest:
    """The manifest of one folder; :meth:`check` before writing a file,
    :meth:`record` after."""

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.files: dict[str, str] = dict(data.get("files") or {})
        self.runs: set[str] = set(data.get("runs") or ())
        self.spec_file: str | None = data.get("spec_file")
        self.kind: str = data.get("kind", "results")

    # -- opening ---------------------------------------------------------------
    @classmethod
    def read(cls, folder: Path) -> Manifest | None:
        """The folder's manifest, or None when it has none of ours."""
        path = Path(folder) / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return cls(folder, data) if isinstance(data, dict) and data.get("tool") == _TOOL \
            else None

    @classmethod
    def open(cls, folder: Path, kind: str = "results", flag: str = "--out") -> Manifest:
        """The manifest of ``folder``, made when the folder is new or empty or
        was written by an older version; refused (one line naming a file)
        when the folder holds files hierfair did not write."""
        folder = Path(folder)
        found = cls.read(folder)
        if found is not None:
            return found
        if (folder / MANIFEST).exists():
            raise SpecError(f"{folder / MANIFEST}: not a manifest hierfair wrote; refusing "
                            f"to write in {folder} (choose another {flag})")
        manifest = cls(folder, {"kind": kind})
        if folder.is_dir():
            manifest.files = _adopt(folder, kind)
            if manifest.files:  # an older version's runs, each with its summary
                manifest.runs = {p.name for p in (folder / "runs").glob("*")
                                 if (p / "summary.json").exists()}
        return manifest

    def own_spec(self, spec_file: str, replace: bool) -> None:
        """Refuse results of another spec file unless ``replace`` (two specs of
        one name would replace each other's tables, one after another), and
        a folder where a file a sweep writes is the user's."""
        if self.spec_file is not None and self.spec_file != spec_file and not replace:
            raise SpecError(f"{self.folder} holds the results of {self.spec_file}, a spec of "
                            "the same name; rename one, choose another --out, or give "
                            "--replace", file=spec_file or None, where="name",
                            value=self.folder.name)
        for name in SWEEP_FILES:
            self.check(name)
        self.spec_file = spec_file

    # -- writing ---------------------------------------------------------------
    def check(self, name: str) -> Path:
        """The path of ``name`` in the folder, if hierfair may write it: absent,
        or listed (written by hierfair before).  Else one line, exit 2."""
        path = self.folder / name
        if path.exists() and name not in self.files:
            raise SpecError(f"{path}: not written by hierfair; refusing to overwrite it "
                            "(move it, or choose another folder)")
        return path

    def record(self, *names: str) -> None:
        """Note that hierfair (re)wrote ``names``, with their hashes; save."""
        for name in names:
            path = self.folder / name
            if path.exists():
                self.files[name] = file_digest(path)
            else:
                self.files.pop(name, None)
        self.save()

    def write_text(self, name: str, text: str) -> Path:
        path = self.check(name)
        write_text(text, path)
        self.record(name)
        return path

    def remove(self, name: str) -> None:
        """Remove ``name`` if hierfair wrote it (a file the user put there stays)."""
        if name in self.files:
            (self.folder / name).unlink(missing_ok=True)
            del self.files[name]
            self.save()

    def add_runs(self, run_ids: Iterable[str]) -> None:
        """Run folders hierfair is about to make (before any worker writes)."""
        before = len(self.runs)
        self.runs.update(run_ids)
        if len(self.runs) != before:
            self.save()

    def owns_run(self, run_id: str) -> bool:
        return run_id in self.runs

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"tool": _TOOL, "kind": self.kind, "spec_file": self.spec_file,
                "files": dict(sorted(self.files.items())), "runs": sorted(self.runs)}
        write_text(json.dumps(data, indent=1) + "\n", self.folder / MANIFEST)


def _adopt(folder: Path, kind: str) -> dict[str, str]:
    """The files of a folder without a manifest that hierfair takes as its
    own: an older version's results (or audit table); nothing else."""
    names: tuple[str, ...] = ()
    if kind == "results" and (folder / "spec.yaml").is_file() \
            and _results_table(folder / "runs.parquet"):
        names = tuple(p.name for p in folder.iterdir() if p.is_file() and (
            p.name in _LEGACY or p.suffix in _LEGACY_SUFFIXES))
    elif kind == "audit" and written_by_us(folder / "table.md", AUDIT_MARK):
        names = ("table.md", "summary.csv", "rows.parquet")
    return {n: file_digest(folder / n) for n in sorted(names) if (folder / n).is_file()}


def _results_table(path: Path) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return "run" in pq.read_schema(path).names
    except (OSError, pa.ArrowException):
        return False


def relative_source(source: str, out: Path) -> str:
    """How the manifest names a spec file: relative to the results folder,
    so that a checkout moved as a whole still owns its results."""
    if not source:
        return ""
    try:
        return Path(os.path.relpath(Path(source).resolve(), Path(out).resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(source).resolve().as_posix()
