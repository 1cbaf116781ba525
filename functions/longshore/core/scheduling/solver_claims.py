"""Phase 5: each packed node becomes a `ClaimPlan` with its narrowed requirements and fallbacks.

What the replicas of a packed pattern share (requirements, labels, requests, domains but the hostname) is
made once per pattern and fallback list (`claim_shape`); each replica takes its own pods, name and hostname
(`add_claim`), so 4,000 claims of a few hundred patterns cost little more than the patterns.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace

from longshore.core import labels as wk
from longshore.core.model import Pairs
from longshore.core.pods import Pod
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling.packer import BinType, Item, Offer, PackedNode
from longshore.core.scheduling.plan import ClaimPlan, OfferingOption
from longshore.core.scheduling.solver_state import HOSTNAME, Placed, SolverState, Unit
from longshore.core.scheduling.templates import (
    NodeTemplate,
    TypeOption,
)


def fallback_offerings(
    solver: SolverState,
    template: NodeTemplate,
    items: list[Item],
    offers: list[Offer],
    options: tuple[TypeOption, ...],
    rooms: list[tuple[int, ...]],
    offer_index: int,
    contents: tuple[tuple[int, int], ...],
) -> tuple[OfferingOption, ...]:
    """Every offering all the node's pods accept whose type holds them, cheapest first, <= N types (the
    N keep the pool's `minValues`)."""
    mask = -1
    load = [0] * len(rooms[0]) if rooms else []
    for k, count in contents:
        mask &= items[k].offers
        for r, amount in enumerate(items[k].demand):
            load[r] += amount * count
    memo_key = (mask, tuple(load), offer_index)
    known = solver.fallback_cache.get(memo_key)
    if known is not None:
        return known
    order, per_type = _type_order(solver, mask, offers)
    limit = solver.inp.max_instance_types
    bounded = not any(item.min_values for item in template.requirements.items)
    fitting: list[int] = []
    for type_index in order:
        if all(map(operator.ge, rooms[type_index], load)):
            fitting.append(type_index)
            if bounded and len(fitting) >= limit:
                break
    names = [options[t].name for t in fitting]
    kept = set(_truncate(solver, template, names))
    rows: list[tuple[float, int, str, str, str, int]] = []
    for type_index in fitting:
        name = options[type_index].name
        if name in kept:
            for index in per_type[type_index]:
                offer = offers[index]
                rows.append(
                    (
                        offer.price,
                        0 if index == offer_index else 1,
                        name,
                        offer.zone,
                        offer.capacity_type,
                        index,
                    )
                )
    rows.sort()
    made = solver.offering_options  # one OfferingOption per offer, shared by every claim's list
    found = tuple(
        made.get(index) or made.setdefault(index, OfferingOption(name, zone, ct, price))
        for price, _, name, zone, ct, index in rows
    )
    solver.fallback_cache[memo_key] = found
    return found


