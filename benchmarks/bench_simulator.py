"""How fast whole simulations run: the SWIM Facebook day and a synthetic flat tree.

CPU time of each run (``timer``), repeated: asv's statistics, not one
reading, decide whether two commits differ.  Tasks per CPU-second are the
day's 148,854 tasks over ``SwimDay.time_simulate``.
"""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path

from hierfair.errors import SpecError
from hierfair.experiment.spec import AlgorithmSpec, Experiment, load_spec
from hierfair.sim import Simulator

from .workloads import flat_instance, policy_or_skip, simulate, trace_dir

SWIM_DAY = Path(__file__).resolve().parent / "swim-day.yaml"
FB2010_WEEK = Path(__file__).resolve().parent / "fb2010-week.yaml"

timer = time.process_time


def swim_day(algorithm: str) -> tuple[Experiment, AlgorithmSpec, int]:
    """benchmarks/swim-day.yaml with its trace parsed, ready to simulate with
    ``algorithm``; NotImplementedError (asv's skip) without the trace or the
    algorithm."""
    folder = trace_dir()
    policy_or_skip(algorithm)
    try:
        exp = load_spec(SWIM_DAY, data_dir=str(folder))
        seed = exp.spec.seeds[0]
        exp.workload(seed)  # parse outside the measurement
    except SpecError as exc:  # its file is not there (a bad one fails, loudly)
        raise NotImplementedError(f"the SWIM day's trace is not in {folder}: {exc}") from None
    return exp, AlgorithmSpec(name=algorithm), seed


@cache
def _swim_day(algorithm: str) -> tuple[Experiment, AlgorithmSpec, int]:
    # asv reruns setup before every sample: parse the trace once a process.
    return swim_day(algorithm)


class SwimDay:
    """One SWIM Facebook 2009 day (7,340 jobs, 148,854 tasks) on 1,200 servers."""

    params = ["drf", "hdrf-fast"]
    param_names = ["algorithm"]
    number = 1
    repeat = (3, 5, 30.0)  # 3 runs of 2-5 CPU-s a process, two processes
    rounds = 2
    # One run first: a process's first run also pays first-touch page faults,
    # lazy imports and loading compiled kernels (~0.2-0.3 s), a constant that
    # says nothing about the simulator's speed per task.
    warmup_time = 0.1
    timeout = 1200

    def setup(self, algorithm: str) -> None:
        self.inputs = _swim_day(algorithm)

    def time_simulate(self, algorithm: str) -> None:
        simulate(*self.inputs)

    def peakmem_simulate(self, algorithm: str) -> None:
        simulate(*self.inputs)


@cache
def _fb2010_hour(algorithm: str) -> tuple[Experiment, AlgorithmSpec, int]:
    """benchmarks/fb2010-week.yaml cut to the first hour of its day (the first
    1,000 trace jobs, ~2,000 stage jobs), as contended (arrivals compressed
    30-fold): the week's benchmark at a size asv can repeat."""
    import yaml

    from hierfair.experiment.spec import build_experiment

    folder = trace_dir()
    policy_or_skip(algorithm)
    data = yaml.safe_load(FB2010_WEEK.read_text())
    data["workload"].update(repeat=1, limit=1000)
    try:
        exp = build_experiment(data, source=str(FB2010_WEEK), data_dir=str(folder))
        seed = exp.spec.seeds[0]
        exp.workload(seed)
    except SpecError as exc:
        raise NotImplementedError(f"the FB-2010 trace is not in {folder}: {exc}") from None
    return exp, AlgorithmSpec(name=algorithm), seed


class FB2010Week:
    """The datacenter benchmark (benchmarks/datacenter.py runs the whole
    week) at its first hour: 1,200 servers, contended."""

    params = ["drf", "hdrf-fast"]
    param_names = ["algorithm"]
    number = 1
    repeat = (3, 5, 30.0)
    rounds = 2
    warmup_time = 0.1
    timeout = 1200

    def setup(self, algorithm: str) -> None:
        self.inputs = _fb2010_hour(algorithm)

    def time_simulate(self, algorithm: str) -> None:
        simulate(*self.inputs)

    def peakmem_simulate(self, algorithm: str) -> None:
        simulate(*self.inputs)


class Simulate:
    """A synthetic flat tree (no trace needed): 400 jobs, ~10k tasks."""

    params = (["drf", "fifo"], [16, 4096])
    param_names = ["algorithm", "leaves"]
    number = 1
    repeat = (3, 10, 5.0)
    rounds = 2
    timeout = 300

    def setup(self, algorithm: str, leaves: int) -> None:
        self.instance = flat_instance(leaves)

    def time_simulate(self, algorithm: str, leaves: int) -> None:
        Simulator(*self.instance, policy_or_skip(algorithm)).run()
