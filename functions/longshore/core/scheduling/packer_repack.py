"""Step 6: re-pack the most wasteful nodes (a bounded exact search over whole-node patterns).

The greedy fills one node at a time, so it can leave a tail of half-full nodes where a different mix over
the last few nodes saves one (12 nodes of three 4-vCPU pods after nodes of five 2-vCPU and one 4-vCPU pod,
where one 2-vCPU pod beside every three 4-vCPU ones needs one node fewer), or open nodes of one type for the
pods of one class where their spare room could have taken the pods of another.

The step, on the plan the portfolio chose:

1. *Choose a window.* Every node (replicas counted one by one) gets its *waste*: its price times the share of
   its dominant resource left unused. The most wasteful nodes join the window while the number of states of
   the programme stays within `TUNING.repack_states` and the window within `TUNING.repack_nodes` nodes.
   The states are the product over the window's *positions* of (pods + 1), where interchangeable items
   (same requests and offers, no cap, shared cap, conflict or `together`: `_twin_key`) share one position,
   since their pods can swap places in any plan; the programme's nodes are split back over them in item
   order (`_split_twins`). Nodes holding `together` pods are left out. A window whose waste is below
   `TUNING.repack_min_waste` of the plan's cost is not worth searching (a big plan's tail): the step stops
   there, so big batches pay only for ranking their nodes.
2. *Patterns.* For every bin (instance type, set of groups its offer serves; `PackerState.by_price`, cheapest
   first) cheaper than the window, every *maximal* content over the window's positions is listed: counts
   within the window's pods, the items' caps and shared group caps, no two conflicting items, and no
   further pod of any item fits. Each is priced at the cheapest bin that holds it; a pattern that a no
   dearer one holds is dropped. The listing skips contents that cannot end maximal: the last position
   always takes all that fits, and a position that takes fewer than fit (with no later position sharing a
   cap or a conflict with it) is cut when the later positions, even at most, cannot use up the room its
   next pod needs. More than `TUNING.repack_patterns` patterns: the window is retried smaller, as below.
3. *Programme* (`packer_programme`). `f(s)` is the least cost of nodes that hold the pod counts `s`, found
   by a depth-first search over the patterns holding the first position with pods left, bounded by the
   window's pattern LP (`packer_bounds.PatternBound`, solved at each state searched, its duals ordering the
   patterns by reduced cost) and by linear bounds; it keeps the best plan found, so a search that runs out
   of work still returns its best plan when that is cheaper than the window. Positions are ordered by how
   few patterns hold them (fewer branches first).
4. *Keep if cheaper.* The programme's nodes are re-priced with the cheapest offer that holds them; they
   replace the window only when they cost less and count no more against any pool limit in any dimension
   (so the limits still hold). Up to `TUNING.repack_rounds` windows are tried, each on the improved plan.

Work bound: every step of the pattern listing, every pattern tried and every LP solve costs work units
(`packer_programme.Work`); a window may spend `TUNING.repack_window_work`, all windows of one pack
`TUNING.repack_work`. A window that runs out before any cheaper plan is found, or has too many patterns, is
dropped unchanged and retried with a quarter of the states (fewer nodes) while the pack's budget lasts.

Every invariant of the plan is kept: the same pods are placed (the window's counts are covered exactly),
per-node caps, group caps and conflicts hold by construction of the patterns, and each node's offer serves
the groups of every pod on it and holds their requests.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator

from longshore.core.scheduling.packer_model import PackedNode, PackResult, fits
from longshore.core.scheduling.packer_programme import OutOfWork, Work, programme
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING


class TooManyPatterns(Exception):
    """A window has more than `TUNING.repack_patterns` maximal patterns: retried smaller."""


def repack(packer: PackerState, result: PackResult) -> PackResult:
    """`result` with its most wasteful nodes re-packed exactly where that is cheaper (module docstring)."""
    nodes = list(result.nodes)
    if not nodes:
        return result
    work = Work(TUNING.repack_work)
    improved = False
    tried: set[tuple[tuple[int, int], ...]] = set()
    for _ in range(TUNING.repack_rounds):
        found = _improve_once(packer, nodes, work, tried)
        if found is None:
            break
        nodes = found
        improved = True
    if not improved:
        return result
    return PackResult(tuple(nodes), result.leftover, result.limit_blocked, result.limit_room)


def _load(packer: PackerState, contents: tuple[tuple[int, int], ...]) -> list[int]:
    load = [0] * packer.dims
    for k, count in contents:
        for r, amount in enumerate(packer.items[k].demand):
            load[r] += amount * count
    return load


def _waste(packer: PackerState, node: PackedNode) -> float:
    offer = packer.offers[node.offer]
    room = packer.types[offer.type_index].room
    load = _load(packer, node.contents)
    used = max((a / b for a, b in zip(load, room, strict=True) if b > 0), default=1.0)
    return offer.price * max(0.0, 1.0 - used)


def _window(
    packer: PackerState, ranked: list[tuple[float, int]], nodes: list[PackedNode], states: int
) -> tuple[list[tuple[int, int]], dict[int, int]]:
    """The window: (node index, replicas taken) and the pods per item it holds (step 1); `ranked` is
    (waste, node index) by decreasing waste."""
    chosen: dict[int, int] = {}
    counts: dict[int, int] = {}
    taken = 0
    for waste, i in ranked:
        node = nodes[i]
        if waste <= 0 or taken >= TUNING.repack_nodes:
            break
        for _ in range(node.replicas):
            if taken >= TUNING.repack_nodes:
                break
            trial = dict(counts)
            for k, count in node.contents:
                trial[k] = trial.get(k, 0) + count
            if _states(packer, trial) > states:
                break
            counts = trial
            chosen[i] = chosen.get(i, 0) + 1
            taken += 1
    return sorted(chosen.items()), counts


def _improve_once(
    packer: PackerState,
    nodes: list[PackedNode],
    work: Work,
    tried: set[tuple[tuple[int, int], ...]],
) -> list[PackedNode] | None:
    """One window re-packed, or None; a window that runs out of work is retried with a quarter of the
    states (fewer nodes) while the pack's budget lasts."""
    ranked = sorted(
        (-_waste(packer, node), i)
        for i, node in enumerate(nodes)
        if not any(packer.items[k].together for k, _ in node.contents)
    )
    ranked = [(-negative, i) for negative, i in ranked]
    states = TUNING.repack_states
    plan_cost = sum(packer.offers[node.offer].price * node.replicas for node in nodes)
    while states >= 4 and work.total > 0:
        window, counts = _window(packer, ranked, nodes, states)
        if sum(n for _, n in window) < 2:
            return None
        if sum(_waste(packer, nodes[i]) * n for i, n in window) < TUNING.repack_min_waste * plan_cost:
            return None  # too little to win: a big plan's tail
        signature = tuple(sorted(counts.items()))
        if signature in tried:
            return None
        tried.add(signature)
        work.open_window()
        try:
            return _repack_window(packer, nodes, window, counts, work)
        except (OutOfWork, TooManyPatterns):
            states //= 4
    return None


