"""The fairness property audit: every algorithm against every property the
papers promise, on the same seeded random instances, with each violation
shrunk to a minimal counterexample spec (docs/properties.md).

Exports load on first use: the spec schema imports :mod:`hierfair.audit.names`
while the audit itself builds on the spec, so this package must import
nothing eagerly.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {"PROPERTIES": "properties", "Outcome": "properties", "Property": "properties",
            "Instance": "instance", "Shape": "instance", "draw": "instance",
            "audit": "runner", "shrink": "runner", "summarise": "runner",
            "run_audit": "write"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hierfair.audit' has no attribute {name!r}")
    return getattr(import_module(f"hierfair.audit.{_EXPORTS[name]}"), name)
