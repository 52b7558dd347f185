"""What a run may hold: its estimated peak memory, checked against the machine.

A run's size (:class:`Size`: servers, nodes, jobs, tasks, trace bytes, and
whether it keeps per-task tables) gives an upper bound of its resident peak;
:func:`check_memory` refuses a run whose bound exceeds ``--max-memory`` or a
limit of this machine (physical memory, RLIMIT_AS, cgroups), with one line
naming the field that costs most (docs/spec.md, "Memory").  The count limits
of a run (servers, nodes, tasks) are in :mod:`hierfair.experiment.limits`.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

from hierfair.errors import SpecError
from hierfair.experiment.limits import (
    MAX_COLUMN_TASKS,
    MAX_EXPANDED,
    MAX_NODES,
    MAX_SERVERS,
    MAX_TASKS,
)

#: What a run holds before its inputs, at least: the interpreter and its
#: libraries (numpy, pandas, pyarrow; numba for hdrf-fast), 250-295 MiB
#: measured on this project's machine.  The same libraries take ~100 MiB
#: more on others (CI's, 2026-11-26: a one-task run peaked at 356 MiB), so
#: the check measures its own process too (:func:`base_bytes`).
_BASE_BYTES = 320 * 2**20
#: A run's peak over what its process holds when the spec is checked, in the
#: smallest run (its frames, the parquet writer): 250 MiB for 228 MiB measured.
_RUN_SHARE = 1.25
#: The most the measured base may be: a process that already holds much (a
#: notebook, a test session) would otherwise refuse runs that fit the fresh
#: worker processes they run in.
_BASE_MAX = 2 * _BASE_BYTES
#: What a task costs a run that keeps no per-task table (Size.lean): its
#: ledger columns (73 bytes), its duration (8), its latencies (16, bounded
#: past a million), and, per resource, two utilisation rows and their copy in
#: the summary (+ 16 (1 + m) above).  Measured 2026-11-26: 87 bytes a task for
#: the FB-2010 day (3.25 M tasks, drf, tables [jobs]), 190 for H-DRF's 1:20
#: week (3.5 M tasks, tables [jobs, utilization]).
_LEAN_TASK = 300
#: What a task costs a lean run whose jobs are columns (Size.streamed): its
#: state byte, and its share of the pages of the blocks whose tasks run or
#: wait started (the ledger's columns, 81 bytes a task, written a page at a
#: first start and given back when the block retires; docs/simulator.md).
_COLUMN_TASK = 4
#: What a job of such a run costs: its columns (leaf, submit, size, demand),
#: the ledger's per-job arrays (~110 bytes) and its row of the jobs table,
#: built at the end with pandas' and Arrow's copies (~190 bytes at its
#: peak): ~370 bytes a job measured at 2,126,000 jobs.
_COLUMN_JOB = 1000
#: What such a run holds whatever its length: the utilisation table's row
#: group before it is written (2^20 rows), the decision latencies (bounded
#: past a million), the blocks of the newest arrivals (RETIRE_LAG).
_COLUMN_RUNNING = 512 * 2**20
#: Tables with a row per task, attempt, allocation or decision.
PER_TASK_TABLES = frozenset({"tasks", "attempts", "allocations", "decisions"})
#: A job list written out in a spec costs about this much per value while it
#: is read, validated and copied into the plan: ~9 values a job, 12.7 kB a
#: written job measured against 2 kB a generated one.
_WRITTEN_VALUE_BYTES = 1100


@dataclass(frozen=True)
class Size:
    """How big one run is: what its memory grows with."""

    servers: int
    nodes: int
    depth: int
    resources: int
    jobs: int
    tasks: int
    #: trace bytes read, as text: a compressed file counts _GZIP_RATIO times
    input_bytes: int = 0
    #: the run keeps no table with a row per task or decision (only jobs,
    #: utilization, preemptions): what a task costs is its ledger columns
    lean: bool = False
    #: the workload keeps its jobs as columns (a JobTable): in a lean run a
    #: task that never started costs its state byte
    columns: bool = False

    @property
    def streamed(self) -> bool:
        """Lean, with jobs as columns: what a run holds grows with its jobs
        and what runs now, barely with its tasks."""
        return self.lean and self.columns

    @property
    def max_tasks(self) -> int:
        return MAX_COLUMN_TASKS if self.streamed else MAX_TASKS

    def estimate_bytes(self, base: int = _BASE_BYTES) -> int:
        """Peak resident memory of one run, an upper bound (docs/spec.md,
        "Memory"; tests/test_memory_estimate.py measures it), for a process
        holding ``base`` bytes before its inputs (:func:`base_bytes`).

        Per task: its ledger columns, decision and table rows (or its
        duration, written in the spec), and the allocation rows its start and
        its end write, one per node of its leaf's path (depth + 1 nodes, 3 + m
        columns and a path name), with the copies pandas and Arrow make when
        the tables are written.  Per node: its path, its tuple of ancestors
        (depth + 1 entries), its allocation row and the policies' per-node
        state (slots-k keeps the most).  Per job and per server: their
        objects and vectors, and a job list written out in the spec (at most
        MAX_EXPANDED values).  Per byte of trace text read: pandas' parse of it
        (the Google parts, 5.9 MB compressed, peak at 516 MiB whatever the
        sample).  A lean run of jobs as columns (:attr:`streamed`) holds a
        byte a task that never started, a job's columns and rows, and what
        runs now (_COLUMN_TASK, _COLUMN_JOB, _COLUMN_RUNNING): measured, not
        a worst case (docs/spec.md, "Memory").
        """
        m, path = self.resources, self.depth + 1
        running = 0
        if self.streamed:
            per_task, per_job, running = _COLUMN_TASK, _COLUMN_JOB + 16 * m, _COLUMN_RUNNING
        else:
            per_task = (_LEAN_TASK + 16 * (1 + m) if self.lean
                        else 1000 + 2 * path * (24 + 16 * (3 + m)))
            per_job = 2500 + 16 * m
        per_node = 2300 + 32 * path + 32 * m
        per_server = 800 + 32 * m
        # a job list written in the spec (never jobs as columns: a generator's)
        written = 0 if self.columns else _WRITTEN_VALUE_BYTES * min(9 * self.jobs, MAX_EXPANDED)
        return (base + running + self.tasks * per_task + self.nodes * per_node
                + self.jobs * per_job + self.servers * per_server + written
                + _TEXT_BYTE * self.input_bytes)


#: A compressed trace holds about this many bytes of text per byte.
_GZIP_RATIO = 8
#: Peak bytes per byte of trace text read (its parse, its frames, the jobs
#: built from it): 264 MiB above the base for the Google parts' ~47 MB of text.
_TEXT_BYTE = 8


def text_bytes(files: list[tuple[str, int]]) -> int:
    """The bytes of text in trace files (name, size): compressed ones count
    as _GZIP_RATIO times their size."""
    return sum(size * (_GZIP_RATIO if name.endswith((".gz", ".bz2", ".xz", ".zip")) else 1)
               for name, size in files)


#: cgroup v1 writes "no limit" as a huge number (2^63 rounded to a page).
_NO_LIMIT = 2**60
#: Address space a run maps beyond what it keeps resident (shared libraries,
#: thread stacks): about 500 MiB measured (a one-task run needs RLIMIT_AS
#: 0.75 GiB for a 0.25 GiB peak), more where /proc/self/status says so.
_UNRESIDENT_MIN = 512 * 2**20


def physical_memory() -> int:
    """Physical memory of this machine, in bytes."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _address_space_limit() -> int | None:
    """The soft RLIMIT_AS of this process (``ulimit -v``), None if unlimited."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        unlimited = resource.RLIM_INFINITY
    except (ImportError, AttributeError, OSError, ValueError):  # not on this system
        return None
    return soft if soft != unlimited and 0 < soft < _NO_LIMIT else None


def _read_limit(path: str) -> int | None:
    """A cgroup limit file's bytes; None for ``max``, "no limit", or no file."""
    try:
        with open(path) as f:
            value = int(f.read().strip())
    except (OSError, ValueError):  # absent, unreadable, or "max"
        return None
    return value if 0 < value < _NO_LIMIT else None


