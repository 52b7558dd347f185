"""What every workload kind shares: its inputs, trace lookup, and job checks.

A workload kind turns its ``params`` and a :class:`BuildContext` (cluster,
hierarchy, seed, where to look for trace files) into :class:`RawJob` records;
:func:`finalize` checks them against the cluster and hierarchy once, for every
kind alike, and numbers them in arrival order.

Trace files are never bundled.  A spec names a file; :func:`resolve_trace`
looks for it, in order: as given (absolute, or relative to the working
directory), in ``--data-dir``, in ``$HIERFAIR_DATA``, and beside the spec.
When it is nowhere, the error says which file, where it looked and how to get
it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hierfair.errors import SpecError, did_you_mean
from hierfair.fields import MAX_AMOUNT, MAX_TIME, check_range
from hierfair.sim.model import Cluster, Demand, Hierarchy, InputFile, Job, Workload

DATA_ENV = "HIERFAIR_DATA"


@dataclass(frozen=True)
class BuildContext:
    """Everything a workload kind may use besides its own params."""

    cluster: Cluster
    hierarchy: Hierarchy
    seed: int
    spec_path: str = ""  # the spec file, for relative trace paths and messages
    data_dir: str | None = None  # --data-dir

    def rng(self, salt: int = 0) -> np.random.Generator:
        """A generator for this seed; ``salt`` separates independent streams."""
        return np.random.default_rng([self.seed, salt])


@dataclass(frozen=True)
class RawJob:
    """A job as a workload kind produces it, before checking against the spec."""

    queue: str
    demand: dict[str, float]
    durations: Sequence[float] | np.ndarray
    submit: float = 0.0
    name: str = ""
    where: str = ""  # where it came from (field path or file:line), for messages
    #: server labels its tasks need, besides its leaf's (placement constraints)
    requires: frozenset[str] = frozenset()
    #: its priority (production schedulers: higher first, preempted last)
    priority: int = 0
    #: seconds its preempted tasks hold their servers (None: the spec's)
    eviction_latency: float | None = None


def search_dirs(ctx: BuildContext) -> list[Path]:
    dirs = []
    if ctx.data_dir:
        dirs.append(Path(ctx.data_dir))
    if os.environ.get(DATA_ENV):
        dirs.append(Path(os.environ[DATA_ENV]))
    if ctx.spec_path:
        dirs.append(Path(ctx.spec_path).resolve().parent)
    return dirs


def resolve_trace(name: str, ctx: BuildContext, where: str, how_to_get: str) -> Path:
    """The trace file ``name``; raises :class:`SpecError` saying where it looked."""
    given = Path(name).expanduser()
    if given.is_absolute() or given.exists():
        if given.exists():
            return given
        raise SpecError(f"trace file not found. {how_to_get}", where=where, value=name)
    tried = []
    for folder in search_dirs(ctx):
        candidate = folder / given
        if candidate.exists():
            return candidate
        tried.append(str(folder))
    looked = ", ".join(["the working directory", *tried])
    raise SpecError(f"trace file not found (looked in {looked}; set --data-dir or "
                    f"${DATA_ENV}). {how_to_get}", where=where, value=name)


def resolve_traces(names: Sequence[str], where: str, ctx: BuildContext, how_to_get: str,
                   fallback: str) -> tuple[list[Path], str]:
    """The trace files ``names`` (field ``where``), or ``([], missing)`` when one
    is missing and the spec's ``fallback`` allows a generator to stand in."""
    paths = []
    for k, name in enumerate(names):
        try:
            paths.append(resolve_trace(name, ctx, f"{where}[{k}]", how_to_get))
        except SpecError:
            if fallback != "synthetic":
                raise
            return [], name
    return paths, ""


def identify(paths: Sequence[Path], names: Sequence[str]) -> tuple[InputFile, ...]:
    """Each file's name (as the spec gives it), size and content hash."""
    out = []
    for path, name in zip(paths, names, strict=True):
        stat = path.stat()
        out.append(InputFile(name, stat.st_size,
                             _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)))
    return tuple(out)


@lru_cache(maxsize=256)  # keyed by path, size and mtime: a changed file is hashed again
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def order_note(out_of_order: int, file: str) -> list[str]:
    """The documented rule for traces whose submit times go backwards: sorted."""
    return ([f"{file}: {out_of_order} lines out of submit-time order, sorted by submit time"]
            if out_of_order else [])


def constrained(demand: np.ndarray, need: frozenset[str], cluster: Cluster, where: str
                ) -> np.ndarray:
    """``demand`` limited to the servers carrying every label in ``need``."""
    servers = cluster.carrying(need)
    if not servers.any():
        raise SpecError(no_server_carries(need, cluster), where=f"{where}.requires",
                        value=sorted(need))
    return demand if servers.all() else Demand(demand, servers)  # every server: no limit


