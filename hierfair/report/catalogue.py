"""The catalogue of the papers' claims (docs/reproductions.md) beside the verdicts.

docs/reproductions.md lists every checkable statement of the papers, each
under a heading ``### `id` — where · label`` with a ``- **Claim.**`` and a
``- **Published.**`` paragraph.  A spec's claim names the item it checks with
``id:``.  The report opens with one row per item: every verdict that checks
it (faithful or proxy), or "not checked" -- so what is missing is as visible
as what holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hierfair.errors import SpecError

_HEADING = re.compile(r"^### `([^`]+)` — (.+?) · (.+)$")
_FIELD = re.compile(r"^- \*\*(\w[\w ]*)\.\*\*\s*(.*)$")


@dataclass(frozen=True)
class Item:
    id: str
    where: str
    label: str  # the catalogue's own coverage label when it was written
    claim: str
    published: str


def read_catalogue(path: Path) -> list[Item]:
    """The items of a catalogue file, in order."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise SpecError(f"cannot read the catalogue: {exc.strerror}", file=str(path)) from None
    items: list[Item] = []
    current: dict[str, Any] | None = None
    field = None
    for line in [*lines, "### `end` — end · end"]:
        heading = _HEADING.match(line)
        if heading:
            if current is not None:
                items.append(Item(**current))
            ident, where, label = heading.groups()
            current = {"id": ident, "where": where, "label": label, "claim": "",
                       "published": ""}
            field = None
            continue
        if current is None:
            continue
        match = _FIELD.match(line)
        if match:
            name = match.group(1).lower()
            field = name if name in ("claim", "published") else None
            if field:
                current[field] = match.group(2).strip()
        elif field and line.startswith("  "):
            current[field] += " " + line.strip()
        else:
            field = None
    if not items:
        raise SpecError("no items (### `id` — where · label headings) in the catalogue",
                        file=str(path))
    return items


def _short(text: str, n: int = 140) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def catalogue_table(items: list[Item], verdicts: list[tuple[str, dict[str, Any]]],
                    word: Any, measured: Any) -> list[str]:
    """Markdown: a summary line and one row per item (and per verdict of it).

    ``verdicts`` are ``(spec name, verdict)`` pairs; ``word`` and ``measured``
    render a verdict and a check as the rest of the report does."""
    by_id: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for spec, v in verdicts:
        by_id.setdefault(v.get("id") or "", []).append((spec, v))
    known = {item.id for item in items}
    unlisted = sorted(i for i in by_id if i and i not in known)
    checked = [item for item in items if item.id in by_id]
    faithful = sum(any(not v.get("proxy") for _, v in by_id[item.id]) for item in checked)
    rows = ["## The papers' claims", "",
            f"{len(items)} checkable statements in [docs/reproductions.md]"
            "(../docs/reproductions.md): "
            f"{faithful} checked at the paper's own setting, "
            f"{len(checked) - faithful} only by a proxy, "
            f"{len(items) - len(checked)} not checked yet.", ""]
    if unlisted:
        rows += [f"Claims whose `id` is not in the catalogue: {', '.join(unlisted)}.", ""]
    rows += ["| id | where | the paper says | published | checked by | measured | verdict |",
             "|---|---|---|---|---|---|---|"]
    for item in items:
        found = by_id.get(item.id)
        if not found:
            rows.append(f"| `{item.id}` | {item.where} | {_short(item.claim)} | "
                        f"{_short(item.published, 60) or '—'} | not checked | — | — |")
            continue
        for spec, v in found:
            kind = f"[{spec}](#{spec}), " + (f"proxy: {_short(v['proxy'], 80)}"
                                             if v.get("proxy") else "faithful")
            values = "; ".join(f"{c['algorithm']} {measured(c)}" for c in v["checks"])
            rows.append(f"| `{item.id}` | {item.where} | {_short(item.claim)} | "
                        f"{_short(v.get('published') or item.published, 60) or '—'} | {kind} | "
                        f"{_short(values, 320)} | {word(v)} |")
    return [*rows, ""]
