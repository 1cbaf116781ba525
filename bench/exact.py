"""The exact integer optimum of a small placement problem (docs/reference/lp-bounds.md §4), by a MIP over
all maximal node patterns (`scipy.optimize.milp`, HiGHS), and a brute force that checks it on tiny ones.

The problem is given as plain numbers, independently of the engine:

* classes (`ExactClass`): `count` identical pods of `cpu` millicores and `memory` bytes (one pod slot each),
  allowed on the offerings (zone, capacity type) in `allowed`; `one_per_node` for hostname anti-affinity
  among the class's own pods; `one_per_zone` for zone anti-affinity among them (implies one per node);
* instance types (`ExactType`): allocatable room (millicores, bytes, pod slots) and offerings (zone,
  capacity type, price per hour).

A *pattern* is one node's content: a count of each class that fits the type's room, at most 1 of a
one-per-node class. It is *maximal* when no further pod of a class without zone anti-affinity fits (the
zone-anti-affine classes are enumerated with and without, since their unused slot would still count
against the zone). Per type and per set of classes an offering of the type serves, every maximal pattern
is listed; each is priced at the cheapest offering of the type that serves all its classes, once per zone
when it holds zone-anti-affine pods (the zone matters then), else once.

    min  sum_p c_p x_p
    s.t. sum_p a_kp x_p >= n_k                       every pod of class k is placed
         sum_{p in zone z} a_kp x_p <= 1             zone anti-affinity: one pod of k per zone
         x integer >= 0

Why it is exact: any placement's node, of type t on offering o, holds a content c that o serves; adding
pods of classes o serves until none fits gives a maximal pattern of t listed for o's served set, priced
at most o's price. Replacing every node by such a pattern covers every class at no higher cost and keeps
the zone constraints (only classes without zone anti-affinity were added), and surplus pods are simply not
placed. Conversely every integer point is a placement (drop the surplus). `brute_force` checks this on
instances of up to about 7 pods by enumerating every partition of the pods into nodes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

Offer = tuple[str, str, float]  # zone, capacity type, price per hour


@dataclass(frozen=True)
class ExactClass:
    name: str
    cpu: int
    memory: int
    count: int
    allowed: frozenset[tuple[str, str]]  # (zone, capacity type) the pods may use
    one_per_node: bool = False
    one_per_zone: bool = False


@dataclass(frozen=True)
class ExactType:
    name: str
    room: tuple[int, int, int]  # millicores, bytes, pod slots
    offerings: tuple[Offer, ...]


@dataclass(frozen=True)
class Pattern:
    type_index: int
    zone: str | None  # None: the zone does not matter (no zone-anti-affine pods on it)
    price: float
    counts: tuple[int, ...]


@dataclass(frozen=True)
class ExactResult:
    cost: float  # the best integer plan found (the optimum when `optimal`)
    bound: float  # HiGHS's dual bound (equal to `cost` when optimal)
    optimal: bool
    patterns: int
    nodes: int
    seconds: float
    solution: tuple[tuple[Pattern, int], ...] = ()  # the plan: each pattern used and how many times


def _fit(cls: ExactClass, room: tuple[int, int, int]) -> int:
    fit = min(room[0] // max(cls.cpu, 1), room[1] // max(cls.memory, 1), room[2])
    return min(fit, 1) if cls.one_per_node or cls.one_per_zone else min(fit, cls.count)


def _maximal(
    classes: Sequence[ExactClass], members: Sequence[int], room: tuple[int, int, int]
) -> Iterator[tuple[int, ...]]:
    """Every maximal content over the classes `members` (see the module docstring) as full count vectors."""
    counts = [0] * len(classes)
    caps = [_fit(classes[k], room) for k in members]

    def fits(k: int, left: tuple[int, int, int]) -> bool:
        return classes[k].cpu <= left[0] and classes[k].memory <= left[1] and left[2] >= 1

    def walk(i: int, left: tuple[int, int, int]) -> Iterator[tuple[int, ...]]:
        if i == len(members):
            for j, k in enumerate(members):
                if not classes[k].one_per_zone and counts[k] < caps[j] and fits(k, left):
                    return
            yield tuple(counts)
            return
        k = members[i]
        cls = classes[k]
        most = min(caps[i], left[0] // max(cls.cpu, 1), left[1] // max(cls.memory, 1), left[2])
        for take in range(most, -1, -1):
            counts[k] = take
            yield from walk(i + 1, (left[0] - take * cls.cpu, left[1] - take * cls.memory, left[2] - take))
        counts[k] = 0

    yield from walk(0, room)


def patterns(
    classes: Sequence[ExactClass], types: Sequence[ExactType], limit: int = 400_000
) -> list[Pattern]:
    """Every priced maximal pattern (module docstring); raises when there are more than `limit`."""
    found: dict[tuple[int, str | None, tuple[int, ...]], float] = {}
    for t, it in enumerate(types):
        served_sets: dict[frozenset[int], None] = {}
        for zone, ct, _ in it.offerings:
            served = frozenset(
                k for k, c in enumerate(classes) if (zone, ct) in c.allowed and _fit(c, it.room) > 0
            )
            if served:
                served_sets[served] = None
        for served in served_sets:
            for counts in _maximal(classes, sorted(served), it.room):
                support = [k for k, n in enumerate(counts) if n]
                if not support:
                    continue
                zonal = any(classes[k].one_per_zone for k in support)
                for zone, ct, price in it.offerings:
                    if all((zone, ct) in classes[k].allowed for k in support):
                        key = (t, zone if zonal else None, counts)
                        if price < found.get(key, float("inf")):
                            found[key] = price
                if len(found) > limit:
                    raise ValueError(f"more than {limit} patterns")
    return [Pattern(t, zone, price, counts) for (t, zone, counts), price in found.items()]


def exact_optimum(
    classes: Sequence[ExactClass], types: Sequence[ExactType], time_limit: float = 60.0
) -> ExactResult:
    """The MIP over all maximal patterns (module docstring)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    started = time.perf_counter()
    listed = patterns(classes, types)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    for k, cls in enumerate(classes):
        for p, pattern in enumerate(listed):
            if pattern.counts[k]:
                rows.append(len(lower))
                cols.append(p)
                vals.append(float(pattern.counts[k]))
        lower.append(float(cls.count))
        upper.append(np.inf)
    zones = sorted({p.zone for p in listed if p.zone is not None})
    for k, cls in enumerate(classes):
        if not cls.one_per_zone:
            continue
        for zone in zones:
            for p, pattern in enumerate(listed):
                if pattern.zone == zone and pattern.counts[k]:
                    rows.append(len(lower))
                    cols.append(p)
                    vals.append(1.0)
            lower.append(-np.inf)
            upper.append(1.0)
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lower), len(listed))).tocsr()
    most = max(c.count for c in classes)
    result = milp(
        np.array([p.price for p in listed]),
        constraints=LinearConstraint(matrix, np.array(lower), np.array(upper)),
        integrality=np.ones(len(listed)),
        bounds=Bounds(0, most),
        options={"time_limit": time_limit, "mip_rel_gap": 1e-7},
    )
    if result.x is None:
        raise RuntimeError(f"the exact MIP found no plan: {result.message}")
    cost = float(np.array([p.price for p in listed]) @ np.round(result.x))
    bound = float(getattr(result, "mip_dual_bound", cost) or cost)
    return ExactResult(
        cost=cost,
        bound=min(bound, cost),
        optimal=result.status == 0,
        patterns=len(listed),
        nodes=int(np.round(result.x).sum()),
        seconds=time.perf_counter() - started,
        solution=tuple((listed[p], int(n)) for p, n in enumerate(np.round(result.x)) if n > 0),
    )