class LimitedFallbacks:
    """Fallback types kept within the pool's limits, as Karpenter's scheduler does (`filterByRemainingResources`
    then `subtractMax` in kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go): a
    claim may fall back only to types whose capacity fits what is left, and what it could use at most is
    taken from what is left. Here the packer has already budgeted every claim's chosen type, so the slack
    (limits - usage - the chosen types) is what fallbacks may use beyond their claim's chosen type; claims
    take it in order, so the limits hold even if every claim launches its largest fallback."""

    def __init__(self, usage: dict[str, tuple[int, ...]], slack: list[int]) -> None:
        self.usage = usage  # type name -> what one node counts against each limit
        self.slack = slack
        # (id of the fallback list, chosen type, slack) -> kept offerings, their requirements, slack they take
        self.memo: dict[tuple[int, str, tuple[int, ...]], _Kept] = {}
        self.alive: list[tuple[OfferingOption, ...]] = []  # the lists memo keys name by id stay alive

    @staticmethod
    def of(
        types: list[BinType], room: list[int], nodes: tuple[PackedNode, ...], offers: list[Offer]
    ) -> LimitedFallbacks:
        slack = list(room)
        for node in nodes:
            for r, amount in enumerate(types[offers[node.offer].type_index].limit_usage):
                slack[r] -= amount * node.replicas
        return LimitedFallbacks({t.name: t.limit_usage for t in types}, slack)

    def hold_anyway(self, patterns: list[tuple[tuple[str, ...], str, int]]) -> bool:
        """Whether the limits hold even if every claim of these (type names, chosen type, replicas) patterns
        launches its largest fallback type (then no list needs filtering: pools with roomy limits)."""
        extra = [0] * len(self.slack)
        most: dict[tuple[tuple[str, ...], str], list[int]] = {}  # patterns share lists: each once
        for names, chosen, replicas in patterns:
            over = most.get((names, chosen))
            if over is None:
                base = self.usage[chosen]
                over = most[(names, chosen)] = [
                    max(0, *(self.usage[name][r] - base[r] for name in names)) for r in range(len(extra))
                ]
            for r in range(len(extra)):
                extra[r] += replicas * over[r]
        return all(e <= s for e, s in zip(extra, self.slack, strict=True))

    def take(
        self, fallback: tuple[OfferingOption, ...], chosen: str
    ) -> tuple[tuple[OfferingOption, ...], tuple[Requirements, tuple[str, ...]]]:
        """The fallbacks of one claim priced on `chosen`, and their requirements; takes their slack."""
        key = (id(fallback), chosen, tuple(self.slack))
        known = self.memo.get(key)
        if known is None:
            base = self.usage[chosen]
            allowed = {
                name
                for name in dict.fromkeys(o.instance_type for o in fallback)
                if name == chosen
                or all(u - b <= s for u, b, s in zip(self.usage[name], base, self.slack, strict=True))
            }
            kept = tuple(o for o in fallback if o.instance_type in allowed)
            extra = tuple(
                max(0, *(self.usage[name][r] - base[r] for name in allowed)) for r in range(len(base))
            )
            known = self.memo[key] = (kept, offering_requirements(kept), extra)
            self.alive.append(fallback)
        kept, narrowing, extra = known
        self.slack = [s - e for s, e in zip(self.slack, extra, strict=True)]
        return kept, narrowing


_Kept = tuple[tuple[OfferingOption, ...], tuple[Requirements, tuple[str, ...]], tuple[int, ...]]


def _type_order(
    solver: SolverState, mask: int, offers: list[Offer]
) -> tuple[list[int], dict[int, list[int]]]:
    """For an offer mask: type indexes by their cheapest offer in the mask, and each type's offers in it."""
    found = solver.type_order_cache.get(mask)
    if found is None:
        per_type: dict[int, list[int]] = {}
        bits = format(mask, "b")[::-1].ljust(len(offers), "0")  # bit i without copying the mask
        for index in solver.offer_order:
            if bits[index] == "1":
                per_type.setdefault(offers[index].type_index, []).append(index)
        found = (list(per_type), per_type)
        solver.type_order_cache[mask] = found
    return found


def _truncate(solver: SolverState, template: NodeTemplate, names: list[str]) -> list[str]:
    """At most `max_instance_types` of `names` (cheapest first), keeping `minValues` distinct values per
    key when the whole list has them: a type that brings a value still missing is always kept, any other
    only while the slots left cover the values still missing."""
    limit = solver.inp.max_instance_types
    if len(names) <= limit:
        return names
    requirements = template.requirements
    wanted = [(item.key, item.min_values) for item in requirements.items if item.min_values]
    if not wanted:
        return names[:limit]
    by_name = {option.name: option for option in template.options}
    seen: dict[str, set[str]] = {key: set() for key, _ in wanted}
    chosen: list[str] = []
    for name in names:
        labels = _type_values(by_name[name], requirements, wanted)
        missing = sum(max(0, minimum - len(seen[key])) for key, minimum in wanted)
        brings = any(len(seen[key]) < minimum and labels[key] - seen[key] for key, minimum in wanted)
        if brings or len(chosen) + 1 + missing <= limit:
            chosen.append(name)
            for key, _ in wanted:
                seen[key] |= labels[key]
            if len(chosen) >= limit:
                break
    return chosen


