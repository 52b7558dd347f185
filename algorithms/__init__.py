"""Algorithm families, one module each, installed as ``hierfair.algorithms``.

:data:`ALGORITHMS` maps the name used in specs and on the command line to the
policy class.  Each class carries a one-line ``description`` and a pydantic
``Params`` model that validates the ``params:`` a spec gives it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hierfair.algorithms.capacity import CapacityCurrent, NaiveHDRF
from hierfair.algorithms.collapsed import Collapsed, CollapsedCPU, CollapsedMem
from hierfair.algorithms.dff import DFF
from hierfair.algorithms.drf import WeightedDRF
from hierfair.algorithms.fifo import FIFO
from hierfair.algorithms.hdrf import (
    DynamicHDRF,
    PreemptiveHDRF,
    RescaleOnlyHDRF,
    StaticHDRF,
)
from hierfair.algorithms.hdrf_fast import FastHDRF
from hierfair.algorithms.mch import MCH
from hierfair.algorithms.pdrf import PDRF
from hierfair.algorithms.slots import Slots
from hierfair.errors import SpecError, from_pydantic
from hierfair.sim.policy import BasePolicy

ALGORITHMS: Mapping[str, type[BasePolicy]] = {
    cls.name: cls
    for cls in (
        FIFO,
        WeightedDRF,
        StaticHDRF,
        DynamicHDRF,
        FastHDRF,
        RescaleOnlyHDRF,
        PreemptiveHDRF,
        NaiveHDRF,
        CapacityCurrent,
        Collapsed,
        CollapsedCPU,
        CollapsedMem,
        MCH,
        DFF,
        Slots,
        PDRF,
    )
}

#: ``slots-4`` is ``slots-k`` with ``k: 4``.
_SLOTS_ALIAS = re.compile(r"^slots-(\d+)$")


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> BasePolicy:
    """A fresh policy instance; bad names or params raise :class:`SpecError`."""
    alias = _SLOTS_ALIAS.match(name)
    if alias:
        name, params = Slots.name, {"k": int(alias.group(1)), **dict(params or {})}
    try:
        cls = ALGORITHMS[name]
    except KeyError:
        raise SpecError(f"unknown algorithm; known: {', '.join(sorted(ALGORITHMS))}",
                        where="algorithm", value=name) from None
    try:
        return cls(cls.Params(**dict(params or {})))
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="params", model=cls.Params) from None
