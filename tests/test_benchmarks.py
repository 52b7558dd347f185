"""The asv benchmarks still run (smallest parameters; nothing is timed here)."""

from __future__ import annotations

import inspect

import pytest

from benchmarks import bench_simulator


@pytest.mark.parametrize("algorithm", ["drf", "fifo"])
def test_simulate_benchmark_runs(algorithm):
    bench = bench_simulator.Simulate()
    bench.setup(algorithm, 16)
    for name, method in inspect.getmembers(bench, inspect.ismethod):
        if name.startswith(("time_", "track_")):
            value = method(algorithm, 16)
            assert value is None or value > 0
