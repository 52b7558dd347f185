"""Loading inputs: hierarchy generation and trace parsing (time and peak memory).

Trace benchmarks read from ``$HIERFAIR_DATA`` or ``../shared/traces`` beside the
checkout and are skipped (NotImplementedError, asv's convention) without them.
"""

from __future__ import annotations

import time

from hierfair.datasets import full_binary
from hierfair.datasets.google import job_table, read_task_events
from hierfair.datasets.swim import read_swim

from .workloads import trace_dir

timer = time.process_time  # CPU time: the machine is shared


class FullBinary:
    params = [4, 10, 16]
    param_names = ["levels"]

    def time_build(self, levels: int) -> None:
        full_binary.build(full_binary.Params(kind="full-binary", levels=levels))


class Traces:
    timeout = 300

    def setup(self) -> None:
        self.folder = trace_dir()

    def time_swim_fb2010_day(self) -> None:
        read_swim(self.folder / "FB-2010_samples_24_times_1hr_0.tsv")

    def time_google_part_jobs(self) -> None:
        events, _ = read_task_events(
            self.folder / "google-2011/task_events-part-00000-of-00500.csv.gz")
        job_table(events)

    def peakmem_google_part_jobs(self) -> None:
        events, _ = read_task_events(
            self.folder / "google-2011/task_events-part-00000-of-00500.csv.gz")
        job_table(events)
