"""Phase 4: new claims, pool by pool in weight order, packed at least cost by `packer.pack`."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.pods import PodAffinityTerm, TopologySpread
from longshore.core.quantity import format_quantity
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling.cost_limits import COST_LIMITS, cost_limits, spend, type_cost
from longshore.core.scheduling.cost_limits import reason as cost_reason
from longshore.core.scheduling.packer import BinType, Item, Offer, PackResult, pack
from longshore.core.scheduling.solver_claims import (
    LimitedFallbacks,
    add_claim,
    claim_shape,
    fallback_offerings,
    min_values_narrow,
    offering_requirements,
)
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    PACK_DIMS,
    SolverState,
    Unit,
    selects,
    self_selects,
    spread_matches,
)
from longshore.core.scheduling.solver_variants import pool_refusal, serving_types
from longshore.core.scheduling.templates import (
    NodeTemplate,
    TypeOption,
)


def launch(solver: SolverState, units: list[Unit]) -> None:
    for template in solver.templates:
        pending = [u for u in units if u.pods]
        if not pending:
            return
        takers = []
        for unit in pending:
            refusal = pool_refusal(solver, template, unit.cls, unit.variant, unit.requirements)
            if refusal is None:
                takers.append(unit)
            else:
                unit.reasons.append(refusal)
        if takers:
            _pack_pool(solver, template, takers)
    for unit in units:
        if unit.pods:
            reason = "; ".join(dict.fromkeys(unit.reasons)) or "no node pool can run it"
            solver.fail(unit, reason)


def _pack_pool(solver: SolverState, template: NodeTemplate, units: list[Unit]) -> None:
    dims = list(PACK_DIMS)
    for unit in units:
        for name in unit.cls.requests.names():
            if name not in dims:
                dims.append(name)
    solver.dims = dims
    options = template.options
    narrow = min_values_narrow(solver, template)
    offers, offer_option = _pool_offers(solver, options)
    limit_names, limit_room, rooms, types = _pool_bins(solver, template, dims, narrow)
    original = [unit.requirements for unit in units]
    label_conflicts = _pin_claim_labels(template, units)
    items = _pool_items(solver, template, units, dims, offers, offer_option)
    items = _hostname_constraints(solver, units, items, label_conflicts)
    result = pack(items, types, offers, limit_room)
    spend(solver, limit_names, result.limit_room)
    _take_result(solver, template, units, items, offers, rooms, types, limit_names, limit_room, result)
    for unit, requirements in zip(units, original, strict=True):  # the next pool pins afresh
        unit.requirements = requirements


_PLACE_KEYS = frozenset({wk.ZONE, wk.CAPACITY_TYPE, wk.ZONE_ID})


def _pin_claim_labels(template: NodeTemplate, units: list[Unit]) -> list[set[int]]:
    """Labels only the pool defines (no instance type or offering does), such as `team In [a, b]`: every
    claim carries one value, so a unit narrowing such a key is pinned to one allowed value (the first) and
    units pinned to different values may not share a node (Karpenter: a claim's requirements must keep
    every pod's; `pods selecting team=a and team=b` get a claim each, labelled with their value)."""
    conflicts: list[set[int]] = [set() for _ in units]
    if not units or not template.options:
        return conflicts
    defined = template.options[0].instance_type.requirements().keys()
    keys = [
        item.key
        for item in template.requirements.items
        if item.key not in defined and item.key not in _PLACE_KEYS and item.size() != 1
    ]
    for key in keys:
        pinned: dict[str, list[int]] = {}
        for k, unit in enumerate(units):
            if key not in unit.requirements:
                continue
            allowed = template.requirements.intersect(unit.requirements).values(key)
            if not allowed:
                continue  # open (NotIn / Exists on an open pool key): any value will do
            value = min(allowed)
            unit.requirements = unit.requirements.intersect(
                Requirements((KeyRequirement.in_(key, (value,)),))
            )
            pinned.setdefault(value, []).append(k)
        for value, members in pinned.items():
            others = [j for v, js in pinned.items() if v != value for j in js]
            for k in members:
                conflicts[k].update(others)
    return conflicts


def _pool_offers(
    solver: SolverState, options: tuple[TypeOption, ...]
) -> tuple[list[Offer], list[TypeOption]]:
    """Every offering of the pool's types as a packer offer, with its type (and the offers of each type)."""
    offers: list[Offer] = []
    offer_option: list[TypeOption] = []
    solver.offers_of = []
    for type_index, option in enumerate(options):
        own = []
        for offering in option.offerings:
            own.append(len(offers))
            offers.append(Offer(type_index, offering.zone, offering.capacity_type, offering.price))
            offer_option.append(option)
        solver.offers_of.append(own)
    return offers, offer_option


def _pool_bins(
    solver: SolverState, template: NodeTemplate, dims: list[str], narrow: set[int]
) -> tuple[list[str], list[int] | None, list[tuple[int, ...]], list[BinType]]:
    """The pool's limit names and the room left under them, each type's room and its packer bin type."""
    options = template.options
    limits = template.pool.limits
    limit_names = list(limits.names())
    # a limit of 0 is a limit (a frozen pool launches nothing): None only when the pool has no limits at all
    limit_room = list(limits.room(solver.inp.usage_of(template.name))) if limits else None
    cost_names, cost_room = cost_limits(solver, template)  # dollar limits: more dimensions, in µ$/h
    if cost_names:
        limit_room = [*(limit_room or ()), *cost_room]
    rooms = [tuple(max(0, option.room.get(d)) for d in dims) for option in options]
    types = [  # a type minValues rules out takes nothing (it can still be a fallback of bigger claims)
        BinType(
            option.name,
            rooms[index] if index not in narrow else tuple(0 for _ in dims),
            (
                *((option.capacity + Resources.of({"nodes": 1})).get(n) for n in limit_names),
                *(type_cost(option) for _ in cost_names),
            ),
        )
        for index, option in enumerate(options)
    ]
    return [*limit_names, *cost_names], limit_room, rooms, types


def _pool_items(
    solver: SolverState,
    template: NodeTemplate,
    units: list[Unit],
    dims: list[str],
    offers: list[Offer],
    offer_option: list[TypeOption],
) -> list[Item]:
    """One packer item per unit: its count, requests and the bitmask of the offers it accepts."""
    options = template.options
    mask_cache: dict[Requirements, int] = {}
    merged_of: dict[Requirements, Requirements] = {}
    items: list[Item] = []
    for unit in units:
        merged = merged_of.get(unit.requirements)
        if merged is None:  # units pinned alike share their requirements: intersect once
            merged = merged_of[unit.requirements] = template.requirements.intersect(unit.requirements)
        mask = mask_cache.get(merged)
        if mask is None:
            serving = set(serving_types(solver, template, merged))
            serves = {i: i in serving for i in range(len(options))}
            places: dict[tuple[str, str], bool] = {}  # (zone, capacity type) -> allowed
            bits = [
                "1"
                if serves[offer.type_index]
                and options[offer.type_index].offerings
                and _place_allowed(places, offer, merged)
                else "0"
                for offer in offers
            ]
            mask = int("".join(reversed(bits)), 2) if bits else 0  # built at once: no 5,000-bit ors
            mask_cache[merged] = mask
        ports = unit.cls.example.host_ports
        if ports:
            for index in range(len(offers)):
                if mask >> index & 1 and any(
                    p.conflicts(q) for p in ports for q in offer_option[index].daemon_ports
                ):
                    mask &= ~(1 << index)
        items.append(Item(len(unit.pods), tuple(unit.cls.requests.get(d) for d in dims), mask))
    return items


def _take_result(
    solver: SolverState,
    template: NodeTemplate,
    units: list[Unit],
    items: list[Item],
    offers: list[Offer],
    rooms: list[tuple[int, ...]],
    types: list[BinType],
    limit_names: list[str],
    limit_room: list[int] | None,
    result: PackResult,
) -> None:
    """Turn the packed nodes into claims, and give each unit left over the pool's reason."""
    options = template.options
    solver.offer_order = sorted(range(len(offers)), key=lambda i: (offers[i].price, i))
    solver.type_order_cache = {}
    solver.fallback_cache = {}
    solver.offering_options = {}
    patterns = []
    # per fallback list (fallback_offerings hands out one object per list): its requirements, once
    narrowings: dict[int, tuple[Requirements, tuple[str, ...]]] = {}
    for node in result.nodes:
        fallback = fallback_offerings(
            solver, template, items, offers, options, rooms, node.offer, node.contents
        )
        narrowing = narrowings.get(id(fallback))
        if narrowing is None:  # the list stays alive in solver.fallback_cache: its id is not reused
            narrowing = narrowings[id(fallback)] = offering_requirements(fallback)
        patterns.append((node, fallback, narrowing, options[offers[node.offer].type_index].name))
    limited = LimitedFallbacks.of(types, limit_room, result.nodes, offers) if limit_room is not None else None
    if limited is not None and limited.hold_anyway([(p[2][1], p[3], p[0].replicas) for p in patterns]):
        limited = None  # every claim may launch its largest fallback within the limits: nothing to filter
    for node, fallback, narrowing, chosen in patterns:
        shape = None  # what the pattern's claims share, made again when the fallbacks change
        for _ in range(node.replicas):
            if limited is not None:  # each replica's fallbacks within what its predecessors left
                fallback, narrowing = limited.take(fallback, chosen)
            if shape is None or shape.narrowing is not narrowing:
                shape = claim_shape(
                    solver, template, units, offers, options, node.offer, node.contents, narrowing
                )
            add_claim(solver, template, units, node.contents, fallback, shape)
    for k, unit in enumerate(units):
        if unit.pods:
            unit.reasons.append(
                _leftover_reason(
                    solver,
                    template,
                    unit,
                    k in result.limit_blocked,
                    limit_names,
                    list(result.limit_room or ()),
                    types,
                )
            )


def _hostname_constraints(
    solver: SolverState, units: list[Unit], items: list[Item], conflicts: list[set[int]]
) -> list[Item]:
    """Per-node constraints: caps, shared caps (groups), items that may not share a node (`conflicts`
    starts with those of `_pin_claim_labels`) and items that must all share one."""
    caps = [0] * len(units)
    groups: list[list[tuple[int, int]]] = [[] for _ in units]
    together = [False] * len(units)
    group_ids: dict[tuple[object, ...], int] = {}
    anti_memo: dict[tuple[PodAffinityTerm, str], tuple[set[int], set[int]]] = {}
    spread_memo: dict[tuple[TopologySpread, str], list[int]] = {}
    for k, unit in enumerate(units):
        owner = unit.cls.example
        variant = unit.variant
        _hostname_anti(units, k, anti_memo, group_ids, caps, groups, conflicts)
        for spread in variant.spreads:
            if spread.topology_key != HOSTNAME:
                continue
            gid = group_ids.setdefault(("spread", spread, owner.namespace), len(group_ids))
            selected = spread_memo.get((spread, owner.namespace))
            if selected is None:
                selected = [
                    j
                    for j, other in enumerate(units)
                    if spread_matches(owner, spread, other.cls.labels, other.cls.example.namespace)
                ]
                spread_memo[(spread, owner.namespace)] = selected
            if not selected:
                continue  # its selector matches no pending pod (not even its own): nothing to balance here
            for j in (k, *selected):
                if (gid, spread.max_skew) not in groups[j]:
                    groups[j].append((gid, spread.max_skew))
        for term in owner.pod_affinity:  # required only: a preferred one gives way (relaxed, as in Karpenter)
            if term.topology_key == HOSTNAME and self_selects(unit.cls, term) and term in variant.affinity:
                together[k] = True
        if owner.host_ports:
            caps[k] = 1
            for j, other in enumerate(units):
                if j != k and any(
                    p.conflicts(q) for p in owner.host_ports for q in other.cls.example.host_ports
                ):
                    conflicts[k].add(j)
    return [
        Item(
            item.count,
            item.demand,
            item.offers,
            caps[k],
            tuple(groups[k]),
            frozenset(conflicts[k]),
            together[k],
        )
        for k, item in enumerate(items)
    ]


def _hostname_anti(
    units: list[Unit],
    k: int,
    anti_memo: dict[tuple[PodAffinityTerm, str], tuple[set[int], set[int]]],
    group_ids: dict[tuple[object, ...], int],
    caps: list[int],
    groups: list[list[tuple[int, int]]],
    conflicts: list[set[int]],
) -> None:
    """Unit k's hostname anti-affinity: a shared cap of one pod per node when the units a term selects are
    exactly those holding it, otherwise a cap of one when it selects itself and conflicts with the others."""
    owner = units[k].cls.example
    variant = units[k].variant
    for term in variant.anti_affinity:
        if term.topology_key != HOSTNAME:
            continue
        memo = anti_memo.get((term, owner.namespace))
        if memo is None:  # classes share terms: each distinct term is matched against all once
            memo = (
                {
                    j
                    for j, other in enumerate(units)
                    if selects(owner, term, other.cls.labels, other.cls.example.namespace)
                },
                {j for j, other in enumerate(units) if term in other.variant.anti_affinity},
            )
            anti_memo[(term, owner.namespace)] = memo
        matched, holders = memo
        if matched and matched == holders:
            gid = group_ids.setdefault(("anti", term, owner.namespace), len(group_ids))
            if (gid, 1) not in groups[k]:
                groups[k].append((gid, 1))
            continue
        if k in matched:
            caps[k] = 1
        for j in matched - {k}:
            conflicts[k].add(j)
            conflicts[j].add(k)


def _leftover_reason(
    solver: SolverState,
    template: NodeTemplate,
    unit: Unit,
    limited: bool,
    names: list[str],
    room: list[int] | None,
    types: list[BinType],
) -> str:
    name = f"pool {template.name}"
    if limited and room is not None:
        fitting = [
            t
            for t in types
            if all(
                r >= d for r, d in zip(t.room, (unit.cls.requests.get(x) for x in solver.dims), strict=True)
            )
        ]
        for position, resource in enumerate(names):
            smallest = min((t.limit_usage[position] for t in fitting), default=0)
            if room[position] < smallest and resource in COST_LIMITS:
                return cost_reason(solver, template, resource)
            if room[position] < smallest:
                limit = template.pool.limits.amount(resource)
                return f"{name}: {resource} limit {format_quantity(resource, limit)} reached"
        return f"{name}: its limits are reached"
    if any(t.topology_key == HOSTNAME for t in unit.variant.affinity):
        return f"{name}: pods with hostname affinity must share one node and do not fit on one"
    narrow = min_values_narrow(solver, template)
    if narrow and all(
        i in narrow for i, option in enumerate(template.options) if unit.cls.requests.fits(option.room)
    ):
        wanted = ", ".join(
            f"{item.min_values} values of {item.key}"
            for item in template.requirements.items
            if item.min_values
        )
        return f"{name}: no instance type that fits the pod leaves minValues ({wanted}) to fall back on"
    return f"{name}: no instance type can take the pod next to its constraints"


def offer_allowed(offer: Offer, requirements: Requirements) -> bool:
    return requirements.allows(wk.ZONE, offer.zone) and requirements.allows(
        wk.CAPACITY_TYPE, offer.capacity_type
    )


def _place_allowed(memo: dict[tuple[str, str], bool], offer: Offer, requirements: Requirements) -> bool:
    """`offer_allowed`, memoised per (zone, capacity type): thousands of offers share a handful of them."""
    place = (offer.zone, offer.capacity_type)
    found = memo.get(place)
    if found is None:
        found = memo[place] = offer_allowed(offer, requirements)
    return found
