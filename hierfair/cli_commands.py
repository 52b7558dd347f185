"""The command line's other commands: ``list``, ``report``, ``allocate``,
``check``, ``schema`` and ``audit``.

Each takes the parsed arguments and returns the exit status; bad input is
raised as a :class:`~hierfair.errors.HierfairError`, which
:func:`hierfair.cli.main` prints as one line.  What a command needs is
imported when it runs (a fast start, no import circles).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hierfair.cli_run import writable_folder
from hierfair.errors import HierfairError


def _list(args: argparse.Namespace) -> int:
    from hierfair.algorithms import available, params_of, plugins
    from hierfair.datasets import CLUSTER_KINDS, HIERARCHY_KINDS, WORKLOAD_KINDS
    from hierfair.sim.placement_rules import PLACEMENT_HELP

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
    section("placements (cluster.placement, or an algorithm's placement:):",
            list(PLACEMENT_HELP.items()))
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

    import numpy as np

    from hierfair.algorithms import make_policy
    from hierfair.audit.instance import Shape
    from hierfair.audit.write import run_audit
    from hierfair.errors import SpecError
    from hierfair.experiment.properties import PROPERTIES
    from hierfair.experiment.properties_servers import contradicts

    for flag, value, lo, hi in (("--instances", args.instances, 1, 1_000_000),
                                ("--depth", args.depth, 1, 6), ("--fanout", args.fanout, 2, 8)):
        if not lo <= value <= hi:
            raise SpecError(f"must be from {lo} to {hi:,}", where=flag, value=value)
    for name in args.properties or ():
        if name not in PROPERTIES:
            raise SpecError(f"choose from {', '.join(PROPERTIES)}", where="--properties",
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
                  & np.array([contradicts(a, c) for a, c in zip(summary["algorithm"],
                                                                summary["cluster"])])]
    print(f"audit: {args.instances} instances; {len(bad)} (algorithm, property) pairs "
          f"violate a promised property (on pooled clusters; DRFH, TSF and PS-DSF also on "
          f"several servers); table in {Path(args.out) / 'table.md'}")
    return 0
