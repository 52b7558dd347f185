"""Reading delimited trace files fast, with errors that name file, line and field.

Traces are read with pandas' C parser (seconds for a whole SWIM day or a
Google part, not minutes) as text, then converted column by column; the first
value that does not convert is reported as ``file: line N, field NAME: ...``.
With ``on_bad_line: skip`` such rows are dropped and counted instead, and the
count goes into the workload's source line, so every report says it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from hierfair.errors import SpecError


def read_table(path: Path, names: Sequence[str], sep: str, *, usecols: Sequence[str],
               numeric: Sequence[str], comment: str | None = None,
               compression: str | None = "infer", required: Sequence[str] = (),
               on_bad_line: str = "error", nonnegative: Sequence[str] = ()
               ) -> tuple[pd.DataFrame, int]:
    """Rows of ``path`` as a DataFrame with ``numeric`` columns as floats.

    Returns ``(frame, skipped)``; the frame keeps a ``line`` column (1-based
    line numbers in the file, comments included).
    """
    try:
        frame = pd.read_csv(path, sep=sep, header=None, dtype=str, comment=comment,
                            compression=compression, skip_blank_lines=False,
                            keep_default_na=False, engine="c")
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame(columns=range(len(names)))
    except pd.errors.ParserError as exc:
        match = re.search(r"line (\d+), saw (\d+)", str(exc))
        where = f"line {match.group(1)}" if match else None
        raise SpecError(f"expected at most {len(names)} fields", file=str(path), where=where,
                        value=int(match.group(2)) if match else ...) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
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
    bad = np.zeros(len(frame), dtype=bool)
    first: tuple[int, str, str, str] | None = None
    for col in usecols:
        text = frame[col]
        if col in numeric:
            values = pd.to_numeric(text, errors="coerce")
            wrong = values.isna() & ((text != "") | (col in required))
            if col in nonnegative:
                wrong |= values < 0
            frame[col] = values
            reason = "not a non-negative number" if col in nonnegative else "not a number"
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
        raise SpecError(f"field {col}: {reason} (use on_bad_line: skip to drop such lines)",
                        file=str(path), where=f"line {line}", value=value)
    return frame[~bad], int(bad.sum())
