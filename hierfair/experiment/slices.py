"""A slice of a sweep: ``hierfair run SPEC --only PATH=VALUE``.

A sweep too long for one sitting (the paper-scale week, ~30 CPU-hours) runs
a grid point at a time: ``--only workload.arrivals.offered_load=0.5`` runs
only the runs at that grid value.  A slice changes no run -- each keeps its
key, so it is the very run the whole sweep makes -- it only chooses which of
the missing runs execute now.  Runs of other grid points that already have
results (an earlier slice) stay in runs.parquet; the others are left out,
and a claim that needs them is n/a ("no ok run ... to measure") until a
later slice or the whole sweep runs them.  Claims of the slice's own grid
points are decided as the whole sweep would decide them.
"""

from __future__ import annotations

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
        try:
            out.append(Only(path.strip(), yaml.safe_load(value)))
        except yaml.YAMLError:
            raise SpecError("the value is not YAML", where=f"--only {path.strip()}",
                            value=value) from None
    return tuple(out)


def check_only(only: Sequence[Only], grid: Mapping[str, Sequence[Any]]) -> None:
    """Each ``--only`` names a key of the spec's grid and one of its values:
    anything else would silently select no run."""
    for o in only:
        if o.path not in grid:
            keys = ", ".join(grid) or "the spec has no grid"
            raise SpecError(f"not a key of the spec's grid ({keys})", where="--only",
                            value=o.path)
        if not any(_same(o.value, v) for v in grid[o.path]):
            shown = ", ".join(map(str, grid[o.path]))
            raise SpecError(f"not one of grid.{o.path}'s values ({shown})",
                            where=f"--only {o.path}", value=o.value)


def selects(only: Sequence[Only], grid: Mapping[str, Any]) -> bool:
    """Whether a run at grid point ``grid`` (its own keys: another
    algorithm's parameter does not describe it) is in the slice."""
    return all(o.path not in grid or _same(o.value, grid[o.path]) for o in only)


def _same(a: Any, b: Any) -> bool:
    # 1 and 1.0 are one grid value (YAML reads "1" as an int), True and 1 are not
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) \
        else a == b
