"""A trace that fills a datacenter: tasks per CPU-second, peak RSS and wall
time of whole runs (a script, not a test; issue 30 item 5).

    HIERFAIR_DATA=/work/shared/traces .venv/bin/python benchmarks/datacenter.py \\
        [--spec benchmarks/fb2010-week.yaml] [--days 7] [--algorithm drf ...]

Each algorithm runs in a fresh process, so that its peak resident memory
(``ru_maxrss``) is its own: building the workload, the simulation and the
summary, as a ``hierfair run`` of it does, without writing tables.  Prints one
line a run; docs/performance.md records what it printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one(spec: str, algorithm: str, days: int | None) -> dict[str, float]:
    """One run in this process (the child's side)."""
    import tempfile

    import yaml

    from hierfair.algorithms import make_policy
    from hierfair.experiment.results import summarize
    from hierfair.experiment.spec import build_experiment
    data = yaml.safe_load(Path(spec).read_text())
    if days is not None:
        data["workload"]["repeat"] = days
    folder = os.environ.get("HIERFAIR_DATA", str(HERE.parent.parent / "shared" / "traces"))
    wall, cpu = time.perf_counter(), time.process_time()
    exp = build_experiment(data, source=spec, data_dir=folder, max_memory=float("inf"))
    seed = exp.spec.seeds[0]
    exp.workload(seed)
    built = time.process_time() - cpu
    core = time.process_time()
    # as `hierfair run` does: what the spec's tables leave out goes as the run goes
    with tempfile.TemporaryDirectory() as spill:
        result = exp.simulator(make_policy(algorithm), seed, spill_dir=spill).run(
            until=exp.spec.stop_at)
    core = time.process_time() - core
    summarize(result)
    counts = result.counts
    return {"tasks": counts["tasks"], "finished": counts["tasks"] - counts["tasks_unfinished"],
            "build_cpu_s": built, "core_cpu_s": core,
            "tasks_per_cpu_s": (counts["tasks"] - counts["tasks_unfinished"]) / core,
            "wall_s": time.perf_counter() - wall,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(HERE / "fb2010-week.yaml"))
    ap.add_argument("--days", type=int, default=None, help="days of the trace (default: the spec's)")
    ap.add_argument("--algorithm", action="append", help="repeatable (default: the spec's)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(one(args.spec, args.algorithm[0], args.days)))
        return 0
    import yaml

    names = args.algorithm or [a if isinstance(a, str) else a["name"] for a in
                               yaml.safe_load(Path(args.spec).read_text())["algorithms"]]
    for name in names:
        cmd = [sys.executable, __file__, "--child", "--spec", args.spec, "--algorithm", name]
        if args.days is not None:
            cmd += ["--days", str(args.days)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE)
        if out.returncode:
            sys.exit(f"{name}: {out.stderr.strip().splitlines()[-1] if out.stderr else 'failed'}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{Path(args.spec).name} {name} ({args.days or 'spec'} days): {r['tasks']:,} tasks, "
              f"{r['finished']:,} finished; build {r['build_cpu_s']:.1f} CPU-s, simulation "
              f"{r['core_cpu_s']:.1f} CPU-s ({r['tasks_per_cpu_s']:,.0f} tasks/CPU-s), "
              f"whole {r['wall_s']:.1f} s wall, peak RSS {r['peak_rss_mib']:,.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
