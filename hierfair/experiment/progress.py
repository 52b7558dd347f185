"""A sweep's progress on stderr: runs done of all, elapsed time and ETA.

On a terminal, tqdm's bar; elsewhere (logs, CI, a pipe) one plain line per
run, which a bar's carriage returns would garble.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm


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
        print(f"[{done}/{total}] {self.name}: {row['run']} {row['status']} "
              f"({row['wall_seconds']:.2f}s, elapsed {clock(elapsed)}, ETA {clock(eta)})"
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


def clock(seconds: float) -> str:
    """``h:mm:ss``."""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"


_clock = clock  # the name tests and older code use
