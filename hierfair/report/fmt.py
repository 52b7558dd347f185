"""How the report writes things: one number format, the paper a claim is
from, and progress lines while ``hierfair report`` runs.

Every number the report prints (tables, intervals, figure ticks) goes
through :func:`num`, so the page never mixes ``1.178e+04``, ``nan`` and
``—``: up to four significant digits, no e-notation, thousands separated by
commas, a missing value (None, NaN) always ``—``.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from numbers import Integral, Real
from typing import Any

from tqdm import tqdm

from hierfair.experiment.progress import clock

#: What every missing number (None, NaN) is shown as.
MISSING = "—"
#: Significant digits kept below 1,000 (above, whole numbers are shown).
DIGITS = 4
#: At most this many decimals: smaller magnitudes read as 0 (float noise, e.g.
#: the difference -2.8e-17 of two equal means).
MAX_DECIMALS = 8


def num(value: object, digits: int = DIGITS) -> str:
    """A number as the report writes it: ``16,200``, ``0.3333``, ``-0.6``,
    ``0.000001``, ``7``; ``—`` for None or NaN, ``∞`` for infinity.  Other
    values (text, lists) are returned as ``str``."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, Integral):
        return f"{int(value):,}"
    if not isinstance(value, Real):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == 0:
        return "0"
    decimals = min(MAX_DECIMALS, max(0, digits - 1 - math.floor(math.log10(abs(v)))))
    text = f"{v:.{decimals}f}"
    if abs(float(text)) >= 1000:  # 999.96 rounds up to 1,000
        return f"{v:,.0f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "0", "") else text


_E_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")
_NAN = re.compile(r"(?<![\w-])nan(?![\w-])")


def numbers_in(text: str) -> str:
    """``text`` with every e-notation number (``1e-06``, ``1.178e+04``) and
    every bare ``nan`` written as :func:`num` writes them."""
    text = _E_NUMBER.sub(lambda m: num(float(m.group(0))), text)
    return _NAN.sub(MISSING, text)


_BIG = re.compile(r"(?<![\w.,:/-])(\d{4,})((?:\.\d+)?)(?![\w,.:/-])")


def thousands_in(text: str) -> str:
    """``text`` with e-notation rewritten (:func:`numbers_in`) and every plain
    number of four or more digits given its thousands separators, all its
    digits kept (``< drf (5233)`` -> ``< drf (5,233)``): for a check's
    expected value, where the spec's digits matter."""
    return _BIG.sub(lambda m: f"{int(m.group(1)):,}{m.group(2)}", numbers_in(text))


def interval(low: float, high: float) -> str:
    """``[low, high]``, or the one value when they are equal (an exact check)."""
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return MISSING
    if num(low) == num(high):
        return num(low)
    return f"[{num(low)}, {num(high)}]"


def short_key(key: str) -> str:
    """A grid path by its last two parts (``cluster.heterogeneity``)."""
    return ".".join(str(key).split(".")[-2:])


def axis_names(keys: list[str]) -> dict[str, str]:
    """Each grid path by its last part, or by as many more as it takes to
    tell it from the others (``jobs[0].queue``, ``jobs[1].queue``)."""
    split = {k: str(k).split(".") for k in keys}
    out = {}
    for k, parts in split.items():
        n = 1
        while n < len(parts) and sum(p[-n:] == parts[-n:] for p in split.values()) > 1:
            n += 1
        out[k] = ".".join(parts[-n:])
    return out


def distinct(value: Any, values: list[Any]) -> Any:
    """A grid value as the report names it: a mapping (a headroom reading),
    or its JSON as runs.parquet keeps it, only by the fields in which the
    axis's ``values`` differ -- ``{keep: all}``, not the five fields every
    reading shares.  Other values are returned as they are."""
    value, values = _mapping(value), [_mapping(x) for x in values]
    if not isinstance(value, dict) or not all(isinstance(x, dict) for x in values):
        return value
    differ = [k for k in dict.fromkeys(k for x in values for k in x)
              if len({repr(x.get(k)) for x in values}) > 1]
    shown = {k: value[k] for k in differ if k in value} or value
    return "{" + ", ".join(f"{k}: {_plain(x)}" for k, x in shown.items()) + "}"


