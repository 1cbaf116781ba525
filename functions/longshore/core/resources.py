"""Resource lists: an immutable mapping from resource name to an integer amount in internal units.

Theory of operation: a `Resources` value is a sorted tuple of (name, amount) pairs, so it is hashable and
can key caches (pod classes, instance-type fits). Missing names mean zero. Arithmetic is element-wise;
`fits` answers "do these requests fit in this much room" the way the kube-scheduler's NodeResourcesFit does:
every requested name must be present in the room with at least that amount (a request of 0 always fits).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from longshore.core import quantity


@dataclass(frozen=True, slots=True)
class Resources:
    """Immutable resource list in internal units (cpu in millicores, memory in bytes, counts otherwise)."""

    items: tuple[tuple[str, int], ...] = field(default=())

    @staticmethod
    def of(values: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> Resources:
        pairs = values.items() if isinstance(values, Mapping) else values
        merged: dict[str, int] = {}
        for name, amount in pairs:
            merged[name] = merged.get(name, 0) + int(amount)
        return Resources(tuple(sorted((k, v) for k, v in merged.items() if v != 0)))

    @staticmethod
    def parse(values: Mapping[str, str | int | float]) -> Resources:
        """Build from Kubernetes quantity strings (`{"cpu": "500m", "memory": "1Gi"}`)."""
        return Resources.of({name: quantity.parse(name, text) for name, text in values.items()})

    def get(self, name: str) -> int:
        for key, amount in self.items:
            if key == name:
                return amount
        return 0

    def __getitem__(self, name: str) -> int:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def names(self) -> frozenset[str]:
        return frozenset(k for k, _ in self.items)

    def as_dict(self) -> dict[str, int]:
        return dict(self.items)

    def __add__(self, other: Resources) -> Resources:
        return Resources.of([*self.items, *other.items])

    def __sub__(self, other: Resources) -> Resources:
        return Resources.of([*self.items, *((k, -v) for k, v in other.items)])

    def scale(self, factor: int) -> Resources:
        return Resources.of((k, v * factor) for k, v in self.items)

    def maximum(self, other: Resources) -> Resources:
        names = self.names() | other.names()
        return Resources.of({n: max(self.get(n), other.get(n)) for n in names})

    def fits(self, room: Resources) -> bool:
        """True when every positive request here is covered by `room`."""
        return all(amount <= 0 or room.get(name) >= amount for name, amount in self.items)

    def exceeding(self, room: Resources) -> tuple[str, ...]:
        """The resource names whose request is larger than `room` offers."""
        return tuple(name for name, amount in self.items if amount > 0 and room.get(name) < amount)

    def clamp_non_negative(self) -> Resources:
        return Resources.of((k, max(v, 0)) for k, v in self.items)

    def to_quantities(self) -> dict[str, str]:
        """Kubernetes quantity strings, for JSON output and manifests."""
        return {name: quantity.format_quantity(name, amount) for name, amount in self.items}


EMPTY = Resources()


@dataclass(frozen=True, slots=True)
class Limits:
    """A pool's `limits`: resource name -> the most the pool may hold, in internal units.

    Unlike `Resources`, a name given with 0 is kept: `limits: {cpu: "0"}` is a limit of zero (a frozen pool
    launches nothing), and only a name that is absent means "no limit". Test membership (`name in limits`),
    never the amount's truth value.
    """

    items: tuple[tuple[str, int], ...] = field(default=())

    @staticmethod
    def of(values: Mapping[str, int]) -> Limits:
        return Limits(tuple(sorted((name, int(amount)) for name, amount in values.items())))

    @staticmethod
    def parse(values: Mapping[str, str | int | float]) -> Limits:
        """Build from Kubernetes quantity strings (`{"cpu": "0"}` is a limit of zero cpu)."""
        return Limits.of({name: quantity.parse(name, text) for name, text in values.items()})

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items)

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.items)

    def __bool__(self) -> bool:
        """True when the pool has any limit at all (a limit of zero counts)."""
        return bool(self.items)

    def amount(self, name: str) -> int:
        """The limit on `name`; KeyError when there is none (check `name in limits` first)."""
        for key, value in self.items:
            if key == name:
                return value
        raise KeyError(name)

    def to_quantities(self) -> dict[str, str]:
        """Kubernetes quantity strings (a limit of zero shows as "0")."""
        return {name: quantity.format_quantity(name, amount) for name, amount in self.items}

    def room(self, usage: Resources) -> tuple[int, ...]:
        """What is left under each limit (in `names()` order) after `usage`; negative when exceeded."""
        return tuple(value - usage.get(name) for name, value in self.items)
