"""Decision latencies in bounded memory, for a run that keeps no decisions table.

A run records one latency a decision, about two a task: 16 bytes a task that a
week of a datacenter's trace cannot afford when nobody reads the table.  Then
the latencies wait in a buffer; past :data:`BUFFER` values they are folded
into a histogram of 1 %-wide logarithmic bins (a few thousand counters
whatever the run's length), and the summary's percentiles are read from it,
within 0.5 % of the exact value (the bin's geometric middle).  The count and
the sum -- so the mean and the scheduling seconds -- stay exact.  A run that
never fills the buffer gets exact percentiles, as before.  Latencies are
wall-clock measurements, outside the results that must repeat byte for byte.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

#: Latencies kept as they are before the buffer is folded (8 MiB).
BUFFER = 1 << 20
#: Bin width: bin k holds [GROWTH**k, GROWTH**(k+1)) nanoseconds (bin 0 also 0 and 1).
GROWTH = 1.01
_LOG = math.log(GROWTH)


class LatencyLog:
    """Every decision's latency (``values``, appended to by the simulator),
    folded into a histogram when the buffer fills (:meth:`bound`)."""

    def __init__(self, values: array) -> None:
        self.values = values  # the simulator appends here; emptied in place when folded
        self.counts = np.zeros(0, dtype=np.int64)
        self.folded = 0
        self.folded_sum = 0

    def bound(self) -> None:
        """Fold the buffer once it holds :data:`BUFFER` values."""
        if len(self.values) >= BUFFER:
            self._fold()

    def _fold(self) -> None:
        self.absorb(np.array(self.values, dtype=np.int64))  # a copy: emptied below
        del self.values[:]  # in place: the simulator holds the array

    def absorb(self, ns: np.ndarray) -> None:
        """Fold latencies that have left the buffer (a decisions table
        written a row group at a time) into the bins."""
        self.folded += ns.size
        self.folded_sum += int(ns.sum())
        bins = np.bincount(_bin(ns.astype(np.int64)))
        if bins.size > self.counts.size:
            bins[:self.counts.size] += self.counts
            self.counts = bins
        else:
            self.counts[:bins.size] += bins

    @property
    def count(self) -> int:
        return self.folded + len(self.values)

    def total(self) -> int:
        return self.folded_sum + sum(self.values)

    def percentiles(self, qs: list[float]) -> list[float]:
        """numpy's percentiles (linear): exact while nothing was folded, else
        the middle of the bin that holds each rank."""
        if not self.folded:
            return [float(v) for v in np.percentile(np.array(self.values, dtype=np.int64), qs)]
        # the buffer's values binned too, left in place (a kept decisions table's column)
        bins = np.bincount(_bin(np.array(self.values, dtype=np.int64)))
        counts = np.zeros(max(bins.size, self.counts.size), dtype=np.int64)
        counts[:self.counts.size] += self.counts
        counts[:bins.size] += bins
        cum = np.cumsum(counts)
        out = []
        for q in qs:
            rank = q / 100 * (cum[-1] - 1)
            k = int(np.searchsorted(cum, math.floor(rank), side="right"))
            out.append(GROWTH ** (k + 0.5))
        return out


def _bin(ns: np.ndarray) -> np.ndarray:
    return np.floor(np.log(np.maximum(ns, 1)) / _LOG).astype(np.int64)
