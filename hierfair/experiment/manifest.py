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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from hierfair.errors import SpecError
from hierfair.experiment.results import write_text, written_by_us

MANIFEST = "manifest.json"
#: What a sweep writes at the top of a results folder.
SWEEP_FILES = ("spec.yaml", "runs.parquet", "claims.json")
#: What identifies the manifest as ours (a user's manifest.json is not).
_TOOL = "hierfair"
#: The hash of a file being written: listed before its bytes land, so that an
#: interruption between the two leaves a file hierfair may write again.
PENDING = "writing"
#: What an older version may have written at a results folder's top, beside
#: SWEEP_FILES: assembled tables and figures (adopted).
_LEGACY_SUFFIXES = (".png", ".parquet")
#: What a run's own folder holds besides its tables: hierfair writes these
#: names there and nothing else.
SUMMARY, TRACEBACK = "summary.json", "traceback.txt"
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
        for link in (folder, folder / "runs"):  # writing through it would land elsewhere
            if link.is_symlink():
                raise SpecError(f"{link}: a symbolic link; hierfair writes only into folders "
                                f"it made (choose another {flag})")
        if found is not None:
            return found
        if (folder / MANIFEST).exists():
            raise SpecError(f"{folder / MANIFEST}: not a manifest hierfair wrote; refusing "
                            f"to write in {folder} (choose another {flag})")
        manifest = cls(folder, {"kind": kind})
        if folder.is_dir():
            manifest.files = _adopt(folder, kind)
            if manifest.files and kind == "results":  # an older version's run folders
                manifest.runs = {p.name for p in (folder / "runs").glob("*")
                                 if p.is_dir() and not p.is_symlink()}
        return manifest

    def own_spec(self, spec_file: str, replace: bool) -> None:
        """Refuse results of another spec file unless ``replace`` (two specs of
        one name would replace each other's tables, one after another), and
        a folder where a file a sweep writes is the user's.  A spec given as
        data (``hierfair.run(dict)``) has no file: it neither claims nor
        is refused."""
        if self.spec_file and spec_file and self.spec_file != spec_file and not replace:
            raise SpecError(f"{self.folder} holds the results of {self.spec_file}, a spec of "
                            "the same name; rename one, choose another --out, or give "
                            "--replace", file=spec_file or None, where="name",
                            value=self.folder.name)
        for name in SWEEP_FILES:
            self.check(name)
        self.spec_file = spec_file or self.spec_file

    # -- writing ---------------------------------------------------------------
    def check(self, name: str) -> Path:
        """The path of ``name`` in the folder, if hierfair may write it: absent,
        or listed with the bytes it wrote (or being written when stopped).
        Else one line, exit 2 -- a user's file, or one changed since."""
        path = self.folder / name
        if path.is_symlink():
            raise SpecError(f"{path}: a symbolic link; refusing to write through it (remove "
                            "it, or choose another folder)")
        if not path.exists():
            return path
        recorded = self.files.get(name)
        if recorded is None:
            raise SpecError(f"{path}: not written by hierfair; refusing to overwrite it "
                            "(move it, or choose another folder)")
        if recorded != PENDING and path.is_file() and file_digest(path) != recorded:
            raise SpecError(f"{path}: changed since hierfair wrote it; refusing to overwrite "
                            "it (move or delete it, and hierfair writes it again)")
        return path

    def check_runs(self, run_ids: Iterable[str], tables: Iterable[str]) -> None:
        """Refuse, before any work, a run folder hierfair did not make, or a
        file in one that a rerun would replace and hierfair did not write
        (:func:`check_run_folder`)."""
        tables = tuple(tables)
        for run_id in run_ids:
            path = self.folder / "runs" / run_id
            if path.is_symlink() or (path.exists() and run_id not in self.runs):
                raise SpecError(f"{path}: not a run folder hierfair made; refusing to write "
                                "in it (move it, or choose another --out)")
            if path.exists():
                check_run_folder(path, tables)

    @contextmanager
    def writing(self, name: str) -> Iterator[Path]:
        """``with manifest.writing(name) as path``: checked, listed as being
        written before the bytes land (an interruption leaves a file hierfair
        may write again), recorded with its hash once written."""
        path = self.check(name)
        self.files[name] = PENDING
        self.save()
        yield path
        self.record(name)

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
        with self.writing(name) as path:
            write_text(text, path)
        return path

    def remove(self, name: str) -> None:
        """Remove ``name`` if hierfair wrote it (a file the user put there, or
        changed since, stays: refused, named)."""
        if name in self.files:
            self.check(name).unlink(missing_ok=True)
            del self.files[name]
            self.save()

    def add_runs(self, run_ids: Iterable[str]) -> None:
        """Run folders hierfair is about to make (before any worker writes)."""
        before = len(self.runs)
        self.runs.update(run_ids)
        if len(self.runs) != before:
            self.save()

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {"tool": _TOOL, "kind": self.kind, "spec_file": self.spec_file,
                "files": dict(sorted(self.files.items())), "runs": sorted(self.runs)}
        write_text(json.dumps(data, indent=1) + "\n", self.folder / MANIFEST)


