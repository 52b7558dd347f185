"""Progress on stderr: a sweep's runs done of all, and how far a long run is.

On a terminal, tqdm's bar; elsewhere (logs, CI, a pipe) one plain line per
run, which a bar's carriage returns would garble.  Inside a run
(:class:`RunProgress`): a bar of simulated time on a terminal when the run
executes in the command's own process, else one line every few minutes (a
worker's lines would garble the command's bar).
"""

from __future__ import annotations

import math
import multiprocessing
import sys
import time
from typing import Any

from tqdm import tqdm

from hierfair.sim.watch import Standing, Watch

#: A run's bar appears only once it has run this long (short runs never flash one).
BAR_AFTER = 2.0


class Progress:
    """Runs done / total with elapsed time and ETA: a bar on a terminal,
    one plain line per run otherwise (logs, CI)."""

    def __init__(self, name: str, stream: Any = None) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.first = 0
        self.bar: tqdm | None = None

    def __call__(self, done: int, total: int, row: dict[str, Any] | None) -> None:
        if row is None:
            self.first = done
            if done:
                print(f"{self.name}: {done} of {total} runs cached", file=self.stream)
            return
        # the error itself is printed once, in the list at the end of the run
        status = "" if row["status"] == "ok" else f" {row['status'].upper()}"
        if self.tty:
            self._bar(done, total, row, status)
            return
        elapsed = time.monotonic() - self.t0
        fresh = done - self.first
        eta = elapsed / fresh * (total - done) if fresh else 0.0
        took = row["wall_seconds"]  # NaN: a run lost with its worker
        took = f"{took:.2f}s" if math.isfinite(took) else "lost"
        print(f"[{done}/{total}] {self.name}: {row['run']} {row['status']} "
              f"({took}, elapsed {clock(elapsed)}, ETA {clock(eta)})"
              f"{status}", file=self.stream, flush=True)

    def _bar(self, done: int, total: int, row: dict[str, Any], status: str) -> None:
        if self.bar is None:  # the cached runs count as done, not in the rate
            self.bar = tqdm(total=total, initial=self.first, desc=self.name, unit="run",
                            file=self.stream, dynamic_ncols=True, mininterval=0.2)
        if status:  # a line of its own above the bar
            self.bar.write(f"{self.name}: {row['run']}{status}", file=self.stream)
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        """End the bar where it stands (a sweep stopped by ``-x`` or Ctrl-C)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class RunProgress:
    """How far one run is: simulated time over its horizon, tasks finished,
    tasks a second and the time left.  Called by the simulator's
    :class:`~hierfair.sim.watch.Watch` at most once every :attr:`every`
    seconds; :meth:`watch` builds that."""

    def __init__(self, name: str, every: float, stream: Any = None,
                 bar: bool | None = None) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        if bar is None:  # a bar only on a terminal, from the command's own process
            bar = (bool(getattr(self.stream, "isatty", lambda: False)())
                   and multiprocessing.parent_process() is None)
        self.use_bar = bar
        #: seconds between lines (a bar is redrawn twice a second)
        self.every = 0.5 if bar else every
        self.t0 = time.monotonic()
        self.bar: tqdm | None = None

    def watch(self, deadline: float | None = None) -> Watch:
        return Watch(deadline, self, self.every)

    def __call__(self, s: Standing) -> None:
        elapsed = time.monotonic() - self.t0
        rate = s.done / elapsed if elapsed > 0 else 0.0
        fraction = s.fraction
        eta = elapsed * (1 - fraction) / fraction if fraction > 0 else math.nan
        horizon = s.until if s.until is not None and math.isfinite(s.until) else None
        where = (f"simulated {span(s.now, horizon)} of {span(horizon)}" if horizon is not None
                 else f"simulated {span(s.now)}")
        tasks = f"{s.done:,} of {s.total:,} tasks done, {rate:,.0f} tasks/s"
        if not self.use_bar:
            print(f"{self.name}: {where} ({fraction:.0%}), {tasks}, elapsed {clock(elapsed)}, "
                  f"ETA {clock(eta) if math.isfinite(eta) else '?'}",
                  file=self.stream, flush=True)
            return
        if elapsed < BAR_AFTER:
            return
        if self.bar is None:
            self.bar = tqdm(total=1000, desc=self.name, file=self.stream, leave=False,
                            dynamic_ncols=True,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} "
                                       "[{elapsed}<{remaining}]")
        self.bar.set_postfix_str(f"{where}, {tasks}", refresh=False)
        self.bar.n = int(fraction * 1000)
        self.bar.refresh()  # the watch calls at most twice a second

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def span(seconds: float | None, scale: float | None = None) -> str:
    """Simulated time, readable: ``45 s``, ``12.5 min``, ``31.2 h``, ``6.5 d``,
    in the unit ``scale`` (e.g. the horizon) would be shown in."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    size_of = seconds if scale is None else scale
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if size_of >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def clock(seconds: float) -> str:
    """``h:mm:ss``."""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


_clock = clock  # the name tests and older code use
