"""Object metadata helpers: timestamps, names, copies and the small accessors every other module needs.

Theory of operation: objects are plain JSON dicts exactly as they travel over the wire. Timestamps are RFC
3339 strings in UTC with second precision (`2026-01-01T00:00:00Z`), made from the emulator's clock (epoch
seconds), so virtual time shows up in `creationTimestamp` and `deletionTimestamp`. `clone` is a fast deep copy
for JSON values; the store hands out clones so callers can never mutate stored state.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

JSON = dict[str, Any]
T = TypeVar("T")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what apiserver's names.SimpleNameGenerator uses


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """Epoch seconds from an RFC 3339 timestamp (`Z` or an offset; fractional seconds allowed)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def clone(value: T) -> T:
    """Deep copy of a JSON value (dicts, lists, scalars), several times faster than copy.deepcopy."""
    return cast(T, _clone(value))


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def metadata(obj: Mapping[str, Any]) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("namespace") or "")


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = metadata(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def generated_name(prefix: str, rng: random.Random) -> str:
    """`generateName` + 5 random characters, as the API server's SimpleNameGenerator does."""
    return prefix + "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(5))


def random_uid(rng: random.Random) -> str:
    hexdigits = "".join(rng.choice(string.hexdigits[:16]) for _ in range(32))
    return f"{hexdigits[:8]}-{hexdigits[8:12]}-4{hexdigits[13:16]}-a{hexdigits[17:20]}-{hexdigits[20:32]}"


def controller_of(obj: Mapping[str, Any]) -> JSON | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in metadata(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's Ready condition is True (what the disruption controller counts as healthy)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False
