"""Reports: figures (:mod:`~hierfair.report.figures`), tables and the text
report (:mod:`~hierfair.report.tables`), the claims catalogue
(:mod:`~hierfair.report.catalogue`).  ``write_report(folder)`` writes it all."""

from hierfair.report.figures import (
    curve_groups,
    improvement_pairs,
    plot_cost,
    plot_improvement,
    plot_shares,
    size_column,
)
from hierfair.report.tables import write_report

__all__ = ["curve_groups", "improvement_pairs", "plot_cost", "plot_improvement",
           "plot_shares", "size_column", "write_report"]
