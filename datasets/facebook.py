"""Facebook-derived job sizes: the H-DRF paper's §5.2 schedule, as a generator.

Source: H-DRF paper §5.2 and Table 1 (``../shared/papers/hdrf-hierarchical-drf-socc2013.txt``).

Job sizes (tasks per job) follow Table 1's Facebook bins: 0-19 tasks 73%,
20-149 10%, 150-499 7%, 500+ 9% (the published shares sum to 99%; we
normalise them).  Within a bin the size is uniform; the open 500+ bin is cut
at ``max_tasks``.  ``exact_counts: true`` instead uses the paper's own 100-job
schedule counts, 74 / 10 / 6 / 10, in seeded random order.

Per task (§5.2): 1 CPU; 1.5 GB of memory if the job is memory-dominant, else
1 GB.  Which jobs were memory-dominant in the trace is not published:
``memory_dominant_fraction`` (default 0.5) decides, by seed.  Jobs sent to a
``gpu_queues`` leaf ask for 1 GPU and no CPU (§5.2: "except the jobs
submitted to n1,2 which request one GPU core and no CPU").

Placement (§5.2): jobs of ``large_threshold`` (500) tasks or more go round-
robin to ``large_queues`` (n1,1, n1,2, n3,1 on Fig. 10), the others round-
robin to ``small_queues`` (n2's leaves).  A queue named here may be an
internal node -- with ``users_per_leaf`` (datasets/paper_trees.py) the
figure's leaves hold users: a job sent to it then goes to one of the leaves
below it, uniformly at random per job (seeded by the run seed, from a stream
of its own, so the jobs, sizes and submit times are those of the same spec
without users); it keeps its queue's GPU rule.  All jobs are submitted at
``submit`` (0): each leaf serves its jobs first-in-first-out, our reading of
"each leaf node runs its next job as soon as the previous one finishes";
``interarrival`` > 0 spaces submissions instead (exponential, seeded).

Task durations are not published: ``task_duration`` seconds each (default
60), optionally spread uniformly by +-``task_duration_spread`` seconds;
``large_task_duration`` gives the large jobs' tasks another length.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from hierfair.datasets.base import BuildContext, RawJob, check_job, checked_durations
from hierfair.errors import SpecError
from hierfair.fields import MAX_TIME, Strict
from hierfair.sim.jobtable import JobTable, replace_columns
from hierfair.sim.model import JobColumns, Workload

#: H-DRF Table 1: (lowest tasks, highest tasks or None, % of Facebook jobs,
#: jobs in the paper's 100-job schedule).
TABLE1_BINS = ((1, 19, 73, 74), (20, 149, 10, 10), (150, 499, 7, 6), (500, None, 9, 10))


class Params(Strict):
    kind: Literal["facebook-bins"]
    jobs: PositiveInt = 100
    exact_counts: bool = False
    max_tasks: PositiveInt = 1500
    memory_dominant_fraction: float = Field(0.5, ge=0, le=1)
    mem_dominant_gb: PositiveFloat = 1.5
    mem_gb: PositiveFloat = 1.0
    cpu: PositiveFloat = 1.0
    gpu_queues: list[str] = ["n1/n12"]
    large_queues: list[str] = ["n1/n11", "n1/n12", "n3/n31"]
    small_queues: list[str] = ["n2/n21", "n2/n22", "n2/n23"]
    large_threshold: PositiveInt = 500
    submit: NonNegativeFloat = 0.0
    interarrival: NonNegativeFloat = 0.0
    task_duration: PositiveFloat = 60.0
    task_duration_spread: NonNegativeFloat = 0.0
    #: Task length of jobs of ``large_threshold`` tasks or more (default: the
    #: same) -- long-running "hogs" for preemption studies.
    large_task_duration: PositiveFloat | None = None


def size(p: Params) -> tuple[int, int]:
    """Jobs and the expected number of tasks (Table 1's bins, uniform within a bin)."""
    share = np.array([b[2] for b in TABLE1_BINS], dtype=float)
    mids = [(lo + (hi or max(p.max_tasks, lo))) / 2 for lo, hi, *_ in TABLE1_BINS]
    return p.jobs, int(p.jobs * float(np.dot(share / share.sum(), mids))) + 1


def job_sizes(p: Params, rng: np.random.Generator) -> np.ndarray:
    """Tasks per job, drawn from Table 1's bins."""
    if p.exact_counts:
        if p.jobs != 100:
            raise SpecError("exact_counts reproduces the paper's 100-job schedule",
                            where="workload.jobs", value=p.jobs)
        which = np.repeat(np.arange(len(TABLE1_BINS)), [b[3] for b in TABLE1_BINS])
        rng.shuffle(which)
    else:
        share = np.array([b[2] for b in TABLE1_BINS], dtype=float)
        which = rng.choice(len(TABLE1_BINS), size=p.jobs, p=share / share.sum())
    lo = np.array([b[0] for b in TABLE1_BINS])[which]
    hi = np.array([b[1] or p.max_tasks for b in TABLE1_BINS])[which]
    return rng.integers(lo, np.maximum(hi, lo) + 1)


def _leaves_below(queue: str, ctx: BuildContext) -> list[str] | None:
    """The leaves under ``queue`` when it is an internal node of the hierarchy, else
    None (a leaf, or a name the hierarchy lacks: finalize names the error)."""
    h = ctx.hierarchy
    if queue not in h:
        return None
    node = h.index(queue)
    if h.is_leaf(node):
        return None
    return [h.paths[x] for x in range(node, int(h.subtree_end[node])) if h.is_leaf(x)]


class _Durations:
    """Job ``k``'s task durations, drawn again from where they start in the
    generator's stream: every job with a spread draws one double a task, in
    job order, after the per-job draws (PCG64 ``advance`` jumps there)."""

    def __init__(self, p: Params, sizes: np.ndarray, state: dict) -> None:
        self._sizes, self._state = sizes, state
        self._offset = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes
        self._spread, self._length, self._large = (p.task_duration_spread, p.task_duration,
                                                   p.large_task_duration)
        self._threshold = p.large_threshold
        self._rng = np.random.Generator(np.random.PCG64())

    def __call__(self, k: int) -> np.ndarray:
        n = int(self._sizes[k])
        length = self._large if n >= self._threshold and self._large else self._length
        if not self._spread:
            return np.maximum(np.full(n, length), 1e-3)
        bits = self._rng.bit_generator
        bits.state = self._state
        bits.advance(int(self._offset[k]))
        return np.maximum(length + self._rng.uniform(-self._spread, self._spread, n), 1e-3)


def build(p: Params, ctx: BuildContext) -> Workload:
    """The jobs as a :class:`JobTable`: their columns now, each job's
    durations when the run reads the job (a week at the paper's scale is
    two million jobs)."""
    rng = ctx.rng()
    users = ctx.rng(salt=1)  # which user of an internal queue: a stream of its own
    below = {q: _leaves_below(q, ctx) for q in {*p.large_queues, *p.small_queues}}
    sizes = job_sizes(p, rng)
    memory_dominant = rng.random(p.jobs) < p.memory_dominant_fraction
    gaps = rng.exponential(p.interarrival, p.jobs) if p.interarrival > 0 else np.zeros(p.jobs)
    submits = p.submit + np.cumsum(gaps) - gaps[0]
    durations = _Durations(p, sizes, rng.bit_generator.state)
    has_gpu = "gpu" in ctx.cluster.resources
    leaves, demands = np.zeros(p.jobs, dtype=np.int64), []
    shapes: dict[tuple[str, bool, bool], tuple[int, np.ndarray]] = {}
    fits: dict[tuple[bytes, frozenset[str]], bool] = {}
    # finalize's checks, in its order, where they can fail: a leaf and demand
    # on its first job, a submit time from the first one too late, every job's
    # durations when some could be too long
    late = int(np.searchsorted(submits, MAX_TIME, side="right"))
    long = max(p.task_duration, p.large_task_duration or 0) + p.task_duration_spread > MAX_TIME
    next_large = next_small = 0
    for i, n in enumerate(sizes.tolist()):
        if n >= p.large_threshold:
            queue = p.large_queues[next_large % len(p.large_queues)]
            next_large += 1
        else:
            queue = p.small_queues[next_small % len(p.small_queues)]
            next_small += 1
        options = below[queue]
        target = options[int(users.integers(len(options)))] if options else queue
        key = (target, bool(memory_dominant[i]), queue in p.gpu_queues and has_gpu)
        where = f"workload (facebook-bins job {i})"
        if key not in shapes or i == late:
            demand = {"mem": p.mem_dominant_gb if key[1] else p.mem_gb}
            demand.update({"gpu": 1.0} if key[2] else {"cpu": p.cpu})
            shapes[key] = check_job(RawJob(target, demand, (), float(submits[i]), "", where),
                                    ctx.cluster, ctx.hierarchy, fits)
        if long:
            checked_durations(durations(i), where)
        leaves[i], vector = shapes[key]
        demands.append(vector)
    columns = replace_columns(JobColumns(leaves, submits, sizes.astype(np.int64),
                                         np.full(p.jobs, -1, dtype=np.int64), demands))
    return Workload(JobTable(columns, durations, name="fb{}"),
                    source=f"facebook-bins generator (H-DRF Table 1, seed {ctx.seed})")
