"""The normalised model as plain JSON-ready data (for `longshore validate --json` and other reports).

Theory of operation: the model is frozen dataclasses whose mappings are sorted tuples of pairs (`Pairs`) and
whose resource lists are `Resources` (pool limits: `Limits`). `to_jsonable` walks the dataclasses field by
field and uses each field's declared type to turn `Pairs` back into objects and `Resources`/`Limits` into
Kubernetes quantity strings, so the JSON reads like the YAML it came from while staying a faithful dump of the
model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from longshore.core.resources import Limits, Resources


def to_jsonable(value: Any) -> Any:
    """JSON-ready data for a model value (dataclass, tuple, Resources, scalar)."""
    if isinstance(value, Resources | Limits):
        return value.to_quantities()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        result: dict[str, Any] = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if field.type in ("Pairs", "Pairs | None") and isinstance(item, tuple):
                result[field.name] = dict(item)
            else:
                result[field.name] = to_jsonable(item)
        return result
    if isinstance(value, tuple | list):
        return [to_jsonable(item) for item in value]
    return value
