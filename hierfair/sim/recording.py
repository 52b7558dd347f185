"""Columnar, append-only buffers for what a simulation records.

A simulation of millions of tasks appends millions of rows; a dict per row
would dominate both time and memory.  Each column is an ``array.array`` of a
fixed machine type, appended to in place and handed to pandas once at the end.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hierfair.sim.latency import LatencyLog

#: How an attempt ended (attempts.parquet ``outcome``).
OUTCOMES = ("running", "finished", "preempted", "killed", "failed")
ATTEMPT_RUNNING, ATTEMPT_FINISHED = 0, 1  # codes into OUTCOMES


class Columns:
    """Named typed columns of equal length (``'d'`` float64, ``'q'`` int64)."""

    def __init__(self, spec: Sequence[tuple[str, str]]) -> None:
        self._cols = {name: array(code) for name, code in spec}
        self._order = [name for name, _ in spec]

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

    def column(self, name: str) -> np.ndarray:
        return np.frombuffer(self._cols[name], dtype=self._cols[name].typecode)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({name: self.column(name).copy() for name in self._order})


class Recorder:
    """The five recorded tables, with one cheap method per kind of row."""

    def __init__(self, resources: Sequence[str], keep_decisions: bool = True) -> None:
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
