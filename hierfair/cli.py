"""``hierfair`` on the command line.

Bad input of any kind ends with one line on stderr naming the file, the field
(or line) and the value, and exit status 2 -- never a traceback.  Here: the
parser, ``main`` and the handling of signals and errors; the commands are in
:mod:`hierfair.cli_run` (validate, run) and :mod:`hierfair.cli_commands`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from hierfair.version import __version__
from hierfair.cli_commands import (  # noqa: F401 - the commands, re-exported
    _allocate,
    _audit,
    _check,
    _describe,
    _experiments_folder,
    _list,
    _report,
    _schema,
    _shipped_experiments,
)
from hierfair.cli_run import (  # noqa: F401 - the commands, re-exported
    MAX_JOBS,
    _Checking,
    _plans,
    _print_verdicts,
    _run,
    _validate,
    writable_folder,
)
from hierfair.errors import HierfairError, RunFailed

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
        from hierfair.experiment.memory import format_bytes, memory_limit

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
    runs.add_argument("--only", metavar="PATH=VALUE", action="append", default=None,
                      help="run only the grid points with this grid value (a slice of a "
                      "long sweep; repeatable): runs of other points keep earlier "
                      "results, and claims that need missing runs are n/a")

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
    r.add_argument("--progress-every", type=float, default=5.0, metavar="MINUTES",
                   help="inside a long run, a line this often (a bar on a terminal when "
                   "runs execute in this process: --jobs 0 or 1); 0: none (default: 5)")
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
    from hierfair.experiment.memory import parse_bytes

    try:
        return parse_bytes(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size such as 8G or 512M: {text!r}") from None


if __name__ == "__main__":
    sys.exit(main())
