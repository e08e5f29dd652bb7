"""DataFrames in which a missing value is missing (``<NA>``), never NaN.

Every ``to_pandas()`` of ragaudit builds its frame here. pandas reads a ``None`` among
floats as NaN, and (pandas 3) a ``None`` among strings as NaN too: an undefined figure or
a reason that is not there would then look like a number. Floats become the nullable
``Float64`` and strings the nullable ``string`` dtype, whose missing value is ``<NA>``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def frame(
    rows: Iterable[Mapping[str, Any]] | Mapping[str, Sequence[Any]],
    columns: Sequence[str] | None = None,
    floats: Iterable[str] = (),
) -> Any:
    """A pandas DataFrame of ``rows`` (dicts, or a dict of columns) with ``columns`` in
    that order (by default the keys, as pandas orders them); the ``floats`` columns as
    ``Float64`` even when every value is missing, every other float column as ``Float64``
    and every string column as ``string``, so that ``None`` stays ``<NA>``.

    >>> f = frame([{"why": None, "value": None}, {"why": "no rows", "value": 0.5}],
    ...           ["why", "value"])
    >>> [str(t) for t in f.dtypes], f["why"].isna().tolist(), f["why"][0] is __import__(
    ...     "pandas").NA
    (['string', 'Float64'], [True, False], True)
    """
    import pandas as pd

    data = pd.DataFrame(rows if isinstance(rows, Mapping) else list(rows), columns=columns)
    casts: dict[str, Any] = {name: "Float64" for name in floats}
    for name, dtype in data.dtypes.items():
        if name in casts:
            continue
        if dtype == "float64":
            casts[str(name)] = "Float64"
        elif isinstance(dtype, pd.StringDtype) and dtype.na_value is not pd.NA:
            casts[str(name)] = pd.StringDtype(storage=dtype.storage)
    return data.astype(casts) if casts else data
