"""The fairness property audit: every algorithm against every property the
papers promise, on the same seeded random instances, with each violation
shrunk to a minimal counterexample spec (docs/properties.md).

The properties themselves (hierfair.experiment.properties, with the probe,
oracle and misreport search they use) sit below the harness's claims, which
check them too; this package draws instances, runs every property on them,
shrinks what fails and writes the results.
"""

from hierfair.audit.instance import Instance, Shape, draw
from hierfair.audit.runner import audit, shrink, summarise
from hierfair.audit.write import run_audit
from hierfair.experiment.properties import PROPERTIES, Outcome, Property

__all__ = ["PROPERTIES", "Instance", "Outcome", "Property", "Shape", "audit", "draw",
           "run_audit", "shrink", "summarise"]