def _repack_window(
    packer: PackerState,
    nodes: list[PackedNode],
    window: list[tuple[int, int]],
    counts: dict[int, int],
    work: Work,
) -> list[PackedNode] | None:
    """`nodes` with the window's nodes replaced by the programme's, if cheaper (steps 2-4)."""
    twins = _twins(packer, counts)  # interchangeable items share one position of the state
    merged = {members[0]: sum(counts[k] for k in members) for members in twins.values()}
    order = sorted(merged)
    old_cost = sum(packer.offers[nodes[i].offer].price * n for i, n in window)
    listed = _patterns(packer, order, [merged[k] for k in order], old_cost, work)
    # the programme branches on the first item with pods left: the one in the fewest patterns first
    among = [sum(1 for pattern, _ in listed if pattern[i]) for i in range(len(order))]
    rank = sorted(range(len(order)), key=lambda i: (among[i], order[i]))
    order = [order[i] for i in rank]
    listed = [(tuple(pattern[i] for i in rank), price) for pattern, price in listed]
    planned = programme(packer, order, listed, tuple(merged[k] for k in order), old_cost, work)
    if planned is None:
        return None
    planned = _split_twins(planned, twins, counts)
    fresh = [_cheapest(packer, contents) for contents in planned]
    if any(node is None for node in fresh):
        return None
    new_nodes = [node for node in fresh if node is not None]
    new_cost = sum(packer.offers[node.offer].price for node in new_nodes)
    if new_cost >= old_cost * (1 - 1e-9) - 1e-12:
        return None
    if packer.limit_room is not None:
        before = [0] * len(packer.limit_room)
        after = [0] * len(packer.limit_room)
        for i, n in window:
            for r, use in enumerate(packer.types[packer.offers[nodes[i].offer].type_index].limit_usage):
                before[r] += use * n
        for node in new_nodes:
            for r, use in enumerate(packer.types[packer.offers[node.offer].type_index].limit_usage):
                after[r] += use
        if not all(map(operator.le, after, before)):
            return None
    kept = list(nodes)
    for i, n in window:
        kept[i] = PackedNode(nodes[i].offer, nodes[i].contents, nodes[i].replicas - n)
    grouped: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
    for node in new_nodes:
        key = (node.offer, node.contents)
        grouped[key] = grouped.get(key, 0) + 1
    return [node for node in kept if node.replicas > 0] + [
        PackedNode(offer, contents, count) for (offer, contents), count in grouped.items()
    ]