def _partitions(items: list[int]) -> Iterator[list[list[int]]]:
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _partitions(rest):
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1 :]]
        yield [[first], *partition]


def brute_force(classes: Sequence[ExactClass], types: Sequence[ExactType]) -> float:
    """The optimum by listing every partition of the pods into nodes; each node takes, per zone, the cheapest
    offering that holds it, and the zones are chosen jointly for zone anti-affinity. Tiny instances only."""
    pods = [k for k, c in enumerate(classes) for _ in range(c.count)]
    if len(pods) > 8:
        raise ValueError("brute force is for at most 8 pods")
    best = float("inf")
    for partition in _partitions(list(range(len(pods)))):
        options: list[list[tuple[str, float]]] = []
        for block in partition:
            kinds = [pods[i] for i in block]
            if any(
                kinds.count(k) > 1 for k in set(kinds) if classes[k].one_per_node or classes[k].one_per_zone
            ):
                break
            need = (sum(classes[k].cpu for k in kinds), sum(classes[k].memory for k in kinds), len(kinds))
            per_zone: dict[str, float] = {}
            for it in types:
                if any(need[r] > it.room[r] for r in range(3)):
                    continue
                for zone, ct, price in it.offerings:
                    if all((zone, ct) in classes[k].allowed for k in kinds):
                        per_zone[zone] = min(per_zone.get(zone, float("inf")), price)
            if not per_zone:
                break
            options.append(sorted(per_zone.items()))
        else:
            for choice in product(*options):
                seen: set[tuple[int, str]] = set()
                feasible = True
                for block, (zone, _) in zip(partition, choice, strict=True):
                    for k in {pods[i] for i in block}:
                        if classes[k].one_per_zone:
                            feasible = feasible and (k, zone) not in seen
                            seen.add((k, zone))
                if feasible:
                    best = min(best, sum(price for _, price in choice))
    return best
