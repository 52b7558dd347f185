"""A spec's runs narrowed or changed from the command line, without editing it::

    hierfair run SPEC -a drf,my_policies:Mine --seeds 0-4 --set workload.jobs=200

``-a`` keeps the named algorithms (an entry of the spec by its label, name
or class name, with its params and the grid keys that sweep it; any other
name as a new entry); ``--seeds`` replaces the seeds; ``--set PATH=VALUE``
sets one field written in the spec, or a new key of a mapping written in it
(the grid's path syntax, the value read as YAML; a field the grid sweeps is
refused).  A changed field changes the runs' cache keys, so a cached result
is one of the same spec; runs.parquet's ``overrides`` records what the
command that wrote it changed, on every row.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import yaml

from hierfair.algorithms import policy_class
from hierfair.errors import SpecError
from hierfair.experiment.grid import apply_grid_value  # the grid's path syntax
from hierfair.experiment.limits import MAX_ADAPTIVE_SEEDS, MAX_SEED


class Overrides(NamedTuple):
    """What the command line asked for; each empty when not given."""

    algorithms: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    sets: tuple[tuple[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.algorithms or self.seeds or self.sets)

    def record(self) -> str:
        """The overrides as a command line fragment (runs.parquet ``overrides``)."""
        parts = [f"-a {','.join(self.algorithms)}"] if self.algorithms else []
        if self.seeds:
            parts.append(f"--seeds {','.join(map(str, self.seeds))}")
        parts += [f"--set {path}={yaml.safe_dump(value, default_flow_style=True).strip()}"
                  .removesuffix("\n...") for path, value in self.sets]
        return " ".join(parts)


def parse(algorithms: str | None, seeds: str | None, sets: Sequence[str] | None) -> Overrides:
    """The flags as given (``drf,x:Y``; ``0-4`` or ``0,2,7``; ``a.b=1``)."""
    names = tuple(a.strip() for a in (algorithms or "").split(",") if a.strip())
    if algorithms is not None and not names:
        raise SpecError("name at least one algorithm (drf,hdrf)", where="-a", value=algorithms)
    return Overrides(names, _seeds(seeds) if seeds is not None else (),
                     tuple(_set(s) for s in sets or ()))


def _seeds(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise SpecError("seeds as 0-4 or 0,2,7", where="--seeds", value=text)
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if len(out) + high - low + 1 > MAX_ADAPTIVE_SEEDS or high > MAX_SEED:  # before building
            raise SpecError(f"at most {MAX_ADAPTIVE_SEEDS} seeds, each at most {MAX_SEED}",
                            where="--seeds", value=text)
        out += range(low, high + 1)
    return tuple(dict.fromkeys(out))


def _set(text: str) -> tuple[str, Any]:
    path, sep, value = text.partition("=")
    if not sep or not path.strip():
        raise SpecError("give PATH=VALUE (e.g. workload.jobs=200)", where="--set", value=text)
    try:
        return path.strip(), yaml.safe_load(value)
    except yaml.YAMLError:
        raise SpecError("the value is not YAML", where=f"--set {path.strip()}",
                        value=value) from None


def _new(name: str) -> dict[str, Any]:
    """An algorithm the spec does not name, as a new entry (checked here, so
    that its error names the flag)."""
    try:
        policy_class(name)
    except SpecError as exc:
        raise SpecError(exc.message, where="-a", value=name) from None
    return {"name": name}


def _keep_algorithms(data: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """``data['algorithms']`` narrowed to ``names`` (an entry by its label,
    else its name, else its class name), the grid's ``algorithms[i]`` keys
    following their entry; notes for what was left out."""
    entries = [{"name": a} if isinstance(a, str) else a
               for a in data.get("algorithms") or [] if isinstance(a, str | dict)]

    def index(name: str) -> int | None:
        for field in ("label", "name"):
            for i, e in enumerate(entries):
                if e.get(field) == name:
                    return i
        return next((i for i, e in enumerate(entries)
                     if str(e.get("name", "")).rpartition(":")[2] == name), None)

    found = [index(name) for name in names]
    data["algorithms"] = [entries[i] if i is not None else _new(name)
                          for i, name in zip(found, names, strict=True)]
    notes = []
    grid = data.get("grid")
    if isinstance(grid, dict):
        moved: dict[str, Any] = {}
        for key, values in grid.items():
            m = re.match(r"algorithms\[(\d+)\](.*)", str(key))
            if not m:
                moved[key] = values
            elif int(m.group(1)) in found:
                moved[f"algorithms[{found.index(int(m.group(1)))}]{m.group(2)}"] = values
            else:
                notes.append(f"-a: grid.{key} sweeps an algorithm left out; left out")
        data["grid"] = moved
    if data.pop("claims", None):
        notes.append("-a: the spec's claims are checked only when all its algorithms run; "
                     "left out")
    return notes


def apply(data: Any, overrides: Overrides) -> tuple[Any, list[str]]:
    """The spec data with the overrides applied, and notes for the user."""
    if not overrides or not isinstance(data, dict):
        return data, []
    data, notes = copy.deepcopy(data), []
    if overrides.algorithms:
        notes += _keep_algorithms(data, overrides.algorithms)
    if overrides.seeds:
        data["seeds"] = list(overrides.seeds)
    grid = data.get("grid") if isinstance(data.get("grid"), dict) else {}
    for path, value in overrides.sets:
        if path in grid:  # the grid would set it again at every point
            raise SpecError("the spec's grid sets this field; change the grid's values",
                            where=f"--set {path}", value=value)
        try:
            apply_grid_value(data, path, value)
        except SpecError as exc:
            raise SpecError(exc.message, where=f"--set {path}", value=exc.value) from None
    return data, notes
