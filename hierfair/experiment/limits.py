"""What a spec may ask for: numbers that can be simulated, names that are safe
file names, and runs of a size a process can hold (their memory estimate is in
:mod:`hierfair.experiment.memory`).

Every limit here is checked before anything is built, so a spec that would
overflow, hang or exhaust the machine is refused with one line naming the
field and the value (docs/spec.md, "Limits").  The same checks run for
``validate`` and ``run``, for every grid point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hierfair.errors import SpecError

# The bounds and field types live in the leaf below the engine (algorithms/ and
# datasets/ use them too); the harness reads them from here as before.
from hierfair.fields import (  # noqa: F401 - re-exported
    MAX_AMOUNT,
    MAX_NUMBER,
    MAX_SEED,
    MAX_TIME,
    MAX_WEIGHT,
    MIN_WEIGHT,
    Amount,
    PositiveAmount,
    PositiveTime,
    Seed,
    Time,
    Weight,
    check_range,
)

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
#: Tasks of a run whose jobs are columns and that keeps no per-task table
#: (Size.streamed): a task that never started is its state byte, so the
#: bound is what a run can simulate, not its memory -- a billion tasks is
#: ~10 CPU-hours at the contended 30k tasks a CPU-second.
MAX_COLUMN_TASKS = 1_000_000_000
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