def _mapping(x: Any) -> Any:
    if isinstance(x, str) and x.startswith("{"):
        try:
            return json.loads(x)
        except ValueError:
            return x
    return x


def _plain(x: Any) -> str:
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, list):
        return "[" + ", ".join(_plain(y) for y in x) + "]"
    return str(x)


def condition(where: dict) -> str:
    """A grid point in words: ``workload.durations=[200, 200, 200, 10, 10]``."""
    return ", ".join(dict.fromkeys(f"{short_key(k)}={v}" for k, v in where.items()))


# -- which paper a claim is from ---------------------------------------------------------

#: The papers, in the order the report lists them: short name -> how it is cited.
PAPERS = {
    "H-DRF": "H-DRF (Bhattacharya et al., SoCC 2013)",
    "DRF": "DRF (Ghodsi et al., NSDI 2011)",
    "MCH": "the MCH letter",
    "DFF": "the DFF letter (IEICE 2016)",
    "PDRF": "the PDRF note",
    "DRFH": "DRFH (Wang, Li, Liang, INFOCOM 2014)",
    "PS-DSF": "PS-DSF (Khamse-Ashari et al., arXiv 1611.00404)",
    "property audit": "the property audit (docs/properties.md)",
    # production schedulers: their tests and bug reports (issue 29)
    "KUEUE": "Kueue (kubernetes-sigs/kueue ff69552e)",
    "VOLCANO": "Volcano (volcano-sh/volcano ed72c7c8)",
    "YARN": "YARN FairScheduler (apache/hadoop)",
    "MESOS": "Mesos DRF sorter (apache/mesos c1b42f79)",
    "YUNIKORN": "YuniKorn (apache/yunikorn-core be3bb487)",
    "other": "other sources",
}
_PAPER = re.compile(r"""^\s*["'“(]*\s*(H-DRF|PDRF|DRFH|DRF|MCH|DFF|PS-DSF|property audit|Kueue|"""
                    r"""Volcano|YARN|Mesos|YuniKorn)\b""", re.IGNORECASE)


def paper_of(source: str) -> str:
    """The paper a claim's ``source`` cites first: ``"H-DRF §5.2, Fig. 11a"``
    -> ``H-DRF``, ``"MCH letter §IV-A"`` -> ``MCH``, ``"DFF letter §3"`` ->
    ``DFF``, ``"PDRF note, Motivation"`` -> ``PDRF``, ``"DRFH (INFOCOM 2014)"``
    -> ``DRFH``, ``"PS-DSF (arXiv …)"`` -> ``PS-DSF``, ``"property audit
    (docs/properties.md)"`` -> ``property audit``; anything else -> ``other``
    (a key of :data:`PAPERS`)."""
    match = _PAPER.match(source or "")
    if not match:
        return "other"
    found = match.group(1)
    return "property audit" if found.lower() == "property audit" else found.upper()


# -- progress ----------------------------------------------------------------------------


class Progress:
    """``report: figures 12/68 specs (hogs-and-mice, 0:00:41)`` on stderr: one
    line per step, or tqdm's bar on a terminal."""

    def __init__(self, what: str, total: int, stream=None) -> None:
        self.what, self.total, self.done = what, total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar: tqdm | None = None  # drawn at the first step: nothing for no work

    def step(self, name: str = "") -> None:
        self.done += 1
        if self.tty and self.bar is None and self.done <= self.total:
            self.bar = tqdm(total=self.total, desc=f"report: {self.what}", unit="spec",
                            file=self.stream, dynamic_ncols=True, mininterval=0.2)
        if self.bar is not None:
            self.bar.set_postfix_str(name, refresh=False)
            self.bar.update(1)
            if self.done >= self.total:
                self.bar.close()
            return
        elapsed = clock(time.monotonic() - self.start)
        self.stream.write(f"report: {self.what} {self.done}/{self.total} specs"
                          + (f" ({name}, {elapsed})" if name else f" ({elapsed})") + "\n")
        self.stream.flush()

    def say(self, text: str) -> None:
        if self.bar is not None:  # above the bar, which stays below
            self.bar.write(f"report: {text}", file=self.stream)
            return
        self.stream.write(f"report: {text}\n")
        self.stream.flush()
