"""The base every section of ``ragaudit.yaml`` derives from, wherever its layer defines it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictOptions(BaseModel):
    """Options whose unknown keys are errors, not silently ignored, and whose assignments
    are validated as the file's values are (command-line overrides go through it too)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
