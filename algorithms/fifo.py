"""First-in-first-out: the baseline every fair scheduler is measured against.

Jobs are served in arrival order (submit time, then job id) whatever leaf they
were submitted to.  With ``backfill: false`` (the default) the oldest job's next
task blocks everyone when it does not fit -- classic head-of-line blocking; with
``backfill: true`` younger jobs may use what the oldest cannot.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from hierfair.sim.policy import LeafPriorityPolicy


class FIFOParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backfill: bool = False


class FIFO(LeafPriorityPolicy[FIFOParams]):
    """Serve the leaf whose head job arrived first."""

    name: ClassVar[str] = "fifo"
    description: ClassVar[str] = "first-in-first-out over jobs, no fairness (baseline)"
    Params: ClassVar[type[BaseModel]] = FIFOParams

    def key(self, leaf: int) -> tuple[float, int]:
        job = self.state.head_job(leaf)
        assert job is not None  # only demanding leaves are keyed
        return (job.submit, job.id)
