"""How well the specs cover each item of the papers' catalogue (docs/reproductions.md).

An item is covered by the spec claims that carry its ``id``.  Its label says
how: **faithful** when every such claim checks the paper's own setting,
**proxy** when every one is a proxy, **partly proxy** when some are, each
proxy label naming in what ways (``proxy_kind``: smaller, shorter, other
metric, reconstructed, other setting, one instance), and **missing** when no
claim checks it.  The catalogue's headings carry this label, and a test holds
them to the specs, so the page cannot drift from what is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

import yaml


class Covered(NamedTuple):
    """One spec claim that checks a catalogue item."""

    spec: str
    claim: str
    proxy: bool
    kinds: tuple[str, ...]


def claims_by_item(specs: Iterable[Path]) -> dict[str, list[Covered]]:
    """Every spec claim with an ``id``, by item."""
    out: dict[str, list[Covered]] = {}
    for path in specs:
        data = yaml.safe_load(path.read_text()) or {}
        for claim in data.get("claims") or []:
            if claim.get("id"):
                out.setdefault(claim["id"], []).append(Covered(
                    path.stem, claim["claim"], bool(claim.get("proxy")),
                    tuple(claim.get("proxy_kind") or ())))
    return out


def label(covered: list[Covered]) -> str:
    """An item's coverage label from the claims that check it."""
    if not covered:
        return "missing"
    proxies = [c for c in covered if c.proxy]
    if not proxies:
        return "faithful"
    kinds = sorted({k for c in proxies for k in c.kinds})
    word = "proxy" if len(proxies) == len(covered) else "partly proxy"
    return f"{word} ({', '.join(kinds)})" if kinds else word


def labels(items: Iterable[str], by_item: Mapping[str, list[Covered]]) -> dict[str, str]:
    return {item: label(by_item.get(item, [])) for item in items}


def spec_files(root: Path) -> list[Path]:
    """The specs whose claims count: experiments/*.yaml and experiments/long/."""
    return sorted([*root.glob("*.yaml"), *(root / "long").glob("*.yaml")])


def _first(label_text: str) -> str:
    return label_text.split(" · ")[0].strip()


def disagreements(items: Mapping[str, str], by_item: Mapping[str, list[Covered]]
                  ) -> list[tuple[str, str, str]]:
    """(item, the catalogue's label, the specs' label) wherever they differ;
    a missing item may say why in parentheses (``missing (input)``)."""
    out = []
    for item, text in items.items():
        want, have = label(by_item.get(item, [])), _first(text)
        same = have == want or (want == "missing" and have.startswith("missing ("))
        if not same:
            out.append((item, have, want))
    return out

