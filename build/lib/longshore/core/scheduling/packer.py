"""Cost-driven bin packing of pod classes into priced nodes: the numeric heart of the scheduler.

Theory of operation. The input is already reduced to numbers: *items* (pod classes: a count, a request
vector, a bitmask of the offers they may use, per-node caps, conflicts) and *offers* (instance type × zone ×
capacity type, with a price and the room a node of that type leaves for pods after DaemonSets). The output
is a list of node patterns, each replicated some number of times.

0. *Interchangeable items merge.* Items with the same requests, offers and shared caps (and no per-item cap or
   conflict) are packed as one item and split back afterwards, so pod classes that differ only in labels
   nobody selects cost nothing extra (only when that removes at least a quarter of the items: otherwise the
   merge saves little and only perturbs tie-breaks).
1. *Compatibility groups.* Items with the same offer mask form a group; for every instance type and every
   set of groups an offer of it serves, only the cheapest such offer matters (the "effective bins" of the
   LP recipe in reference/performance.md §2.2; dominated ones are dropped).
2. *Values.* Per group, the fluid LP's dual (`duals.ResourcePricer`, warm-started from the previous
   solve's basis as the demand shrinks) prices cpu, memory and pod slots;
   an item's value is its fluid cost `pi . d`. "Value packed ÷ price" of a node is then its efficiency
   against the LP optimum (1.0 = as good as the bound), which makes nodes of different types, zones and
   capacity types comparable, and makes cost, not node count, the objective.
3. *Forced nodes first.* Capped items (hostname anti-affinity, hostname spread) fix a number of nodes that
   must exist. Per capped item, one round opens as many nodes as it needs: each takes the most seed pods its
   cap allows, and its free room is *topped up* with other pods, up to a fair share of them (their value ÷
   the nodes still needed), so every forced node is filled instead of the first ones taking everything and
   the rest running nearly empty. The round's bin is chosen by trial top-ups (value ÷ price; among bins
   within 2 % of the best, the cheapest). The fill order is computed once per round, so a round of R nodes
   costs O(R × fillers touched), not R full searches. The portfolio also tries one alternative: when some
   uncapped items are much dearer in their own offers than the capped ones (on-demand-only pods next to
   spot-friendly anti-affine ones: each group's cheapest price per unit of resource, 1.5× or more), their
   nodes are opened first, so the capped pods ride in their spare room; otherwise, with at most 100 forced
   nodes, choosing the forced nodes one by one like ordinary nodes (step 4). The cheaper plan is kept.
4. *Bin-centric greedy with bulk replication.* Repeatedly pick a seed item (the largest value), evaluate
   candidate bins that can hold it in decreasing order of an upper bound on their efficiency (branch and
   bound: stop when the bound cannot beat the best found), fill each candidate and keep the best. A fill
   takes a proportional *slice* of what is left of the seed's own group (items with the same offers), then
   balances the node's residual cpu:memory shape back towards the node's own shape with that group's most
   cpu- or memory-heavy pods, then tops up with pods of any group it serves, by value. The slice keeps
   every node's mix close to what is left, but on big nodes it can cost a whole pod (6 + 1 pods of two
   shapes where 7 of the seed fit), so the 8 best bins also try a fill that takes as many seed pods as fit
   first, and the chosen fill is improved by single-pod swaps towards more valuable pods that fit (capped
   pods stay). The winning pattern is replicated as many times as the remaining counts allow, so the work
   grows with patterns × candidates, not with pods. Three slice shares run as a portfolio from the same
   forced nodes (the alternative of step 3 with the first share only); the cheapest plan wins.
5. *Downsizing and merging.* Each pattern is finally re-priced with the cheapest offer (any type, zone and
   capacity type all its items accept) that still holds it (ties keep the larger type: fewer nodes is never
   worse), and the cheapest small nodes are merged when one node costs no more.

Limits (pool `limits`) are checked per replica with each type's limit usage; a candidate that would breach
them is skipped. Everything is integers except prices and values.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from longshore.core.scheduling.duals import ResourcePricer

CPU, MEMORY = 0, 1  # the first two packing dimensions are always cpu and memory
SLICES = (0.95, 0.85, 0.0)  # the portfolio of slice shares tried; the cheapest plan wins
REPRICE = 0.9
ITEM_VISITS = 20000  # fills per node decision are capped at ITEM_VISITS / items (best bounds first)
MIN_EVALUATIONS = 16
MERGE_EXPAND = 8  # patterns with at most this many replicas take part in merging, node by node
MERGE_WINDOW = 12  # merging looks at this many of the cheapest nodes
FORCED_TRIALS = 100  # candidate types tried for a round of nodes a capped item forces
_PRICE_VERSIONS = itertools.count()  # unique per set of resource prices, across packers
FORCED_SLACK = 0.02
DEAR_RATIO = 1.5
GREEDY_SEED_TRIES = 8  # the best bins of a decision also try the seed alone before the rest
SWAP_ROUNDS = 64  # single-pod swaps tried on each chosen node
MERGE_WORTH = 0.75  # merge interchangeable items only when that leaves at most this share of them
NODE_BY_NODE_UP_TO = 100  # with at most this many forced nodes, also try choosing them one by one  # among forced nodes this close to the best value per price, the cheapest wins


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
class _Candidate:
    type_index: int
    offer: int
    groups: int  # bitmask over compatibility groups
    price: float
    bound: float = 0.0
    capacity: float = 0.0  # the LP value of the bin's room at the prices of `valued_at`
    valued_at: int = -1


# fillers by skew, their skew, fillers by value, the smallest request per dimension
_FillOrder = tuple[list[int], dict[int, float], list[int], list[int]]


def _fits(demand: Sequence[int], room: Sequence[int]) -> bool:
    return all(map(operator.le, demand, room))


def _bit_string(mask: int, length: int) -> str:
    """`mask`'s bits as a string indexed by bit position ('1' set): testing bit i of a 5,000-bit mask with
    `mask >> i & 1` copies the integer each time, indexing this string does not."""
    return format(mask, "b")[::-1].ljust(length, "0")


class _Packer:
    def __init__(
        self,
        items: Sequence[Item],
        types: Sequence[BinType],
        offers: Sequence[Offer],
        limit_room: Sequence[int] | None,
        slice_share: float = 0.95,
        top_up: bool = True,
    ) -> None:
        self.slice = slice_share
        self.top_up = top_up
        self.dear_first = False  # open the nodes of much dearer uncapped items before the forced ones
        self.items = items
        self.types = types
        self.offers = offers
        self.limit_room = list(limit_room) if limit_room is not None else None
        self.remaining = [item.count for item in items]
        self.dims = len(types[0].room) if types else len(items[0].demand) if items else 0
        masks: dict[int, int] = {}
        self.group_of = [masks.setdefault(item.offers, len(masks)) for item in items]
        self.group_masks = list(masks)
        self.candidates = self._effective_bins()
        self.by_price = sorted(
            self.candidates, key=lambda c: (c.price, -sum(types[c.type_index].room), c.offer)
        )
        self.group_rows: list[tuple[list[tuple[int, ...]], list[float]]] = []
        self.pricers: list[ResourcePricer] = []
        # (group, demand) -> resource prices; shared by forks, which often re-price at the same demand
        self.dual_cache: dict[tuple[int, tuple[float, ...]], tuple[float, ...]] = {}
        # resource prices -> the LP value of every candidate type's room at them; shared by forks too
        self.table_cache: dict[tuple[float, ...], list[float]] = {}
        self.best_cache: dict[tuple[int, ...], list[float]] = {}  # per tuple of tables, the per-type best
        self.candidate_types = sorted({c.type_index for c in self.candidates})
        self.skew_cache: dict[int, tuple[list[int], dict[int, float]]] = {}
        self.unit_prices: list[list[float]] = []  # per group, the cheapest price per unit of each resource
        self.initial_prices = self._group_prices()
        self.holding_cache: dict[tuple[int, tuple[int, ...]], list[_Candidate]] = {}
        self.prices = self.initial_prices
        self.price_version = next(_PRICE_VERSIONS)
        self.values = self._item_values()
        self.type_values: list[list[float] | None] = [None] * len(self.group_masks)
        self.bits_of: dict[int, tuple[int, ...]] = {}
        self.priced_at = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))
        self.dead: set[int] = set()
        self.conflicted_by: list[set[int]] = [set() for _ in items]
        for k, item in enumerate(items):
            for j in item.conflicts:
                self.conflicted_by[j].add(k)
        self.limit_blocked: set[int] = set()
        self.capped = [
            k for k, item in enumerate(items) if item.cap or item.groups or item.conflicts or item.together
        ]

    # --- setup --------------------------------------------------------------------------------------------
    def _effective_bins(self) -> list[_Candidate]:
        best: dict[tuple[int, int], tuple[float, int]] = {}
        member = [_bit_string(mask, len(self.offers)) for mask in self.group_masks]
        flags = [1 << g for g in range(len(member))]
        for index, offer in enumerate(self.offers):
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
        by_type: dict[int, list[_Candidate]] = {}
        for (type_index, groups), (price, index) in best.items():
            by_type.setdefault(type_index, []).append(_Candidate(type_index, index, groups, price))
        kept: list[_Candidate] = []
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
        return self._frontier(kept)

    def _frontier(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """Drop bins another bin beats outright: it serves a superset of groups, has at least the room, counts
        no more against limits, and costs no more (it can always stand in, so the optimum is unchanged)."""
        ordered = sorted(candidates, key=lambda c: (c.price, -sum(self.types[c.type_index].room), c.offer))
        kept: list[_Candidate] = []
        # per set of groups, (cpu room, position in kept): only bins serving a superset, with as much cpu, can win
        by_cpu: dict[int, list[tuple[int, int]]] = {}
        shapes: set[tuple[int, tuple[int, ...], tuple[int, ...]]] = set()  # (groups, room, usage) kept
        for cand in ordered:
            bin_type = self.types[cand.type_index]
            room, usage = bin_type.room, bin_type.limit_usage
            rivals = [g for g in by_cpu if g | cand.groups == g]
            beaten = any((g, room, usage) in shapes for g in rivals)  # the same bin, cheaper: the common case
            for g in rivals:
                if beaten:
                    break
                column = by_cpu[g]
                for _, position in column[bisect.bisect_left(column, (room[0], -1)) :]:
                    other_type = self.types[kept[position].type_index]
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

    def _group_prices(self) -> list[tuple[float, ...]]:
        """Per compatibility group, the fluid LP's price of each resource for that group's demand."""
        if not self.group_rows:
            self.group_rows = [self._dual_rows(mask) for mask in self.group_masks]
        found = []
        if not self.pricers:
            self.pricers = [ResourcePricer(rooms, prices) for rooms, prices in self.group_rows]
        for g in range(len(self.group_rows)):
            demand = [0.0] * self.dims
            for k in range(len(self.items)):
                if self.group_of[k] == g and self.remaining[k]:
                    for r, amount in enumerate(self.items[k].demand):
                        demand[r] += amount * self.remaining[k]
            key = (g, tuple(demand))
            solved = self.dual_cache.get(key)
            if solved is None:
                solved = self.pricers[g].prices(demand)
                self.dual_cache[key] = solved
            found.append(solved)
        return found

    def _dual_rows(self, mask: int) -> tuple[list[tuple[int, ...]], list[float]]:
        """The dual's constraints for one group: each type's room at its cheapest offer in the mask, without
        the types another beats (at least the room for no more money): with prices >= 0 their constraints
        are implied, so the resource prices are the same and the simplex is much smaller."""
        cheapest: dict[int, float] = {}
        bits = _bit_string(mask, len(self.offers))
        for index, offer in enumerate(self.offers):
            if bits[index] == "1":
                price = cheapest.get(offer.type_index)
                if price is None or offer.price < price:
                    cheapest[offer.type_index] = offer.price
        ordered = sorted(cheapest, key=lambda t: (cheapest[t], [-r for r in self.types[t].room]))
        kept: list[int] = []
        seen: set[tuple[int, ...]] = set()  # a room already kept beats every later type with that room
        by_cpu: list[tuple[int, int]] = []  # (cpu room, type) kept: only types with as much cpu can beat one
        for t in ordered:
            room = self.types[t].room
            if room in seen:
                continue
            if any(
                all(map(operator.ge, self.types[o].room, room))
                for _, o in by_cpu[bisect.bisect_left(by_cpu, (room[0], -1)) :]
            ):
                continue
            seen.add(room)
            bisect.insort(by_cpu, (room[0], t))
            kept.append(t)
        return [self.types[t].room for t in kept], [cheapest[t] for t in kept]

    def _refresh_values(self) -> None:
        """Re-price resources when the remaining demand has changed enough: the negative feedback that
        keeps the mix of node shapes close to the LP's as balancing pods run out."""
        left = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))
        if left < self.priced_at * REPRICE and left > 0:
            self.prices = self._group_prices()
            self.values = self._item_values()
            self.type_values = [None] * len(self.group_masks)
            self.price_version = next(_PRICE_VERSIONS)
            self.priced_at = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))

    def _item_values(self) -> list[float]:
        values = []
        for k, item in enumerate(self.items):
            prices = self.prices[self.group_of[k]]
            values.append(max(1e-9, sum(p * d for p, d in zip(prices, item.demand, strict=True))))
        return values

    # --- main loop ----------------------------------------------------------------------------------------
    def fork(self, slice_share: float, top_up: bool | None = None) -> _Packer:
        """A copy of this packer's progress that continues with another slice share (the portfolio)."""
        twin = copy.copy(self)
        twin.slice = slice_share
        if top_up is not None:
            twin.top_up = top_up
        twin.remaining = list(self.remaining)
        twin.limit_room = list(self.limit_room) if self.limit_room is not None else None
        twin.dead = set(self.dead)
        twin.limit_blocked = set(self.limit_blocked)
        twin.type_values = list(self.type_values)
        twin.price_version = next(_PRICE_VERSIONS)  # bins cache their value per version; forks diverge
        return twin

    def grow(self, *, forced_only: bool = False) -> list[PackedNode]:
        """Open nodes until every item is placed or dead (with `forced_only`, only the nodes capped items
        force, which do not depend on the slice share)."""
        nodes: list[PackedNode] = []
        while True:
            active = [k for k in range(len(self.items)) if self.remaining[k] > 0 and k not in self.dead]
            if not active:
                break
            needed = self._nodes_needed(active)
            seed = self._seed(active, needed)
            item = self.items[seed]
            dear = (
                self._dear(seed, active)
                if self.dear_first and needed and (item.cap or item.groups) and not item.together
                else None
            )
            if dear is not None:
                chosen = self._best_node(dear, active, 0)
            elif needed and (item.cap or item.groups) and not item.together and self.top_up:
                chosen = self._forced_nodes(seed, active, needed)
            elif forced_only and not (needed and (item.cap or item.groups)):
                break
            else:
                chosen = self._best_node(seed, active, needed)
            if not chosen:
                self.dead.add(seed)
                continue
            for node in chosen:
                nodes.append(node)
                for k, count in node.contents:
                    self.remaining[k] -= count * node.replicas
                if self.limit_room is not None:
                    usage = self.types[self.offers[node.offer].type_index].limit_usage
                    for r, amount in enumerate(usage):
                        self.limit_room[r] -= amount * node.replicas
            self._refresh_values()
        return nodes

    def finish(self, nodes: list[PackedNode]) -> PackResult:
        """Re-price every node with the cheapest offer that holds it, then merge the cheapest ones."""
        nodes = self._merge([self._downsize(node) for node in nodes])
        left = tuple(self.limit_room) if self.limit_room is not None else None
        return PackResult(tuple(nodes), tuple(self.remaining), frozenset(self.limit_blocked), left)

    def run(self) -> PackResult:
        return self.finish(self.grow())

    def _nodes_needed(self, active: list[int]) -> int:
        """A lower bound on the nodes the capped items still need (0 when none remain)."""
        needed = 0
        group_load: dict[int, tuple[int, int]] = {}
        live = set(active)
        for k in self.capped:
            if k not in live:
                continue
            item = self.items[k]
            if item.cap:
                needed = max(needed, -(-self.remaining[k] // item.cap))
            for group, cap in item.groups:
                load, _ = group_load.get(group, (0, cap))
                group_load[group] = (load + self.remaining[k], cap)
        for load, cap in group_load.values():
            needed = max(needed, -(-load // cap))
        return needed

    def _dear(self, seed: int, active: list[int]) -> int | None:
        """The most valuable uncapped item that is much dearer in its own group than it would be in the capped
        seed's group (say on-demand-only pods next to spot-friendly anti-affine ones), if any: its nodes are
        opened before the forced ones, so the capped pods can ride in their spare room."""
        own = self.group_of[seed]
        best: int | None = None
        for k in active:
            item = self.items[k]
            if self.group_of[k] == own or item.cap or item.groups or item.together or item.conflicts:
                continue
            if self.conflicted_by[k]:
                continue
            mine = self._alone_cost(self.group_of[k], item.demand)
            there = self._alone_cost(own, item.demand)
            if mine >= DEAR_RATIO * there and (best is None or self.values[k] > self.values[best]):
                best = k
        return best

    def _alone_cost(self, group: int, demand: tuple[int, ...]) -> float:
        """A cheap lower bound on what a pod of `demand` costs in a group: its costliest resource at the
        group's cheapest price per unit of that resource (unit prices computed once per group)."""
        if not self.unit_prices:
            self.unit_prices = [
                [
                    min(
                        (price / room[r] for room, price in zip(rooms, prices, strict=True) if room[r] > 0),
                        default=math.inf,
                    )
                    for r in range(self.dims)
                ]
                for rooms, prices in self.group_rows
            ]
        units = self.unit_prices[group]
        return max((d * u for d, u in zip(demand, units, strict=True) if d > 0), default=0.0)

    def _seed(self, active: list[int], needed: int) -> int:
        if needed:
            capped = [k for k in active if self.items[k].cap or self.items[k].groups]
            if capped:
                loads: dict[int, int] = {}
                for k in capped:
                    for group, _ in self.items[k].groups:
                        loads[group] = loads.get(group, 0) + self.remaining[k]

                def pressure(k: int) -> int:
                    item = self.items[k]
                    value = -(-self.remaining[k] // item.cap) if item.cap else 0
                    for group, cap in item.groups:
                        value = max(value, -(-loads[group] // cap))
                    return value

                return max(capped, key=lambda k: (pressure(k), self.values[k], -k))
        together = [k for k in active if self.items[k].together]
        if together:
            return together[0]
        return max(active, key=lambda k: (self.values[k], self.remaining[k], -k))

    def _best_node(self, seed: int, active: list[int], needed: int) -> list[PackedNode]:
        seed_demand = self.items[seed].demand
        shares = self._shares(active, needed, seed)
        available: dict[int, float] = {}
        options: list[_Candidate] = []
        for cand in self._holding(self.group_of[seed], seed_demand):
            if not self._within_limits(cand.type_index, 1):
                self.limit_blocked.add(seed)
                continue
            if cand.groups not in available:
                available[cand.groups] = sum(
                    min(self.remaining[k], shares[k]) * self.values[k]
                    for k in active
                    if cand.groups >> self.group_of[k] & 1
                )
            capacity_value = self._capacity_value(cand.type_index, cand.groups)
            cand.bound = (
                min(capacity_value, available[cand.groups]) / cand.price if cand.price > 0 else math.inf
            )
            options.append(cand)
        if not options:
            return []
        self.limit_blocked.discard(seed)
        options.sort(key=lambda c: (-c.bound, c.price))
        by_value = sorted(active, key=lambda j: -self.values[j])
        budget = max(MIN_EVALUATIONS, ITEM_VISITS // max(1, len(active)))
        best: tuple[float, float, _Candidate, dict[int, int]] | None = None
        scored: list[tuple[float, int, _Candidate]] = []

        def consider(cand: _Candidate, fill: dict[int, int]) -> None:
            nonlocal best
            value = sum(self.values[k] * count for k, count in fill.items())
            score = value / cand.price if cand.price > 0 else math.inf
            if (
                best is None
                or score > best[0] * (1 + 1e-9)
                or (score >= best[0] * (1 - 1e-9) and value > best[1])
            ):
                best = (score, value, cand, fill)
            scored.append((score, len(scored), cand))

        for evaluated, cand in enumerate(options):
            if best is not None and (cand.bound < best[0] * (1 + 1e-9) or evaluated >= budget):
                break
            fill = self._fill(cand, seed, active, shares, by_value)
            if fill:
                consider(cand, fill)
        if best is None:
            return []
        if self.slice > 0 and GREEDY_SEED_TRIES:
            # the slice mixes what is left into every node, which can cost a whole pod on big nodes
            # (6 + 1 pods of two shapes where 7 of the seed fit): the best bins also try the seed alone first
            scored.sort(key=lambda row: (-row[0], row[1]))
            for _, _, cand in scored[:GREEDY_SEED_TRIES]:
                fill = self._fill(cand, seed, active, shares, by_value, greedy_seed=True)
                if fill:
                    consider(cand, fill)
        _, _, cand, fill = best
        fill = self._swap_up(cand, fill, active, shares)
        full = min(self.remaining[k] // count for k, count in fill.items())
        if any(self.items[k].together for k in fill):
            return [PackedNode(cand.offer, tuple(sorted(fill.items())), 1)]
        replicas = max(1, full)
        if needed > 1 and (self.items[seed].cap or self.items[seed].groups):
            # the capped seed fixes how many such nodes are needed; the other pods run out along the way
            replicas = max(replicas, min(needed, self.remaining[seed] // fill[seed]))
        while replicas > 1 and not self._within_limits(cand.type_index, replicas):
            replicas -= 1
        if replicas <= max(1, full):
            return [PackedNode(cand.offer, tuple(sorted(fill.items())), replicas)]
        left = {k: self.remaining[k] for k in fill}
        patterns: dict[tuple[tuple[int, int], ...], int] = {}
        for _ in range(replicas):
            contents = []
            for k, count in fill.items():
                take = min(count, left[k])
                if take:
                    contents.append((k, take))
                    left[k] -= take
            key = tuple(sorted(contents))
            patterns[key] = patterns.get(key, 0) + 1
        return [PackedNode(cand.offer, contents, count) for contents, count in patterns.items() if contents]

    def _swap_up(
        self, cand: _Candidate, fill: dict[int, int], active: list[int], shares: list[int]
    ) -> dict[int, int]:
        """Improve the chosen node's contents by single swaps: one pod out, one more valuable pod of an
        item the node accepts in, while it fits (the slice keeps every node's mix close to what is left,
        which can cost a whole pod slot on big nodes: 6 + 1 pods of two shapes where 7 of one fit)."""
        items = self.items
        values = self.values
        if any(items[k].together for k in fill):
            return fill
        room = self.types[cand.type_index].room
        fill = dict(fill)
        residual = list(room)
        for k, count in fill.items():
            for r, amount in enumerate(items[k].demand):
                residual[r] -= amount * count
        takers = sorted(
            (
                k
                for k in active
                if cand.groups >> self.group_of[k] & 1
                and not (items[k].cap or items[k].groups or items[k].together or items[k].conflicts)
                and not self.conflicted_by[k]
            ),
            key=lambda k: -values[k],
        )
        movable = [  # capped and conflicting pods stay: their caps and conflicts are the node's business
            k
            for k in fill
            if not (items[k].cap or items[k].groups or items[k].conflicts or self.conflicted_by[k])
        ]
        if not movable:
            return fill
        for _ in range(SWAP_ROUNDS):
            swapped = False
            for out in sorted((k for k in fill if k in movable), key=lambda k: values[k]):
                gone = items[out].demand
                for j in takers:
                    if values[j] <= values[out] * (1 + 1e-9):
                        break
                    if fill.get(j, 0) >= min(self.remaining[j], shares[j]):
                        continue
                    need = items[j].demand
                    if all(f + g >= n for f, g, n in zip(residual, gone, need, strict=True)):
                        for r in range(len(residual)):
                            residual[r] += gone[r] - need[r]
                        fill[out] -= 1
                        if not fill[out]:
                            del fill[out]
                        fill[j] = fill.get(j, 0) + 1
                        swapped = True
                        break
                if swapped:
                    break
            if not swapped:
                break
        return fill

    # --- nodes that must exist: capped seeds, topped up with filler pods ------------------------------------
    def _forced_nodes(self, seed: int, active: list[int], needed: int) -> list[PackedNode]:
        """Nodes for a capped item (hostname anti-affinity or spread): each takes the most seed pods its cap
        allows, and its free room is topped up with other pods. The node count is fixed by the cap, so the
        cheapest plan gives every such node a type the fillers can fill, rather than leaving it mostly empty
        and buying separate capacity for the fillers. One type is chosen for the whole round (by the value of
        a trial top-up per price), then every node of the round is topped up from what is left."""
        item = self.items[seed]
        per_node = self.remaining[seed]
        if item.cap:
            per_node = min(per_node, item.cap)
        for _, cap in item.groups:
            per_node = min(per_node, cap)
        if per_node <= 0:
            return []
        rounds = min(needed, -(-self.remaining[seed] // per_node))
        seed_load = tuple(d * per_node for d in item.demand)
        seed_groups = {group for group, _ in item.groups}
        options = list(self._holding(self.group_of[seed], seed_load))
        if not options:
            return []
        fillers_of: dict[int, list[int]] = {}
        for cand in options:
            if cand.groups not in fillers_of:
                fillers_of[cand.groups] = [
                    k
                    for k in active
                    if k != seed
                    and cand.groups >> self.group_of[k] & 1
                    and not self.items[k].together
                    and not self.items[k].conflicts
                    and not self.conflicted_by[k]
                    and not seed_groups.intersection(group for group, _ in self.items[k].groups)
                ]
        seed_value = per_node * self.values[seed]
        budget_of: dict[int, float] = {}  # per node: a fair share of the fillers over the nodes still needed
        for groups, fillers in fillers_of.items():
            budget_of[groups] = sum(self.remaining[k] * self.values[k] for k in fillers) / needed
        version = self.price_version
        best_of: dict[int, list[float]] = {}
        for cand in options:
            available = seed_value + budget_of[cand.groups]
            if cand.valued_at != version:
                best = best_of.get(cand.groups)
                if best is None:
                    best = best_of[cand.groups] = self._best_table(cand.groups)
                cand.capacity = best[cand.type_index]
                cand.valued_at = version
            capacity = cand.capacity
            cand.bound = (
                (capacity if capacity < available else available) / cand.price if cand.price > 0 else math.inf
            )
        options.sort(key=lambda c: (-c.bound, c.price))
        left = list(self.remaining)
        ranked: dict[int, tuple[list[int], list[int]]] = {}
        trials: list[tuple[float, float, _Candidate]] = []
        tried = 0
        top = 0.0  # the best trial score so far
        for cand in options:
            if tried >= FORCED_TRIALS or (trials and cand.bound < top * (1 + 1e-9)):
                break
            if not self._within_limits(cand.type_index, 1):
                continue
            tried += 1
            trial = self._top_up(
                cand,
                seed,
                per_node,
                self._fill_order(cand, fillers_of[cand.groups], ranked),
                list(left),
                budget_of[cand.groups],
            )
            value = sum(self.values[k] * count for k, count in trial.items())
            trials.append((value / cand.price if cand.price > 0 else math.inf, value, cand))
            top = max(top, trials[-1][0])
        if not trials:  # every bin that holds the seed would breach a limit
            self.limit_blocked.add(seed)
            return []
        self.limit_blocked.discard(seed)
        # nearly as efficient and cheaper wins: fillers left over pack as well elsewhere
        good = max(t[0] for t in trials) * (1 - FORCED_SLACK)
        cand = min((t for t in trials if t[0] >= good), key=lambda t: (t[2].price, -t[1]))[2]
        while rounds > 1 and not self._within_limits(cand.type_index, rounds):
            rounds -= 1
        order = self._fill_order(cand, fillers_of[cand.groups], ranked)
        patterns: dict[tuple[tuple[int, int], ...], int] = {}
        for _ in range(rounds):
            take = min(per_node, left[seed])
            if take <= 0:
                break
            contents = self._top_up(cand, seed, take, order, left, budget_of[cand.groups])
            key = tuple(sorted(contents.items()))
            patterns[key] = patterns.get(key, 0) + 1
        return [PackedNode(cand.offer, contents, count) for contents, count in patterns.items()]

    def _fill_order(
        self, cand: _Candidate, fillers: list[int], ranked: dict[int, tuple[list[int], list[int]]]
    ) -> _FillOrder:
        """The fillers by cpu:memory skew against the bin's own shape, by value, and the smallest request
        per dimension: computed once per round and bin, shared by every node of the round. `ranked` memoises
        the parts that do not depend on the bin (by value, smallest) per set of groups."""
        found = ranked.get(cand.groups)
        if found is None:
            live = [k for k in fillers if self.remaining[k] > 0]
            smallest = [min((self.items[k].demand[r] for k in live), default=0) for r in range(self.dims)]
            found = (sorted(live, key=lambda k: -self.values[k]), smallest)
            ranked[cand.groups] = found
        by_value, smallest = found
        chosen = set(by_value)
        order, skew = self._skew_order(cand.type_index)
        return ([k for k in order if k in chosen], skew, by_value, smallest)

    def _holding(self, group: int, load: tuple[int, ...]) -> list[_Candidate]:
        """The bins that serve `group` and hold `load` (memoised: forced rounds repeat them)."""
        key = (group, load)
        found = self.holding_cache.get(key)
        if found is None:
            bit = 1 << group
            found = [
                c for c in self.candidates if c.groups & bit and _fits(load, self.types[c.type_index].room)
            ]
            self.holding_cache[key] = found
        return found

    def _top_up(
        self,
        cand: _Candidate,
        seed: int,
        seed_count: int,
        order: _FillOrder,
        left: list[int],
        budget: float,
    ) -> dict[int, int]:
        """Fill one node: `seed_count` seed pods, then fillers (worth at most about `budget`) steered towards
        the node's own cpu:memory shape, then whatever still fits by value. Consumes from `left`."""
        items = self.items
        room = self.types[cand.type_index].room
        residual = [r - d * seed_count for r, d in zip(room, items[seed].demand, strict=True)]
        taken = {seed: seed_count}
        left[seed] -= seed_count
        group_used: dict[int, int] = {}
        spent = [0.0]
        values = self.values

        def take_limit(k: int) -> int:
            limit = left[k]
            if limit <= 0:
                return 0
            room_left = budget - spent[0]
            if room_left <= 0:
                return 0
            limit = min(limit, math.ceil(room_left / values[k]))
            item = items[k]
            return _within_item_limits(item, limit, taken.get(k, 0), group_used, residual)

        def add(k: int, count: int) -> None:
            item = items[k]
            taken[k] = taken.get(k, 0) + count
            left[k] -= count
            spent[0] += values[k] * count
            for r, amount in enumerate(item.demand):
                residual[r] -= amount * count
            for group, _ in item.groups:
                group_used[group] = group_used.get(group, 0) + count

        by_skew, skew, by_value, smallest = order
        if not by_skew:
            return taken
        inv = [1.0 / r if r > 0 else 0.0 for r in room]
        low, high = 0, len(by_skew) - 1
        for _ in range(2 * len(by_skew) + 4):
            imbalance = residual[MEMORY] * inv[MEMORY] - residual[CPU] * inv[CPU]
            if abs(imbalance) < 1e-6:
                break
            if imbalance > 0:
                while high >= 0 and (skew[by_skew[high]] <= 0 or take_limit(by_skew[high]) <= 0):
                    high -= 1
                if high < 0:
                    break
                k = by_skew[high]
            else:
                while low < len(by_skew) and (skew[by_skew[low]] >= 0 or take_limit(by_skew[low]) <= 0):
                    low += 1
                if low >= len(by_skew):
                    break
                k = by_skew[low]
            add(k, max(1, min(take_limit(k), math.ceil(imbalance / skew[k]))))
        if spent[0] >= budget or not all(map(operator.ge, residual, smallest)):
            return taken
        free_cpu, free_memory = residual[CPU], residual[MEMORY]
        for k in by_value:
            demand = items[k].demand
            if left[k] <= 0 or demand[CPU] > free_cpu or demand[MEMORY] > free_memory:
                continue  # what take_limit would say, without the call: most fillers no longer fit
            limit = take_limit(k)
            if limit > 0:
                add(k, limit)
                if spent[0] >= budget or not all(map(operator.ge, residual, smallest)):
                    break
                free_cpu, free_memory = residual[CPU], residual[MEMORY]
        return taken

    def _capacity_value(self, type_index: int, groups: int) -> float:
        """An upper bound on the value a node of a type can hold: the best group's LP value of its room."""
        return max(table[type_index] for table in self._tables(groups))

    def _best_table(self, groups: int) -> list[float]:
        """Per type, the best of `groups`' values of its room (memoised per set of tables, shared by forks)."""
        tables = self._tables(groups)
        if len(tables) == 1:
            return tables[0]
        key = tuple(id(table) for table in tables)  # tables live in `table_cache` for the whole pack
        found = self.best_cache.get(key)
        if found is None:
            found = [max(values) for values in zip(*tables, strict=True)]
            self.best_cache[key] = found
        return found

    def _tables(self, groups: int) -> list[list[float]]:
        """For each group in `groups`, the LP value of every type's room at that group's current prices.

        Each table is computed once per set of prices and shared by forks (`table_cache`)."""
        bits = self.bits_of.get(groups)
        if bits is None:
            bits = tuple(g for g in range(len(self.group_masks)) if groups >> g & 1)
            self.bits_of[groups] = bits
        found = []
        for g in bits:
            table = self.type_values[g]
            if table is None:
                prices = self.prices[g]
                table = self.table_cache.get(prices)
                if table is None:
                    table = [0.0] * len(self.types)
                    for t in self.candidate_types:
                        table[t] = sum(map(operator.mul, prices, self.types[t].room))
                    self.table_cache[prices] = table
                self.type_values[g] = table
            found.append(table)
        return found

    def _shares(self, active: list[int], needed: int, seed: int) -> list[int]:
        big = 1 << 60
        shares = [big] * len(self.items)
        if needed > 1:
            for k in active:
                if k != seed:
                    shares[k] = -(-self.remaining[k] // needed)
        return shares

    def _within_limits(self, type_index: int, replicas: int) -> bool:
        if self.limit_room is None:
            return True
        usage = self.types[type_index].limit_usage
        return all(amount * replicas <= room for amount, room in zip(usage, self.limit_room, strict=True))

    # --- filling one node -----------------------------------------------------------------------------------
    def _skew_order(self, type_index: int) -> tuple[list[int], dict[int, float]]:
        """Every item by cpu:memory skew against a type's own shape (memoised per type; forks share it)."""
        found = self.skew_cache.get(type_index)
        if found is None:
            room = self.types[type_index].room
            inv = [1.0 / r if r > 0 else 0.0 for r in room]
            skew = {
                k: item.demand[MEMORY] * inv[MEMORY] - item.demand[CPU] * inv[CPU]
                for k, item in enumerate(self.items)
            }
            found = (sorted(skew, key=lambda k: skew[k]), skew)
            self.skew_cache[type_index] = found
        return found

    def _fill(
        self,
        cand: _Candidate,
        seed: int,
        active: list[int],
        shares: list[int],
        by_value: list[int],
        greedy_seed: bool = False,
    ) -> dict[int, int]:
        """One node of `cand` around the seed; `by_value` is `active` by decreasing value."""
        room = self.types[cand.type_index].room
        residual = list(room)
        taken: dict[int, int] = {}
        group_used: dict[int, int] = {}
        blocked: set[int] = set()
        items = self.items

        def take_limit(k: int) -> int:
            if k in blocked:
                return 0
            item = items[k]
            have = taken.get(k, 0)
            limit = min(self.remaining[k], shares[k]) - have
            return _within_item_limits(item, limit, have, group_used, residual)

        def add(k: int, count: int) -> None:
            item = items[k]
            taken[k] = taken.get(k, 0) + count
            for r, amount in enumerate(item.demand):
                residual[r] -= amount * count
            for group, _ in item.groups:
                group_used[group] = group_used.get(group, 0) + count
            if item.conflicts:
                blocked.update(item.conflicts)
            if self.conflicted_by[k]:
                blocked.update(self.conflicted_by[k])

        seed_take = min(take_limit(seed), self.remaining[seed])
        if seed_take <= 0:
            return {}
        if items[seed].together and seed_take < self.remaining[seed]:
            # all of it must share this node: only acceptable when this is the biggest node we can get
            pass
        if items[seed].cap or items[seed].groups or items[seed].together or greedy_seed:
            add(seed, seed_take)
        else:
            add(seed, 1)
        eligible = [
            k
            for k in active
            if cand.groups >> self.group_of[k] & 1 and k not in blocked and not items[k].together
        ]
        if not eligible:
            return taken
        # the slice and the balancing take only the seed's own group (its pods can go nowhere cheaper);
        # pods other groups accept only top up what room is left, by value
        everyone = eligible
        own = self.group_of[seed]
        eligible = [k for k in eligible if self.group_of[k] == own] or eligible
        if not greedy_seed:
            self._slice(eligible, residual, take_limit, add)
        inv = [1.0 / r if r > 0 else 0.0 for r in room]
        order, skew = self._skew_order(cand.type_index)
        chosen = set(eligible)
        by_skew = [k for k in order if k in chosen]
        low, high = 0, len(by_skew) - 1
        for _ in range(2 * len(by_skew) + 4):
            imbalance = residual[MEMORY] * inv[MEMORY] - residual[CPU] * inv[CPU]
            if abs(imbalance) < 1e-6:
                break
            if imbalance > 0:  # memory to spare: the most memory-heavy item that still fits
                while high >= 0 and (skew[by_skew[high]] <= 0 or take_limit(by_skew[high]) <= 0):
                    high -= 1
                if high < 0:
                    break
                k = by_skew[high]
            else:  # cpu to spare: the most cpu-heavy item that still fits
                while low < len(by_skew) and (skew[by_skew[low]] >= 0 or take_limit(by_skew[low]) <= 0):
                    low += 1
                if low >= len(by_skew):
                    break
                k = by_skew[low]
            limit = take_limit(k)
            add(k, max(1, min(limit, math.ceil(imbalance / skew[k]))))
        allowed = set(everyone)
        for k in by_value:
            if k not in allowed:
                continue
            limit = take_limit(k)
            if limit > 0:
                add(k, limit)
        return taken

    def _slice(
        self,
        eligible: list[int],
        residual: list[int],
        take_limit: Callable[[int], int],
        add: Callable[[int, int], None],
    ) -> None:
        """Start the node with proportional slices of what is left, split at the node's own cpu:memory shape.

        Items leaner in memory than the node (L) and richer (H) are each sliced at one rate, with the two
        rates chosen so that the slices fill the node's cpu and memory in the same proportion: every node
        of a shape takes the same mix, so no node strands the balancing pods the others will need."""
        room_c, room_m = residual[CPU] * self.slice, residual[MEMORY] * self.slice
        if room_c <= 0 or room_m <= 0:
            return
        lean: list[int] = []
        rich: list[int] = []
        lc = lm = hc = hm = 0.0
        for k in eligible:
            demand = self.items[k].demand
            n = self.remaining[k]
            if demand[MEMORY] * room_c <= demand[CPU] * room_m:
                lean.append(k)
                lc += demand[CPU] * n
                lm += demand[MEMORY] * n
            else:
                rich.append(k)
                hc += demand[CPU] * n
                hm += demand[MEMORY] * n
        det = lc * hm - lm * hc
        a = (room_c * hm - room_m * hc) / det if det else -1.0
        b = (room_m * lc - room_c * lm) / det if det else -1.0
        if a < 0 or b < 0:
            a = b = min(
                (
                    x
                    for x in (room_c / (lc + hc) if lc + hc else 0.0, room_m / (lm + hm) if lm + hm else 0.0)
                    if x > 0
                ),
                default=0.0,
            )
        dims = range(2, self.dims)
        for r in dims:  # pods and extended resources: scale both rates down if the slice would not fit
            need = sum(
                self.items[k].demand[r] * self.remaining[k] * (a if k in lean else b) for k in eligible
            )
            if need > residual[r] * self.slice > 0:
                a *= residual[r] * self.slice / need
                b *= residual[r] * self.slice / need
        for group, rate in ((lean, min(a, 1.0)), (rich, min(b, 1.0))):
            if rate <= 0:
                continue
            for k in group:
                want = int(self.remaining[k] * rate)
                if want > 0:
                    count = min(want, take_limit(k))
                    if count > 0:
                        add(k, count)

    # --- merging small nodes ---------------------------------------------------------------------------------
    def _merge(self, nodes: list[PackedNode]) -> list[PackedNode]:
        """Merge pairs of the cheapest nodes into one node when that costs no more (ties: fewer nodes)."""
        single: list[PackedNode] = []
        kept: list[PackedNode] = []
        for node in nodes:
            if node.replicas <= MERGE_EXPAND:
                single.extend(PackedNode(node.offer, node.contents, 1) for _ in range(node.replicas))
            else:
                kept.append(node)
        if len(single) < 2:
            return nodes
        merged_any = True
        while merged_any:
            merged_any = False
            single.sort(key=lambda n: self.offers[n.offer].price)
            window = single[:MERGE_WINDOW]
            for a in range(len(window)):
                chosen = [a]
                best: tuple[list[int], PackedNode] | None = None
                for b in range(a + 1, len(window)):
                    chosen.append(b)
                    merged = self._merged([window[i] for i in chosen])
                    if merged is not None:
                        best = (list(chosen), merged)
                    elif len(chosen) > 1 and not self._could_share([window[i] for i in chosen]):
                        chosen.pop()
                if best is not None:
                    drop = set(best[0])
                    single = [n for i, n in enumerate(single) if i not in drop] + [best[1]]
                    merged_any = True
                    break
        grouped: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
        for node in single:
            key = (node.offer, node.contents)
            grouped[key] = grouped.get(key, 0) + 1
        return kept + [PackedNode(offer, contents, count) for (offer, contents), count in grouped.items()]

    def _could_share(self, group: list[PackedNode]) -> bool:
        contents: dict[int, int] = {}
        for node in group:
            for k, count in node.contents:
                contents[k] = contents.get(k, 0) + count
        return _allowed_together(self.items, contents)

    def _merged(self, group: list[PackedNode]) -> PackedNode | None:
        """One node holding everything in `group`, if some offer costs no more than the group does."""
        contents: dict[int, int] = {}
        for node in group:
            for k, count in node.contents:
                contents[k] = contents.get(k, 0) + count
        if not _allowed_together(self.items, contents) or any(self.items[k].together for k in contents):
            return None
        mask = -1
        load = [0] * self.dims
        for k, count in contents.items():
            mask &= self.items[k].offers
            for r, amount in enumerate(self.items[k].demand):
                load[r] += amount * count
        budget = sum(self.offers[node.offer].price for node in group) + 1e-9
        freed = [0] * len(self.limit_room or ())
        if self.limit_room is not None:
            for node in group:
                for r, use in enumerate(self.types[self.offers[node.offer].type_index].limit_usage):
                    freed[r] += use
        needed = 0
        for k in contents:
            needed |= 1 << self.group_of[k]
        for cand in self.by_price:
            if cand.price > budget:
                return None
            if cand.groups & needed != needed:
                continue
            bin_type = self.types[cand.type_index]
            if not _fits(load, bin_type.room):
                continue
            if self.limit_room is not None:
                if any(
                    use > free + room
                    for use, free, room in zip(bin_type.limit_usage, freed, self.limit_room, strict=True)
                ):
                    continue
                for r, (use, free) in enumerate(zip(bin_type.limit_usage, freed, strict=True)):
                    self.limit_room[r] += free - use
            index = cand.offer
            return PackedNode(index, tuple(sorted(contents.items())), 1)
        return None

    # --- downsizing -----------------------------------------------------------------------------------------
    def _downsize(self, node: PackedNode) -> PackedNode:
        """The cheapest offer every item of the node accepts that still holds it (ties: the larger type)."""
        load = [0] * self.dims
        needed = 0
        for k, count in node.contents:
            needed |= 1 << self.group_of[k]
            for r, amount in enumerate(self.items[k].demand):
                load[r] += amount * count
        current = self.offers[node.offer]
        usage = self.types[current.type_index].limit_usage
        for cand in self.by_price:
            if cand.price > current.price + 1e-12:
                break
            if cand.groups & needed != needed:
                continue
            bin_type = self.types[cand.type_index]
            if _fits(load, bin_type.room) and all(
                a <= b for a, b in zip(bin_type.limit_usage, usage, strict=True)
            ):
                if cand.price < current.price - 1e-12 or cand.offer != node.offer:
                    return PackedNode(cand.offer, node.contents, node.replicas)
                return node
        return node


def _within_item_limits(
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


def _allowed_together(items: Sequence[Item], contents: dict[int, int]) -> bool:
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


def pack(
    items: Sequence[Item],
    types: Sequence[BinType],
    offers: Sequence[Offer],
    limit_room: Sequence[int] | None = None,
) -> PackResult:
    """Pack `items` into nodes built from `offers` (see the module docstring)."""
    if not items:
        return PackResult((), (), frozenset(), tuple(limit_room) if limit_room is not None else None)
    merged, members = _merge_identical(items)
    first = _Packer(merged, types, offers, limit_room, SLICES[0])
    bases = [first]
    everything = list(range(len(merged)))
    needed = first._nodes_needed(everything) if first.capped else 0
    seed_groups = {first.group_of[k]: k for k in first.capped}  # whether an item is dear depends on the group
    if needed and any(first._dear(k, everything) is not None for k in seed_groups.values()):
        # much dearer uncapped pods (on-demand only, say): also try opening their nodes first, so the
        # capped pods ride in their spare room instead of on forced nodes of their own
        dear = first.fork(SLICES[0])
        dear.dear_first = True
        bases.append(dear)
    elif 0 < needed <= NODE_BY_NODE_UP_TO:
        # few forced nodes: also try choosing each of them like any other node (node by node)
        bases.append(first.fork(SLICES[0], top_up=False))
    best: PackResult | None = None
    best_key: tuple[int, float, int] | None = None
    for base in bases:
        forced = base.grow(forced_only=True)  # the same for every slice share: computed once
        # the node-by-node alternative is about the forced nodes, not the slice: one share is enough
        for share in SLICES if base is first else SLICES[:1]:
            packer = base.fork(share)
            result = packer.finish(forced + packer.grow())
            cost = sum(offers[node.offer].price * node.replicas for node in result.nodes)
            key = (sum(result.leftover), cost, sum(node.replicas for node in result.nodes))
            if best_key is None or key < best_key:
                best, best_key = result, key
    assert best is not None
    return _split(best, items, members)


def _merge_identical(items: Sequence[Item]) -> tuple[list[Item], list[list[int]]]:
    """Items that are interchangeable for packing (same requests, offers and shared caps, no per-item cap
    or conflict) become one item: pod classes that differ only in labels nobody selects pack as one."""
    referenced = {j for item in items for j in item.conflicts}
    merged: list[Item] = []
    members: list[list[int]] = []
    slot: dict[tuple[object, ...], int] = {}
    index_of: list[int] = []
    for k, item in enumerate(items):
        key: tuple[object, ...] | None = None
        if not item.cap and not item.conflicts and not item.together and k not in referenced:
            key = (item.demand, item.offers, item.groups)
        position = slot.get(key) if key is not None else None
        if position is None:
            position = len(merged)
            merged.append(item)
            members.append([k])
            if key is not None:
                slot[key] = position
        else:
            merged[position] = replace(merged[position], count=merged[position].count + item.count)
            members[position].append(k)
        index_of.append(position)
    if len(merged) > len(items) * MERGE_WORTH:  # merging barely shrinks the work: keep the classes apart
        return list(items), [[k] for k in range(len(items))]
    merged = [
        replace(item, conflicts=frozenset(index_of[j] for j in item.conflicts)) if item.conflicts else item
        for item in merged
    ]
    return merged, members


def _split(result: PackResult, items: Sequence[Item], members: list[list[int]]) -> PackResult:
    """Map a result over merged items back to the original items (members are used in order)."""
    if all(len(group) == 1 for group in members) and len(members) == len(items):
        return result
    queues: list[list[list[int]]] = [[[k, items[k].count] for k in group] for group in members]
    nodes: list[PackedNode] = []
    for node in result.nodes:
        replicas = node.replicas
        while replicas > 0:
            run = replicas
            for m, count in node.contents:
                head = queues[m][0] if queues[m] else None
                run = min(run, head[1] // count if head is not None else 0)
            if run > 0:
                contents = []
                for m, count in node.contents:
                    head = queues[m][0]
                    contents.append((head[0], count))
                    head[1] -= count * run
                    if head[1] == 0:
                        queues[m].pop(0)
                nodes.append(PackedNode(node.offer, tuple(sorted(contents)), run))
                replicas -= run
                continue
            taken: dict[int, int] = {}
            for m, count in node.contents:
                need = count
                while need > 0 and queues[m]:
                    head = queues[m][0]
                    take = min(need, head[1])
                    taken[head[0]] = taken.get(head[0], 0) + take
                    head[1] -= take
                    need -= take
                    if head[1] == 0:
                        queues[m].pop(0)
            nodes.append(PackedNode(node.offer, tuple(sorted(taken.items())), 1))
            replicas -= 1
    leftover = [0] * len(items)
    for queue in queues:
        for k, count in queue:
            leftover[k] = count
    blocked = frozenset(k for m in result.limit_blocked for k in members[m])
    return PackResult(tuple(nodes), tuple(leftover), blocked, result.limit_room)
