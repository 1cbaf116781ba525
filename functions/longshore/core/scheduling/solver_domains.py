"""Phase 2: split each class into units pinned to domains of non-hostname topology keys."""

from __future__ import annotations

import heapq
from dataclasses import replace
from itertools import combinations, islice
from math import comb
from typing import Literal

from longshore.core import labels as wk
from longshore.core.pods import Pod, PodAffinityTerm, TopologySpread
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.scheduling.solver_existing import node_admits
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    Placed,
    PodClass,
    Possible,
    SolverState,
    Unit,
    anchor,
    selects,
    self_selects,
    spread_matches,
)
from longshore.core.scheduling.solver_variants import (
    next_variant,
    places_by_type,
    pool_refusal,
    serving_types,
)
from longshore.core.taints import Toleration, tolerates

# How `_universe` counts: "any" (pools that take the pods, nodes whatever their taints: affinity domains),
# "reach" (the values the pods can actually get: pools that take them, nodes with room for one), and a
# spread's domains by its nodeTaintsPolicy: "Honor" (pools and nodes whose taints the pods tolerate) or
# "Ignore" (the default: pools and nodes count whatever their taints)
Mode = Literal["any", "reach", "Honor", "Ignore"]
_TOLERATE_ALL = (Toleration(operator="Exists"),)
_CHOICES_CAP = 1 << 20  # `anti_choices` only tells `solve` whether more than its few members exist


def _universe(
    solver: SolverState, cls: PodClass, requirements: Requirements, key: str, mode: Mode = "any"
) -> list[str]:
    cache_key = (cls.requests, cls.example.tolerations, requirements, key, mode)
    found = solver.universe_cache.get(cache_key)
    if found is None:
        found = _compute_universe(solver, cls, requirements, key, mode)
        solver.universe_cache[cache_key] = found
    return list(found)


def _compute_universe(
    solver: SolverState, cls: PodClass, requirements: Requirements, key: str, mode: Mode
) -> list[str]:
    values: set[str] = set()
    variant = cls.variant
    assert variant is not None
    tolerant: PodClass | None = None
    for template in solver.templates:
        if pool_refusal(solver, template, cls, variant, requirements) is not None:
            if mode != "Ignore" or not template.taints:
                continue
            if tolerant is None:
                tolerant = replace(cls, example=replace(cls.example, tolerations=_TOLERATE_ALL))
            if pool_refusal(solver, template, tolerant, variant, requirements) is not None:
                continue
        merged = template.requirements.intersect(requirements)
        if key in (wk.ZONE, wk.CAPACITY_TYPE):  # the offerings decide: those of types that fit the pod
            for room, places in places_by_type(solver, template, merged, key):
                if not places <= values and cls.requests.fits(room):  # nothing new: skip the fit test
                    values.update(places)
            continue
        allowed = merged.values(key)
        if allowed is None:  # open (Exists, NotIn, or only the types define it): the types' own values
            options = template.options
            found = (options[i].instance_type.label(key) for i in serving_types(solver, template, merged))
            allowed = frozenset(v for v in found if v is not None)
        values.update(allowed)
    for state in (*solver.nodes, *solver.in_flight):
        value = state.labels.get(key)
        if value is None or value in values:
            continue
        if mode == "reach":
            fits = all(state.free.get(name, 0) >= amount for name, amount in cls.requests.items)
            if fits and node_admits(solver, state, cls, variant, requirements):
                values.add(value)
        elif requirements.matches(state.labels) and (
            mode != "Honor" or tolerates(cls.example.tolerations, state.taints)
        ):
            values.add(value)
    return sorted(v for v in values if requirements.allows(key, v))


def split_units(solver: SolverState, cls: PodClass) -> list[Unit]:
    variant = cls.variant
    assert variant is not None
    units = [Unit(cls, variant.requirements, list(cls.pods))]
    solver.before_class = len(solver.placed)
    for term in variant.anti_affinity:
        if term.topology_key != HOSTNAME:
            units = [u for unit in units for u in _split_anti(solver, unit, term)]
    units = [u for unit in units for u in _split_inverse_anti(solver, unit)]
    for term in variant.affinity:
        if term.topology_key != HOSTNAME:
            units = [u for unit in units for u in _split_affinity(solver, unit, term)]
    left: list[tuple[list[Pod], str]] = []
    for spread in variant.spreads:
        if spread.topology_key != HOSTNAME:
            units = [u for unit in units for u in _split_spread(solver, unit, spread, left)]
    units = [u for unit in units for u in _pin_targets(solver, unit)]
    units = [u for u in units if u.pods]
    if solver.anti_keys:
        _record_possible(solver, cls, units)
    for pods, reason in left:  # what a spread could not place relaxes one more step, as in Karpenter
        relaxed = PodClass(pods, cls.example, cls.requests, cls.labels)
        relaxed.variant = next_variant(solver, cls)
        if relaxed.variant is None:
            solver.fail(Unit(cls, variant.requirements, pods), reason)
        else:
            solver.relaxed.append(relaxed)
            units.extend(split_units(solver, relaxed))
    return units


