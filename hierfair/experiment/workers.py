"""Worker processes that leave Ctrl-C to the command.

A terminal sends SIGINT to every process of the job.  The command handles it
(it stops the workers and prints one line); a worker that handled it too
would print a traceback of its own -- from inside whatever it was doing,
even importing its libraries at start-up.  So joblib's loky workers are
started with SIGINT ignored, a disposition a new process inherits from the
moment it exists (:func:`parallel`), and keep ignoring it (the initializer,
for a worker loky starts again later).

:func:`_backend` configures joblib for a sweep's runs: these local
processes (``loky``) or a Dask cluster (``dask``).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from hierfair.errors import EnvironmentProblem, SpecError


def ignore_interrupts() -> None:
    """A worker's initializer: Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def quiet_workers() -> Iterator[None]:
    """joblib's loky backend whose workers ignore Ctrl-C (the initializer,
    for a worker loky starts again later); start them with :func:`parallel`."""
    import joblib

    with joblib.parallel_config(backend="loky", initializer=ignore_interrupts):
        yield


def parallel(n_jobs: int, tasks: Iterable[Any], unordered: bool = False) -> Iterator[Any]:
    """``joblib.Parallel`` over ``tasks``, as a generator of results; the
    workers it starts inherit Ctrl-C ignored, from the moment they exist
    (the parent ignores it only while the call starts them).  No task runs
    first to warm them: loky measures a worker's memory after its first task
    and restarts it past 300 MB more, which a trivial first task would make
    every real one do."""
    import joblib

    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        return joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered" if unordered
                               else "generator")(tasks)
    finally:
        if main:
            signal.signal(signal.SIGINT, before)


@contextmanager
def _backend(backend: str, jobs: int | None, scheduler: str | None) -> Iterator[int]:
    """Configure joblib for ``backend``; yields the n_jobs to use."""
    import joblib

    if backend == "loky":
        with quiet_workers():
            yield jobs or -1
        return
    if backend != "dask":
        raise SpecError("unknown backend; choose loky or dask", where="--backend", value=backend)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise EnvironmentProblem("--backend dask: needs dask.distributed, which is not "
                                 "installed: pip install 'hierfair[cluster]'") from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise EnvironmentProblem(f"--scheduler: cannot reach the Dask scheduler at "
                                     f"{scheduler} ({exc})") from None
        cluster = None
    else:
        cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        with joblib.parallel_config(backend="dask"):
            yield -1
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
