"""The audited properties' names, importable without the audit itself (the
spec schema validates ``property:`` checks with them; a test keeps this list
and :data:`hierfair.audit.properties.PROPERTIES` equal)."""

PROPERTY_NAMES = (
    "share-guarantee", "share-guarantee-churn", "share-guarantee-time", "convergence",
    "pareto", "envy-siblings", "envy-leaves", "strategy-proofness",
    "group-strategy-proofness", "sharing-incentive", "population-monotonicity",
    "starvation", "jain",
)
