"""Cost-driven bin packing of pod classes into priced nodes: the numeric heart of the scheduler.

Theory of operation. The input is already reduced to numbers: *items* (pod classes: a count, a request
vector, a bitmask of the offers they may use, per-node caps, conflicts) and *offers* (instance type × zone ×
capacity type, with a price and the room a node of that type leaves for pods after DaemonSets). The output
is a list of node patterns, each replicated some number of times.

0. *Interchangeable items merge* (`packer_finish.merge_identical`). Items with the same requests, offers and shared caps (and no per-item cap or
   conflict) are packed as one item and split back afterwards, so pod classes that differ only in labels
   nobody selects cost nothing extra (only when that removes at least a quarter of the items: otherwise the
   merge saves little and only perturbs tie-breaks).
1. *Compatibility groups* (`packer_bins`). Items with the same offer mask form a group; for every instance type and every
   set of groups an offer of it serves, only the cheapest such offer matters (the "effective bins" of the
   LP recipe in docs/reference/lp-bounds.md §1; dominated ones are dropped).
2. *Values* (`packer_bins`). Per group, the fluid LP's dual (`duals.ResourcePricer`, warm-started from the previous
   solve's basis as the demand shrinks) prices cpu, memory and pod slots;
   an item's value is its fluid cost `pi . d`. "Value packed ÷ price" of a node is then its efficiency
   against the LP optimum (1.0 = as good as the bound), which makes nodes of different types, zones and
   capacity types comparable, and makes cost, not node count, the objective.
3. *Forced nodes first* (`packer_forced`). Capped items (hostname anti-affinity, hostname spread) fix a number of nodes that
   must exist. Per capped item, one round opens as many nodes as it needs: each takes the most seed pods its
   cap allows, and its free room is *topped up* with other pods, up to a fair share of them (their value ÷
   the nodes still needed), so every forced node is filled instead of the first ones taking everything and
   the rest running nearly empty. The round's bin is chosen by trial top-ups (value ÷ price; among bins
   within 2 % of the best, the cheapest). The fill order is computed once per round, and the nodes that
   would top up to exactly the pods of the one before (every filler's count still above what the node
   takes of it, `packer_forced._repeats`) are added at once, so a round costs one top-up per distinct node,
   not R full searches (nor R top-ups). The portfolio also tries one alternative: when some
   uncapped items are much dearer in their own offers than the capped ones (on-demand-only pods next to
   spot-friendly anti-affine ones: each group's cheapest price per unit of resource, 1.5× or more), their
   nodes are opened first, so the capped pods ride in their spare room; otherwise, with at most 100 forced
   nodes, two: choosing the forced nodes one by one like ordinary nodes (step 4), and opening them one at a
   time, each offered every filler rather than a fair share, so the forced nodes can mix instance types (one
   big node takes many fillers, the others stay small). The cheapest plan is kept.
4. *Bin-centric greedy with bulk replication* (`packer_greedy`). Repeatedly pick a seed item (the largest value), evaluate
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
   forced nodes (the alternative of step 3 with the first share only); the cheapest plan wins. The last
   member, the *integer-aware* one, runs the share 0.95 again from the first forced nodes with values at
   whole-pod counts (`packer_bins.integer_factors`): each item's LP value times its factor, the cheapest
   price ÷ pods of a bin holding only that item over its LP value (at least 1), and bins' efficiency bounds
   times the largest factor so the branch and bound stays valid. Fluid values make a node of 4 big pods
   plus small ones as good as one of 5 big pods plus fewer small ones (five 8-vCPU pods fit a 48-vCPU node
   where the LP counts 5.46), so the greedy used up the small pods early and the last nodes of a big class
   ran with their gaps empty; at whole-pod values five big pods are worth the node's price and a node
   that takes fewer than fit scores lower. It is a member, not the rule (the portfolio keeps the cheapest
   plan). The *seed-first* members (`TUNING.seed_first_shares`, none by default: they found no cheaper
   plan once this member ran) prefer, within `TUNING.seed_first_slack` of the best value per price, the
   node holding more seed pods (`packer_greedy._better`).
5. *Downsizing and merging* (`packer_finish`). Each pattern is finally re-priced with the cheapest offer (any type, zone and
   capacity type all its items accept) that still holds it (ties keep the larger type: fewer nodes is never
   worse), and the cheapest small nodes are merged when one node costs no more.
6. *Tail re-pack* (`packer_repack`, `packer_programme`). On the portfolio's plan, the most wasteful nodes
   (price times the unused share of their dominant resource) form a window whose pods are re-packed by a
   search over whole-node patterns (bounded by the LP relaxation over those patterns, with a hard work
   bound, keeping the best plan found); the result replaces the window when it is cheaper and counts no
   more against the limits (a greedy's tail of half-full nodes, or nodes of one type opened for one class
   where the spare room of another type's nodes could take its pods).

Limits (pool `limits`) are checked per replica with each type's limit usage; a candidate that would breach
them is skipped. Everything is integers except prices and values. The numbers the steps are tuned with (slice shares,
budgets, slacks) are `tuning.PackerTuning`; the working state is `packer_state.PackerState`, which every
step takes explicitly and `fork` copies for the portfolio. `grow` is the loop: pick a seed, let step 3 or 4
open its nodes, account for them, re-price.
"""

from __future__ import annotations

from collections.abc import Sequence

