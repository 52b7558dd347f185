"""The pydantic base every spec model derives from: unknown keys are errors.

It lives in :mod:`hierfair.fields` (below algorithms/ and datasets/); this
name stays for code written against it.
"""

from hierfair.fields import Strict

__all__ = ["Strict"]
