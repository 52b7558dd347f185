"""A sweep's progress on stderr: runs done of all, elapsed time and ETA."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Runs done / total with elapsed time and ETA: a bar on a terminal,
    one plain line per run otherwise (logs, CI)."""

    def __init__(self, name: str, stream: Any = None) -> None:
        self.name = name
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.first = 0

    def __call__(self, done: int, total: int, row: dict[str, Any] | None) -> None:
        if row is None:
            self.first = done
            if done:
                print(f"{self.name}: {done} of {total} runs cached", file=self.stream)
            return
        elapsed = time.monotonic() - self.t0
        fresh = done - self.first
        eta = elapsed / fresh * (total - done) if fresh else 0.0
        # the error itself is printed once, in the list at the end of the run
        status = "" if row["status"] == "ok" else f" {row['status'].upper()}"
        if self.tty:
            width = 30
            fill = int(width * done / total) if total else width
            bar = "#" * fill + "-" * (width - fill)
            end = "\n" if done == total or status else ""
            print(f"\r{self.name} [{bar}] {done}/{total} {_clock(elapsed)} ETA {_clock(eta)}"
                  f"{status}", end=end, file=self.stream, flush=True)
        else:
            print(f"[{done}/{total}] {self.name}: {row['run']} {row['status']} "
                  f"({row['wall_seconds']:.2f}s, elapsed {_clock(elapsed)}, ETA {_clock(eta)})"
                  f"{status}", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"
