"""A slice of a sweep: ``hierfair run SPEC --only PATH=VALUE``.

A sweep too long for one sitting (the paper-scale week, ~25 CPU-hours) runs
a grid point at a time: ``--only workload.arrivals.offered_load=0.5`` runs
only the runs at that grid value (``--only`` again on the same key adds a
value; on another key it narrows).  A slice changes no run -- each keeps
its key, so it is the very run the whole sweep makes -- it only chooses
which of the missing runs execute now (``--force`` reruns only the
slice's).  Runs of other grid points that already have results (an earlier
slice) stay in runs.parquet; the others are left out of it, and every claim
that needs one of them is n/a ("2 of 2 runs of drf not run") -- never
decided on the runs that happen to exist -- until a later slice or the
whole sweep runs it.  A claim whose runs are all there is decided as the
whole sweep decides it.  A spec with adaptive seeds (``seeds: {min, max}``)
is refused: its seed count is decided over every grid point at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import yaml

from hierfair.errors import SpecError


class Only(NamedTuple):
    """One ``--only PATH=VALUE``: the grid key and the value a run must have."""

    path: str
    value: Any

    def record(self) -> str:
        return f"--only {self.path}={yaml.safe_dump(self.value, default_flow_style=True)}" \
            .removesuffix("\n...\n").strip()


def parse_only(texts: Sequence[str] | None) -> tuple[Only, ...]:
    """The flags as given, each PATH=VALUE with the value read as YAML."""
    out = []
    for text in texts or ():
        path, sep, value = text.partition("=")
        if not sep or not path.strip():
            raise SpecError("give PATH=VALUE, a grid key and one of its values "
                            "(e.g. workload.arrivals.offered_load=0.5)", where="--only",
                            value=text)
        try:  # as a run records its grid point (JSON values: a date is a string)
            read = json.loads(json.dumps(yaml.safe_load(value), default=str))
            out.append(Only(path.strip(), read))
        except yaml.YAMLError:
            raise SpecError("the value is not YAML", where=f"--only {path.strip()}",
                            value=value) from None
    return tuple(out)


#: runs.parquet's status of a planned run a slice left out (claims only)
NOT_RUN = "not run"


def check_only(only: Sequence[Only], grid: Mapping[str, Sequence[Any]],
               adaptive: bool) -> None:
    """Each ``--only`` names a key of the spec's grid (as a run records it:
    JSON values) and one of its values: anything else would silently select
    no run."""
    if only and adaptive:
        raise SpecError("a spec with adaptive seeds (seeds: {min, max}) adds seeds while any "
                        "claim at any grid point is inconclusive: run it whole",
                        where="--only", value=only[0].path)
    for o in only:
        if o.path not in grid:
            keys = ", ".join(grid) or "the spec has no grid"
            raise SpecError(f"not a key of the spec's grid ({keys})", where="--only",
                            value=o.path)
        if not any(_same(o.value, v) for v in grid[o.path]):
            shown = ", ".join(_shown(v) for v in grid[o.path])
            raise SpecError(f"not one of grid.{o.path}'s values ({shown})",
                            where=f"--only {o.path}", value=o.value)


def selects(only: Sequence[Only], grid: Mapping[str, Any]) -> bool:
    """Whether a run at grid point ``grid`` (its own keys: another
    algorithm's parameter does not describe it) is in the slice: for each
    key named, one of the values given for it."""
    return all(o.path not in grid or any(_same(v, grid[o.path]) for v in values)
               for o, values in _by_key(only))


def describe(only: Sequence[Only]) -> str:
    return " ".join(o.record() for o in only)


def _by_key(only: Sequence[Only]) -> list[tuple[Only, list[Any]]]:
    keys: dict[str, tuple[Only, list[Any]]] = {}
    for o in only:
        keys.setdefault(o.path, (o, []))[1].append(o.value)
    return list(keys.values())


def _shown(value: Any) -> str:
    # as the spec would write it: a string that looks like a number keeps its quotes
    return json.dumps(value, default=str)


def _same(a: Any, b: Any) -> bool:
    # 1 and 1.0 are one grid value (YAML reads "1" as an int), True and 1 are not
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b
