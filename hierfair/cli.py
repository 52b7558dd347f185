"""``hierfair`` on the command line.

Bad input of any kind ends with one line on stderr naming the file, the field
(or line) and the value, and exit status 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from hierfair import __version__
from hierfair.errors import HierfairError, RunFailed

#: More parallel runs than this is a typo, not a machine (loky cannot make them).
MAX_JOBS = 1024
#: Commands that write results: a closed standard output cuts their work short.
WRITERS = ("run", "audit", "report", "allocate")


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: workers stopped, one line."""


def _stop(signum: int, frame: object) -> None:
    """The first Ctrl-C or SIGTERM stops the work, and the workers are shut
    down; another, while that takes its time, ends the process at once (every
    file is written atomically: the folder stays consistent either way)."""
    signal.signal(signal.SIGINT, _stop_now)
    signal.signal(signal.SIGTERM, _stop_now)
    raise _Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _stop_now(signum: int, frame: object) -> None:
    print(f"hierfair: {'terminated' if signum == signal.SIGTERM else 'interrupted'}",
          file=sys.stderr, flush=True)
    os._exit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if argv is None:  # the command itself, not a call from Python (tests, notebooks)
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    try:
        return _main(args)
    finally:  # stopped while Python shuts down (joblib joins its threads): no traceback
        if argv is None:
            signal.signal(signal.SIGTERM, _stop_now)
            signal.signal(signal.SIGINT, _stop_now)


