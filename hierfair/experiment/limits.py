"""What a spec may ask for: numbers that can be simulated, and runs that fit in memory.

Every limit here is checked before anything is built, so a spec that would
overflow, hang or exhaust the machine is refused with one line naming the
field and the value (docs/spec.md, "Limits").  The same checks run for
``validate`` and ``run``, for every grid point.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from hierfair.errors import SpecError

#: Any number in a spec: beyond 2**53 an integer is no longer exact as a float.
MAX_NUMBER = float(2**53)
#: Simulated time, in seconds (about 31.7 years): submit times, durations, repairs.
MAX_TIME = 1e9
#: A capacity or a per-task demand, in the resource's own unit.
MAX_AMOUNT = 1e12
#: Node weights: their ratios must stay representable in shares.
MIN_WEIGHT, MAX_WEIGHT = 1e-9, 1e9
#: Seeds feed numpy's SeedSequence and are stored as int64.
MAX_SEED = 2**32 - 1
#: A spec's name and an algorithm's label become file and folder names (the
#: results folder, its runs' folders): one path component of at most this
#: many characters, letters, digits, '.', '_' and '-', starting with a letter
#: or digit -- no separator, no '..', no control character.
MAX_NAME = 100
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
#: A label may also start with '_' (a class named ``_Mine`` labels its runs).
LABEL_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._-]*$"
#: The most seeds an adaptive ``seeds: {min, max}`` may run.
MAX_ADAPTIVE_SEEDS = 200
#: Levels of nesting in a spec (a hand-written tree of depth d nests 2d deep).
MAX_NESTING = 200
#: Servers, hierarchy nodes and tasks of one run, whatever the memory says.
MAX_SERVERS = 10_000_000
MAX_NODES = 10_000_000
MAX_TASKS = 100_000_000
#: Runs of one spec (grid points x algorithms x seeds) unless --max-runs
#: raises it: a typo in a grid can ask for a million runs, and each grid
#: point is built and checked before anything runs.
MAX_RUNS = 10_000


#: Values a spec may hold once YAML aliases are expanded (a 1 KB spec of
#: nested aliases can stand for billions: refused before anything walks it).
MAX_EXPANDED = 1_000_000


def check_expansion(data: Any) -> None:
    """Refuse a spec whose aliases expand to more than MAX_EXPANDED values,
    counting each shared node once per use without expanding it."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, Mapping | list | tuple):
            return 1
        if id(node) in sizes:
            return sizes[id(node)]
        if depth > MAX_NESTING:  # check_numbers names the nesting; stop counting here
            return 1
        sizes[id(node)] = 1  # an alias to its own ancestor: check_numbers says so
        children = node.values() if isinstance(node, Mapping) else node
        total = 1 + sum(size(c, depth + 1) for c in children)
        sizes[id(node)] = total
        return total

    total = size(data, 0)
    if total > MAX_EXPANDED:
        raise SpecError(f"expands to more than {MAX_EXPANDED:,} values through YAML aliases "
                        f"({total:,}); write the values out or use a grid",
                        value=f"{total:,} values")


def check_numbers(data: Any, where: str = "", _inside: tuple[int, ...] = ()) -> None:
    """Reject non-finite and unrepresentable numbers anywhere in raw spec data,
    and structures that contain themselves (a YAML alias to its own ancestor).

    YAML's ``.inf`` and ``.nan`` would otherwise pass validation and turn into
    ``null`` on the way to a run (JSON has no infinity).
    """
    if isinstance(data, Mapping | list | tuple):
        if id(data) in _inside:
            raise SpecError("a YAML alias refers to a node that contains it",
                            where=where or None)
        if len(_inside) >= MAX_NESTING:
            raise SpecError(f"nested too deeply (limit {MAX_NESTING} levels)",
                            where=where or None)
        _inside = (*_inside, id(data))
    if isinstance(data, bool):
        return
    if isinstance(data, int | float):
        if isinstance(data, float) and not math.isfinite(data):
            raise SpecError("not a finite number", where=where or None, value=data)
        if abs(data) > MAX_NUMBER:
            raise SpecError("too large (limit 2^53)", where=where or None, value=data)
    elif isinstance(data, Mapping):
        for key, value in data.items():
            check_numbers(value, f"{where}.{key}" if where else str(key), _inside)
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            check_numbers(value, f"{where}[{i}]", _inside)


def check_range(value: float, low: float, high: float, where: str) -> None:
    if not low <= value <= high:
        raise SpecError(f"out of range [{low:g}, {high:g}]", where=where, value=value)


# -- memory ---------------------------------------------------------------------
@dataclass(frozen=True)
class Size:
    """How big one run is: what its memory grows with."""

    servers: int
    nodes: int
    depth: int
    resources: int
    jobs: int
    tasks: int

    def estimate_bytes(self) -> int:
        """Peak memory of one run, an upper estimate (calibrated in docs/spec.md).

        Per task: the ledger (about ten 8-byte columns), its attempt and
        decision rows, its row of the tasks table, and the allocation rows its
        start and end write along its leaf's path; per job, per server and per
        node, their objects and vectors.  Doubled for the copies pandas makes
        when the tables are assembled and written.
        """
        m = self.resources
        per_task = 300 + 2 * (self.depth + 1) * (3 + m) * 8
        per_job = 1500 + 16 * m
        per_server = 600 + 24 * m
        per_node = 400 + 24 * m
        body = (self.tasks * per_task + self.jobs * per_job + self.servers * per_server
                + self.nodes * per_node)
        return 2 * body + 150 * 2**20  # the interpreter and libraries


def machine_memory() -> int:
    """Physical memory of this machine, in bytes."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def check_memory(size: Size, max_memory: float | None, where: str) -> None:
    """Refuse a run whose estimate exceeds ``max_memory`` bytes (default: the machine's)."""
    for count, limit, what in ((size.servers, MAX_SERVERS, "servers"),
                               (size.nodes, MAX_NODES, "hierarchy nodes"),
                               (size.tasks, MAX_TASKS, "tasks")):
        if count > limit:
            raise SpecError(f"{what}: {count:,} exceed the limit of {limit:,} per run",
                            where=where, value=count)
    limit = max_memory if max_memory is not None else machine_memory()
    need = size.estimate_bytes()
    if need > limit:
        raise SpecError(f"a run needs about {format_bytes(need)} of memory ({size.tasks:,} "
                        f"tasks, {size.servers:,} servers, {size.nodes:,} nodes); the limit "
                        f"is {format_bytes(limit)} (raise it with --max-memory)",
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


# -- the same limits as pydantic field types, for the spec models ------------------
Time = Annotated[float, Field(ge=0, le=MAX_TIME)]  # seconds
PositiveTime = Annotated[float, Field(gt=0, le=MAX_TIME)]
Amount = Annotated[float, Field(ge=0, le=MAX_AMOUNT)]  # a capacity or a demand
PositiveAmount = Annotated[float, Field(gt=0, le=MAX_AMOUNT)]
def _weight(value: float) -> float:
    if value < MIN_WEIGHT:
        raise ValueError(f"a weight must be at least {MIN_WEIGHT:g}")
    return value


Weight = Annotated[float, Field(gt=0, le=MAX_WEIGHT), AfterValidator(_weight)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