#: Where this process's cgroups are listed, and where cgroup files are mounted.
_PROC_CGROUP = "/proc/self/cgroup"
_CGROUP_ROOT = "/sys/fs/cgroup"


def _cgroup_limits() -> list[tuple[int, str]]:
    """The memory limits of this process's cgroup and its ancestors (a
    parent's limit binds too): v2 ``memory.max``, v1 ``memory.limit_in_bytes``.
    Inside a container the cgroup is often the mount's root: its files count."""
    top = _CGROUP_ROOT
    files = {f"{top}/memory.max": "memory.max",
             f"{top}/memory/memory.limit_in_bytes": "memory.limit_in_bytes"}
    try:
        with open(_PROC_CGROUP) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:  # "0::/path" (v2), "4:memory:/path" (v1)
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if controllers == "":
            roots, name = (top, f"{top}/unified"), "memory.max"
        elif "memory" in controllers.split(","):
            roots, name = (f"{top}/memory",), "memory.limit_in_bytes"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        if ".." in parts:  # a cgroup outside this namespace: only the root's files
            parts = []
        for root in roots:
            for k in range(len(parts), -1, -1):
                files.setdefault("/".join([root, *parts[:k], name]), name)
    return [(value, f"cgroup {name}") for path, name in files.items()
            if (value := _read_limit(path)) is not None]


