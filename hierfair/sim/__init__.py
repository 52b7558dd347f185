"""The simulator kernel, split by data path (see :mod:`hierfair.simulator`,
the public entry point)."""