def _pin_targets(solver: SolverState, unit: Unit) -> list[Unit]:
    """When pending pods' required affinity selects the unit, pin one of its pods to one domain of each such
    key and record it there, so those pods (split later: `solve` defers them) find it, as Karpenter places
    the target first and its followers next to it. One pod is enough to follow; the others stay free (a
    unit already pinned on the key is recorded there already)."""
    owner = unit.cls.example
    keys = dict.fromkeys(
        term.topology_key
        for namespace, term in solver.batch_affinity
        if term.topology_key not in unit.pinned
        and term.covers_namespace(namespace, owner.namespace)
        and term.selector.matches(unit.cls.labels)
    )
    if not keys or not unit.pods:
        return [unit]
    one = Unit(unit.cls, unit.requirements, unit.pods[:1], pinned=unit.pinned)
    unit.pods = unit.pods[1:]
    for key in keys:
        domains = _universe(solver, one.cls, one.requirements, key, "reach")
        if domains:
            one = _pin(solver, one, key, domains[0], 1)
    return [one, unit]


def _record_possible(solver: SolverState, cls: PodClass, units: list[Unit]) -> None:
    """Every value of the batch's anti-affinity keys each unit may still get (see `Possible`), so classes
    split later keep away from them (or from these pods' own anti-affinity) whatever the packer picks."""
    variant = cls.variant
    assert variant is not None
    terms = tuple(t for t in variant.anti_affinity if t.topology_key != HOSTNAME)
    for unit in units:
        values = {key: frozenset(_universe(solver, cls, unit.requirements, key)) for key in solver.anti_keys}
        solver.possible.append(Possible(cls.labels, cls.example.namespace, values, terms))


def _pin(solver: SolverState, unit: Unit, key: str, value: str, count: int) -> Unit:
    pods, unit.pods = unit.pods[:count], unit.pods[count:]
    pinned = Unit(
        unit.cls,
        unit.requirements.intersect(Requirements((KeyRequirement.in_(key, (value,)),))),
        pods,
        pinned=(*unit.pinned, key),
    )
    solver.record(
        Placed(
            unit.cls.labels,
            unit.cls.example.namespace,
            {key: value},
            len(pods),
            unit.variant.anti_affinity,
        )
    )
    return pinned


def _split_spread(
    solver: SolverState, unit: Unit, spread: TopologySpread, left: list[tuple[list[Pod], str]]
) -> list[Unit]:
    """Water-fill the unit's pods over the domains it can reach, lowest count first, while a domain stays
    within maxSkew of the lowest count over all the spread's domains (kube-scheduler's rule: a domain no
    pod can reach still counts, so the reachable ones may run up to maxSkew above it). Pods left over go
    to `left` with the reason."""
    key = spread.topology_key
    owner = unit.cls.example
    variant = unit.variant
    narrowing = unit.requirements
    if spread.node_affinity_policy == "Ignore":  # the pod's node affinity does not restrict the domains
        narrowing = Requirements(())
    elif variant.required is not None and variant.required != variant.requirements:
        narrowing = variant.required  # a preferred node term never narrows the domains
    domains = _universe(solver, unit.cls, narrowing, key, spread.node_taints_policy)
    reachable = set(_universe(solver, unit.cls, unit.requirements, key, "reach"))
    reachable &= set(domains)
    if not reachable:
        left.append((unit.pods, f"topology spread on {key}: no eligible {key} value"))
        unit.pods = []
        return []
    matching = solver.tally(
        ("spread", owner.namespace, spread),
        key,
        lambda placed: spread_matches(owner, spread, placed.labels, placed.namespace),
        anchor(spread.selector),
    )
    counts = {d: matching.get(d, 0) for d in domains}
    step = 1 if spread_matches(owner, spread, unit.cls.labels, owner.namespace) else 0
    below_min_domains = spread.min_domains is not None and len(domains) < spread.min_domains
    # counts only grow, and only in reachable domains: the others' lowest count is fixed
    fixed_floor = min((counts[d] for d in domains if d not in reachable), default=None)
    heap = [(counts[d], index, d) for index, d in enumerate(domains) if d in reachable]
    heapq.heapify(heap)
    quota = dict.fromkeys(domains, 0)
    total = len(unit.pods)
    assigned = 0
    while assigned < total:
        count, index, domain = heap[0]
        floor = 0 if below_min_domains else (count if fixed_floor is None else min(count, fixed_floor))
        if count + step - floor > spread.max_skew:
            break
        quota[domain] += 1
        assigned += 1
        heapq.heapreplace(heap, (count + step, index, domain))
    units = [_pin(solver, unit, key, d, quota[d]) for d in domains if quota[d]]
    if unit.pods:
        reason = (
            f"topology spread on {key} (maxSkew {spread.max_skew}"
            + (
                f", minDomains {spread.min_domains}, only {len(domains)} eligible"
                if below_min_domains
                else ""
            )
            + ") cannot place more pods"
        )
        left.append((unit.pods, reason))
        unit.pods = []
    return units


