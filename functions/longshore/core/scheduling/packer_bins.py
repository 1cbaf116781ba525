"""Steps 1-2: effective bins per compatibility group, and the fluid LP's resource prices that value items."""

from __future__ import annotations

import bisect
import math
import operator
from typing import TYPE_CHECKING

from longshore.core.scheduling.duals import ResourcePricer
from longshore.core.scheduling.packer_model import PRICE_VERSIONS, Candidate, bit_string, fits
from longshore.core.scheduling.tuning import TUNING

if TYPE_CHECKING:
    from longshore.core.scheduling.packer_state import PackerState


def effective_bins(packer: PackerState) -> list[Candidate]:
    best: dict[tuple[int, int], tuple[float, int]] = {}
    member = [bit_string(mask, len(packer.offers)) for mask in packer.group_masks]
    flags = [1 << g for g in range(len(member))]
    for index, offer in enumerate(packer.offers):
        groups = 0
        for g, bits in enumerate(member):
            if bits[index] == "1":
                groups |= flags[g]
        if not groups:
            continue
        key = (offer.type_index, groups)
        found = best.get(key)
        if found is None or offer.price < found[0]:
            best[key] = (offer.price, index)
    by_type: dict[int, list[Candidate]] = {}
    for (type_index, groups), (price, index) in best.items():
        by_type.setdefault(type_index, []).append(Candidate(type_index, index, groups, price))
    kept: list[Candidate] = []
    for options in by_type.values():
        for option in options:
            dominated = any(
                other is not option
                and other.groups | option.groups == other.groups
                and other.price <= option.price
                and (other.groups != option.groups or other.offer < option.offer)
                for other in options
            )
            if not dominated:
                kept.append(option)
    return _frontier(packer, kept)


def _frontier(packer: PackerState, candidates: list[Candidate]) -> list[Candidate]:
    """Drop bins another bin beats outright: it serves a superset of groups, has at least the room, counts
    no more against limits, and costs no more (it can always stand in, so the optimum is unchanged)."""
    ordered = sorted(candidates, key=lambda c: (c.price, -sum(packer.types[c.type_index].room), c.offer))
    kept: list[Candidate] = []
    # per set of groups, (cpu room, position in kept): only bins serving a superset, with as much cpu, can win
    by_cpu: dict[int, list[tuple[int, int]]] = {}
    shapes: set[tuple[int, tuple[int, ...], tuple[int, ...]]] = set()  # (groups, room, usage) kept
    for cand in ordered:
        bin_type = packer.types[cand.type_index]
        room, usage = bin_type.room, bin_type.limit_usage
        rivals = [g for g in by_cpu if g | cand.groups == g]
        beaten = any((g, room, usage) in shapes for g in rivals)  # the same bin, cheaper: the common case
        for g in rivals:
            if beaten:
                break
            column = by_cpu[g]
            for _, position in column[bisect.bisect_left(column, (room[0], -1)) :]:
                other_type = packer.types[kept[position].type_index]
                if all(map(operator.ge, other_type.room, room)) and all(
                    map(operator.le, other_type.limit_usage, usage)
                ):
                    beaten = True
                    break
        if not beaten:
            bisect.insort(by_cpu.setdefault(cand.groups, []), (room[0], len(kept)))
            shapes.add((cand.groups, room, usage))
            kept.append(cand)
    return kept


def group_prices(packer: PackerState) -> list[tuple[float, ...]]:
    """Per compatibility group, the fluid LP's price of each resource for that group's demand."""
    if not packer.group_rows:
        packer.group_rows = [_dual_rows(packer, mask) for mask in packer.group_masks]
    found = []
    if not packer.pricers:
        packer.pricers = [ResourcePricer(rooms, prices) for rooms, prices in packer.group_rows]
    for g in range(len(packer.group_rows)):
        demand = [0.0] * packer.dims
        for k in range(len(packer.items)):
            if packer.group_of[k] == g and packer.remaining[k]:
                for r, amount in enumerate(packer.items[k].demand):
                    demand[r] += amount * packer.remaining[k]
        key = (g, tuple(demand))
        solved = packer.dual_cache.get(key)
        if solved is None:
            solved = packer.pricers[g].prices(demand)
            packer.dual_cache[key] = solved
        found.append(solved)
    return found


def _dual_rows(packer: PackerState, mask: int) -> tuple[list[tuple[int, ...]], list[float]]:
    """The dual's constraints for one group: each type's room at its cheapest offer in the mask, without
    the types another beats (at least the room for no more money): with prices >= 0 their constraints
    are implied, so the resource prices are the same and the simplex is much smaller."""
    cheapest: dict[int, float] = {}
    bits = bit_string(mask, len(packer.offers))
    for index, offer in enumerate(packer.offers):
        if bits[index] == "1":
            price = cheapest.get(offer.type_index)
            if price is None or offer.price < price:
                cheapest[offer.type_index] = offer.price
    ordered = sorted(cheapest, key=lambda t: (cheapest[t], [-r for r in packer.types[t].room]))
    kept: list[int] = []
    seen: set[tuple[int, ...]] = set()  # a room already kept beats every later type with that room
    by_cpu: list[tuple[int, int]] = []  # (cpu room, type) kept: only types with as much cpu can beat one
    for t in ordered:
        room = packer.types[t].room
        if room in seen:
            continue
        if any(
            all(map(operator.ge, packer.types[o].room, room))
            for _, o in by_cpu[bisect.bisect_left(by_cpu, (room[0], -1)) :]
        ):
            continue
        seen.add(room)
        bisect.insort(by_cpu, (room[0], t))
        kept.append(t)
    return [packer.types[t].room for t in kept], [cheapest[t] for t in kept]