def _main(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning
            return int(args.func(args) or 0)
    except RunFailed as exc:  # run -x: the first failure, with what it needs to debug
        print(f"hierfair: stopped at the first failed run (-x): {exc}", file=sys.stderr)
        if exc.row.get("traceback"):
            print(exc.row["traceback"].rstrip(), file=sys.stderr)
            print(f"hierfair: (the traceback is kept in {exc.traceback_file})",
                  file=sys.stderr)
        return exc.exit_code
    except HierfairError as exc:  # a spec error may carry several problems: a line each
        for line in str(exc).splitlines():
            print(f"hierfair: error: {line}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        # joblib warns, while shutting its workers down, that it cancelled their tasks
        warnings.filterwarnings("ignore", message=r".*tasks which were still being processed")
        term = isinstance(exc, _Terminated)
        print(f"hierfair: {'terminated' if term else 'interrupted'}; `hierfair "
              f"{args.command}` again completes what is missing" if args.command in WRITERS
              else f"hierfair: {'terminated' if term else 'interrupted'}", file=sys.stderr)
        return 143 if term else 130  # 128 + the signal, as a shell reports it
    except BrokenPipeError:
        # nothing more can be printed: stop Python's own complaint at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if args.command in WRITERS:  # work was cut short: say so
            print(f"hierfair: stopped: standard output was closed (e.g. by `| head`); "
                  f"`hierfair {args.command}` again completes what is missing", file=sys.stderr)
            return 141  # 128 + SIGPIPE, as a shell reports it
        return 0  # `hierfair list | head`: the reader has what it wanted
    except MemoryError:  # the machine, not a bug: say which limit binds
        from hierfair.experiment.limits import format_bytes, memory_limit

        limit, what = memory_limit()
        print(f"hierfair: error: out of memory (the limit is {format_bytes(limit)}, {what}); "
              "raise it (ulimit -v, the container's memory) or give the run less to do",
              file=sys.stderr)
        return 69
    except Exception as exc:  # a bug: one line, and the traceback on request
        if getattr(args, "pdb", False):  # run --pdb: a run's bug, in the debugger
            import pdb
            import traceback

            traceback.print_exc()
            pdb.post_mortem(exc.__traceback__)
            return 1
        if os.environ.get("HIERFAIR_DEBUG", "") not in ("", "0"):  # as HIERFAIR_NO_JIT
            raise
        print(f"hierfair: internal error: {type(exc).__name__}: {exc} (a bug: please report "
              "it; HIERFAIR_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 70


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """numpy's and pandas' warnings as one plain line, never with a source excerpt."""
    print(f"hierfair: warning: {message}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hierfair",
        description="Benchmark and experiment harness for hierarchical multi-resource "
        "fair schedulers.",
    )
    p.add_argument("--version", action="version", version=f"hierfair {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    data_dir = argparse.ArgumentParser(add_help=False)
    data_dir.add_argument("--data-dir", metavar="DIR", default=None,
                          help="where trace files are looked for (also $HIERFAIR_DATA)")
    data_dir.add_argument("--max-memory", metavar="BYTES", default=None, type=_bytes,
                          help="refuse runs estimated to need more (e.g. 8G; default: this "
                          "machine's memory)")

    runs = argparse.ArgumentParser(add_help=False)
    runs.add_argument("--max-runs", metavar="N", default=None, type=int,
                      help="refuse a spec of more runs (grid points x algorithms x seeds; "
                      "default: 10,000)")
    runs.add_argument("-a", "--algorithms", metavar="A,B", default=None,
                      help="only these algorithms (a spec entry's label or name, or any "
                      "algorithm, e.g. drf,my_policies:Mine); the claims are left out")
    runs.add_argument("--seeds", metavar="0-4", default=None,
                      help="these seeds instead of the spec's (0-4 or 0,2,7)")
    runs.add_argument("--set", metavar="PATH=VALUE", action="append", default=None,
                      help="set one field of the spec (workload.jobs=200; repeatable)")

    v = sub.add_parser("validate", parents=[data_dir, runs],
                       help="check specs exactly as run would; exit 2 naming the problem")
    v.add_argument("specs", nargs="+", metavar="SPEC")
    v.set_defaults(func=_validate)

    ls = sub.add_parser("list", help="algorithms, workload, hierarchy and cluster kinds, "
                        "and experiments")
    ls.add_argument("--experiments", default=None, metavar="DIR",
                    help="folder of specs to list (default: ./experiments, or else the "
                    "experiments/ of the checkout hierfair is installed from)")
    ls.set_defaults(func=_list)

    r = sub.add_parser("run", parents=[data_dir, runs],
                       help="run every algorithm x grid point x seed of each spec")
    r.add_argument("specs", nargs="+", metavar="SPEC")
    r.add_argument("--out", default="results", metavar="DIR",
                   help="results go to DIR/<spec name>/ (default: %(default)s)")
    r.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="parallel runs (default: all cores); 0: in this process, no "
                   "workers (breakpoints work)")
    r.add_argument("-x", "--exitfirst", action="store_true",
                   help="stop at the first failed run and print its traceback")
    r.add_argument("--pdb", action="store_true",
                   help="on a run's bug, open the debugger at it (runs in this process)")
    r.add_argument("--backend", choices=("loky", "dask"), default="loky",
                   help="local processes, or a Dask cluster (needs hierfair[cluster])")
    r.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster)")
    r.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="record a run as timed out past this wall time")
    r.add_argument("--force", action="store_true", help="rerun runs that have results")
    r.add_argument("--replace", action="store_true",
                   help="replace results that another spec file of the same name wrote")
    r.add_argument("--dry-run", action="store_true", help="list the runs; run nothing")
    r.set_defaults(func=_run)

    rep = sub.add_parser("report", help="the report of a results folder: index.html (figures "
                         "embedded) and README.md")
    rep.add_argument("folder", nargs="?", default="results", metavar="DIR",
                     help="a folder `hierfair run --out` wrote (default: %(default)s, as run's)")
    rep.add_argument("--catalogue", metavar="FILE", default=None, type=Path,
                     help="open with every claim of this catalogue (docs/reproductions.md) "
                     "and what checks it")
    rep.set_defaults(func=_report)

    a = sub.add_parser("allocate", parents=[data_dir],
                       help="fill an empty cluster and print every node's share")
    a.add_argument("spec", metavar="SPEC")
    a.add_argument("--algorithm", "-a", required=True, metavar="NAME")
    a.add_argument("--churn", type=int, default=0, metavar="N",
                   help="then N times: the earliest-started task finishes, reallocate")
    a.add_argument("--seed", type=int, default=None)
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a.set_defaults(func=_allocate)

    ch = sub.add_parser("check", help="put a policy through the contract every policy "
                        "keeps (docs/extending.md); exit 1 if it breaks it")
    ch.add_argument("algorithm", metavar="NAME", help="drf, or your own module:Class")
    ch.set_defaults(func=_check)

    sc = sub.add_parser("schema", help="print the JSON Schema of the spec format (for "
                        "editor completion; docs/spec.md)")
    sc.set_defaults(func=_schema)

    au = sub.add_parser("audit", help="every algorithm against every fairness property on "
                        "random instances; minimal counterexamples (docs/properties.md)")
    au.add_argument("--instances", "-n", type=int, default=100, metavar="N",
                    help="random instances (default: %(default)s; 10000 for a thorough run)")
    au.add_argument("--seed", type=int, default=0, help="first instance's seed (default: 0)")
    au.add_argument("--out", default="results/audit", metavar="DIR",
                    help="table.md, summary.csv, rows.parquet go here (default: %(default)s)")
    au.add_argument("--counterexamples", default=None, metavar="DIR",
                    help="shrink each violation and write it as a spec here "
                    "(make reproduce: experiments/counterexamples)")
    au.add_argument("--algorithms", nargs="+", default=None, metavar="NAME",
                    help="default: every algorithm in `hierfair list` (slots-k as slots-4)")
    au.add_argument("--properties", nargs="+", default=None, metavar="NAME",
                    help="default: all")
    au.add_argument("--depth", type=int, default=3, help="deepest tree (default: 3)")
    au.add_argument("--fanout", type=int, default=3, help="most children (default: 3)")
    au.add_argument("--jobs", "-j", type=int, default=-1, metavar="N",
                    help="parallel workers (default: every core)")
    au.set_defaults(func=_audit)
    return p


def _bytes(text: str) -> int:
    from hierfair.experiment.limits import parse_bytes

    try:
        return parse_bytes(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size such as 8G or 512M: {text!r}") from None


def _plans(args: argparse.Namespace) -> list:
    """Every spec planned (validated at every grid point) before anything runs,
    so a typo in the last one does not surface after an hour of work; what the
    user should know about the inputs is said once, on stderr."""
    from hierfair.errors import SpecError
    from hierfair.experiment import overrides as cli_overrides
    from hierfair.experiment.limits import MAX_RUNS
    from hierfair.experiment.plan import plan
    from hierfair.experiment.spec import read_yaml

    if args.max_runs is not None and args.max_runs < 1:
        raise SpecError("must be at least 1", where="--max-runs", value=args.max_runs)
    changes = cli_overrides.parse(args.algorithms, args.seeds, args.set)
    plans, problems = [], []
    for path in args.specs:
        try:  # every spec is checked: all their problems are reported at once
            data, notes = cli_overrides.apply(read_yaml(path), changes)
            for note in notes:
                print(f"hierfair: note: {path}: {note}", file=sys.stderr)
            planned = plan(data, source=path, data_dir=args.data_dir,
                           max_memory=args.max_memory, max_runs=args.max_runs or MAX_RUNS,
                           progress=_Checking(path), overrides=changes.record())
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


def _list(args: argparse.Namespace) -> int:
    from hierfair.algorithms import available, params_of, plugins
    from hierfair.datasets import CLUSTER_KINDS, HIERARCHY_KINDS, WORKLOAD_KINDS

    def section(title: str, rows: list[tuple[str, str]]) -> None:
        print(title)
        width = max((len(n) for n, _ in rows), default=0)
        for name, desc in rows:
            print(f"  {name:<{width}}  {desc}")
        print()

    algos = []
    for name, cls in available().items():
        origin = f" [plugin: {plugins()[name]}]" if name in plugins() else ""
        algos.append((name, (cls.description or cls.__doc__ or "").strip() + origin))
        for field, kind, default in params_of(cls):
            algos.append(("", f"  {field}: {kind} = {default}"))
    section("algorithms (params: name: type = default; your own: docs/extending.md):",
            algos)
    section("workload kinds:", [(n, k.description) for n, k in WORKLOAD_KINDS.items()])
    section("hierarchy kinds:", [(n, k.description) for n, k in HIERARCHY_KINDS.items()])
    section("cluster kinds:", [(n, k.description) for n, k in CLUSTER_KINDS.items()])
    folder, where = _experiments_folder(args.experiments)
    rows = [(str(path), _describe(path)) for path in sorted(folder.glob("*.yaml"))]
    if rows:
        section(f"experiments ({where}):", rows)
    else:
        print(f"experiments: none found (looked in {where}); --experiments DIR lists the "
              "specs of another folder")
    return 0


def _shipped_experiments() -> Path:
    """The experiments/ folder beside the hierfair package: the checkout's, for
    the editable install `make install` makes."""
    import hierfair

    return Path(hierfair.__file__).resolve().parent.parent / "experiments"


def _experiments_folder(given: str | None) -> tuple[Path, str]:
    """The folder `hierfair list` lists, and where it looked, to print: DIR when
    given; else ./experiments, or, when that holds no spec, the checkout's own,
    so that `hierfair list` finds the shipped experiments from anywhere."""
    if given is not None:
        return Path(given), given
    here, shipped = Path("experiments"), _shipped_experiments()
    if any(here.glob("*.yaml")) or shipped.resolve() == here.resolve():
        return here, str(here)
    if any(shipped.glob("*.yaml")):
        return shipped, f"{shipped}: the checkout hierfair is installed from"
    return here, f"./{here} and {shipped}"


def _describe(path: Path) -> str:
    from hierfair.experiment.spec import read_yaml

    try:
        data = read_yaml(path)
    except HierfairError as exc:
        return f"[invalid: {exc}]"
    return str(data.get("description", "")) if isinstance(data, dict) else "[invalid]"


def _run(args: argparse.Namespace) -> int:
    from hierfair.errors import SpecError
    from hierfair.experiment.cache import describe_plan
    from hierfair.experiment.claims import read_verdicts
    from hierfair.experiment.limits import MAX_TIME
    from hierfair.experiment.progress import Progress
    from hierfair.experiment.sweep import sweep

    if args.jobs is not None and not 0 <= args.jobs <= MAX_JOBS:
        raise SpecError(f"must be from 0 (this process) to {MAX_JOBS}", where="--jobs",
                        value=args.jobs)
    if args.timeout is not None and not 0 < args.timeout <= MAX_TIME:
        raise SpecError(f"must be a number of seconds in (0, {MAX_TIME:g}]", where="--timeout",
                        value=args.timeout)
    out = Path(args.out)
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
            for line in describe_plan(planned.runs, out / planned.experiment.spec.name):
                print(f"  {line}")
        return 0
    failures, every = [], []
    for path, data, planned in specs:
        base = planned.experiment
        frame = sweep(data, out, source=path, data_dir=args.data_dir, jobs=args.jobs,
                      backend=args.backend, scheduler=args.scheduler, force=args.force,
                      timeout=args.timeout, progress=Progress(base.spec.name),
                      planned=planned, replace=args.replace, max_runs=args.max_runs,
                      fail_fast=args.exitfirst, debug=args.pdb)
        bad = frame[frame["status"] != "ok"]
        failures += [f"{base.spec.name}/{r.run}: {r.status}: {r.error}" for r in bad.itertuples()]
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


def _report(args: argparse.Namespace) -> int:
    from hierfair.report import write_report

    readme = write_report(Path(args.folder), catalogue=args.catalogue)
    print(f"{readme.parent / 'index.html'}  (the report: open it in a browser)")
    print(f"{readme}  (the same in text)")
    return 0


def _allocate(args: argparse.Namespace) -> int:
    from hierfair.errors import SpecError
    from hierfair.experiment.allocate import allocate, format_table
    from hierfair.experiment.limits import MAX_SEED, MAX_TASKS
    from hierfair.experiment.spec import AlgorithmSpec, load_spec

    exp = load_spec(args.spec, data_dir=args.data_dir, max_memory=args.max_memory)
    if not 0 <= args.churn <= MAX_TASKS:
        raise SpecError(f"must be from 0 to {MAX_TASKS:,}", where="--churn", value=args.churn)
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise SpecError(f"must be from 0 to {MAX_SEED}", where="--seed", value=args.seed)
    algo = next((a for a in exp.spec.algorithms if args.algorithm in (a.name, a.label)), None)
    if algo is None:
        algo = AlgorithmSpec(name=args.algorithm)
    try:
        result = allocate(exp, algo, churn=args.churn, seed=args.seed)
    except SpecError as exc:
        raise SpecError(exc.message, where="--algorithm", value=exc.value) from None
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(format_table(result, exp.hierarchy.depth))
    return 0


def _check(args: argparse.Namespace) -> int:
    from hierfair.experiment.contract import check_policy

    outcomes = check_policy(args.algorithm)
    width = max(len(o.check) for o in outcomes)
    for o in outcomes:
        detail = f"  {o.detail}" if o.detail else ""
        print(f"{o.status:<6} {o.check:<{width}}{detail}")
    failed = sum(o.status == "failed" for o in outcomes)
    print(f"{args.algorithm}: {len(outcomes) - failed} of {len(outcomes)} checks passed"
          + (f"; {failed} failed" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


def _schema(args: argparse.Namespace) -> int:
    from hierfair.experiment.schema import spec_schema

    print(json.dumps(spec_schema(), indent=1))
    return 0


def _audit(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hierfair.algorithms import make_policy
    from hierfair.audit.instance import Shape
    from hierfair.audit.names import PROPERTY_NAMES
    from hierfair.audit.write import run_audit
    from hierfair.errors import SpecError

    for flag, value, lo, hi in (("--instances", args.instances, 1, 1_000_000),
                                ("--depth", args.depth, 1, 6), ("--fanout", args.fanout, 2, 8)):
        if not lo <= value <= hi:
            raise SpecError(f"must be from {lo} to {hi:,}", where=flag, value=value)
    for name in args.properties or ():
        if name not in PROPERTY_NAMES:
            raise SpecError(f"choose from {', '.join(PROPERTY_NAMES)}", where="--properties",
                            value=name)
    for name in args.algorithms or ():
        try:
            make_policy(name)
        except SpecError as exc:
            raise SpecError(exc.message, where="--algorithms", value=name) from None
    shape = Shape(max_depth=args.depth, max_fanout=args.fanout)
    writable_folder(Path(args.out), "--out")
    if args.counterexamples:
        writable_folder(Path(args.counterexamples), "--counterexamples")
    from hierfair.experiment.workers import quiet_workers

    with quiet_workers():
        summary = run_audit(Path(args.out), Path(args.counterexamples) if args.counterexamples
                            else None, args.instances, args.seed, shape, args.algorithms,
                            args.properties, args.jobs,
                            progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    bad = summary[(summary["violated"] > 0) & (summary["promised"] != "")
                  & (summary["cluster"] == "pooled")]
    print(f"audit: {args.instances} instances; {len(bad)} (algorithm, property) pairs "
          f"violate a promised property on pooled clusters; table in "
          f"{Path(args.out) / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
