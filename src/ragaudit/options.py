"""The base every section of ``ragaudit.yaml`` derives from, wherever its layer defines it,
and the upper bounds several sections (and the flags beside them) share.

Every number of the file is finite and has a documented maximum (docs/configuration.md
gives each): ``.inf`` or ``.nan`` is refused by the base class for every float, a dict's
values included, and each numeric option states its own ``le=``. A value no run could
use (``max_tokens: 99999999999999999999999``) is then a one-line error where it is
written, not a crash deep in a step, and nothing the configuration is written out as (the
run's ``provenance.json``, ``doctor``'s listing) can hold a value JSON cannot.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# A day: the longest any one call, query or statement may be given before it is cut off.
MAX_TIMEOUT_S = 86_400.0
# Seeds are 0 to 2**31 - 1: llama.cpp reads a seed as an unsigned 32-bit number (where
# 0xFFFFFFFF, what -1 becomes, means "random"), and the seed of a sample, a repeat or a
# round is the seed plus a small offset, which this leaves room for.
MAX_SEED = 2**31 - 1
# Threads, connections or requests in flight at once.
MAX_CONCURRENCY = 1024
# Resamples of the lambda study (``analyze --lambda-draws``) per target, system and
# variant: far more than a steady figure needs (the default is 500), and few enough to be
# computed in minutes, not to overflow an array.
MAX_LAMBDA_DRAWS = 100_000


class StrictOptions(BaseModel):
    """Options whose unknown keys are errors, not silently ignored, whose assignments are
    validated as the file's values are (command-line overrides go through it too), and
    whose floats are finite (``allow_inf_nan``: YAML's ``.inf`` and ``.nan``, or a literal
    too large for a float, are refused as "Input should be a finite number")."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)