def _twin_key(packer: PackerState, k: int) -> tuple[object, ...]:
    """Items with the same key are interchangeable in a window: same requests, same offers, no cap, shared
    cap, conflict or `together` (their pods can swap places in any plan)."""
    item = packer.items[k]
    if item.cap or item.groups or item.conflicts or item.together or packer.conflicted_by[k]:
        return ("own", k)
    return ("twin", item.demand, packer.group_of[k])


def _twins(packer: PackerState, counts: dict[int, int]) -> dict[tuple[object, ...], list[int]]:
    """The window's items by `_twin_key`, each list in item order (its first item stands for it)."""
    twins: dict[tuple[object, ...], list[int]] = {}
    for k in sorted(counts):
        twins.setdefault(_twin_key(packer, k), []).append(k)
    return twins


def _states(packer: PackerState, counts: dict[int, int]) -> int:
    """The programme's states for a window of `counts`: the product over its positions (interchangeable
    items together, `_twins`) of pods + 1."""
    return math.prod(sum(counts[k] for k in members) + 1 for members in _twins(packer, counts).values())


def _split_twins(
    planned: list[tuple[tuple[int, int], ...]],
    twins: dict[tuple[object, ...], list[int]],
    counts: dict[int, int],
) -> list[tuple[tuple[int, int], ...]]:
    """The programme's nodes (over the first item of each set of twins) over the window's own items: each
    node's pods of a set go to its items in order, each up to the pods it has in the window."""
    members = {group[0]: group for group in twins.values()}
    left = dict(counts)
    split = []
    for contents in planned:
        node: list[tuple[int, int]] = []
        for k, n in contents:
            for member in members[k]:
                take = min(n, left[member])
                if take:
                    node.append((member, take))
                    left[member] -= take
                    n -= take
        split.append(tuple(sorted(node)))
    return split


def _patterns(
    packer: PackerState, order: list[int], counts: list[int], ceiling: float, work: Work
) -> list[tuple[tuple[int, ...], float]]:
    """Every maximal pattern over the window's items with its cheapest price (step 2), on the bins cheaper
    than the window (`ceiling`); raises `TooManyPatterns` past the limit."""
    items = packer.items
    window_groups = 0
    for k in order:
        window_groups |= 1 << packer.group_of[k]
    found: dict[tuple[int, ...], float] = {}
    seen: set[tuple[int, int]] = set()
    for cand in packer.by_price:
        if cand.price >= ceiling:
            break
        served = cand.groups & window_groups
        if not served or (cand.type_index, served) in seen:
            continue
        seen.add((cand.type_index, served))
        room = packer.types[cand.type_index].room
        eligible = [
            i for i, k in enumerate(order) if served >> packer.group_of[k] & 1 and fits(items[k].demand, room)
        ]
        if not eligible:
            continue
        for pattern in _maximal(packer, order, counts, eligible, room, work):
            if pattern not in found:
                found[pattern] = cand.price
                if len(found) > TUNING.repack_patterns:
                    raise TooManyPatterns
    listed = sorted(found.items(), key=lambda row: (row[1], [-n for n in row[0]]))
    kept: list[tuple[tuple[int, ...], float]] = []
    for pattern, price in listed:  # cheapest first: drop a pattern a no dearer kept one holds
        if len(listed) <= TUNING.repack_dominance and any(
            all(map(operator.ge, other, pattern)) for other, _ in kept
        ):
            continue
        kept.append((pattern, price))
    return kept