def _split_affinity(solver: SolverState, unit: Unit, term: PodAffinityTerm) -> list[Unit]:
    key = term.topology_key
    owner = unit.cls.example
    domains = _universe(solver, unit.cls, unit.requirements, key)
    with_pods = [d for d, n in sorted(solver.domains_with(owner, term).items()) if n > 0 and d in domains]
    if with_pods:
        if len(with_pods) == 1:
            return [_pin(solver, unit, key, with_pods[0], len(unit.pods))]
        unit.requirements = unit.requirements.intersect(Requirements((KeyRequirement.in_(key, with_pods),)))
        return [unit]
    if self_selects(unit.cls, term) and domains:
        return [_pin(solver, unit, key, domains[0], len(unit.pods))]
    solver.fail(
        unit, f"pod affinity on {key} to pods matching {term.selector.describe()}: no eligible domain"
    )
    return []


def _split_anti(solver: SolverState, unit: Unit, term: PodAffinityTerm) -> list[Unit]:
    key = term.topology_key
    owner = unit.cls.example
    domains = _universe(solver, unit.cls, unit.requirements, key)
    taken = solver.domains_with(owner, term)
    for entry in solver.possible:  # pending pods of classes split before, wherever they may land
        if selects(owner, term, entry.labels, entry.namespace):
            taken.update(dict.fromkeys(entry.values.get(key, ()), 1))
    free = [d for d in domains if not taken.get(d)]
    if not self_selects(unit.cls, term):
        if not free:
            solver.fail(
                unit,
                f"pod anti-affinity on {key}: every domain has a pod matching {term.selector.describe()}",
            )
            return []
        unit.requirements = unit.requirements.intersect(Requirements((KeyRequirement.in_(key, free),)))
        return [unit]
    units = [_pin(solver, unit, key, d, 1) for d in _choose(solver, free, len(unit.pods))]
    if unit.pods:
        solver.fail(unit, f"pod anti-affinity on {key}: only {len(free)} {key} domains are free")
    return units


def _choose(solver: SolverState, free: list[str], count: int) -> list[str]:
    """The free domains a self-selecting anti-affine unit of `count` pods takes, one pod each: the
    `solver.anti_choice`-th (modulo their number) of the combinations of `free` in lexicographic order, so
    choice 0 is the first free domains. When there is a choice, `solver.anti_choices` records how many
    combinations the batch offers (their product over units, capped), for `solve`'s zone portfolio."""
    if count >= len(free):
        return free
    total = comb(len(free), count)
    solver.anti_choices = min(solver.anti_choices * total, _CHOICES_CAP)
    index = solver.anti_choice % total
    return list(next(islice(combinations(free, count), index, None)))


def _split_inverse_anti(solver: SolverState, unit: Unit) -> list[Unit]:
    """Running (or planned) pods whose required anti-affinity selects this class exclude their domains."""
    labels, namespace = unit.cls.labels, unit.cls.example.namespace
    excluded: dict[str, set[str]] = {}
    for position, placed in solver.domain_anti:
        if position >= solver.before_class:
            break  # not this class's own pinned siblings
        for term in placed.anti_affinity:
            if term.topology_key == HOSTNAME:
                continue
            value = placed.domains.get(term.topology_key)
            if value is None:
                continue
            own = term.namespaces or (placed.namespace,)
            if (term.all_namespaces or namespace in own) and term.selector.matches(labels):
                excluded.setdefault(term.topology_key, set()).add(value)
    for entry in solver.possible:  # pending pods split before, with anti-affinity: every value they may get
        for term in entry.anti_affinity:
            if term.covers_namespace(entry.namespace, namespace) and term.selector.matches(labels):
                excluded.setdefault(term.topology_key, set()).update(entry.values.get(term.topology_key, ()))
    for key, values in excluded.items():
        before = _universe(solver, unit.cls, unit.requirements, key)
        unit.requirements = unit.requirements.intersect(
            Requirements((KeyRequirement.make(key, True, values),))
        )
        if before and not any(unit.requirements.allows(key, value) for value in before):
            solver.fail(unit, f"pod anti-affinity of other pods on {key} excludes every {key} it may use")
            return []
    return [unit]
