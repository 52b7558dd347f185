"""Per-task columns that hold memory only while their tasks matter.

Every task of a workload has a slot in each column from the start, but the
columns are private anonymous memory maps (``mmap``): a page costs nothing
until it is written, and the ledger writes a page of tasks' slots only when
the first of them starts (:data:`PAGE_SHIFT`).  A run that keeps no per-task
table (``tasks``, ``attempts``) also *retires* a block of :data:`BLOCK`
tasks once none of its tasks that started is still unfinished: the columns
the schedule digest hashes (:data:`DIGESTED`) are compressed into an unnamed
spill file, and the block's pages go back to the system
(``madvise(MADV_DONTNEED)``; they read as zeros after) -- all but the
tasks' states, a byte each.  A task of a retired block that starts later
brings the block back (:meth:`TaskColumns.unretire`).  A run's memory then
follows the tasks running, not the length of its trace nor its queues
(docs/performance.md, "Streaming").
"""

from __future__ import annotations

import math
import mmap
import os
import tempfile
import weakref
import zlib
from array import array
from collections.abc import Iterator, Mapping
from typing import BinaryIO

import numpy as np

#: Tasks per block: 2^14 tasks are 128 KiB of an 8-byte column, whole pages.
SHIFT = 14
BLOCK = 1 << SHIFT
#: Tasks per page of an 8-byte column (4 KiB pages: 512): a page of tasks gets
#: its columns when the first of them starts (``TaskColumns.ready``).
PAGE_SHIFT = max(9, (mmap.PAGESIZE // 8).bit_length() - 1)
#: The columns hashed into the schedule digest, kept (compressed) when a block retires.
DIGESTED = ("server", "start", "finish", "attempt")
#: Numbers a spill record takes: (where, how long) of the tasks, then of each column.
_RECORD = 2 + 2 * len(DIGESTED)
_DTYPES = {"B": np.uint8, "q": np.int64, "d": np.float64}
_PAGE = mmap.PAGESIZE


def unnamed_file(owner: object, folder: str | None) -> BinaryIO:
    """A scratch file in ``folder`` (None: the system's temporary folder)
    with no name (O_TMPFILE where the file system has it): nothing is left
    in the folder, however the process ends; closed with ``owner``."""
    f = tempfile.TemporaryFile(dir=folder)
    weakref.finalize(owner, f.close)
    return f


class TaskColumns:
    """Named per-task columns of ``n`` slots, as memoryviews (fast scalar
    access on the per-task path) and numpy views of the same memory."""

    def __init__(self, n: int, codes: Mapping[str, str], blank: Mapping[str, float],
                 state: tuple[str, int], shift: int | None = None,
                 spill_dir: str | None = None) -> None:
        """``blank``: what a digested column holds for a task that never
        started; ``state``: the column of task states, kept when a block
        retires, and the value of a finished task in it."""
        self.n = n
        self._blank = blank
        self._state, self._finished = state
        self.shift = shift = SHIFT if shift is None else shift
        self.views: dict[str, memoryview] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self._maps: dict[str, mmap.mmap] = {}
        for name, code in codes.items():
            width = np.dtype(_DTYPES[code]).itemsize
            # a mapping may not be empty; pages are given only as they are written
            mm = mmap.mmap(-1, max(n * width, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self._maps[name] = mm
            self.views[name] = memoryview(mm)[:n * width].cast(code)
            self.arrays[name] = np.frombuffer(mm, dtype=_DTYPES[code], count=n)
        n_blocks = (n >> shift) + 1
        #: tasks of each block that started and have not finished, and that
        #: finished; and what a block holds (the ledger counts)
        self.active = [0] * n_blocks
        self.done = [0] * n_blocks
        self.size = [1 << shift] * n_blocks
        self.size[-1] = n - ((n_blocks - 1) << shift) or -1  # -1: an empty block never fills
        self.retired = bytearray(n_blocks)
        self.ever_retired = False
        self.returned = 0  # retired blocks brought back by a task's first start
        #: pages of tasks whose columns were written (the rest read as zeros)
        self.n_pages = (n >> PAGE_SHIFT) + 1
        self.ready = bytearray(self.n_pages)
        self.n_retired = 0  # tasks in retired blocks
        self._spill_dir = spill_dir
        self._spill: BinaryIO | None = None
        #: block -> its records, _RECORD numbers each: where in the spill file
        #: and how long the tasks' offsets in the block are, then each of
        #: DIGESTED (a dict of tuples a record was ~0.9 kB: ~90 MB over the
        #: paper-scale week's retirements)
        self._spilled: dict[int, array] = {}
        self._retired_at = array("d", [-math.inf]) * n_blocks  # its last retirement

    def bounds(self, block: int) -> tuple[int, int]:
        lo = block << self.shift
        return lo, min(lo + (1 << self.shift), self.n)

    def retire(self, block: int, now: float) -> None:
        """Keep the block's digested columns on disk and give the pages of
        every column but the states back; they read as zeros from now on.
        The spill file gets a record of the tasks that finished since the
        block last retired (now at ``now``: a finish, or an arrival that left
        it behind; its other tasks have not started, so read as blank): each
        finished task is written once, however often its block comes back (a
        block that came back holds its earlier finished tasks blank, whose
        NaN finish the filter skips; ``>=`` keeps a task that started and
        finished at the very time of the last retirement).  A record is a
        compressed piece per column (the tasks' offsets in the block first),
        so reading one column back reads only its pieces."""
        lo, hi = self.bounds(block)
        if self._spill is None:
            self._spill = unnamed_file(self, self._spill_dir)
        f = self._spill
        new = np.flatnonzero((self.arrays[self._state][lo:hi] == self._finished)
                             & (self.arrays["finish"][lo:hi] >= self._retired_at[block])
                             & self.ready_mask(lo, hi))
        record = self._spilled.setdefault(block, array("q"))
        for values in (new, *(self.arrays[c][lo:hi][new] for c in DIGESTED)):
            data = zlib.compress(values.tobytes(), 1)
            record.extend((f.tell(), len(data)))
            f.write(data)
        f.flush()
        self._retired_at[block] = now
        for name, mm in self._maps.items():
            if name == self._state:
                continue
            data = self.arrays[name]
            width = data.itemsize
            # whole pages go back (2^14 tasks are whole pages of every
            # column); what shares a page with other blocks is zeroed instead
            first = -(-lo * width // _PAGE) * _PAGE
            last = len(mm) if hi == self.n else hi * width // _PAGE * _PAGE
            if last > first:
                mm.madvise(mmap.MADV_DONTNEED, first, last - first)
                data[lo:first // width] = 0
                data[last // width:hi] = 0
            else:
                data[lo:hi] = 0
        # its whole pages have no columns now (a page shared with other
        # blocks keeps its flag: those blocks' tasks are there)
        first_page = -(-lo >> PAGE_SHIFT)
        end_page = self.n_pages if hi == self.n else hi >> PAGE_SHIFT
        if end_page > first_page:
            self.ready[first_page:end_page] = bytes(end_page - first_page)
        self.retired[block] = 1
        self.ever_retired = True
        self.n_retired += hi - lo

    def unretire(self, block: int) -> None:
        """A task of a retired block starts: the block is live again, its
        pages without columns until a task of each starts (the caller
        writes them).  Its finished tasks' digested values stay in the spill
        file -- they never change again, and the block's column is read
        with its records (:meth:`_block`).  Reading them back at each return
        read every record the block had, at every return: quadratic in its
        returns (the 1:20 week at load 2 spent 86 % of its time there)."""
        lo, hi = self.bounds(block)
        self.retired[block] = 0
        self.n_retired -= hi - lo
        self.returned += 1

    def page_bounds(self, page: int) -> tuple[int, int]:
        lo = page << PAGE_SHIFT
        return lo, min(lo + (1 << PAGE_SHIFT), self.n)

    def ready_mask(self, lo: int, hi: int) -> np.ndarray:
        """Which of tasks ``[lo, hi)`` are on a page with columns."""
        if hi <= lo:
            return np.zeros(0, dtype=bool)
        first, last = lo >> PAGE_SHIFT, (hi - 1) >> PAGE_SHIFT
        pages = np.frombuffer(self.ready, dtype=np.uint8)[first:last + 1].astype(bool)
        start = lo - (first << PAGE_SHIFT)
        return np.repeat(pages, 1 << PAGE_SHIFT)[start:start + hi - lo]

    def held(self, upto: int, chunk: int = 1 << 20) -> Iterator[np.ndarray]:
        """The tasks of ``[0, upto)`` whose columns are in memory (on a page
        with columns, in a block not given back), in order, about
        ``chunk`` at a time: a mask of every task would be a byte a task (the
        paper-scale week's 276 M at its end)."""
        n_pages = (upto + (1 << PAGE_SHIFT) - 1) >> PAGE_SHIFT
        pages = np.flatnonzero(np.frombuffer(self.ready, dtype=np.uint8)[:n_pages])
        retired = np.frombuffer(self.retired, dtype=np.uint8)
        if self.n_retired and self.shift >= PAGE_SHIFT:  # a page lies in one block
            pages = pages[retired[pages >> (self.shift - PAGE_SHIFT)] == 0]
        offsets = np.arange(1 << PAGE_SHIFT, dtype=np.int64)
        step = max(1, chunk >> PAGE_SHIFT)
        for i in range(0, len(pages), step):
            tasks = ((pages[i:i + step, None] << PAGE_SHIFT) + offsets).ravel()
            tasks = tasks[tasks < upto]
            if self.n_retired:  # blocks smaller than a page: some of it may be gone
                tasks = tasks[retired[tasks >> self.shift] == 0]
            yield tasks

    def chunks(self, name: str) -> Iterator[bytes]:
        """The bytes of every task's value of a digested column, a block at a
        time (a retired block's from the spill file; a page without columns
        reads blank)."""
        data, blank = self.arrays[name], self._blank[name]
        for block in range(((self.n - 1) >> self.shift) + 1 if self.n else 0):
            lo, hi = self.bounds(block)
            if self.retired[block]:
                yield self._block(block, name).tobytes()
                continue
            ready = self.ready_mask(lo, hi)
            if not ready.any():  # blank, with the records of a block that came back
                yield self._block(block, name).tobytes()
                continue
            values = data[lo:hi].copy()
            values[~ready] = blank
            yield self._block(block, name, values).tobytes()

    def restored(self, name: str, upto: int) -> np.ndarray:
        """A copy of tasks ``[0, upto)`` of a column; a digested one blank
        where no page has columns, then with the spill file's records of
        every block that ever retired (a retired block's values are all
        there)."""
        out = self.arrays[name][:upto].copy()
        if name not in DIGESTED:
            return out
        out[~self.ready_mask(0, upto)] = self._blank[name]
        for block in self._spilled:
            lo, hi = self.bounds(block)
            out[lo:hi] = self._block(block, name, None if self.retired[block] else out[lo:hi])
        return out

    def _block(self, block: int, name: str, values: np.ndarray | None = None) -> np.ndarray:
        """A block's digested column: ``values`` (a live block's, as its
        memory holds them) or blank (a retired one's), then its records in
        the order they were written.  A record holds tasks that had
        finished, which a block that came back holds as blank: memory and
        records never give the same task two values."""
        out = values
        if out is None:
            lo, hi = self.bounds(block)
            out = np.full(hi - lo, self._blank[name], dtype=self.arrays[name].dtype)
        records = self._spilled.get(block, ())
        k = 2 + 2 * DIGESTED.index(name)
        for i in range(0, len(records), _RECORD):
            which = np.frombuffer(self._read(records[i], records[i + 1]), dtype=np.int64)
            out[which] = np.frombuffer(self._read(records[i + k], records[i + k + 1]),
                                       dtype=out.dtype)
        return out

    def _read(self, at: int, length: int) -> bytes:
        assert self._spill is not None
        return zlib.decompress(os.pread(self._spill.fileno(), length, at))
