"""Step 3: nodes capped items force, each topped up with a fair share of filler pods.

A round's nodes that would top up to exactly the pods of the node before are added at once (`_repeats`,
from the slack `_top_up_node` reports): the same nodes as topping each one up, at one top-up per distinct
node.
"""

from __future__ import annotations

import math
import operator

from longshore.core.scheduling.packer_bins import alone_cost, best_table, holding
from longshore.core.scheduling.packer_greedy import balance_shape, skew_order
from longshore.core.scheduling.packer_model import (
    CPU,
    MEMORY,
    Candidate,
    FillOrder,
    PackedNode,
    within_item_limits,
)
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING


def nodes_needed(packer: PackerState, active: list[int]) -> int:
    """A lower bound on the nodes the capped items still need (0 when none remain)."""
    needed = 0
    group_load: dict[int, tuple[int, int]] = {}
    live = set(active)
    for k in packer.capped:
        if k not in live:
            continue
        item = packer.items[k]
        if item.cap:
            needed = max(needed, -(-packer.remaining[k] // item.cap))
        for group, cap in item.groups:
            load, _ = group_load.get(group, (0, cap))
            group_load[group] = (load + packer.remaining[k], cap)
    for load, cap in group_load.values():
        needed = max(needed, -(-load // cap))
    return needed


def dearer_item(packer: PackerState, seed: int, active: list[int]) -> int | None:
    """The most valuable uncapped item that is much dearer in its own group than it would be in the capped
    seed's group (say on-demand-only pods next to spot-friendly anti-affine ones), if any: its nodes are
    opened before the forced ones, so the capped pods can ride in their spare room."""
    own = packer.group_of[seed]
    best: int | None = None
    for k in active:
        item = packer.items[k]
        if packer.group_of[k] == own or item.cap or item.groups or item.together or item.conflicts:
            continue
        if packer.conflicted_by[k]:
            continue
        mine = alone_cost(packer, packer.group_of[k], item.demand)
        there = alone_cost(packer, own, item.demand)
        if mine >= TUNING.dear_ratio * there and (best is None or packer.values[k] > packer.values[best]):
            best = k
    return best


def forced_nodes(packer: PackerState, seed: int, active: list[int], needed: int) -> list[PackedNode]:
    """Nodes for a capped item (hostname anti-affinity or spread): each takes the most seed pods its cap
    allows, and its free room is topped up with other pods. The node count is fixed by the cap, so the
    cheapest plan gives every such node a type the fillers can fill, rather than leaving it mostly empty
    and buying separate capacity for the fillers. One type is chosen for the whole round (by the value of
    a trial top-up per price), then every node of the round is topped up from what is left."""
    item = packer.items[seed]
    per_node = packer.remaining[seed]
    if item.cap:
        per_node = min(per_node, item.cap)
    for _, cap in item.groups:
        per_node = min(per_node, cap)
    if per_node <= 0:
        return []
    rounds = 1 if packer.forced_single else min(needed, -(-packer.remaining[seed] // per_node))
    seed_load = tuple(d * per_node for d in item.demand)
    options = list(holding(packer, packer.group_of[seed], seed_load))
    if not options:
        return []
    fillers_of = _fillers(packer, seed, active, options)
    seed_value = per_node * packer.values[seed]
    budget_of: dict[int, float] = {}  # per node: a fair share of the fillers over the nodes still needed
    share = 1 if packer.forced_single else needed  # one node at a time may take every filler it is worth
    for groups, fillers in fillers_of.items():
        budget_of[groups] = sum(packer.remaining[k] * packer.values[k] for k in fillers) / share
    _bound(packer, options, seed_value, budget_of)
    left = list(packer.remaining)
    ranked: dict[int, tuple[list[int], list[int]]] = {}
    cand = _round_bin(packer, seed, per_node, options, fillers_of, budget_of, left, ranked)
    if cand is None:
        return []
    while rounds > 1 and not packer.within_limits(cand.type_index, rounds):
        rounds -= 1
    order = _fill_order(packer, cand, fillers_of[cand.groups], ranked)
    patterns: dict[tuple[tuple[int, int], ...], int] = {}
    opened = 0
    while opened < rounds:
        take = min(per_node, left[seed])
        if take <= 0:
            break
        slack: dict[int, int] = {}
        contents = _top_up_node(packer, cand, seed, take, order, left, budget_of[cand.groups], slack)
        # the next nodes would repeat this top-up step by step while no count it read runs short:
        # add them arithmetically (the same nodes, without the steps)
        again = _repeats(contents, slack, seed, left[seed] if take == per_node else 0, rounds - opened - 1)
        for k, count in contents.items():
            left[k] -= count * again
        key = tuple(sorted(contents.items()))
        patterns[key] = patterns.get(key, 0) + 1 + again
        opened += 1 + again
    return [PackedNode(cand.offer, contents, count) for contents, count in patterns.items()]


def _repeats(contents: dict[int, int], slack: dict[int, int], seed: int, seed_left: int, most: int) -> int:
    """How many more nodes of a forced round would top up to exactly `contents`, at most `most`: each
    takes the seed's `contents[seed]` pods from `seed_left` (0 when the last node took fewer than its
    cap), and each filler's count may drop by at most its `slack` (`_top_up_node`) over all of them."""
    again = min(most, seed_left // contents[seed])
    for k, count in contents.items():
        if k != seed and again > 0:
            again = min(again, slack.get(k, 0) // count)
    return max(again, 0)


def _fillers(
    packer: PackerState, seed: int, active: list[int], options: list[Candidate]
) -> dict[int, list[int]]:
    """Per set of groups a bin serves, the items that may top up a forced node of the seed."""
    seed_groups = {group for group, _ in packer.items[seed].groups}
    fillers_of: dict[int, list[int]] = {}
    for cand in options:
        if cand.groups not in fillers_of:
            fillers_of[cand.groups] = [
                k
                for k in active
                if k != seed
                and cand.groups >> packer.group_of[k] & 1
                and not packer.items[k].together
                and not packer.items[k].conflicts
                and not packer.conflicted_by[k]
                and not seed_groups.intersection(group for group, _ in packer.items[k].groups)
            ]
    return fillers_of


def _bound(
    packer: PackerState, options: list[Candidate], seed_value: float, budget_of: dict[int, float]
) -> None:
    """Bound each bin's value per price (its room's LP value, at most the seed and its fair share of
    fillers), and sort the bins by decreasing bound (ties: cheaper)."""
    version = packer.price_version
    best_of: dict[int, list[float]] = {}
    for cand in options:
        available = seed_value + budget_of[cand.groups]
        if cand.valued_at != version:
            best = best_of.get(cand.groups)
            if best is None:
                best = best_of[cand.groups] = best_table(packer, cand.groups)
            cand.capacity = best[cand.type_index]
            cand.valued_at = version
        capacity = cand.capacity
        cand.bound = (
            (capacity if capacity < available else available) / cand.price if cand.price > 0 else math.inf
        )
    options.sort(key=lambda c: (-c.bound, c.price))


def _round_bin(
    packer: PackerState,
    seed: int,
    per_node: int,
    options: list[Candidate],
    fillers_of: dict[int, list[int]],
    budget_of: dict[int, float],
    left: list[int],
    ranked: dict[int, tuple[list[int], list[int]]],
) -> Candidate | None:
    """The bin of a round, by trial top-ups (value per price; within the slack of the best, the cheapest);
    None when every bin that holds the seed would breach a limit."""
    trials: list[tuple[float, float, Candidate]] = []
    tried = 0
    top = 0.0  # the best trial score so far
    for cand in options:
        if tried >= TUNING.forced_trials or (trials and cand.bound < top * (1 + 1e-9)):
            break
        if not packer.within_limits(cand.type_index, 1):
            continue
        tried += 1
        trial = _top_up_node(
            packer,
            cand,
            seed,
            per_node,
            _fill_order(packer, cand, fillers_of[cand.groups], ranked),
            list(left),
            budget_of[cand.groups],
        )
        value = sum(packer.values[k] * count for k, count in trial.items())
        trials.append((value / cand.price if cand.price > 0 else math.inf, value, cand))
        top = max(top, trials[-1][0])
    if not trials:  # every bin that holds the seed would breach a limit
        packer.limit_blocked.add(seed)
        return None
    packer.limit_blocked.discard(seed)
    # nearly as efficient and cheaper wins: fillers left over pack as well elsewhere
    good = max(t[0] for t in trials) * (1 - TUNING.forced_slack)
    return min((t for t in trials if t[0] >= good), key=lambda t: (t[2].price, -t[1]))[2]


def _fill_order(
    packer: PackerState, cand: Candidate, fillers: list[int], ranked: dict[int, tuple[list[int], list[int]]]
) -> FillOrder:
    """The fillers by cpu:memory skew against the bin's own shape, by value, and the smallest request
    per dimension: computed once per round and bin, shared by every node of the round. `ranked` memoises
    the parts that do not depend on the bin (by value, smallest) per set of groups."""
    found = ranked.get(cand.groups)
    if found is None:
        live = [k for k in fillers if packer.remaining[k] > 0]
        smallest = [min((packer.items[k].demand[r] for k in live), default=0) for r in range(packer.dims)]
        found = (sorted(live, key=lambda k: -packer.values[k]), smallest)
        ranked[cand.groups] = found
    by_value, smallest = found
    chosen = set(by_value)
    order, skew = skew_order(packer, cand.type_index)
    return ([k for k in order if k in chosen], skew, by_value, smallest)


def _top_up_node(
    packer: PackerState,
    cand: Candidate,
    seed: int,
    seed_count: int,
    order: FillOrder,
    left: list[int],
    budget: float,
    slack: dict[int, int] | None = None,
) -> dict[int, int]:
    """Fill one node: `seed_count` seed pods, then fillers (worth at most about `budget`) steered towards
    the node's own cpu:memory shape, then whatever still fits by value. Consumes from `left`.

    The fill reads the counts left only through `take_limit`, as min(left, what the node takes of it
    otherwise) (0 when nothing is left, and counts never grow). With `slack`, each filler the node read
    with some left gets the least of left minus what it would take otherwise over those reads: a node
    started with every filler's count lower by at most its slack takes exactly the same pods (the same
    steps, the same results; a read at 0 stays 0). `forced_nodes` replicates the node that far."""
    items = packer.items
    room = packer.types[cand.type_index].room
    residual = [r - d * seed_count for r, d in zip(room, items[seed].demand, strict=True)]
    taken = {seed: seed_count}
    left[seed] -= seed_count
    group_used: dict[int, int] = {}
    spent = [0.0]
    values = packer.values

    def take_limit(k: int) -> int:
        have = left[k]
        if have <= 0:
            return 0
        room_left = budget - spent[0]
        if room_left <= 0:
            return 0
        if slack is None:
            limit = min(have, math.ceil(room_left / values[k]))
            return within_item_limits(items[k], limit, taken.get(k, 0), group_used, residual)
        # what the node takes without the count left, then the count: the same min as above
        limit = within_item_limits(
            items[k], math.ceil(room_left / values[k]), taken.get(k, 0), group_used, residual
        )
        if limit > 0:
            spare = have - limit if have > limit else 0
            if spare < slack.get(k, spare + 1):
                slack[k] = spare
            return limit if limit < have else have
        return 0

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
    balance_shape(room, residual, by_skew, skew, take_limit, add)
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
