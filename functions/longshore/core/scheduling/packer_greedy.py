"""Step 4: bin-centric greedy: a seed, candidate bins by an efficiency bound, slice/balance/top-up fills."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from longshore.core.scheduling.packer_bins import best_table, holding
from longshore.core.scheduling.packer_model import (
    CPU,
    MEMORY,
    Candidate,
    PackedNode,
    within_item_limits,
)
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING


def pick_seed(packer: PackerState, active: list[int], needed: int) -> int:
    if needed:
        capped = [k for k in active if packer.items[k].cap or packer.items[k].groups]
        if capped:
            loads: dict[int, int] = {}
            for k in capped:
                for group, _ in packer.items[k].groups:
                    loads[group] = loads.get(group, 0) + packer.remaining[k]

            def pressure(k: int) -> int:
                item = packer.items[k]
                value = -(-packer.remaining[k] // item.cap) if item.cap else 0
                for group, cap in item.groups:
                    value = max(value, -(-loads[group] // cap))
                return value

            return max(capped, key=lambda k: (pressure(k), packer.values[k], -k))
    together = [k for k in active if packer.items[k].together]
    if together:
        return together[0]
    return max(active, key=lambda k: (packer.values[k], packer.remaining[k], -k))


def best_node(packer: PackerState, seed: int, active: list[int], needed: int) -> list[PackedNode]:
    shares = _shares(packer, active, needed, seed)
    options = _bounded_options(packer, seed, active, shares)
    if not options:
        return []
    by_value = sorted(active, key=lambda j: -packer.values[j])
    budget = max(TUNING.min_evaluations, TUNING.item_visits // max(1, len(active)))
    best: tuple[float, float, Candidate, dict[int, int]] | None = None
    scored: list[tuple[float, int, Candidate]] = []
    slack = packer.seed_slack

    def consider(cand: Candidate, fill: dict[int, int]) -> None:
        nonlocal best
        value = sum(packer.values[k] * count for k, count in fill.items())
        score = value / cand.price if cand.price > 0 else math.inf
        if best is None or _better(score, value, fill.get(seed, 0), best, seed, slack):
            best = (score, value, cand, fill)
        scored.append((score, len(scored), cand))

    for evaluated, cand in enumerate(options):
        if best is not None and (cand.bound < best[0] * (1 + 1e-9) or evaluated >= budget):
            break
        fill = _fill_node(packer, cand, seed, active, shares, by_value)
        if fill:
            consider(cand, fill)
    if best is None:
        return []
    if packer.slice > 0 and TUNING.greedy_seed_tries:
        # the slice mixes what is left into every node, which can cost a whole pod on big nodes
        # (6 + 1 pods of two shapes where 7 of the seed fit): the best bins also try the seed alone first
        scored.sort(key=lambda row: (-row[0], row[1]))
        for _, _, cand in scored[: TUNING.greedy_seed_tries]:
            fill = _fill_node(packer, cand, seed, active, shares, by_value, greedy_seed=True)
            if fill:
                consider(cand, fill)
    _, _, cand, fill = best
    fill = _swap_up(packer, cand, fill, active, shares)
    return _replicate(packer, cand, fill, seed, needed)


def _better(
    score: float,
    value: float,
    seed_pods: int,
    best: tuple[float, float, Candidate, dict[int, int]],
    seed: int,
    slack: float,
) -> bool:
    """Whether a fill beats the best so far: a higher value per price (ties: more value). With a `slack`
    (the seed-first member of the portfolio), a fill holding more seed pods wins when its value per price
    is within the slack of the best, and one holding fewer must beat it by the slack: the seed is the
    hardest item left (the most valuable pod), and nodes that take fewer of it than they could use up the
    small pods its last nodes need to fill their gaps (first-fit decreasing's rule: big items first)."""
    best_score, best_value, _, best_fill = best
    if slack:
        have = best_fill.get(seed, 0)
        if seed_pods > have:
            return score >= best_score * (1 - slack)
        if seed_pods < have:
            return score > best_score * (1 + slack)
    return score > best_score * (1 + 1e-9) or (score >= best_score * (1 - 1e-9) and value > best_value)


def _bounded_options(packer: PackerState, seed: int, active: list[int], shares: list[int]) -> list[Candidate]:
    """The bins that hold the seed within the limits, by decreasing efficiency bound (ties: cheaper)."""
    seed_demand = packer.items[seed].demand
    available: dict[int, float] = {}
    best_of: dict[int, list[float]] = {}  # per set of groups, each type's best value (`best_table`)
    options: list[Candidate] = []
    for cand in holding(packer, packer.group_of[seed], seed_demand):
        if not packer.within_limits(cand.type_index, 1):
            packer.limit_blocked.add(seed)
            continue
        best = best_of.get(cand.groups)
        if best is None:
            available[cand.groups] = sum(
                min(packer.remaining[k], shares[k]) * packer.values[k]
                for k in active
                if cand.groups >> packer.group_of[k] & 1
            )
            best = best_of[cand.groups] = best_table(packer, cand.groups)
        capacity_value = best[cand.type_index]
        cand.bound = (
            min(capacity_value * packer.bound_factor, available[cand.groups]) / cand.price
            if cand.price > 0
            else math.inf
        )
        options.append(cand)
    if not options:
        return []
    packer.limit_blocked.discard(seed)
    options.sort(key=lambda c: (-c.bound, c.price))
    return options


def _replicate(
    packer: PackerState, cand: Candidate, fill: dict[int, int], seed: int, needed: int
) -> list[PackedNode]:
    """The chosen fill as many times as the remaining counts (and the limits) allow, as patterns."""
    full = min(packer.remaining[k] // count for k, count in fill.items())
    if any(packer.items[k].together for k in fill):
        return [PackedNode(cand.offer, tuple(sorted(fill.items())), 1)]
    replicas = max(1, full)
    if needed > 1 and (packer.items[seed].cap or packer.items[seed].groups):
        # the capped seed fixes how many such nodes are needed; the other pods run out along the way
        replicas = max(replicas, min(needed, packer.remaining[seed] // fill[seed]))
    while replicas > 1 and not packer.within_limits(cand.type_index, replicas):
        replicas -= 1
    if replicas <= max(1, full):
        return [PackedNode(cand.offer, tuple(sorted(fill.items())), replicas)]
    left = {k: packer.remaining[k] for k in fill}
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
    packer: PackerState, cand: Candidate, fill: dict[int, int], active: list[int], shares: list[int]
) -> dict[int, int]:
    """Improve the chosen node's contents by single swaps: one pod out, one more valuable pod of an
    item the node accepts in, while it fits (the slice keeps every node's mix close to what is left,
    which can cost a whole pod slot on big nodes: 6 + 1 pods of two shapes where 7 of one fit)."""
    items = packer.items
    values = packer.values
    if any(items[k].together for k in fill):
        return fill
    room = packer.types[cand.type_index].room
    fill = dict(fill)
    residual = list(room)
    for k, count in fill.items():
        for r, amount in enumerate(items[k].demand):
            residual[r] -= amount * count
    takers = sorted(
        (
            k
            for k in active
            if cand.groups >> packer.group_of[k] & 1
            and not (items[k].cap or items[k].groups or items[k].together or items[k].conflicts)
            and not packer.conflicted_by[k]
        ),
        key=lambda k: -values[k],
    )
    movable = [  # capped and conflicting pods stay: their caps and conflicts are the node's business
        k
        for k in fill
        if not (items[k].cap or items[k].groups or items[k].conflicts or packer.conflicted_by[k])
    ]
    if not movable:
        return fill
    for _ in range(TUNING.swap_rounds):
        swapped = False
        for out in sorted((k for k in fill if k in movable), key=lambda k: values[k]):
            gone = items[out].demand
            for j in takers:
                if values[j] <= values[out] * (1 + 1e-9):
                    break
                if fill.get(j, 0) >= min(packer.remaining[j], shares[j]):
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


def _shares(packer: PackerState, active: list[int], needed: int, seed: int) -> list[int]:
    big = 1 << 60
    shares = [big] * len(packer.items)
    if needed > 1:
        for k in active:
            if k != seed:
                shares[k] = -(-packer.remaining[k] // needed)
    return shares


def skew_order(packer: PackerState, type_index: int) -> tuple[list[int], dict[int, float]]:
    """Every item by cpu:memory skew against a type's own shape (memoised per type; forks share it)."""
    found = packer.skew_cache.get(type_index)
    if found is None:
        room = packer.types[type_index].room
        inv = [1.0 / r if r > 0 else 0.0 for r in room]
        skew = {
            k: item.demand[MEMORY] * inv[MEMORY] - item.demand[CPU] * inv[CPU]
            for k, item in enumerate(packer.items)
        }
        found = (sorted(skew, key=lambda k: skew[k]), skew)
        packer.skew_cache[type_index] = found
    return found


def _fill_node(
    packer: PackerState,
    cand: Candidate,
    seed: int,
    active: list[int],
    shares: list[int],
    by_value: list[int],
    greedy_seed: bool = False,
) -> dict[int, int]:
    """One node of `cand` around the seed; `by_value` is `active` by decreasing value."""
    room = packer.types[cand.type_index].room
    residual = list(room)
    taken: dict[int, int] = {}
    group_used: dict[int, int] = {}
    blocked: set[int] = set()
    items = packer.items

    def take_limit(k: int) -> int:
        if k in blocked:
            return 0
        item = items[k]
        have = taken.get(k, 0)
        limit = min(packer.remaining[k], shares[k]) - have
        return within_item_limits(item, limit, have, group_used, residual)

    def add(k: int, count: int) -> None:
        item = items[k]
        taken[k] = taken.get(k, 0) + count
        for r, amount in enumerate(item.demand):
            residual[r] -= amount * count
        for group, _ in item.groups:
            group_used[group] = group_used.get(group, 0) + count
        if item.conflicts:
            blocked.update(item.conflicts)
        if packer.conflicted_by[k]:
            blocked.update(packer.conflicted_by[k])

    seed_take = min(take_limit(seed), packer.remaining[seed])
    if seed_take <= 0:
        return {}
    if items[seed].together and seed_take < packer.remaining[seed]:
        return {}  # all of it must share one node: a node that cannot hold it all is no candidate
    if items[seed].cap or items[seed].groups or items[seed].together or greedy_seed:
        add(seed, seed_take)
    else:
        add(seed, 1)
    _fill_around_seed(packer, cand, seed, active, by_value, greedy_seed, residual, blocked, take_limit, add)
    return taken


def _fill_around_seed(
    packer: PackerState,
    cand: Candidate,
    seed: int,
    active: list[int],
    by_value: list[int],
    greedy_seed: bool,
    residual: list[int],
    blocked: set[int],
    take_limit: Callable[[int], int],
    add: Callable[[int, int], None],
) -> None:
    """The rest of `_fill_node` once the seed is in: a slice and balancing from the seed's own group, then
    a top-up by value from every group the bin serves."""
    items = packer.items
    room = packer.types[cand.type_index].room
    eligible = [
        k
        for k in active
        if cand.groups >> packer.group_of[k] & 1 and k not in blocked and not items[k].together
    ]
    if not eligible:
        return
    # the slice and the balancing take only the seed's own group (its pods can go nowhere cheaper);
    # pods other groups accept only top up what room is left, by value
    everyone = eligible
    own = packer.group_of[seed]
    eligible = [k for k in eligible if packer.group_of[k] == own] or eligible
    if not greedy_seed:
        _slice_fill(packer, eligible, residual, take_limit, add)
    order, skew = skew_order(packer, cand.type_index)
    chosen = set(eligible)
    balance_shape(room, residual, [k for k in order if k in chosen], skew, take_limit, add)
    allowed = set(everyone)
    for k in by_value:
        if k not in allowed:
            continue
        demand = items[k].demand
        if demand[CPU] > residual[CPU] or demand[MEMORY] > residual[MEMORY]:
            continue  # what take_limit would say, without the call: most items no longer fit
        limit = take_limit(k)
        if limit > 0:
            add(k, limit)


def _slice_fill(
    packer: PackerState,
    eligible: list[int],
    residual: list[int],
    take_limit: Callable[[int], int],
    add: Callable[[int, int], None],
) -> None:
    """Start the node with proportional slices of what is left, split at the node's own cpu:memory shape.

    Items leaner in memory than the node (L) and richer (H) are each sliced at one rate, with the two
    rates chosen so that the slices fill the node's cpu and memory in the same proportion: every node
    of a shape takes the same mix, so no node strands the balancing pods the others will need."""
    room_c, room_m = residual[CPU] * packer.slice, residual[MEMORY] * packer.slice
    if room_c <= 0 or room_m <= 0:
        return
    lean: list[int] = []
    rich: list[int] = []
    lc = lm = hc = hm = 0.0
    for k in eligible:
        demand = packer.items[k].demand
        n = packer.remaining[k]
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
    dims = range(2, packer.dims)
    for r in dims:  # pods and extended resources: scale both rates down if the slice would not fit
        need = sum(
            packer.items[k].demand[r] * packer.remaining[k] * (a if k in lean else b) for k in eligible
        )
        if need > residual[r] * packer.slice > 0:
            a *= residual[r] * packer.slice / need
            b *= residual[r] * packer.slice / need
    for group, rate in ((lean, min(a, 1.0)), (rich, min(b, 1.0))):
        if rate <= 0:
            continue
        for k in group:
            want = int(packer.remaining[k] * rate)
            if want > 0:
                count = min(want, take_limit(k))
                if count > 0:
                    add(k, count)


def balance_shape(
    room: Sequence[int],
    residual: list[int],
    by_skew: list[int],
    skew: dict[int, float],
    take_limit: Callable[[int], int],
    add: Callable[[int, int], None],
) -> None:
    """Steer the node's residual room back towards its own cpu:memory shape: while memory is to spare, add
    the most memory-heavy item that still fits, while cpu is, the most cpu-heavy (`by_skew` is sorted by
    `skew`, cpu-heavy first)."""
    inv = [1.0 / r if r > 0 else 0.0 for r in room]
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
