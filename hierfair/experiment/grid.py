"""The grid's field paths: ``a.b[0].c`` names one field of a spec's data.

A spec's ``grid:`` maps such paths to lists of values (the sweep runs their
cartesian product: :mod:`hierfair.experiment.sweep`); ``--set PATH=VALUE``
on the command line uses the same syntax (:mod:`hierfair.experiment.overrides`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from hierfair.errors import SpecError


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if not m:
            raise SpecError("not a field path (use a.b[0].c)", where=f"grid.{path}", value=path)
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def apply_grid_value(data: dict[str, Any], path: str, value: Any) -> None:
    """Set ``path`` (``a.b[0].c``) in ``data`` to ``value``; the parent must exist."""
    tokens = _tokens(path)
    node: Any = data
    for tok in tokens[:-1]:
        try:
            node = node[tok]
        except (KeyError, IndexError, TypeError):
            raise SpecError("no such field in the spec", where=f"grid.{path}",
                            value=tok) from None
    last = tokens[-1]
    if isinstance(node, list) and isinstance(last, int) and last >= len(node):
        raise SpecError("index out of range", where=f"grid.{path}", value=last)
    if not isinstance(node, dict | list):
        raise SpecError("no such field in the spec", where=f"grid.{path}", value=last)
    node[last] = value


def _grid_path_problems(data: Mapping[str, Any]) -> list[SpecError]:
    """The grid paths that name no field of the spec as written (checked
    when the spec has other problems, so that validate reports all at once)."""
    grid = data.get("grid") if isinstance(data, Mapping) else None
    if not isinstance(grid, Mapping):
        return []
    raw = copy.deepcopy(dict(data))
    if isinstance(raw.get("algorithms"), list):  # `- drf` is `- {name: drf}`
        raw["algorithms"] = [{"name": a} if isinstance(a, str) else a
                             for a in raw["algorithms"]]
    problems = []
    for path, values in grid.items():
        try:
            apply_grid_value(copy.deepcopy(raw), str(path), values[0] if values else None)
        except SpecError as exc:
            problems.append(exc)
        except Exception:  # noqa: BLE001 - a path the raw data cannot even be walked by
            continue
    return problems
