"""Columnar, append-only buffers for what a simulation records.

A simulation of millions of tasks appends millions of rows; a dict per row
would dominate both time and memory.  Each column is an ``array.array`` of a
fixed machine type, appended to in place and handed to pandas once at the end.
"""

from __future__ import annotations

import math
import os
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from typing import BinaryIO

import numpy as np
import pandas as pd

from hierfair.sim.latency import LatencyLog
from hierfair.sim.taskstore import unnamed_file

#: How an attempt ended (attempts.parquet ``outcome``).
OUTCOMES = ("running", "finished", "preempted", "killed", "failed")
ATTEMPT_RUNNING, ATTEMPT_FINISHED = 0, 1  # codes into OUTCOMES


class Columns:
    """Named typed columns of equal length (``'d'`` float64, ``'q'`` int64)."""

    def __init__(self, spec: Sequence[tuple[str, str]]) -> None:
        self._cols = {name: array(code) for name, code in spec}
        self._order = [name for name, _ in spec]
        self.frozen = False  # rows cut off a table: they never grow

    def append(self, *values: float) -> None:
        for name, v in zip(self._order, values, strict=True):
            self._cols[name].append(v)

    def col(self, name: str) -> array:
        """The column itself, for callers that append to it in a hot loop
        (they must keep every column the same length)."""
        return self._cols[name]

    def set(self, row: int, name: str, value: float) -> None:
        """Overwrite one cell (e.g. an attempt's end, known only later)."""
        self._cols[name][row] = value

    def __len__(self) -> int:
        return len(self._cols[self._order[0]])

    def cut(self, k: int) -> Columns:
        """The first ``k`` rows, removed from these columns (in place: the
        simulator appends to them) into columns of their own."""
        head = Columns([(name, self._cols[name].typecode) for name in self._order])
        for name in self._order:
            col = self._cols[name]
            head._cols[name] = col[:k]
            del col[:k]
        head.frozen = True
        return head

    def column(self, name: str) -> np.ndarray:
        return np.frombuffer(self._cols[name], dtype=self._cols[name].typecode)

    def to_frame(self) -> pd.DataFrame:
        # a copy, or the columns could never grow again (numpy would hold
        # their buffers); rows cut off (:meth:`cut`) never grow, and a batch
        # of 2^20 is 8 MiB a column: viewed, not copied
        if self.frozen:
            return pd.DataFrame({name: self.column(name) for name in self._order}, copy=False)
        return pd.DataFrame({name: self.column(name).copy() for name in self._order})


#: numpy's PW_BLOCKSIZE: a range of at most this many values is summed unsplit
_PAIRWISE_BLOCK = 128


def pairwise_sum(values: Callable[[int, int], np.ndarray], lo: int, hi: int,
                 most: int) -> np.floating:
    """``np.sum`` of a float64 array of ``hi - lo`` values to the same bits,
    reading at most ``most`` of them at once (``values(a, b)``): numpy sums
    a contiguous array pairwise, halving a range (less its remainder mod 8)
    until it is 128 values or fewer, and ``np.sum`` of a part is its
    subtree (tests/test_streaming.py checks the identity)."""
    if hi - lo <= max(most, _PAIRWISE_BLOCK):  # numpy splits nothing this short
        return np.sum(values(lo, hi))
    half = (hi - lo) // 2
    half -= half % 8
    return pairwise_sum(values, lo, lo + half, most) + pairwise_sum(values, lo + half, hi, most)


