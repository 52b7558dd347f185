"""Worker processes that leave Ctrl-C to the command.

A terminal sends SIGINT to every process of the job.  The command handles it
(it stops the workers and prints one line); a worker that handled it too
would print a traceback of its own -- from inside whatever it was doing,
even importing its libraries at start-up.  So joblib's loky workers are
started with SIGINT ignored, a disposition a new process inherits from the
moment it exists, and keep ignoring it (the initializer, for a worker loky
starts again later).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def quiet_workers(n_jobs: int) -> Iterator[None]:
    """joblib's loky backend for ``n_jobs`` workers, started (now, and so
    reused by every Parallel inside) with Ctrl-C ignored."""
    import joblib

    with joblib.parallel_config(backend="loky", initializer=ignore_interrupts):
        if n_jobs != 1 and threading.current_thread() is threading.main_thread():
            before = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(os.getpid)()
                                               for _ in range(joblib.cpu_count()))
            finally:
                signal.signal(signal.SIGINT, before)
        yield
