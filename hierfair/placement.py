"""Moved to :mod:`hierfair.sim.placement`; kept so existing imports work."""

from hierfair.sim.placement import PLACEMENTS, TOLERANCE, Placement, ServerIndex

__all__ = ["PLACEMENTS", "TOLERANCE", "Placement", "ServerIndex"]
