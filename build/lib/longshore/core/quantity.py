"""Kubernetes resource quantities: parse `"500m"`, `"1.5Gi"`, `"2"` into exact integers, and format them back.

Theory of operation: every quantity is held as an integer in the resource's base unit so that arithmetic is
exact and hashable. CPU is held in millicores; memory, ephemeral-storage and hugepages in bytes; everything
else (pods, GPUs, ENIs) as a plain count. The mapping from resource name to scale lives in `scale_of`.
Formatting picks the largest binary suffix that divides the value exactly, the way `kubectl` prints them.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def scale_of(resource: str) -> int:
    """How many internal units make one whole unit of `resource` (1000 for cpu, 1 otherwise)."""
    return 1000 if resource == CPU else 1


def parse_decimal(text: str | int | float) -> Decimal:
    """Parse a quantity to an exact Decimal in whole units (`"500m"` -> 0.5, `"1Gi"` -> 1073741824)."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int | float):
        return Decimal(str(text))
    match = _PATTERN.match(str(text).strip())
    if not match:
        raise QuantityError(f"{text!r} is not a quantity (expected forms like 500m, 2, 1.5Gi, 512Mi)")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        value = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(f"{text!r} is not a quantity") from exc
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * _DECIMAL[suffix]


def parse(resource: str, text: str | int | float) -> int:
    """Parse a quantity of `resource` into internal integer units, rounding up (as the kubelet does)."""
    scaled = parse_decimal(text) * scale_of(resource)
    return int(scaled.to_integral_value(rounding=ROUND_CEILING))


def format_quantity(resource: str, value: int) -> str:
    """Format internal units back into a canonical quantity string (`cpu` 1500 -> `"1500m"`, 2000 -> `"2"`)."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if value != 0 and (resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-")):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if value != 0 and value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)
