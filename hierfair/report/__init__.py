"""Reports: figures (:mod:`~hierfair.report.figures`), tables and the text
report (:mod:`~hierfair.report.tables`), the claims catalogue
(:mod:`~hierfair.report.catalogue`).  ``write_report(folder)`` writes it all."""

import sys
import types
from pathlib import Path

from hierfair.report.figures import (
    curve_groups,
    improvement_pairs,
    plot_cost,
    plot_improvement,
    plot_shares,
    size_column,
)
from hierfair.report.tables import write_report


def report(folder: str | Path = "results", catalogue: str | Path | None = None) -> Path:
    """Write the report of a results folder (what ``hierfair report`` does);
    returns the README.md it wrote (``index.html`` is beside it)."""
    return write_report(Path(folder), catalogue=Path(catalogue) if catalogue else None)


class _CallableModule(types.ModuleType):
    """``hierfair.report(folder)`` from Python: the package is callable, as
    the subpackage and the function cannot both be ``hierfair.report``."""

    def __call__(self, folder: str | Path = "results",
                 catalogue: str | Path | None = None) -> Path:
        return report(folder, catalogue)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["report", "curve_groups", "improvement_pairs", "plot_cost", "plot_improvement",
           "plot_shares", "size_column", "write_report"]
