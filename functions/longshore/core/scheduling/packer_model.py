"""The packer's numbers: offers, bin types, items, packed nodes and results, and the per-node limit tests."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

CPU, MEMORY = 0, 1  # the first two packing dimensions are always cpu and memory
PRICE_VERSIONS = itertools.count()  # unique per set of resource prices, across packers


@dataclass(frozen=True, slots=True)
class Offer:
    type_index: int
    zone: str
    capacity_type: str
    price: float


@dataclass(frozen=True, slots=True)
class BinType:
    name: str
    room: tuple[int, ...]  # per packing dimension: allocatable minus DaemonSet overhead
    limit_usage: tuple[int, ...] = ()  # per limit dimension (what one node counts against pool limits)


@dataclass(frozen=True, slots=True)
class Item:
    count: int
    demand: tuple[int, ...]
    offers: int  # bitmask over the offer list
    cap: int = 0  # most pods of this item on one node; 0 = no cap
    groups: tuple[tuple[int, int], ...] = ()  # (group id, cap): items sharing a group share the cap
    conflicts: frozenset[int] = frozenset()  # items that may not share a node with this one
    together: bool = False  # all remaining pods must land on the same node


@dataclass(frozen=True, slots=True)
class PackedNode:
    offer: int
    contents: tuple[tuple[int, int], ...]  # (item index, pods)
    replicas: int = 1


@dataclass(frozen=True, slots=True)
class PackResult:
    nodes: tuple[PackedNode, ...]
    leftover: tuple[int, ...]  # per item, pods not placed
    limit_blocked: frozenset[int]  # items left over because every fitting bin would breach a limit
    limit_room: tuple[int, ...] | None = None  # what is left of the limits after these nodes


@dataclass(slots=True)
class Candidate:
    type_index: int
    offer: int
    groups: int  # bitmask over compatibility groups
    price: float
    bound: float = 0.0
    capacity: float = 0.0  # the LP value of the bin's room at the prices of `valued_at`
    valued_at: int = -1


# fillers by skew, their skew, fillers by value, the smallest request per dimension
FillOrder = tuple[list[int], dict[int, float], list[int], list[int]]


def fits(demand: Sequence[int], room: Sequence[int]) -> bool:
    return all(map(operator.le, demand, room))


def bit_string(mask: int, length: int) -> str:
    """`mask`'s bits as a string indexed by bit position ('1' set): testing bit i of a 5,000-bit mask with
    `mask >> i & 1` copies the integer each time, indexing this string does not."""
    return format(mask, "b")[::-1].ljust(length, "0")


def within_item_limits(
    item: Item, limit: int, have: int, group_used: dict[int, int], residual: Sequence[int]
) -> int:
    """`limit` cut down to the item's cap, its groups' caps and what the node's residual room holds."""
    if item.cap and item.cap - have < limit:
        limit = item.cap - have
    for group, cap in item.groups:
        if cap - group_used.get(group, 0) < limit:
            limit = cap - group_used.get(group, 0)
    if limit <= 0:
        return 0
    for amount, free in zip(item.demand, residual, strict=True):  # the hottest loop: no min() calls
        if amount > 0 and free // amount < limit:
            limit = free // amount
            if limit <= 0:
                return 0
    return limit


def allowed_together(items: Sequence[Item], contents: dict[int, int]) -> bool:
    group_load: dict[int, int] = {}
    for k, count in contents.items():
        item = items[k]
        if item.cap and count > item.cap:
            return False
        if item.conflicts & contents.keys():
            return False
        for group, cap in item.groups:
            group_load[group] = group_load.get(group, 0) + count
            if group_load[group] > cap:
                return False
    return True