def memory_limits() -> list[tuple[int, str]]:
    """Every limit on this process's memory, as (bytes, what it is): physical
    memory, RLIMIT_AS when set, and the cgroup limits."""
    out = [(physical_memory(), "physical memory")]
    if (limit := _address_space_limit()) is not None:
        out.append((limit, "RLIMIT_AS"))
    return out + _cgroup_limits()


def memory_limit() -> tuple[int, str]:
    """The smallest of :func:`memory_limits`, and what it is."""
    return min(memory_limits(), key=lambda item: item[0])


def machine_memory() -> int:
    """The memory a run of this process may use, in bytes: the smallest of
    physical memory, RLIMIT_AS and the cgroup limits."""
    return memory_limit()[0]


def unresident_bytes() -> int:
    """Address space this process maps without keeping it resident (shared
    libraries, thread stacks): a run maps as much beside its resident peak,
    and RLIMIT_AS counts both (at least _UNRESIDENT_MIN: the check may run
    before the libraries are loaded)."""
    try:
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f if line.startswith("Vm"))
        kib = int(status["VmSize"].split()[0]) - int(status["VmRSS"].split()[0])
    except (OSError, ValueError, KeyError, IndexError):
        return _UNRESIDENT_MIN
    return max(kib * 1024, _UNRESIDENT_MIN)


def resident_bytes() -> int:
    """This process's resident size now, in bytes (0 where unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


@functools.cache
def base_bytes() -> int:
    """What a run holds before its inputs, on this machine: _RUN_SHARE of
    this process's resident size at its first check -- the libraries are
    loaded by then (the CLI imports every algorithm), no input is read yet --
    between _BASE_BYTES and _BASE_MAX.  Measured once a process: later checks
    come after inputs were read, which the estimate counts on its own.  The
    cap keeps a process that already holds much (a notebook) from refusing
    runs that fit the worker processes they run in."""
    return min(_BASE_MAX, max(_BASE_BYTES, int(_RUN_SHARE * resident_bytes())))


def check_memory(size: Size, max_memory: float | None, where: str) -> None:
    """Refuse a run whose estimate exceeds ``max_memory`` bytes, or by
    default any limit of :func:`memory_limits` (against RLIMIT_AS, the
    address space: the estimate plus what the libraries map)."""
    for count, limit, what in ((size.servers, MAX_SERVERS, "servers"),
                               (size.nodes, MAX_NODES, "hierarchy nodes"),
                               (size.tasks, size.max_tasks, "tasks")):
        if count > limit:
            raise SpecError(f"{what}: {count:,} exceed the limit of {limit:,} per run",
                            where=where, value=count)
    need = size.estimate_bytes(base_bytes())
    limits = [(max_memory, "--max-memory")] if max_memory is not None else memory_limits()
    over = []
    for limit, what in limits:
        wanted = need + unresident_bytes() if what == "RLIMIT_AS" else need
        if wanted > limit:
            over.append((wanted / limit, wanted, limit, what))
    if not over:
        return
    _, wanted, limit, what = max(over)
    kind, mapped = "memory", ""
    if wanted > need:
        kind = "address space"
        mapped = f"; {format_bytes(need)} resident, {format_bytes(wanted - need)} mapped"
    raise SpecError(f"a run needs about {format_bytes(wanted)} of {kind} ({size.tasks:,} "
                    f"tasks, {size.servers:,} servers, {size.nodes:,} nodes{mapped}); the "
                    f"limit is {format_bytes(limit)} ({what}); raise it with --max-memory",
                    where=where, value=size.tasks)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def parse_bytes(text: str) -> int:
    """``8G``, ``512M``, ``2GiB``, ``1000000`` -> bytes; raises ValueError."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    factor = 1
    if t and t[-1] in scale:
        factor, t = scale[t[-1]], t[:-1]
    value = float(t) * factor
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return int(value)
