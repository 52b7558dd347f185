"""Worker processes that leave Ctrl-C to the command.

A terminal sends SIGINT to every process of the job.  The command handles it
(it stops the workers and prints one line); a worker that handled it too
would print a traceback of its own -- from inside whatever it was doing,
even importing its libraries at start-up.  So joblib's loky workers are
started with SIGINT ignored, a disposition a new process inherits from the
moment it exists (:func:`parallel`), and keep ignoring it (the initializer,
for a worker loky starts again later).

:func:`_backend` runs a sweep's runs: on these local processes (``loky``)
or on a Dask cluster (``dask``; implied by a scheduler address).
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
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


#: Resident memory above which a process gives back what a run freed
#: (:func:`give_back_memory`); below it a sweep of small runs would pay a
#: collection each for nothing.
RELEASE_ABOVE = 512 << 20


def give_back_memory() -> bool:
    """After a run: what it freed, back to the system, if this process holds
    more than :data:`RELEASE_ABOVE`.  pyarrow's pool (mimalloc) and glibc's
    heap each keep freed pages for their own reuse, so a worker carried into
    its next run what its last one had freed in the other: a paper-scale week
    left a worker at ~1.1 GB between runs (docs/performance.md, "Memory a
    worker keeps between runs").  Returns whether it looked."""
    if _resident() < RELEASE_ABOVE:
        return False
    gc.collect()
    release_freed()
    return True


def release_freed() -> None:
    """Give what was freed back to the system now: pyarrow's pool and glibc's
    heap (no collection first: what is unreachable only through a cycle stays)."""
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
    try:  # the process's own symbols: no search for libc (find_library runs ldconfig)
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc's alone
    except OSError:
        trim = None
    if trim is not None:
        trim(0)


def _resident() -> int:
    """This process's resident bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


#: What a sweep's runs go through (:func:`_backend`): ``fn(*task)`` for every
#: task, results as they finish; a task whose workers all died (Dask's
#: ``KilledWorker``) gives ``on_lost(task, why)`` instead.
RunAll = Callable[[Callable[..., Any], Sequence[tuple], Callable[[tuple, str], Any]],
                  Iterator[Any]]


@contextmanager
def _backend(backend: str, jobs: int | None, scheduler: str | None) -> Iterator[RunAll]:
    """The :data:`RunAll` of ``backend``: local processes (``loky``; one:
    in this process), or a Dask cluster's workers -- the one at ``scheduler``
    whatever ``backend`` says (``--scheduler`` alone used to be ignored),
    else a LocalCluster.

    On Dask each task is a future of its own, not joblib's dask backend: a
    task that killed every worker it ran on (past ``--memory-limit``, say)
    made joblib wait for ever; here it is reported and the others go on."""
    import joblib

    if scheduler:
        backend = "dask"
    if backend == "loky":
        def run_all(fn: Callable[..., Any], tasks: Sequence[tuple],
                    on_lost: Callable[[tuple, str], Any]) -> Iterator[Any]:
            return parallel(jobs or -1, (joblib.delayed(fn)(*task) for task in tasks),
                            unordered=True)

        with quiet_workers():
            yield run_all
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
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
    try:
        yield partial(_on_cluster, client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _on_cluster(client: Any, fn: Callable[..., Any], tasks: Sequence[tuple],
                on_lost: Callable[[tuple, str], Any]) -> Iterator[Any]:
    """Every task a future on the cluster; results as they finish."""
    from dask.distributed import as_completed
    from distributed.scheduler import KilledWorker

    futures = {client.submit(fn, *task, pure=False): task for task in tasks}
    for future in as_completed(futures):
        task = futures.pop(future)
        try:
            result = future.result()
        except KilledWorker:
            result = on_lost(task, "lost: every Dask worker that ran it died (the workers' "
                             "logs say why: past --memory-limit, or the machine lost)")
        future.release()
        yield result
