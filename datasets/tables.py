"""Reading delimited trace files fast, with errors that name file, line and field.

Traces are read with pandas' C parser (seconds for a whole SWIM day or a
Google part, not minutes) as text, then converted column by column; the first
value that does not convert is reported as ``file: line N, field NAME: ...``.
With ``on_bad_line: skip`` such rows are dropped and counted instead, and the
count goes into the workload's source line, so every report says it.

Strictly: no trace field holds a quote character (none of the formats quotes
fields, and a stray quote would make a CSV parser swallow lines) or a NUL
byte (a sign of a corrupted file); both are bad lines.  A file with no data
lines is an error whatever ``on_bad_line`` says.  Rows whose ``ordered``
column (the submit time) goes backwards are counted; the caller sorts them
and says so (docs/spec.md, "Traces").
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.errors import SpecError


def read_table(path: Path, names: Sequence[str], sep: str, *, usecols: Sequence[str],
               numeric: Sequence[str], comment: str | None = None,
               compression: str | None = "infer", required: Sequence[str] = (),
               on_bad_line: str = "error", nonnegative: Sequence[str] = (),
               ordered: str | None = None) -> tuple[pd.DataFrame, int]:
    """Rows of ``path`` as a DataFrame with ``numeric`` columns as floats.

    Returns ``(frame, skipped)``; the frame keeps a ``line`` column (1-based
    line numbers in the file, comments included) and, in
    ``frame.attrs["out_of_order"]``, how many rows have an ``ordered`` value
    below an earlier row's.
    """
    data = _read_bytes(path, compression)
    try:
        frame = pd.read_csv(io.BytesIO(data), sep=sep, header=None, dtype=str,
                            comment=comment, skip_blank_lines=False, keep_default_na=False,
                            engine="c", quoting=csv.QUOTE_NONE)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame(columns=range(len(names)))
    except pd.errors.ParserError as exc:
        match = re.search(r"line (\d+), saw (\d+)", str(exc))
        where = f"line {match.group(1)}" if match else None
        raise SpecError(f"expected at most {len(names)} fields", file=str(path), where=where,
                        value=int(match.group(2)) if match else ...) from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"cannot read: {exc}", file=str(path)) from None
    if frame.shape[1] > len(names):
        extra = frame.iloc[:, len(names):].fillna("").ne("").any(axis=1).to_numpy()
        line = int(np.argmax(extra)) + 1
        raise SpecError(f"expected at most {len(names)} fields", file=str(path),
                        where=f"line {line}", value=int(frame.iloc[line - 1].notna().sum()))
    frame.columns = list(names[: frame.shape[1]])
    for col in usecols:
        if col not in frame:
            frame[col] = ""
    frame = frame[list(usecols)].fillna("")
    frame["line"] = np.arange(1, len(frame) + 1)
    if comment is not None:  # comment lines were kept as empty rows so lines count right
        frame = frame[~(frame[list(usecols)] == "").all(axis=1)]
    if not len(frame):
        raise SpecError("the trace has no data lines (an empty file?)", file=str(path))
    bad = np.zeros(len(frame), dtype=bool)
    first: tuple[int, str, str, str] | None = None
    corrupt = _corrupt_lines(data)
    if corrupt:
        lines = frame["line"].to_numpy()
        for reason in ("a NUL byte", "a quote character"):
            hit = np.isin(lines, [n for n, why in corrupt.items() if why == reason])
            if hit.any():
                i = int(np.argmax(hit))
                if first is None or int(lines[i]) < first[0]:
                    first = (int(lines[i]), "", f"holds {reason}", "")
                bad |= hit
    for col in usecols:
        text = frame[col]
        if col in numeric:
            values = pd.to_numeric(text, errors="coerce")
            wrong = values.isna() & ((text != "") | (col in required))
            wrong |= np.isinf(values.to_numpy(dtype=float))  # "inf", "1e999"
            if col in nonnegative:
                wrong |= values < 0
            frame[col] = values
            reason = ("not a finite non-negative number" if col in nonnegative
                      else "not a finite number")
        else:
            wrong = (text == "") & (col in required)
            reason = "missing"
        wrong = wrong.to_numpy()
        if wrong.any():
            i = int(np.argmax(wrong))
            line = int(frame["line"].iloc[i])
            if first is None or line < first[0]:
                first = (line, col, reason, str(text.iloc[i]))
            bad |= wrong
    if first is not None and on_bad_line != "skip":
        line, col, reason, value = first
        what = f"field {col}: {reason}" if col else f"the line {reason}"
        raise SpecError(f"{what} (use on_bad_line: skip to drop such lines)",
                        file=str(path), where=f"line {line}",
                        value=value if col else ...)
    kept = frame[~bad]
    if not len(kept):
        raise SpecError(f"every one of its {len(frame)} data lines is bad", file=str(path))
    if ordered is not None:
        values = kept[ordered].to_numpy(dtype=float)
        kept.attrs["out_of_order"] = int((values[1:] < np.maximum.accumulate(values)[:-1])
                                         .sum()) if len(values) else 0
    return kept, int(bad.sum())


_OPENERS = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}


def _read_bytes(path: Path, compression: str | None) -> bytes:
    """The file's bytes, decompressed by suffix (``compression="infer"``)."""
    try:
        raw = Path(path).read_bytes()
        opener = _OPENERS.get(Path(path).suffix) if compression == "infer" else None
        return opener(raw) if opener else raw
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as exc:
        raise SpecError(f"cannot read: {exc}", file=str(path)) from None


def _corrupt_lines(data: bytes) -> dict[int, str]:
    """1-based line numbers holding a NUL byte or a quote, with the reason."""
    raw = np.frombuffer(data, dtype=np.uint8)
    hits = np.flatnonzero((raw == 0) | (raw == ord('"')))
    if not hits.size:
        return {}
    lines = np.searchsorted(np.flatnonzero(raw == ord("\n")), hits) + 1
    out: dict[int, str] = {}
    for line, byte in zip(lines.tolist(), raw[hits].tolist()):
        out.setdefault(line, "a NUL byte" if byte == 0 else "a quote character")
    return out
