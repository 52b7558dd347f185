"""How fast a whole simulation runs, per algorithm and hierarchy size."""

from __future__ import annotations

from hierfair.algorithms import make_policy
from hierfair.simulator import Simulator

from .workloads import flat_instance


class Simulate:
    params = (["drf", "fifo"], [16, 256, 4096])
    param_names = ["algorithm", "leaves"]
    timeout = 300

    def setup(self, algorithm: str, leaves: int) -> None:
        self.instance = flat_instance(leaves)

    def _run(self, algorithm: str):
        cluster, hierarchy, workload = self.instance
        return Simulator(cluster, hierarchy, workload, make_policy(algorithm)).run()

    def time_simulate(self, algorithm: str, leaves: int) -> None:
        self._run(algorithm)

    def track_tasks_per_second(self, algorithm: str, leaves: int) -> float:
        import time

        t0 = time.perf_counter()
        result = self._run(algorithm)
        return len(result.tasks) / (time.perf_counter() - t0)

    track_tasks_per_second.unit = "tasks/s"  # type: ignore[attr-defined]

    def track_decision_latency_p50_ns(self, algorithm: str, leaves: int) -> float:
        """Median wall time of one scheduling decision, as the simulator records it."""
        return float(self._run(algorithm).decisions["latency_ns"].median())

    track_decision_latency_p50_ns.unit = "ns"  # type: ignore[attr-defined]