def refresh_values(packer: PackerState) -> None:
    """Re-price resources when the remaining demand has changed enough: the negative feedback that
    keeps the mix of node shapes close to the LP's as balancing pods run out."""
    left = sum(packer.remaining[k] * packer.values[k] for k in range(len(packer.items)))
    if left < packer.priced_at * TUNING.reprice and left > 0:
        packer.prices = group_prices(packer)
        packer.values = item_values(packer)
        packer.type_values = [None] * len(packer.group_masks)
        packer.price_version = next(PRICE_VERSIONS)
        packer.priced_at = sum(packer.remaining[k] * packer.values[k] for k in range(len(packer.items)))


def item_values(packer: PackerState) -> list[float]:
    values = []
    for k, item in enumerate(packer.items):
        prices = packer.prices[packer.group_of[k]]
        values.append(max(1e-9, sum(p * d for p, d in zip(prices, item.demand, strict=True))))
    if packer.integer_factors:
        values = [v * f for v, f in zip(values, packer.integer_factors, strict=True)]
    return values


def integer_factors(packer: PackerState) -> list[float]:
    """Per item, how much dearer a pod is at whole-pod counts than at its fluid value: the cheapest
    price ÷ pods over the bins that serve it, holding only that item (whole pods), divided by its LP
    value (at least 1; 1 for an item no bin holds). The integer-aware member of the portfolio
    multiplies values by it, so a big pod of which five fit where the LP counts 5.46 weighs a fifth of
    its node, and a node that takes fewer of it than fit no longer scores as well as one that takes all."""
    cheapest_room: dict[int, dict[int, float]] = {}  # per group, per type: its cheapest bin's price
    for cand in packer.candidates:
        for g in range(len(packer.group_masks)):
            if cand.groups >> g & 1:
                prices = cheapest_room.setdefault(g, {})
                prices[cand.type_index] = min(prices.get(cand.type_index, math.inf), cand.price)
    seen: dict[tuple[int, tuple[int, ...]], float] = {}
    factors = []
    for k, item in enumerate(packer.items):
        value = packer.values[k]
        if packer.remaining[k] <= 0 or value <= 0:
            factors.append(1.0)
            continue
        key = (packer.group_of[k], item.demand)
        cheapest = seen.get(key)
        if cheapest is None:
            cheapest = math.inf
            for t, price in cheapest_room.get(key[0], {}).items():
                room = packer.types[t].room
                fit = min((r // d for r, d in zip(room, item.demand, strict=True) if d > 0), default=0)
                if fit > 0:
                    cheapest = min(cheapest, price / fit)
            seen[key] = cheapest
        factors.append(max(1.0, cheapest / value) if math.isfinite(cheapest) else 1.0)
    return factors


def alone_cost(packer: PackerState, group: int, demand: tuple[int, ...]) -> float:
    """A cheap lower bound on what a pod of `demand` costs in a group: its costliest resource at the
    group's cheapest price per unit of that resource (unit prices computed once per group)."""
    if not packer.unit_prices:
        packer.unit_prices = [
            [
                min(
                    (price / room[r] for room, price in zip(rooms, prices, strict=True) if room[r] > 0),
                    default=math.inf,
                )
                for r in range(packer.dims)
            ]
            for rooms, prices in packer.group_rows
        ]
    units = packer.unit_prices[group]
    return max((d * u for d, u in zip(demand, units, strict=True) if d > 0), default=0.0)


def holding(packer: PackerState, group: int, load: tuple[int, ...]) -> list[Candidate]:
    """The bins that serve `group` and hold `load` (memoised: forced rounds repeat them)."""
    key = (group, load)
    found = packer.holding_cache.get(key)
    if found is None:
        bit = 1 << group
        found = [
            c for c in packer.candidates if c.groups & bit and fits(load, packer.types[c.type_index].room)
        ]
        packer.holding_cache[key] = found
    return found


def best_table(packer: PackerState, groups: int) -> list[float]:
    """Per type, the best of `groups`' values of its room: an upper bound on the value a node of the type can
    hold (memoised per set of tables, shared by forks)."""
    tables = _value_tables(packer, groups)
    if len(tables) == 1:
        return tables[0]
    key = tuple(id(table) for table in tables)  # tables live in `table_cache` for the whole pack
    found = packer.best_cache.get(key)
    if found is None:
        found = [max(values) for values in zip(*tables, strict=True)]
        packer.best_cache[key] = found
    return found


def _value_tables(packer: PackerState, groups: int) -> list[list[float]]:
    """For each group in `groups`, the LP value of every type's room at that group's current prices.

    Each table is computed once per set of prices and shared by forks (`table_cache`)."""
    bits = packer.bits_of.get(groups)
    if bits is None:
        bits = tuple(g for g in range(len(packer.group_masks)) if groups >> g & 1)
        packer.bits_of[groups] = bits
    found = []
    for g in bits:
        table = packer.type_values[g]
        if table is None:
            prices = packer.prices[g]
            table = packer.table_cache.get(prices)
            if table is None:
                table = [0.0] * len(packer.types)
                for t in packer.candidate_types:
                    table[t] = sum(map(operator.mul, prices, packer.types[t].room))
                packer.table_cache[prices] = table
            packer.type_values[g] = table
        found.append(table)
    return found
