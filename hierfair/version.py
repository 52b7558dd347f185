"""hierfair's version: a leaf, so that the harness can stamp results with it
without importing the package's top (which imports the harness)."""

__version__ = "0.1.0"