from longshore.core.scheduling.packer_bins import integer_factors, item_values, refresh_values
from longshore.core.scheduling.packer_finish import finish, merge_identical, split_back
from longshore.core.scheduling.packer_forced import dearer_item, forced_nodes, nodes_needed
from longshore.core.scheduling.packer_greedy import best_node, pick_seed
from longshore.core.scheduling.packer_model import BinType, Item, Offer, PackedNode, PackResult
from longshore.core.scheduling.packer_repack import repack
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING

__all__ = ["BinType", "Item", "Offer", "PackResult", "PackedNode", "pack"]


def grow(packer: PackerState, *, forced_only: bool = False) -> list[PackedNode]:
    """Open nodes until every item is placed or dead (with `forced_only`, only the nodes capped items
    force, which do not depend on the slice share)."""
    nodes: list[PackedNode] = []
    while True:
        active = [k for k in range(len(packer.items)) if packer.remaining[k] > 0 and k not in packer.dead]
        if not active:
            break
        needed = nodes_needed(packer, active)
        seed = pick_seed(packer, active, needed)
        item = packer.items[seed]
        dear = (
            dearer_item(packer, seed, active)
            if packer.dear_first and needed and (item.cap or item.groups) and not item.together
            else None
        )
        if dear is not None:
            chosen = best_node(packer, dear, active, 0)
        elif needed and (item.cap or item.groups) and not item.together and packer.top_up:
            chosen = forced_nodes(packer, seed, active, needed)
        elif forced_only and not (needed and (item.cap or item.groups)):
            break
        else:
            chosen = best_node(packer, seed, active, needed)
        if not chosen:
            packer.dead.add(seed)
            continue
        for node in chosen:
            nodes.append(node)
            for k, count in node.contents:
                packer.remaining[k] -= count * node.replicas
            if packer.limit_room is not None:
                usage = packer.types[packer.offers[node.offer].type_index].limit_usage
                for r, amount in enumerate(usage):
                    packer.limit_room[r] -= amount * node.replicas
        refresh_values(packer)
    return nodes


def pack(
    items: Sequence[Item],
    types: Sequence[BinType],
    offers: Sequence[Offer],
    limit_room: Sequence[int] | None = None,
) -> PackResult:
    """Pack `items` into nodes built from `offers` (see the module docstring)."""
    if not items:
        return PackResult((), (), frozenset(), tuple(limit_room) if limit_room is not None else None)
    merged, members = merge_identical(items)
    first = PackerState(merged, types, offers, limit_room, TUNING.slices[0])
    bases = [first]
    everything = list(range(len(merged)))
    needed = nodes_needed(first, everything) if first.capped else 0
    seed_groups = {first.group_of[k]: k for k in first.capped}  # whether an item is dear depends on the group
    if needed and any(dearer_item(first, k, everything) is not None for k in seed_groups.values()):
        # much dearer uncapped pods (on-demand only, say): also try opening their nodes first, so the
        # capped pods ride in their spare room instead of on forced nodes of their own
        dear = first.fork(TUNING.slices[0])
        dear.dear_first = True
        bases.append(dear)
    elif 0 < needed <= TUNING.node_by_node_up_to:
        # few forced nodes: also try choosing each of them like any other node (node by node), and
        # opening them one at a time, each offered every filler, so a round can mix instance types (one
        # big node takes many fillers, the rest stay small) where one type for the round cannot
        bases.append(first.fork(TUNING.slices[0], top_up=False))
        single = first.fork(TUNING.slices[0])
        single.forced_single = True
        bases.append(single)
    best: PackResult | None = None
    best_key: tuple[int, float, int] | None = None
    first_forced: list[PackedNode] = []
    for base in bases:
        forced = grow(base, forced_only=True)  # the same for every slice share: computed once
        if base is first:
            first_forced = forced
        # the node-by-node alternative is about the forced nodes, not the slice: one share is enough
        for share in TUNING.slices if base is first else TUNING.slices[:1]:
            packer = base.fork(share)
            result = finish(packer, forced + grow(packer))
            key = _plan_key(result, offers)
            if best_key is None or key < best_key:
                best, best_key = result, key
    if TUNING.seed_first_slack:
        # the seed-first members: slice shares again, nodes that take more of the seed preferred
        # (a big pod class otherwise ends on nodes of its own with their gaps empty: step 4)
        for share in TUNING.seed_first_shares:
            packer = first.fork(share)
            packer.seed_slack = TUNING.seed_first_slack
            result = finish(packer, first_forced + grow(packer))
            key = _plan_key(result, offers)
            if best_key is None or key < best_key:
                best, best_key = result, key
    for share in TUNING.integer_shares:
        # the integer-aware members: values at whole-pod counts (`packer_bins.integer_factors`)
        packer = first.fork(share)
        packer.integer_factors = integer_factors(packer)
        packer.bound_factor = max(packer.integer_factors, default=1.0)
        packer.values = item_values(packer)
        packer.priced_at = sum(packer.remaining[k] * packer.values[k] for k in range(len(merged)))
        result = finish(packer, first_forced + grow(packer))
        key = _plan_key(result, offers)
        if best_key is None or key < best_key:
            best, best_key = result, key
    assert best is not None
    return split_back(repack(first, best), items, members)


def _plan_key(result: PackResult, offers: Sequence[Offer]) -> tuple[int, float, int]:
    """The portfolio's order: fewer pods left over, then cheaper, then fewer nodes."""
    cost = sum(offers[node.offer].price * node.replicas for node in result.nodes)
    return (sum(result.leftover), cost, sum(node.replicas for node in result.nodes))
