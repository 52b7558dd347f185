"""Columnar, append-only buffers for what a simulation records.

A simulation of millions of tasks appends millions of rows; a dict per row
would dominate both time and memory.  Each column is an ``array.array`` of a
fixed machine type, appended to in place and handed to pandas without copying
row by row.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import pandas as pd


class Columns:
    """Named typed columns of equal length (``'d'`` float64, ``'q'`` int64)."""

    def __init__(self, spec: Sequence[tuple[str, str]]) -> None:
        self._cols = {name: array(code) for name, code in spec}
        self._order = [name for name, _ in spec]

    def append(self, *values: float) -> None:
        for name, v in zip(self._order, values, strict=True):
            self._cols[name].append(v)

    def set(self, row: int, name: str, value: float) -> None:
        """Overwrite one cell (e.g. an attempt's end, known only later)."""
        self._cols[name][row] = value

    def __len__(self) -> int:
        return len(self._cols[self._order[0]])

    def column(self, name: str) -> np.ndarray:
        return np.frombuffer(self._cols[name], dtype=self._cols[name].typecode)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({name: self.column(name).copy() for name in self._order})