def _type_values(
    option: TypeOption, requirements: Requirements, wanted: list[tuple[str, int]]
) -> dict[str, set[str]]:
    own = option.instance_type.requirements()
    return {
        key: {value for value in (own.values(key) or ()) if requirements.allows(key, value)}
        for key, _ in wanted
    }


def min_values_narrow(solver: SolverState, template: NodeTemplate) -> set[int]:
    """Types a claim must not be packed into under `minValues` (policy Strict): those for which the types
    at least as big (the claim's fallback list) no longer offer `minValues` distinct values of some key."""
    requirements = template.requirements
    wanted = [(item.key, item.min_values) for item in requirements.items if item.min_values]
    if not wanted or solver.inp.settings.min_values_policy != "Strict":
        return set()
    options = template.options
    values = [_type_values(option, requirements, wanted) for option in options]
    rooms = [option.room for option in options]
    narrow: set[int] = set()
    for i, room in enumerate(rooms):
        seen: dict[str, set[str]] = {key: set() for key, _ in wanted}
        for j, other in enumerate(rooms):
            if room.fits(other):
                for key, _ in wanted:
                    seen[key] |= values[j][key]
                if all(len(seen[key]) >= minimum for key, minimum in wanted):
                    break
        if any(len(seen[key]) < minimum for key, minimum in wanted):
            narrow.add(i)
    return narrow


def min_values_met(
    solver: SolverState, template: NodeTemplate, requirements: Requirements, type_names: tuple[str, ...]
) -> tuple[Requirements, bool | None]:
    """The claim's requirements and whether a `minValues` was relaxed (None: it has none). Under `Strict`
    every claim keeps its `minValues` (`min_values_narrow`); under `BestEffort` a claim whose types offer
    fewer distinct values is launched anyway with `minValues` lowered to what they offer, as Karpenter's
    scheduler relaxes it and marks the NodeClaim `karpenter.sh/nodeclaim-min-values-relaxed`."""
    wanted = [(item.key, item.min_values) for item in requirements.items if item.min_values]
    if not wanted:
        return requirements, None
    by_name = {option.name: option for option in template.options}
    seen: dict[str, set[str]] = {key: set() for key, _ in wanted}
    for name in type_names:
        for key, values in _type_values(by_name[name], requirements, wanted).items():
            seen[key] |= values
    short = {key: len(seen[key]) for key, minimum in wanted if len(seen[key]) < minimum}
    if not short or solver.inp.settings.min_values_policy != "BestEffort":
        return requirements, False
    items = tuple(
        replace(item, min_values=max(1, short[item.key])) if item.key in short else item
        for item in requirements.items
    )
    return Requirements(items), True


@dataclass(frozen=True, slots=True)
class ClaimShape:
    """What every replica of a packed node shares (`claim_shape`): computed once per pattern and list of
    fallbacks, not per claim (a 20,000-pod plan has 4,000 claims of a few hundred patterns)."""

    narrowing: tuple[Requirements, tuple[str, ...]]  # the fallbacks' requirements it was made for
    counts: tuple[int, ...]  # pods per item of the node's contents
    load: Resources  # their requests
    requirements: Requirements
    relaxed: bool | None
    labels: Pairs
    domains: dict[str, str]  # the claim's topology domains but its hostname
    offer: Offer
    option: TypeOption


