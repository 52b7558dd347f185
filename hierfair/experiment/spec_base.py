"""The pydantic base every spec model derives from: unknown keys are errors."""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
