"""asv benchmarks: scheduler speed tracked across commits.

``make bench`` runs them in .venv and saves the results as HEAD's; ``make
bench-compare A=<rev> B=<rev>`` compares two saved runs (docs/performance.md,
"Catching regressions").  Avoid ``--quick``: it takes one sample a benchmark,
and asv compare then has only the ratio, no statistics.
"""
