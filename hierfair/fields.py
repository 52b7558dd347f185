"""What every spec model is built from: the strict pydantic base and the
bounded number types.

A leaf module (it imports only pydantic and hierfair.errors): the engine's
spec models, algorithms/ and datasets/ all derive from it, so none of them
reaches up into the harness for it.  The bounds are explained in docs/spec.md,
"Limits"; hierfair.experiment.limits holds the checks that use them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hierfair.errors import SpecError


# No docstring: pydantic would show it as the description of every model
# without one of its own (the JSON schema).
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: Any number in a spec: beyond 2**53 an integer is no longer exact as a float.
MAX_NUMBER = float(2**53)
#: Simulated time, in seconds (about 31.7 years): submit times, durations, repairs.
MAX_TIME = 1e9
#: A capacity or a per-task demand, in the resource's own unit.
MAX_AMOUNT = 1e12
#: Node weights: their ratios must stay representable in shares.
MIN_WEIGHT, MAX_WEIGHT = 1e-9, 1e9
#: Seeds feed numpy's SeedSequence and are stored as int64.
MAX_SEED = 2**32 - 1


def check_range(value: float, low: float, high: float, where: str) -> None:
    if not low <= value <= high:
        raise SpecError(f"out of range [{low:g}, {high:g}]", where=where, value=value)


# -- the limits as pydantic field types ---------------------------------------------
Time = Annotated[float, Field(ge=0, le=MAX_TIME)]  # seconds
PositiveTime = Annotated[float, Field(gt=0, le=MAX_TIME)]
Amount = Annotated[float, Field(ge=0, le=MAX_AMOUNT)]  # a capacity or a demand
PositiveAmount = Annotated[float, Field(gt=0, le=MAX_AMOUNT)]


def _weight(value: float) -> float:
    if value < MIN_WEIGHT:
        raise ValueError(f"a weight must be at least {MIN_WEIGHT:g}")
    return value


Weight = Annotated[float, Field(gt=0, le=MAX_WEIGHT), AfterValidator(_weight)]


def _weight_or_zero(value: float) -> float:
    return value if value == 0 else _weight(value)


#: A hierarchy node's weight: 0 too, "only what others leave" (Kueue's fair
#: sharing weight; the policies that take it say so, the others refuse it).
NodeWeight = Annotated[float, Field(ge=0, le=MAX_WEIGHT), AfterValidator(_weight_or_zero)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
#: A server label placement constraints name (``gpu``, ``rack-3``).
Label = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
