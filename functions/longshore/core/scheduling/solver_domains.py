"""Phase 2: split each class into units pinned to domains of non-hostname topology keys."""

from __future__ import annotations

import heapq

from longshore.core import labels as wk
from longshore.core.pods import PodAffinityTerm, TopologySpread
from longshore.core.requirements import KeyRequirement, Requirements
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    Placed,
    PodClass,
    Possible,
    SolverState,
    Unit,
    selects,
    self_selects,
    spread_matches,
)
from longshore.core.scheduling.solver_variants import places_by_type, pool_refusal, serving_types


def _universe(solver: SolverState, cls: PodClass, requirements: Requirements, key: str) -> list[str]:
    cache_key = (cls.requests, cls.example.tolerations, requirements, key)
    found = solver.universe_cache.get(cache_key)
    if found is None:
        found = _compute_universe(solver, cls, requirements, key)
        solver.universe_cache[cache_key] = found
    return list(found)


def _compute_universe(solver: SolverState, cls: PodClass, requirements: Requirements, key: str) -> list[str]:
    values: set[str] = set()
    variant = cls.variant
    assert variant is not None
    for template in solver.templates:
        if pool_refusal(solver, template, cls, variant, requirements) is not None:
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
        if value is not None and requirements.matches(state.labels):
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
    for spread in variant.spreads:
        if spread.topology_key != HOSTNAME:
            units = [u for unit in units for u in _split_spread(solver, unit, spread)]
    units = [u for u in units if u.pods]
    if solver.anti_keys:
        _record_possible(solver, cls, units)
    return units


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
        unit.cls, unit.requirements.intersect(Requirements((KeyRequirement.in_(key, (value,)),))), pods
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


def _split_spread(solver: SolverState, unit: Unit, spread: TopologySpread) -> list[Unit]:
    key = spread.topology_key
    owner = unit.cls.example
    domains = _universe(solver, unit.cls, unit.requirements, key)
    if not domains:
        solver.fail(unit, f"topology spread on {key}: no eligible {key} value")
        return []
    matching = solver.tally(
        ("spread", owner.namespace, spread),
        key,
        lambda placed: spread_matches(owner, spread, placed.labels, placed.namespace),
    )
    counts = {d: matching.get(d, 0) for d in domains}
    self_matches = spread_matches(owner, spread, unit.cls.labels, owner.namespace)
    below_min_domains = spread.min_domains is not None and len(domains) < spread.min_domains
    heap = [(counts[d], index, d) for index, d in enumerate(domains)]
    heapq.heapify(heap)
    quota = dict.fromkeys(domains, 0)
    total = len(unit.pods)
    assigned = 0
    while assigned < total:
        count, index, domain = heap[0]
        floor = 0 if below_min_domains else count
        if count + (1 if self_matches else 0) - floor > spread.max_skew:
            break
        quota[domain] += 1
        assigned += 1
        heapq.heapreplace(heap, (count + (1 if self_matches else 0), index, domain))
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
        solver.fail(unit, reason)
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
    units = [_pin(solver, unit, key, d, 1) for d in free[: len(unit.pods)]]
    if unit.pods:
        solver.fail(unit, f"pod anti-affinity on {key}: only {len(free)} {key} domains are free")
    return units


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
