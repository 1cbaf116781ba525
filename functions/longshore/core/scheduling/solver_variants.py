"""Phase 1: the strictest relaxation state of each pod class that some node or pool could host."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.quantity import format_quantity
from longshore.core.requirements import RequirementError, Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling.podreqs import Variant, ladder
from longshore.core.scheduling.solver_existing import node_admits
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    PodClass,
    SolverState,
    friendly,
    selects,
    self_selects,
)
from longshore.core.scheduling.templates import (
    NodeTemplate,
    offering_judge,
)
from longshore.core.taints import untolerated_reason


def choose_variant(solver: SolverState, cls: PodClass) -> None:
    try:
        variants = ladder(cls.example, prefer_no_schedule_exists=solver.prefer_no_schedule)
    except RequirementError as exc:
        cls.reason = f"invalid node requirements: {exc}"
        return
    last_reason = ""
    for variant in variants:
        reason = _infeasible(solver, cls, variant)
        if reason is None:
            cls.variant = variant
            return
        if not last_reason:
            last_reason = reason
    cls.reason = last_reason


def next_variant(solver: SolverState, cls: PodClass) -> Variant | None:
    """The next relaxation state after the class's own that some node or pool could host (None: none is
    left). Pods the domain split cannot place under a state relax one more step, as Karpenter relaxes a pod
    that fails to schedule (`preferences.go`)."""
    variants = ladder(cls.example, prefer_no_schedule_exists=solver.prefer_no_schedule)
    if cls.variant not in variants:
        return None
    for variant in variants[variants.index(cls.variant) + 1 :]:
        if _infeasible(solver, cls, variant) is None:
            return variant
    return None


def pool_refusal(
    solver: SolverState,
    template: NodeTemplate,
    cls: PodClass,
    variant: Variant,
    requirements: Requirements | None = None,
) -> str | None:
    """Why this pool can never host the class (None when it can; memoised: classes share the inputs)."""
    wanted = variant.requirements if requirements is None else requirements
    key = (
        template.name,
        cls.example.tolerations,
        variant.tolerate_prefer_no_schedule,
        wanted,
        cls.requests,
        cls.example.host_ports,
    )
    if key in solver.refusals:
        return solver.refusals[key]
    found = _refusal(solver, template, cls, variant, wanted)
    solver.refusals[key] = found
    return found


def _refusal(
    solver: SolverState, template: NodeTemplate, cls: PodClass, variant: Variant, wanted: Requirements
) -> str | None:
    name = f"pool {template.name}"
    if template.problem:
        return template.problem
    taint_reason = untolerated_reason(
        cls.example.tolerations,
        [
            t
            for t in template.taints
            if not (variant.tolerate_prefer_no_schedule and t.effect == "PreferNoSchedule")
        ],
        subject=name,
    )
    if taint_reason:
        return f"{name}: {taint_reason}"
    admission = template.requirements.admission_failure(wanted, subject=name)
    if admission:
        return f"{name}: {admission}"
    merged = template.requirements.intersect(wanted)
    serving = serving_types(solver, template, merged)
    if not serving:
        return f"{name}: no instance type satisfies {merged.without(wk.NODEPOOL).describe()}"
    fit_key = (template.name, merged, cls.requests, cls.example.host_ports)
    known = solver.fitting_cache.get(fit_key)
    if known:
        return None
    compatible = [template.options[i] for i in serving]
    requests = cls.requests
    ports = set(cls.example.host_ports)
    fitting = (
        [o for o in compatible if requests.fits(o.room)]
        if ports
        else [o for o in (next((o for o in compatible if requests.fits(o.room)), None),) if o is not None]
    )
    if not fitting:
        for resource, amount in cls.requests.items:
            largest = max(o.room.get(resource) for o in compatible)
            if largest < amount:
                return (
                    f"{name}: no instance type has {friendly(resource, amount)} "
                    f"(the largest has {format_quantity(resource, max(largest, 0))} after overhead and DaemonSets)"
                )
        return f"{name}: no instance type has room for the pod's requests"
    if ports and all(any(p.conflicts(q) for p in ports for q in o.daemon_ports) for o in fitting):
        return f"{name}: a DaemonSet already uses the pod's host ports on every instance type"
    solver.fitting_cache[fit_key] = True
    return None


def serving_types(solver: SolverState, template: NodeTemplate, requirements: Requirements) -> list[int]:
    """Indexes of the template's types that serve `requirements` (memoised: classes share them).

    Compatibility is checked per key, and an allowed offering already implies the zone and capacity
    type keys are compatible, so the type test runs on the requirements without those keys (shared by
    classes that differ only in zone or capacity type) and the offerings on (zone, capacity type, zone
    id), which thousands of offerings share."""
    key = (template.name, requirements)
    found = solver.serving_cache.get(key)
    if found is None:
        placeless = requirements.without(wk.ZONE, wk.CAPACITY_TYPE, wk.ZONE_ID)
        type_key = (template.name, placeless)
        compatible = solver.compatible_cache.get(type_key)
        if compatible is None:
            compatible = [o.instance_type.requirements().compatible(placeless) for o in template.options]
            solver.compatible_cache[type_key] = compatible
        allowed = offering_judge(requirements)
        found = [
            i
            for i, o in enumerate(template.options)
            if compatible[i] and any(allowed(offering) for offering in o.offerings)
        ]
        solver.serving_cache[key] = found
    return found


def places_by_type(
    solver: SolverState, template: NodeTemplate, merged: Requirements, key: str = wk.ZONE
) -> list[tuple[Resources, frozenset[str]]]:
    """(room, the zones or capacity types (`key`) of its allowed offerings) per type serving `merged`
    (memoised)."""
    cache_key = (template.name, merged, key)
    found = solver.zones_cache.get(cache_key)
    if found is None:
        found = []
        zonal = key == wk.ZONE
        for index in serving_types(solver, template, merged):
            option = template.options[index]
            places = frozenset(
                o.zone if zonal else o.capacity_type for o in option.offerings if o.allowed_by(merged)
            )
            if places:
                found.append((option.room, places))
        solver.zones_cache[cache_key] = found
    return found


def _infeasible(solver: SolverState, cls: PodClass, variant: Variant) -> str | None:
    topology = _topology_refusal(solver, cls, variant)
    if topology:
        return topology
    for state in (*solver.nodes, *solver.in_flight):
        if node_admits(solver, state, cls, variant, variant.requirements) and cls.requests.fits(
            state.node.allocatable
        ):
            return None
    reasons = []
    for template in solver.templates:
        refusal = pool_refusal(solver, template, cls, variant)
        if refusal is None:
            return None
        reasons.append(refusal)
    if not reasons:
        return "no node pool is configured and no existing node can run it"
    return "; ".join(reasons)


def _topology_refusal(solver: SolverState, cls: PodClass, variant: Variant) -> str | None:
    for term in variant.affinity:
        if term.topology_key == HOSTNAME:
            continue
        if not self_selects(cls, term) and not solver.domains_with(cls.example, term):
            return (
                f"pod affinity on {term.topology_key} to pods matching {term.selector.describe()}: "
                "no such pod is running"
            )
    for term in variant.affinity:
        if (
            term.topology_key == HOSTNAME
            and not self_selects(cls, term)
            and not any(selects(cls.example, term, p.labels, p.namespace) for p in solver.placed)
        ):
            return (
                f"pod affinity on {HOSTNAME} to pods matching {term.selector.describe()}: "
                "no such pod is running"
            )
    return None
