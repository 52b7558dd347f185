"""The commands that run specs: ``hierfair validate`` and ``hierfair run``.

Both plan every spec named (validated at every grid point, with the
command line's ``--algorithms``/``--seeds``/``--set`` applied) before
anything runs; ``validate`` stops there, ``run`` sweeps each plan into its
results folder and prints the claims' verdicts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

#: More parallel runs than this is a typo, not a machine (loky cannot make them).
MAX_JOBS = 1024


def _plans(args: argparse.Namespace) -> list:
    """Every spec planned (validated at every grid point) before anything runs,
    so a typo in the last one does not surface after an hour of work; what the
    user should know about the inputs is said once, on stderr."""
    from hierfair.errors import SpecError
    from hierfair.experiment import overrides as cli_overrides
    from hierfair.experiment.limits import MAX_RUNS
    from hierfair.experiment.plan import plan
    from hierfair.experiment.slices import check_only, parse_only
    from hierfair.experiment.spec import SeedRange, read_yaml

    if args.max_runs is not None and args.max_runs < 1:
        raise SpecError("must be at least 1", where="--max-runs", value=args.max_runs)
    changes = cli_overrides.parse(args.algorithms, args.seeds, args.set)
    only = parse_only(args.only)
    plans, problems = [], []
    for path in args.specs:
        try:  # every spec is checked: all their problems are reported at once
            data, notes = cli_overrides.apply(read_yaml(path), changes)
            for note in notes:
                print(f"hierfair: note: {path}: {note}", file=sys.stderr)
            planned = plan(data, source=path, data_dir=args.data_dir,
                           max_memory=args.max_memory, max_runs=args.max_runs or MAX_RUNS,
                           progress=_Checking(path), overrides=changes.record())
            spec = planned.experiment.spec
            check_only(only, spec.model_dump(mode="json")["grid"],
                       adaptive=isinstance(spec.seeds, SeedRange))
        except SpecError as exc:
            problems.append(exc.with_file(path))
            continue
        for note in planned.notes:
            print(f"hierfair: note: {path}: {note}", file=sys.stderr)
        for warning in planned.warnings:
            print(f"hierfair: warning: {path}: {warning}", file=sys.stderr)
        plans.append((path, data, planned))
    if problems:
        raise SpecError.combine(problems)
    return plans


class _Checking:
    """Progress of a long validation (a large grid): a line on stderr every
    few seconds, nothing for a spec checked quickly."""

    EVERY = 3.0

    def __init__(self, path: str) -> None:
        import time

        self.path, self.clock = path, time.monotonic
        self.next = self.clock() + self.EVERY

    def __call__(self, done: int, total: int) -> None:
        if self.clock() >= self.next:
            self.next = self.clock() + self.EVERY
            print(f"hierfair: checking {self.path}: grid point {done + 1:,} of {total:,}",
                  file=sys.stderr, flush=True)


def writable_folder(folder: Path, flag: str) -> None:
    """A folder results go to: made if missing, and writable -- else one line
    naming the flag, exit 2 (never an internal error half-way through a run)."""
    from hierfair.errors import SpecError

    if folder.exists() and not folder.is_dir():
        raise SpecError("is a file, not a folder", where=flag, value=str(folder))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(f"cannot make this folder: {exc.strerror}", where=flag,
                        value=str(folder)) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SpecError("cannot write in this folder", where=flag, value=str(folder))


def _validate(args: argparse.Namespace) -> int:
    for path, _data, planned in _plans(args):
        exp = planned.experiment
        wl = exp.workload(exp.spec.seed_list[0])
        print(f"{path}: ok ({exp.spec.name}: {len(planned.runs)} run(s); "
              f"{exp.cluster.n_servers} server(s), {len(exp.hierarchy.leaves)} leaves, "
              f"{len(wl.jobs)} jobs, {wl.n_tasks} tasks; input: {wl.source})")
        # a spec is code, like a Makefile: say what of it run would import and run
        imported = sorted({a.name.rpartition(":")[0] for a in exp.spec.algorithms
                           if ":" in a.name})
        if imported:
            print(f"{path}: imports and runs code from: {', '.join(imported)} "
                  "(docs/spec.md, \"A spec is code\")")
    return 0


def _run(args: argparse.Namespace) -> int:
    from hierfair.errors import SpecError
    from hierfair.experiment.claims import read_verdicts
    from hierfair.experiment.limits import MAX_TIME
    from hierfair.experiment.cache import describe_plan
    from hierfair.experiment.runs_table import ENDED
    from hierfair.experiment.progress import Progress
    from hierfair.experiment.slices import describe, parse_only
    from hierfair.experiment.sweep import sweep

    if args.jobs is not None and not 0 <= args.jobs <= MAX_JOBS:
        raise SpecError(f"must be from 0 (this process) to {MAX_JOBS}", where="--jobs",
                        value=args.jobs)
    if args.timeout is not None and not 0 < args.timeout <= MAX_TIME:
        raise SpecError(f"must be a number of seconds in (0, {MAX_TIME:g}]", where="--timeout",
                        value=args.timeout)
    if not 0 <= args.progress_every <= MAX_TIME / 60:
        raise SpecError(f"must be a number of minutes in [0, {MAX_TIME / 60:g}] (0: no "
                        "progress inside a run)", where="--progress-every",
                        value=args.progress_every)
    out = Path(args.out)
    only = parse_only(args.only)
    specs = _plans(args)
    first: dict[str, str] = {}
    for path, _data, planned in specs:  # one results folder per name under --out
        name = planned.experiment.spec.name
        if name in first:
            raise SpecError(f"{first[name]} has the same name: both would write {out / name}",
                            file=str(path), where="name", value=name)
        first[name] = str(path)
    if not args.dry_run:
        writable_folder(out, "--out")
        from hierfair.experiment.manifest import Manifest, relative_source

        for path, _data, planned in specs:  # another spec file's results: refused up front
            Manifest.open(out / planned.experiment.spec.name).own_spec(
                relative_source(path, out), args.replace)
    if args.dry_run:
        for _path, _data, planned in specs:
            print(f"{planned.experiment.spec.name}: {len(planned.runs)} runs")
            for line in describe_plan(planned.runs, out / planned.experiment.spec.name, only,
                                      args.force):
                print(f"  {line}")
        return 0
    failures, every = [], []
    for path, data, planned in specs:
        base = planned.experiment
        progress = Progress(base.spec.name)
        try:
            frame = sweep(data, out, source=path, data_dir=args.data_dir, jobs=args.jobs,
                          backend=args.backend, scheduler=args.scheduler, force=args.force,
                          timeout=args.timeout, progress=progress, planned=planned,
                          run_progress=args.progress_every * 60 or None,
                          replace=args.replace, max_runs=args.max_runs,
                          fail_fast=args.exitfirst, debug=args.pdb, only=only)
        finally:
            progress.close()
        if len(frame) < len(planned.runs):
            print(f"hierfair: {base.spec.name}: {len(planned.runs) - len(frame)} of "
                  f"{len(planned.runs)} runs not run ({describe(only)}: other grid points); "
                  "the claims that need them are n/a until they run", file=sys.stderr)
        bad = frame[~frame["status"].isin(ENDED)]
        failures += [f"{base.spec.name}/{r.run}: {r.status}: {r.error}" for r in bad.itertuples()]
        for r in frame[frame["status"] == "loop"].itertuples():  # a finding, not a failure
            print(f"hierfair: {base.spec.name}/{r.run}: {r.error}", file=sys.stderr)
        verdicts = read_verdicts(out / base.spec.name)
        _print_verdicts(base.spec.name, verdicts)
        every += verdicts
        print(out / base.spec.name)
    if every:
        from hierfair.experiment.claims import count_verdicts

        print(f"claims: {count_verdicts(every)}", file=sys.stderr)
    if failures:
        print(f"hierfair: {len(failures)} run(s) did not finish:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def _print_verdicts(name: str, verdicts: list[dict]) -> None:
    """One line per published claim: a refuted claim is a finding, not a failure."""
    from hierfair.experiment.claims import verdict_word

    for v in verdicts:
        proxy = " (proxy)" if v.get("proxy") else ""
        print(f"{name}: claim {verdict_word(v)}{proxy}: {v['claim']} [{v['source']}]",
              file=sys.stderr)
