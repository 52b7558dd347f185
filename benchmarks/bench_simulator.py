"""How fast whole simulations run: the SWIM Facebook day and a synthetic flat tree."""

from __future__ import annotations

import time
from pathlib import Path

from hierfair.errors import SpecError
from hierfair.experiment.spec import AlgorithmSpec, Experiment, load_spec
from hierfair.sim import Simulator

from .workloads import flat_instance, policy_or_skip, simulate, trace_dir

SWIM_DAY = Path(__file__).resolve().parent / "swim-day.yaml"


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


class SwimDay:
    """One SWIM Facebook 2009 day (7,340 jobs, 148,854 tasks) on 1,200 servers."""

    params = ["drf", "hdrf-fast"]
    param_names = ["algorithm"]
    # A run takes 20-60 s today: one of each is enough.
    number = 1
    repeat = 1
    rounds = 1
    timeout = 1200

    def setup(self, algorithm: str) -> None:
        self.inputs = swim_day(algorithm)
        # One run first: a process's first run also pays first-touch page
        # faults, lazy imports and loading compiled kernels (~0.2-0.3 s), a
        # constant that says nothing about the simulator's speed per task.
        simulate(*self.inputs)

    def track_tasks_per_second(self, algorithm: str) -> int:
        """Simulated tasks per CPU-second of a warm run (other agents' load on
        the machine slows it less than wall time would say)."""
        start = time.process_time()
        result = simulate(*self.inputs)
        return round(len(result.tasks) / (time.process_time() - start))

    track_tasks_per_second.unit = "tasks/s"  # type: ignore[attr-defined]

    def peakmem_simulate(self, algorithm: str) -> None:
        simulate(*self.inputs)


class Simulate:
    """A synthetic flat tree (no trace needed): 400 jobs, ~10k tasks."""

    params = (["drf", "fifo"], [16, 4096])
    param_names = ["algorithm", "leaves"]
    number = 1
    repeat = 3
    rounds = 1
    timeout = 300

    def setup(self, algorithm: str, leaves: int) -> None:
        self.instance = flat_instance(leaves)

    def time_simulate(self, algorithm: str, leaves: int) -> None:
        Simulator(*self.instance, policy_or_skip(algorithm)).run()
