"""hierfair: benchmark and experiment harness for hierarchical multi-resource
fair schedulers.  From Python: ``hierfair.run`` runs a spec, ``hierfair.load``
reads a spec's results back as DataFrames, ``hierfair.report`` writes the
report of a results folder; the ``hierfair`` command does the same from a
shell."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierfair.version import __version__  # noqa: F401 - hierfair.__version__

if TYPE_CHECKING:
    import pandas as pd

    from hierfair.experiment.loading import Results


def run(spec: str | Path | dict[str, Any], *, out: str | Path = "results",
        jobs: int | None = None, backend: str = "loky", scheduler: str | None = None,
        force: bool = False, timeout: float | None = None, data_dir: str | None = None,
        replace: bool = False, max_runs: int | None = None) -> pd.DataFrame:
    """Run every algorithm x grid point x seed of ``spec`` (a YAML path or the
    same data as a dict); return the runs as a DataFrame (runs.parquet).

    ``jobs``: parallel runs (default all cores); ``backend``: ``"loky"`` or
    ``"dask"`` (``scheduler`` address, or a LocalCluster); finished runs are
    reused unless ``force``.  Results another spec file of the same name
    wrote into ``out`` are replaced only with ``replace``; more than
    ``max_runs`` runs (default 10,000) are refused.  Raises
    :class:`hierfair.errors.SpecError` on bad input.  Failed or timed-out
    runs are rows with ``status`` != "ok".
    """
    from hierfair.errors import SpecError
    from hierfair.experiment.spec import read_yaml
    from hierfair.experiment.sweep import sweep

    source = "" if isinstance(spec, dict) else str(spec)
    data = spec if isinstance(spec, dict) else read_yaml(spec)
    try:
        return sweep(data, out, source=source, data_dir=data_dir, jobs=jobs, backend=backend,
                     scheduler=scheduler, force=force, timeout=timeout, replace=replace,
                     max_runs=max_runs)
    except SpecError as exc:
        raise exc.with_file(source) if source else exc from None


def load(folder: str | Path) -> Results:
    """The results of one spec (``OUT/<spec name>/``): ``.runs`` and the detail
    tables (``.jobs``, ``.tasks``, ``.allocations``, ...) as DataFrames, with
    ``.spec`` and ``.verdicts``.  Columns: docs/results.md."""
    from hierfair.experiment.loading import load as _load

    return _load(folder)


def __getattr__(name: str) -> Any:
    # ``hierfair.report`` is the subpackage, made callable (hierfair/report):
    # ``hierfair.report("results")`` writes a folder's report
    if name == "report":
        import importlib

        return importlib.import_module("hierfair.report")
    raise AttributeError(f"module 'hierfair' has no attribute {name!r}")