def _maximal(
    packer: PackerState,
    order: list[int],
    counts: list[int],
    eligible: list[int],
    room: tuple[int, ...],
    work: Work,
) -> Iterator[tuple[int, ...]]:
    """Every maximal content of a bin of `room` over the `eligible` positions of `order`."""
    items = packer.items
    taken = [0] * len(order)
    group_used: dict[int, int] = {}
    present: set[int] = set()

    def most(i: int, residual: list[int]) -> int:
        item = items[order[i]]
        limit = counts[i] - taken[i]
        if item.cap:
            limit = min(limit, item.cap - taken[i])
        for group, cap in item.groups:
            limit = min(limit, cap - group_used.get(group, 0))
        if limit <= 0:
            return 0
        if item.conflicts & present or packer.conflicted_by[order[i]] & present:
            return 0
        for amount, free in zip(item.demand, residual, strict=True):
            if amount > 0:
                limit = min(limit, free // amount)
        return max(limit, 0)

    def related(i: int, j: int) -> bool:
        a, b = items[order[i]], items[order[j]]
        return bool(
            order[j] in a.conflicts
            or order[i] in b.conflicts
            or {g for g, _ in a.groups} & {g for g, _ in b.groups}
        )

    # whether only room (no shared cap, no conflict) can stop one more pod of a position's item later on
    alone = [not any(related(i, j) for j in eligible[p + 1 :]) for p, i in enumerate(eligible)]

    def blockable(position: int, residual: list[int], i: int) -> bool:
        """Whether the positions from `position` on can take enough room that no further pod of `i` fits
        (an upper bound on what they take, per dimension, against `i`'s slack)."""
        slack = [f - d for f, d in zip(residual, items[order[i]].demand, strict=True)]
        if min(slack) < 0:
            return True
        reach = [0] * len(slack)
        for j in eligible[position:]:
            item = items[order[j]]
            n = counts[j] - taken[j]
            for amount, free in zip(item.demand, residual, strict=True):
                if amount > 0:
                    n = min(n, free // amount)
            if n > 0:
                for r, amount in enumerate(item.demand):
                    reach[r] += n * amount
        return any(map(operator.gt, reach, slack))

    def walk(position: int, residual: list[int]) -> Iterator[tuple[int, ...]]:
        work.spend()
        if position == len(eligible):
            if any(most(i, residual) > 0 for i in eligible):
                return  # another pod still fits: not maximal
            if any(taken):
                yield tuple(taken)
            return
        i = eligible[position]
        k = order[i]
        item = items[k]
        top = most(i, residual)
        # at the last position fewer than `top` leaves room for one more of it: never maximal
        for take in range(top, top - 1 if position == len(eligible) - 1 else -1, -1):
            if take < top and alone[position]:
                after = [f - d * take for f, d in zip(residual, item.demand, strict=True)]
                if not blockable(position + 1, after, i):
                    continue  # one more pod of it would still fit at the end: not maximal
            if take:
                taken[i] = take
                for group, _ in item.groups:
                    group_used[group] = group_used.get(group, 0) + take
                present.add(k)
                yield from walk(
                    position + 1, [f - d * take for f, d in zip(residual, item.demand, strict=True)]
                )
                present.discard(k)
                for group, _ in item.groups:
                    group_used[group] -= take
                taken[i] = 0
            else:
                yield from walk(position + 1, residual)

    yield from walk(0, list(room))


def _cheapest(packer: PackerState, contents: tuple[tuple[int, int], ...]) -> PackedNode | None:
    """A node of the cheapest offer that serves every item of `contents` and holds them."""
    load = _load(packer, contents)
    needed = 0
    for k, _ in contents:
        needed |= 1 << packer.group_of[k]
    for cand in packer.by_price:
        if cand.groups & needed == needed and fits(load, packer.types[cand.type_index].room):
            return PackedNode(cand.offer, contents, 1)
    return None