# -- a run's own folder: its summary.json is its manifest --------------------------
def _run_names(tables: Iterable[str]) -> tuple[str, ...]:
    """Every name hierfair writes in a run folder besides the summary."""
    return (TRACEBACK, *(f"{t}.parquet" for t in tables))


def _run_owned(run_dir: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The files of a run folder hierfair wrote, by its summary: a finished
    run's records each file with its hash; an attempt under way lists what it
    may write (PENDING); a summary of a version before these records (a key
    and a row) is adopted with ``names``, what such a version wrote."""
    path = run_dir / SUMMARY
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        raise SpecError(f"{path}: not a run summary hierfair wrote; refusing to replace it "
                        "(move it away, or remove the run folder)") from None
    if not isinstance(record, dict) or not ({"pending", "files"} & record.keys()
                                            or {"key", "row"} <= record.keys()):
        raise SpecError(f"{path}: not a run summary hierfair wrote; refusing to replace it "
                        "(move it away, or remove the run folder)")
    if "pending" in record:
        return dict.fromkeys(record["pending"], PENDING)
    if "files" in record:
        return dict(record["files"])
    return dict.fromkeys(names, PENDING)


def check_run_folder(run_dir: Path, tables: Iterable[str]) -> dict[str, str]:
    """The files of ``run_dir`` a rerun may replace or remove -- those its
    summary says hierfair wrote, with the bytes it recorded -- or refuse the
    first one present that hierfair did not write, or that changed since
    (one line naming it).  Other files in the folder are left alone."""
    names = _run_names(tables)
    owned = _run_owned(run_dir, names)
    for name in names:
        path = run_dir / name
        if not (path.exists() or path.is_symlink()):
            continue
        recorded = owned.get(name)
        if recorded is None or path.is_symlink() or (
                recorded != PENDING and file_digest(path) != recorded):
            what = "was changed since hierfair wrote it" if recorded else \
                "is not a file hierfair wrote"
            raise SpecError(f"{path}: {what}; refusing to replace it (move it away, or "
                            "remove the run folder to run it again)")
    return owned


def clear_run(run_dir: Path, tables: Iterable[str]) -> None:
    """Before a run is written again: its summary is replaced by the list of
    what this attempt may write (so the folder holds no complete result, and
    an interruption leaves files hierfair still knows as its own), then what
    the earlier attempt wrote there goes.

    Only files the summary says hierfair wrote, unchanged since
    (:func:`check_run_folder`, which the parent ran on every run folder
    before any worker started); a folder that is a link is refused."""
    if run_dir.is_symlink():
        raise SpecError(f"{run_dir}: a symbolic link; refusing to write through it")
    names = _run_names(tables)
    check_run_folder(run_dir, tables)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(json.dumps({"pending": list(names)}), run_dir / SUMMARY)
    for name in names:
        (run_dir / name).unlink(missing_ok=True)


def _adopt(folder: Path, kind: str) -> dict[str, str]:
    """The files of a folder without a manifest that hierfair takes as its
    own: an older version's results (its spec.yaml names the folder; it may
    have been stopped before runs.parquet) or audit table; nothing else."""
    names: tuple[str, ...] = ()
    if kind == "results" and _resolved_spec_of(folder):
        names = tuple(p.name for p in folder.iterdir() if p.is_file() and (
            p.name in SWEEP_FILES or p.suffix in _LEGACY_SUFFIXES))
    elif kind == "audit" and written_by_us(folder / "table.md", AUDIT_MARK):
        names = ("table.md", "summary.csv", "rows.parquet")
    return {n: file_digest(folder / n) for n in sorted(names) if (folder / n).is_file()}


def _resolved_spec_of(folder: Path) -> bool:
    """Whether ``folder/spec.yaml`` is the resolved spec hierfair writes for
    the folder: a mapping with this folder's name and its algorithms."""
    try:
        data = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and data.get("name") == folder.name \
        and isinstance(data.get("algorithms"), list) and "tables" in data


def relative_source(source: str, out: Path) -> str:
    """How the manifest names a spec file: relative to the results folder,
    so that a checkout moved as a whole still owns its results."""
    if not source:
        return ""
    try:
        return Path(os.path.relpath(Path(source).resolve(), Path(out).resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(source).resolve().as_posix()
