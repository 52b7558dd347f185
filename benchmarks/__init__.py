"""asv benchmarks: scheduler speed tracked across commits.

Run ``.venv/bin/asv run --python=same --quick`` for a local check, or
``asv continuous main HEAD`` to compare two commits as ratios.
"""