class Recorder:
    """The five recorded tables, with one cheap method per kind of row."""

    #: utilisation rows kept, at most, by a run that writes no utilization table
    FOLD = 1 << 20

    def __init__(self, resources: Sequence[str], keep_decisions: bool = True,
                 keep_utilization: bool = True,
                 sink: Callable[[str, Columns], None] | None = None,
                 spill_dir: str | None = None) -> None:
        self.resources = tuple(resources)
        self.allocations = Columns([("time", "d"), ("node", "q"), ("tasks", "q")]
                                   + [(r, "d") for r in resources])
        self.utilization = Columns([("time", "d")] + [(r, "d") for r in resources])
        self.decisions = Columns([("time", "d"), ("leaf", "q"), ("latency_ns", "q")])
        # Only attempts that were cut short are recorded as they end; a task's
        # last attempt is in the ledger, and :meth:`attempts_frame` merges both.
        self.attempts = Columns([("seq", "q"), ("task", "q"), ("server", "q"), ("start", "d"),
                                 ("end", "d"), ("outcome", "q")])
        self.preemptions = Columns([("time", "d"), ("task", "q"), ("job", "q"),
                                    ("victim", "q"), ("beneficiary", "q"), ("lost", "d")])
        d = self.decisions
        self._d_time, self._d_leaf, self._d_ns = d.col("time"), d.col("leaf"), d.col("latency_ns")
        #: whether the decisions table is kept; if not, only the latencies
        #: are, in bounded memory (:mod:`~hierfair.sim.latency`)
        self.keep_decisions = keep_decisions
        if not keep_decisions:  # appended to, and dropped at once
            self._d_time = self._d_leaf = deque(maxlen=0)  # type: ignore[assignment]
        self.latency = LatencyLog(self._d_ns)
        self.unplaced = 0  # decisions that placed nothing (leaf -1)
        #: (time, leaf, latency_ns) columns, for the simulator's per-task loop
        self.decision_columns = (self._d_time, self._d_leaf, self._d_ns)
        al = self.allocations
        self._al_cols = [al.col(r) for r in resources]
        self._al_time, self._al_node = al.col("time"), al.col("node")
        self._al_tasks = al.col("tasks")
        self._last_util: tuple[float, ...] | None = None
        self.keep_utilization = keep_utilization
        #: utilisation rows folded away (:meth:`bound`): their products
        #: (value x how long it held) wait in an unnamed file in ``spill_dir``
        self.folded = 0
        self.spill_dir = spill_dir
        self._products: BinaryIO | None = None
        #: where a kept table's rows go, :attr:`FOLD` at a time, as it grows
        #: (its file's next row group; None: every row stays to the end)
        self.sink = sink
        self.streamed: set[str] = set()  # tables some rows of which left
        #: the last task finish so far (the simulator sets it): the summary
        #: averages utilisation up to the run's end, the last finish or the
        #: stop, so rows that ended by then may be integrated; rows after it
        #: (a kill after the last finish) wait, to be cut at the end
        self.horizon = -math.inf

    def bound(self) -> None:
        """Keep memory bounded (called every step).  Past :attr:`FOLD` rows,
        a table's first FOLD go to the sink (row groups of pyarrow's own
        size: the file's bytes are those of the whole table written at the
        end), utilisation rows are integrated first (the summary's time
        averages need only the integral; a table not kept is not written),
        and latencies are folded into bins."""
        if not self.keep_decisions:
            self.latency.bound()
        fold = self.FOLD
        util = self.utilization
        if (len(util) > fold and (self.sink or not self.keep_utilization)
                and util.column("time")[fold] <= self.horizon):
            self._fold_utilization(fold)
        if self.sink is None:
            return
        if len(self.allocations) > fold:
            self._emit("allocations", self.allocations.cut(fold))
        if self.keep_decisions and len(self.decisions) > fold:
            head = self.decisions.cut(fold)
            self.latency.absorb(head.column("latency_ns"))
            self._emit("decisions", head)

    def _emit(self, name: str, head: Columns) -> None:
        assert self.sink is not None
        self.sink(name, head)
        self.streamed.add(name)

    def _fold_utilization(self, k: int) -> None:
        """Let the first ``k`` utilisation rows go, keeping each row's value
        times how long it held (until the next row's time: by
        :attr:`horizon`, so before the run's end) in an unnamed file, one
        block of ``k`` a resource: :meth:`integrals` sums them as numpy sums
        the whole, to the same bits."""
        util = self.utilization
        after = util.column("time")[k]  # when the last of them ends
        head = util.cut(k)
        held = np.diff(np.clip(np.append(head.column("time"), after), 0, None))
        if self._products is None:
            self._products = unnamed_file(self, self.spill_dir)
        for r in self.resources:
            self._products.write((head.column(r) * held).tobytes())
        self.folded += k
        self.streamed.add("utilization")
        if self.keep_utilization:
            self._emit("utilization", head)

    def integrals(self, end: float) -> list[float]:
        """Each resource's utilisation integral over [0, ``end``] of a run
        that folded rows: ``np.sum(values * np.diff(times))`` over every row,
        as :func:`~hierfair.experiment.stats.time_average` takes it, with
        numpy's own pairwise split, a fold's worth read back at a time."""
        tail = self.utilization
        held = np.diff(np.append(np.clip(tail.column("time"), 0, end), end))
        assert self._products is not None
        self._products.flush()
        fd, fold, n = self._products.fileno(), self.FOLD, len(self.resources)
        out = []
        for i, r in enumerate(self.resources):
            last = tail.column(r) * held

            def values(lo: int, hi: int, i: int = i, last: np.ndarray = last) -> np.ndarray:
                parts = []
                while lo < min(hi, self.folded):  # from the file, a fold at a time
                    block, at = divmod(lo, fold)
                    stop = min(hi, (block + 1) * fold, self.folded)
                    where = ((block * n + i) * fold + at) * 8
                    parts.append(np.frombuffer(os.pread(fd, (stop - lo) * 8, where)))
                    lo = stop
                if hi > lo:
                    parts.append(last[lo - self.folded:hi - self.folded])
                return parts[0] if len(parts) == 1 else np.concatenate(parts)

            out.append(float(pairwise_sum(values, 0, self.folded + len(last), fold)))
        return out

    def cut_short(self, seq: int, task: int, server: int, start: float, end: float,
                  outcome: int) -> None:
        """An attempt ended before its task finished (preempted, killed, failed)."""
        self.attempts.append(seq, task, server, start, end, outcome)

    def attempts_frame(self, seq: np.ndarray, state: np.ndarray, server: np.ndarray,
                       start: np.ndarray, finish: np.ndarray) -> pd.DataFrame:
        """Every attempt in the order they started: the ones cut short, and
        each started task's last one (from the ledger's per-task columns; the
        task states are ``TaskState`` values: 2 running, 3 finished, 4 evicting:
        preempted, its eviction not complete when the run stopped)."""
        cut = self.attempts.to_frame()
        last = np.flatnonzero(state >= 2)
        done = state[last] == 3
        outcome = np.where(done, ATTEMPT_FINISHED, ATTEMPT_RUNNING).astype(np.int64)
        outcome[state[last] == 4] = OUTCOMES.index("preempted")
        final = pd.DataFrame({
            "seq": seq[last], "task": last, "server": server[last], "start": start[last],
            "end": np.where(done, finish[last], np.nan), "outcome": outcome})
        both = pd.concat([cut, final], ignore_index=True) if len(cut) else final
        both = both.sort_values("seq", kind="stable", ignore_index=True)
        return both.drop(columns="seq")

    def decision(self, now: float, leaf: int, ns: int) -> None:
        if leaf < 0:
            self.unplaced += 1
        self._d_time.append(now)
        self._d_leaf.append(leaf)
        self._d_ns.append(ns)

    def allocation_rows(self, now: float, nodes: Sequence[int], tasks: Sequence[int],
                        rows: Sequence[Sequence[float]]) -> None:
        """Each node's running tasks and allocation (a row per node, in order)."""
        for node in nodes:
            self._al_time.append(now)
            self._al_node.append(node)
            self._al_tasks.append(tasks[node])
            for col, value in zip(self._al_cols, rows[node]):
                col.append(value)

    def utilization_row(self, now: float, util: tuple[float, ...]) -> None:
        """Cluster utilisation, recorded only when it changed."""
        if util != self._last_util:
            self.utilization.append(now, *util)
            self._last_util = util