def no_server_carries(need: frozenset[str], cluster: Cluster) -> str:
    """The one line for labels no server carries all of."""
    known = sorted(set().union(*cluster.labels))
    return (f"no server carries every label of {sorted(need)} (the servers' labels: "
            f"{', '.join(known) or 'none'})")


def check_job(r: RawJob, cluster: Cluster, hierarchy: Hierarchy,
              fits: dict[tuple[bytes, frozenset[str]], bool]) -> tuple[int, np.ndarray]:
    """``r``'s leaf and demand vector (read-only; a :class:`Demand` when
    limited to some servers), checked against the hierarchy and the cluster;
    ``fits`` remembers which shapes fit (a trace repeats few)."""
    if r.queue not in hierarchy:
        leaves = [hierarchy.paths[x] for x in hierarchy.leaves]
        raise SpecError("no such queue in the hierarchy;"
                        + (did_you_mean(r.queue, leaves) or " leaves: "
                           + ", ".join(leaves[:5]) + (" ..." if len(leaves) > 5 else "")),
                        where=f"{r.where}.queue", value=r.queue)
    leaf = hierarchy.index(r.queue)
    if not hierarchy.is_leaf(leaf):
        below = range(leaf, int(hierarchy.subtree_end[leaf]))
        under = [hierarchy.paths[x] for x in below if hierarchy.is_leaf(x)]
        raise SpecError(f"is an internal node; jobs go to leaves such as {under[:3]}",
                        where=f"{r.where}.queue", value=r.queue)
    for res in r.demand:
        if res not in cluster.resources:
            raise SpecError(f"unknown resource; the cluster has {list(cluster.resources)}",
                            where=f"{r.where}.demand.{res}", value=res)
    for res, amount in r.demand.items():
        check_range(amount, 0, MAX_AMOUNT, f"{r.where}.demand.{res}")
    check_range(float(r.submit), 0, MAX_TIME, f"{r.where}.submit")
    demand = cluster.vector(r.demand)
    if not (demand > 0).any():
        raise SpecError("a task must demand some resource", where=f"{r.where}.demand",
                        value=dict(r.demand))
    need = hierarchy.requires_of(leaf) | r.requires
    if need:
        demand = constrained(demand, need, cluster, r.where)
    shape = (demand.tobytes(), need)
    if shape not in fits:
        fits[shape] = cluster.fits_somewhere(demand)
    if not fits[shape]:
        allowed = cluster.capacities if not need else cluster.capacities[cluster.carrying(need)]
        biggest = allowed.max(axis=0)
        raise SpecError(
            "a task of this job fits on no server" + (" it may use" if need else "")
            + f" (largest server capacity per resource: "
            f"{dict(zip(cluster.resources, biggest.tolist()))})",
            where=f"{r.where}.demand", value=dict(r.demand))
    demand.setflags(write=False)
    return leaf, demand


def checked_durations(durations: Sequence[float] | np.ndarray, where: str) -> np.ndarray:
    """Task durations as float64, each in (0, MAX_TIME] seconds."""
    out = np.asarray(durations, dtype=np.float64)
    bad = ~((out > 0) & (out <= MAX_TIME))  # also catches NaN
    if bad.any():
        raise SpecError(f"a task duration must be in (0, {MAX_TIME:g}] seconds",
                        where=f"{where}.duration", value=float(out[bad][0]))
    return out


def finalize(raw: Sequence[RawJob], cluster: Cluster, hierarchy: Hierarchy,
             source: str, *, inputs: tuple[InputFile, ...] = (), notes: Sequence[str] = (),
             skipped_lines: int = 0) -> Workload:
    """Check jobs against the cluster and hierarchy, then number them in
    arrival order (submit time; listed order breaks ties)."""
    jobs = []
    fits: dict[tuple[bytes, frozenset[str]], bool] = {}
    for r in raw:
        leaf, demand = check_job(r, cluster, hierarchy, fits)
        durations = checked_durations(r.durations, r.where)
        jobs.append((float(r.submit), leaf, demand, durations, r.name, r.priority,
                     r.eviction_latency))
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][0])  # stable: listed order on ties
    return Workload(
        jobs=tuple(Job(id=k, leaf=jobs[i][1], submit=jobs[i][0], demand=jobs[i][2],
                       durations=jobs[i][3], name=jobs[i][4], priority=jobs[i][5],
                       eviction_latency=jobs[i][6])
                   for k, i in enumerate(order)),
        source=source, inputs=inputs, notes=tuple(notes), skipped_lines=skipped_lines,
    )
