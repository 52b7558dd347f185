"""Compiled kernels for the few loops that run once per decision over a tree.

A kernel is a plain Python function over numpy arrays and scalars, written in
the subset numba compiles.  :func:`jit` compiles it (``numba.njit``, cached on
disk, no fast-math: IEEE arithmetic in the order written, so a kernel computes
the same floats as the Python it replaces).  Without numba -- not installed,
or ``HIERFAIR_NO_JIT=1`` -- the same function runs as Python: slower, the same
results.  Either way ``kernel.py_func`` is the uncompiled function, which the
tests run against the compiled one.

Policies stay plain Python; a kernel is an implementation detail of one
(``hdrf-fast``), never part of the policy protocol.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def _compiler() -> Callable[[F], F] | None:
    if os.environ.get("HIERFAIR_NO_JIT", "") not in ("", "0"):
        return None
    try:
        from numba import njit
    except ImportError:  # numba is a dependency, but a platform may lack its wheels
        return None
    return njit(cache=True, nogil=True)


_COMPILE = _compiler()

#: Whether kernels are compiled in this process.
COMPILED = _COMPILE is not None


def jit(fn: F) -> F:
    """``fn`` compiled, or ``fn`` itself (with ``fn.py_func = fn``)."""
    if _COMPILE is None:
        fn.py_func = fn  # type: ignore[attr-defined]
        return fn
    return _COMPILE(fn)
