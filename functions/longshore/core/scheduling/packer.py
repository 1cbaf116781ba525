"""Cost-driven bin packing of pod classes into priced nodes: the numeric heart of the scheduler.

Theory of operation. The input is already reduced to numbers: *items* (pod classes: a count, a request
vector, a bitmask of the offers they may use, per-node caps, conflicts) and *offers* (instance type × zone ×
capacity type, with a price and the room a node of that type leaves for pods after DaemonSets). The output
is a list of node patterns, each replicated some number of times.

1. *Compatibility groups.* Items with the same offer mask form a group; for every instance type and every
   set of groups an offer of it serves, only the cheapest such offer matters (the "effective bins" of the
   LP recipe in reference/performance.md §2.2; dominated ones are dropped).
2. *Values.* Per group, the fluid LP's dual (`duals.resource_prices`) prices cpu, memory and pod slots;
   an item's value is its fluid cost `pi . d`. "Value packed ÷ price" of a node is then its efficiency
   against the LP optimum (1.0 = as good as the bound), which makes nodes of different types, zones and
   capacity types comparable, and makes cost, not node count, the objective.
3. *Bin-centric greedy with bulk replication.* Repeatedly pick a seed item (capped items first: they fix
   how many nodes are needed; then the largest), evaluate candidate bins that can hold it in decreasing
   order of an upper bound on their efficiency (branch and bound: stop when the bound cannot beat the best
   found), fill each candidate with a balanced greedy that steers the node's residual cpu:memory shape back
   towards the node's own shape (so memory-heavy pods pair with cpu-heavy ones instead of stranding a
   resource), and keep the best. The winning pattern is replicated as many times as the remaining counts
   allow, so the work grows with patterns × candidates, not with pods.
   While capped items remain (hostname anti-affinity or spread), every other item may put at most its fair
   share (remaining ÷ nodes still needed) on a node, so filler pods spread over the nodes that must exist
   anyway instead of crowding the first ones.
4. *Downsizing.* Each pattern is finally re-priced with the cheapest offer (any type, zone and capacity type
   all its items accept) that still holds it; ties keep the larger type (fewer nodes is never worse).

Limits (pool `limits`) are checked per replica with each type's limit usage; a candidate that would breach
them is skipped. Everything is integers except prices and values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longshore.core.scheduling.duals import resource_prices

CPU, MEMORY = 0, 1  # the first two packing dimensions are always cpu and memory
SLICES = (0.95, 0.85, 0.0)  # the portfolio of slice shares tried; the cheapest plan wins
REPRICE = 0.9
ITEM_VISITS = 20000  # fills per node decision are capped at ITEM_VISITS / items (best bounds first)
MIN_EVALUATIONS = 16
MERGE_EXPAND = 8  # patterns with at most this many replicas take part in merging, node by node
MERGE_WINDOW = 12  # merging looks at this many of the cheapest nodes


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


def _fits(demand: Sequence[int], room: Sequence[int]) -> bool:
    return all(d <= r for d, r in zip(demand, room, strict=True))


class _Packer:
    def __init__(
        self,
        items: Sequence[Item],
        types: Sequence[BinType],
        offers: Sequence[Offer],
        limit_room: Sequence[int] | None,
        slice_share: float = 0.95,
        shared: _Packer | None = None,
    ) -> None:
        self.slice = slice_share
        self.items = items
        self.types = types
        self.offers = offers
        self.limit_room = list(limit_room) if limit_room is not None else None
        self.remaining = [item.count for item in items]
        self.dims = len(types[0].room) if types else len(items[0].demand) if items else 0
        self.group_of: list[int]
        self.group_masks: list[int]
        self.candidates: list[_Candidate]
        self.by_price: list[_Candidate]
        self.initial_prices: list[tuple[float, ...]]
        if shared is not None:  # the portfolio's runs share the setup that does not depend on the run
            self.group_of, self.group_masks = shared.group_of, shared.group_masks
            self.candidates, self.by_price = shared.candidates, shared.by_price
            self.initial_prices = shared.initial_prices
        else:
            masks: dict[int, int] = {}
            self.group_of = [masks.setdefault(item.offers, len(masks)) for item in items]
            self.group_masks = list(masks)
            self.candidates = self._effective_bins()
            self.by_price = sorted(
                self.candidates, key=lambda c: (c.price, -sum(types[c.type_index].room), c.offer)
            )
            self.initial_prices = self._group_prices()
        self.prices = self.initial_prices
        self.values = self._item_values()
        self.room_values: dict[tuple[tuple[int, ...], int], float] = {}
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
        for index, offer in enumerate(self.offers):
            bit = 1 << index
            groups = 0
            for g, mask in enumerate(self.group_masks):
                if mask & bit:
                    groups |= 1 << g
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
        for cand in ordered:
            room = self.types[cand.type_index].room
            usage = self.types[cand.type_index].limit_usage
            beaten = False
            for other in kept:
                if other.groups | cand.groups != other.groups:
                    continue
                other_type = self.types[other.type_index]
                if all(a >= b for a, b in zip(other_type.room, room, strict=True)) and all(
                    a <= b for a, b in zip(other_type.limit_usage, usage, strict=True)
                ):
                    beaten = True
                    break
            if not beaten:
                kept.append(cand)
        return kept

    def _group_prices(self) -> list[tuple[float, ...]]:
        """Per compatibility group, the fluid LP's price of each resource for that group's demand."""
        found = []
        for g, mask in enumerate(self.group_masks):
            members = [k for k in range(len(self.items)) if self.group_of[k] == g]
            demand = [0.0] * self.dims
            for k in members:
                for r, amount in enumerate(self.items[k].demand):
                    demand[r] += amount * self.remaining[k]
            cheapest: dict[int, float] = {}
            for index, offer in enumerate(self.offers):
                if mask >> index & 1:
                    price = cheapest.get(offer.type_index)
                    if price is None or offer.price < price:
                        cheapest[offer.type_index] = offer.price
            ids = list(cheapest)
            found.append(
                resource_prices(demand, [self.types[t].room for t in ids], [cheapest[t] for t in ids])
            )
        return found

    def _refresh_values(self) -> None:
        """Re-price resources when the remaining demand has changed enough: the negative feedback that
        keeps the mix of node shapes close to the LP's as balancing pods run out."""
        left = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))
        if left < self.priced_at * REPRICE and left > 0:
            self.prices = self._group_prices()
            self.values = self._item_values()
            self.room_values.clear()
            self.priced_at = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))

    def _item_values(self) -> list[float]:
        values = []
        for k, item in enumerate(self.items):
            prices = self.prices[self.group_of[k]]
            values.append(max(1e-9, sum(p * d for p, d in zip(prices, item.demand, strict=True))))
        return values

    # --- main loop ----------------------------------------------------------------------------------------
    def run(self) -> PackResult:
        nodes: list[PackedNode] = []
        while True:
            active = [k for k in range(len(self.items)) if self.remaining[k] > 0 and k not in self.dead]
            if not active:
                break
            needed = self._nodes_needed(active)
            seed = self._seed(active, needed)
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
        nodes = self._merge([self._downsize(node) for node in nodes])
        left = tuple(self.limit_room) if self.limit_room is not None else None
        return PackResult(tuple(nodes), tuple(self.remaining), frozenset(self.limit_blocked), left)

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
        seed_bit = 1 << self.group_of[seed]
        seed_demand = self.items[seed].demand
        shares = self._shares(active, needed, seed)
        available: dict[int, float] = {}
        options: list[_Candidate] = []
        for cand in self.candidates:
            if not cand.groups & seed_bit:
                continue
            room = self.types[cand.type_index].room
            if not _fits(seed_demand, room):
                continue
            if not self._within_limits(cand.type_index, 1):
                self.limit_blocked.add(seed)
                continue
            if cand.groups not in available:
                available[cand.groups] = sum(
                    min(self.remaining[k], shares[k]) * self.values[k]
                    for k in active
                    if cand.groups >> self.group_of[k] & 1
                )
            capacity_value = self._capacity_value(room, cand.groups)
            cand.bound = (
                min(capacity_value, available[cand.groups]) / cand.price if cand.price > 0 else math.inf
            )
            options.append(cand)
        if not options:
            return []
        self.limit_blocked.discard(seed)
        options.sort(key=lambda c: (-c.bound, c.price))
        budget = max(MIN_EVALUATIONS, ITEM_VISITS // max(1, len(active)))
        best: tuple[float, float, _Candidate, dict[int, int]] | None = None
        for evaluated, cand in enumerate(options):
            if best is not None and (cand.bound < best[0] * (1 + 1e-9) or evaluated >= budget):
                break
            fill = self._fill(cand, seed, active, shares)
            if not fill:
                continue
            value = sum(self.values[k] * count for k, count in fill.items())
            score = value / cand.price if cand.price > 0 else math.inf
            if (
                best is None
                or score > best[0] * (1 + 1e-9)
                or (score >= best[0] * (1 - 1e-9) and value > best[1])
            ):
                best = (score, value, cand, fill)
        if best is None:
            return []
        _, _, cand, fill = best
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

    def _capacity_value(self, room: tuple[int, ...], groups: int) -> float:
        """An upper bound on the value a node with `room` can hold: the best group's LP value of the room."""
        key = (room, groups)
        found = self.room_values.get(key)
        if found is None:
            found = max(
                (
                    sum(p * r for p, r in zip(self.prices[g], room, strict=True))
                    for g in range(len(self.group_masks))
                    if groups >> g & 1
                ),
                default=0.0,
            )
            self.room_values[key] = found
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
    def _fill(self, cand: _Candidate, seed: int, active: list[int], shares: list[int]) -> dict[int, int]:
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
            if item.cap:
                limit = min(limit, item.cap - have)
            for group, cap in item.groups:
                limit = min(limit, cap - group_used.get(group, 0))
            if limit <= 0:
                return 0
            for amount, free in zip(item.demand, residual, strict=True):
                if amount > 0:
                    limit = min(limit, free // amount)
                    if limit <= 0:
                        return 0
            return limit

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
        if items[seed].cap or items[seed].groups or items[seed].together:
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
        self._slice(eligible, residual, take_limit, add)
        inv = [1.0 / r if r > 0 else 0.0 for r in room]
        skew = {k: items[k].demand[MEMORY] * inv[MEMORY] - items[k].demand[CPU] * inv[CPU] for k in eligible}
        by_skew = sorted(eligible, key=lambda k: skew[k])
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
        for k in sorted(eligible, key=lambda j: -self.values[j]):
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
    best: PackResult | None = None
    best_cost = math.inf
    first: _Packer | None = None
    for share in SLICES:
        packer = _Packer(items, types, offers, limit_room, share, first)
        first = first or packer
        result = packer.run()
        placed = sum(count for count in result.leftover)
        cost = sum(offers[node.offer].price * node.replicas for node in result.nodes)
        key = (placed, cost, sum(node.replicas for node in result.nodes))
        if best is None or key < (sum(best.leftover), best_cost, sum(n.replicas for n in best.nodes)):
            best, best_cost = result, cost
    assert best is not None
    return best
