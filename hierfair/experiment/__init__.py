"""The experiment harness: specs (:mod:`~hierfair.experiment.spec`), planned
(:mod:`~hierfair.experiment.plan`) and cached (:mod:`~hierfair.experiment.cache`)
sweeps (:mod:`~hierfair.experiment.sweep`), result tables
(:mod:`~hierfair.experiment.results`), published claims checked against them
(:mod:`~hierfair.experiment.claim_spec`, :mod:`~hierfair.experiment.claim_measure`,
:mod:`~hierfair.experiment.claims`) and static allocations
(:mod:`~hierfair.experiment.allocate`).  Imports flow one way: spec <- sweep,
allocate <- claim_measure <- claims; nothing here imports the report."""