def claim_shape(
    solver: SolverState,
    template: NodeTemplate,
    units: list[Unit],
    offers: list[Offer],
    options: tuple[TypeOption, ...],
    offer_index: int,
    contents: tuple[tuple[int, int], ...],
    narrowing: tuple[Requirements, tuple[str, ...]],
) -> ClaimShape:
    """The requirements, labels, requests and domains of a claim for `contents` priced at `offer_index`."""
    load = Resources.of(  # the sum of each item's requests times its count, in one pass
        (name, amount * count) for k, count in contents for name, amount in units[k].cls.requests.items
    )
    offered, type_names = narrowing
    memo_key = (template.name, tuple(units[k].requirements for k, _ in contents), offered)
    requirements = solver.claim_requirements.get(memo_key)  # patterns alike share them
    if requirements is None:
        requirements = template.requirements
        for k, _ in contents:
            requirements = requirements.intersect(units[k].requirements)
        requirements = requirements.intersect(offered)
        solver.claim_requirements[memo_key] = requirements
    requirements, relaxed = min_values_met(solver, template, requirements, type_names)
    chosen = offers[offer_index]
    labels = {**dict(template.labels), **requirements.single_values()}
    domains = {**labels, wk.ZONE: chosen.zone, wk.CAPACITY_TYPE: chosen.capacity_type}
    return ClaimShape(
        narrowing,
        tuple(count for _, count in contents),
        load,
        requirements,
        relaxed,
        tuple(sorted(labels.items())),
        domains,
        chosen,
        options[chosen.type_index],
    )


def add_claim(
    solver: SolverState,
    template: NodeTemplate,
    units: list[Unit],
    contents: tuple[tuple[int, int], ...],
    fallback: tuple[OfferingOption, ...],
    shape: ClaimShape,
) -> None:
    """One claim of `shape` (`claim_shape` of these `contents`) with the next pods of its units."""
    pods: list[Pod] = []
    counts = []
    for k, count in contents:
        unit = units[k]
        taken, unit.pods = unit.pods[:count], unit.pods[count:]
        pods.extend(taken)
        counts.append(len(taken))
    load = shape.load
    if tuple(counts) != shape.counts:  # fewer pods left than packed: the requests of those taken
        load = Resources.of(
            (name, amount * count)
            for (k, _), count in zip(contents, counts, strict=True)
            for name, amount in units[k].cls.requests.items
        )
    number = solver.claim_counter.get(template.name, 0) + 1
    solver.claim_counter[template.name] = number
    name = f"{template.name}-{number}"
    chosen, option = shape.offer, shape.option
    solver.claims.append(
        ClaimPlan(
            name=name,
            nodepool=template.name,
            node_class=template.node_class.name,
            requirements=shape.requirements,
            instance_types=shape.narrowing[1],
            offerings=fallback,
            instance_type=option.name,
            zone=chosen.zone,
            capacity_type=chosen.capacity_type,
            price_per_hour=chosen.price,
            pods=tuple(p.key for p in pods),
            allocatable=option.allocatable,
            daemonset_overhead=option.daemon_overhead,
            requests=load,
            labels=shape.labels,
            taints=template.taints,
            startup_taints=template.startup_taints,
            min_values_relaxed=shape.relaxed,
        )
    )
    domains = {**shape.domains, HOSTNAME: name}
    for k, count in contents:
        unit = units[k]
        solver.record(
            Placed(unit.cls.labels, unit.cls.example.namespace, domains, count, unit.variant.anti_affinity)
        )


def offering_requirements(fallback: tuple[OfferingOption, ...]) -> tuple[Requirements, tuple[str, ...]]:
    """What a claim's offerings allow (types, capacity types, zones), and its type names cheapest first."""
    type_names = tuple(dict.fromkeys(o.instance_type for o in fallback))
    offered = Requirements(
        (
            KeyRequirement.in_(wk.INSTANCE_TYPE, type_names),
            KeyRequirement.in_(wk.CAPACITY_TYPE, {o.capacity_type for o in fallback}),
            KeyRequirement.in_(wk.ZONE, {o.zone for o in fallback}),
        )
    )
    return offered, type_names
