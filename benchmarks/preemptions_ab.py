"""What asking ``preemptions()`` every round costs a policy that never
preempts (a script, not a test): hdrf-fig13-week run twice per algorithm in
this process, once forced to ask and once skipping, same schedule asserted.

    .venv/bin/python benchmarks/preemptions_ab.py
"""
import time, yaml, sys
from hierfair.experiment.spec import build_experiment
from hierfair.algorithms import make_policy
d = yaml.safe_load(open('experiments/hdrf-fig13-week.yaml')); d.pop('grid', None); d.pop('claims', None)
exp = build_experiment(d, source='experiments/hdrf-fig13-week.yaml'); exp.workload(0)
for algo in ("drf", "hdrf-fast", "slots-10"):
    res = {}
    for rep in range(2):
        for skip in (False, True):
            sim = exp.simulator(make_policy(algo), 0)
            if not skip:
                sim._preempts = True
            t = time.process_time(); r = sim.run(); c = time.process_time() - t
            res.setdefault(skip, []).append((c, r.schedule_digest, r.counts['tasks']))
    b, a = min(x[0] for x in res[False]), min(x[0] for x in res[True])
    assert {x[1] for x in res[False]} == {x[1] for x in res[True]}
    n = res[True][0][2]
    print(f"{algo}: asking preemptions() {b:.2f} CPU-s, skipping {a:.2f} ({n/b:,.0f} -> {n/a:,.0f} tasks/CPU-s, x{b/a:.2f}); same schedule")
