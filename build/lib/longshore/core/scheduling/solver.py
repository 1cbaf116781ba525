"""The scheduler: place pending pods on existing nodes, in-flight claims, then new claims priced at least cost.

Theory of operation. `solve(SchedulingInput) -> Plan` runs six phases over *pod classes* (identical pods
grouped by `Pod.placement_signature`, so the work grows with classes, not pods):

1. *Variants.* Each class gets the strictest relaxation state (`podreqs.ladder`) that some existing node or
   some pool could ever host (taints, requirements, a type big enough, topology that can be satisfied).
   A class no state fits is unschedulable with the reason of every pool, e.g. "pool gpu: no instance type
   has 200Gi of memory".
2. *Domains.* Constraints on a topology key other than the hostname (zone spread, zone (anti-)affinity,
   spreads over custom labels such as `capacity-spread`) are decided up front: the class is split into
   *units*, each pinned to one domain value by water-filling the counts of matching pods (existing ones plus
   those already planned in this batch) so the skew stays within `maxSkew` (`minDomains` honoured);
   affinity pins to a domain that already has a matching pod (or one chosen domain when the class selects
   itself); anti-affinity, including the inverse anti-affinity of running pods, excludes domains.
3. *Existing nodes, then in-flight claims* (initialized first, then by name): free capacity is filled
   arithmetically per unit and node, honouring taints (startup/ephemeral ignored on nodes not yet
   initialized), requirements, host ports, hostname anti-affinity (both directions), hostname spread and
   hostname affinity.
4. *New claims, pool by pool in weight order.* Units a pool can take become packer items (count, request
   vector, the bitmask of the pool's offers they accept, per-node caps from hostname anti-affinity, spread and
   host ports, conflicts) and `packer.pack` chooses types, zones and capacity types at least total cost within
   the pool's limits. What a pool cannot take (limits, no fitting type) goes to the next pool.
5. *Claims.* Each packed node becomes a `ClaimPlan` with its narrowed requirements and every compatible
   offering cheapest first (≤ `max_instance_types` types) so a launch can fall back. The cut keeps the
   pool's `minValues`: a type bringing a value still missing is always kept, others only while the slots
   left cover the values still missing. Under the Strict policy a type is not packed into at all when the
   types at least as big (its claims' fallback list) cannot offer `minValues` distinct values; a pod only
   such types could hold is unschedulable with that reason.

6. *Spread repair.* When some pod is unschedulable, a domain spread split in phase 2 may have lost part of
   one domain's quota (a pool limit, no fitting type) and left the others ahead by more than maxSkew: the
   final per-domain counts are recomputed and offending pods are taken back off their new claims, one at a
   time, with a reason (claims left empty are dropped).

Existing nodes are checked against the inverse anti-affinity of their own pods through an index by hostname,
so filling 1,000 nodes does not rescan every placed pod per (node, class). Counts of placed pods per domain
are kept per selector and brought up to date incrementally; pool refusals, type compatibility (without the
zone and capacity-type keys, which the offerings decide) and offer masks are memoised, so 1,000 pod classes
cost little more than the packing itself.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.pods import Pod, PodAffinityTerm, TopologySpread
from longshore.core.quantity import format_quantity
from longshore.core.requirements import KeyRequirement, RequirementError, Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.packer import BinType, Item, Offer, pack
from longshore.core.scheduling.plan import ClaimPlan, ExistingPlacement, OfferingOption, Plan
from longshore.core.scheduling.podreqs import Variant, ladder, node_requirement_terms
from longshore.core.scheduling.templates import (
    POD_SLOT,
    NodeTemplate,
    TypeOption,
    build_templates,
    offering_judge,
)
from longshore.core.taints import scheduling_taints, tolerates, untolerated_reason

HOSTNAME = wk.HOSTNAME
_PACK_DIMS = ("cpu", "memory", "pods")


@dataclass(slots=True)
class _Class:
    pods: list[Pod]
    example: Pod
    requests: Resources
    labels: dict[str, str]
    variant: Variant | None = None
    reason: str | None = None


@dataclass(slots=True)
class _Unit:
    """Pods of one class pinned to the same domains; `pods` shrinks as they are placed."""

    cls: _Class
    requirements: Requirements
    pods: list[Pod]
    reasons: list[str] = field(default_factory=list)

    @property
    def variant(self) -> Variant:
        assert self.cls.variant is not None
        return self.cls.variant


@dataclass(slots=True)
class _NodeState:
    node: ExistingNode
    labels: dict[str, str]
    free: dict[str, int]
    pods: list[Pod]
    taints: tuple[Taint, ...]
    placed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Placed:
    """A pod (or many identical ones) the plan put somewhere, for topology counting."""

    labels: dict[str, str]
    namespace: str
    domains: dict[str, str]  # topology key -> value (hostname included when known)
    count: int
    anti_affinity: tuple[PodAffinityTerm, ...] = ()


def _selects(term_selector_owner: Pod, term: PodAffinityTerm, labels: dict[str, str], namespace: str) -> bool:
    return term.covers_namespace(term_selector_owner.namespace, namespace) and term.selector.matches(labels)


def _spread_matches(owner: Pod, spread: TopologySpread, labels: dict[str, str], namespace: str) -> bool:
    return namespace == owner.namespace and spread.selector.matches(labels)


def _friendly(resource: str, amount: int) -> str:
    text = format_quantity(resource, amount)
    return (
        f"{text} of {resource}"
        if resource not in ("cpu", "pods")
        else (f"{text} cpu" if resource == "cpu" else f"{text} pod slots")
    )


class _Solver:
    def __init__(self, inp: SchedulingInput) -> None:
        self.inp = inp
        catalog = inp.catalog.without_offerings(inp.unavailable) if inp.unavailable else inp.catalog
        self.templates = build_templates(inp.pools, inp.node_classes, catalog, inp.daemonsets, inp.settings)
        self.prefer_no_schedule = any(t.effect == "PreferNoSchedule" for p in inp.pools for t in p.taints)
        self.nodes = [self._node_state(n) for n in self._ordered(inp.nodes)]
        self.in_flight = [self._node_state(n) for n in self._ordered(inp.in_flight)]
        self.placed: list[_Placed] = []
        # indexes over `placed` for the anti-affinity checks that would otherwise scan every placed pod
        self._host_anti: dict[str, list[_Placed]] = {}  # hostname -> placed pods with hostname anti-affinity
        self._domain_anti: list[tuple[int, _Placed]] = []  # (position, placed) with other anti-affinity
        for state in (*self.nodes, *self.in_flight):
            for pod in state.pods:
                if pod.counts_for_topology():
                    self._record(
                        _Placed(
                            pod.label_map(),
                            pod.namespace,
                            {**state.labels, HOSTNAME: state.node.name},
                            1,
                            pod.pod_anti_affinity,
                        )
                    )
        self.unschedulable: list[tuple[str, str]] = []
        self.claims: list[ClaimPlan] = []
        self.claim_counter: dict[str, int] = {}
        self._dims: list[str] = list(_PACK_DIMS)
        self._offers_of: list[list[int]] = []
        self._offer_order: list[int] = []
        self._type_order_cache: dict[int, tuple[list[int], dict[int, list[int]]]] = {}
        self._fallback_cache: dict[tuple[int, tuple[int, ...], int], tuple[OfferingOption, ...]] = {}
        self._serving_cache: dict[tuple[str, Requirements], list[int]] = {}
        self._compatible_cache: dict[tuple[str, Requirements], list[bool]] = {}
        self._offering_options: dict[int, OfferingOption] = {}  # per offer index of the pool being packed
        self._zones_cache: dict[tuple[str, Requirements], list[tuple[Resources, frozenset[str]]]] = {}
        self._universe_cache: dict[tuple[object, ...], list[str]] = {}
        self._before_class = 0
        self._fitting_cache: dict[tuple[object, ...], bool] = {}
        self._tallies: dict[tuple[object, ...], tuple[int, dict[str, int]]] = {}
        self._refusals: dict[tuple[object, ...], str | None] = {}
        self._claim_requirements: dict[tuple[object, ...], Requirements] = {}

    # --- setup --------------------------------------------------------------------------------------------
    def _record(self, placed: _Placed) -> None:
        """Remember a placement for topology counting, and index its anti-affinity terms by kind."""
        if placed.anti_affinity:
            if any(term.topology_key == HOSTNAME for term in placed.anti_affinity):
                host = placed.domains.get(HOSTNAME)
                if host is not None:
                    self._host_anti.setdefault(host, []).append(placed)
            if any(term.topology_key != HOSTNAME for term in placed.anti_affinity):
                self._domain_anti.append((len(self.placed), placed))
        self.placed.append(placed)

    @staticmethod
    def _ordered(nodes: Iterable[ExistingNode]) -> list[ExistingNode]:
        return sorted((n for n in nodes if not n.deleting), key=lambda n: (not n.initialized, n.name))

    def _node_state(self, node: ExistingNode) -> _NodeState:
        used: dict[str, int] = {}
        pods = [p for p in node.pods if not p.is_terminal]
        for pod in pods:
            for name, amount in (pod.requests + POD_SLOT).items:
                used[name] = used.get(name, 0) + amount
        if node.in_flight and not any(p.is_daemonset for p in pods):
            labels = dict(node.labels)
            for daemon in self.inp.daemonsets:
                if tolerates(
                    daemon.tolerations, node.taints, ignore_prefer_no_schedule=True
                ) and _daemon_matches(daemon, labels):
                    for name, amount in (daemon.requests + POD_SLOT).items:
                        used[name] = used.get(name, 0) + amount
        free = {name: amount - used.get(name, 0) for name, amount in node.allocatable.items}
        taints = scheduling_taints(
            node.taints, node.startup_taints, initialized=node.initialized and not node.in_flight
        )
        labels = dict(node.labels)
        labels.setdefault(HOSTNAME, node.name)
        return _NodeState(node, labels, free, pods, taints)

    def _classes(self) -> list[_Class]:
        groups: dict[Pod, list[Pod]] = {}
        for pod in self.inp.pods:
            if not pod.is_provisionable():
                continue
            groups.setdefault(pod.placement_signature(), []).append(pod)
        classes = [
            _Class(
                sorted(pods, key=lambda p: (p.created_at, p.name)),
                sig,
                sig.requests + POD_SLOT,
                sig.label_map(),
            )
            for sig, pods in groups.items()
        ]
        # Karpenter's queue order: cpu, then memory, descending
        classes.sort(key=lambda c: (-c.requests.get("cpu"), -c.requests.get("memory"), c.pods[0].key))
        return classes

    # --- phase 1: variants ----------------------------------------------------------------------------------
    def _choose_variant(self, cls: _Class) -> None:
        try:
            variants = ladder(cls.example, prefer_no_schedule_exists=self.prefer_no_schedule)
        except RequirementError as exc:
            cls.reason = f"invalid node requirements: {exc}"
            return
        last_reason = ""
        for variant in variants:
            reason = self._infeasible(cls, variant)
            if reason is None:
                cls.variant = variant
                return
            if not last_reason:
                last_reason = reason
        cls.reason = last_reason

    def _pool_refusal(
        self, template: NodeTemplate, cls: _Class, variant: Variant, requirements: Requirements | None = None
    ) -> str | None:
        """Why this pool can never host the class (None when it can; memoised: classes share the inputs)."""
        wanted = requirements or variant.requirements
        key = (
            template.name,
            cls.example.tolerations,
            variant.tolerate_prefer_no_schedule,
            wanted,
            cls.requests,
            cls.example.host_ports,
        )
        if key in self._refusals:
            return self._refusals[key]
        found = self._refusal(template, cls, variant, wanted)
        self._refusals[key] = found
        return found

    def _refusal(
        self, template: NodeTemplate, cls: _Class, variant: Variant, wanted: Requirements
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
        serving = self._serving(template, merged)
        if not serving:
            return f"{name}: no instance type satisfies {merged.without(wk.NODEPOOL).describe()}"
        fit_key = (template.name, merged, cls.requests, cls.example.host_ports)
        known = self._fitting_cache.get(fit_key)
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
                        f"{name}: no instance type has {_friendly(resource, amount)} "
                        f"(the largest has {format_quantity(resource, max(largest, 0))} after overhead and DaemonSets)"
                    )
            return f"{name}: no instance type has room for the pod's requests"
        if ports and all(any(p.conflicts(q) for p in ports for q in o.daemon_ports) for o in fitting):
            return f"{name}: a DaemonSet already uses the pod's host ports on every instance type"
        self._fitting_cache[fit_key] = True
        return None

    def _serving(self, template: NodeTemplate, requirements: Requirements) -> list[int]:
        """Indexes of the template's types that serve `requirements` (memoised: classes share them).

        Compatibility is checked per key, and an allowed offering already implies the zone and capacity
        type keys are compatible, so the type test runs on the requirements without those keys (shared by
        classes that differ only in zone or capacity type) and the offerings on (zone, capacity type, zone
        id), which thousands of offerings share."""
        key = (template.name, requirements)
        found = self._serving_cache.get(key)
        if found is None:
            placeless = requirements.without(wk.ZONE, wk.CAPACITY_TYPE, wk.ZONE_ID)
            type_key = (template.name, placeless)
            compatible = self._compatible_cache.get(type_key)
            if compatible is None:
                compatible = [o.instance_type.requirements().compatible(placeless) for o in template.options]
                self._compatible_cache[type_key] = compatible
            allowed = offering_judge(requirements)
            found = [
                i
                for i, o in enumerate(template.options)
                if compatible[i] and any(allowed(offering) for offering in o.offerings)
            ]
            self._serving_cache[key] = found
        return found

    def _zones_by_type(
        self, template: NodeTemplate, merged: Requirements
    ) -> list[tuple[Resources, frozenset[str]]]:
        """(room, zones its allowed offerings are in) per type serving `merged` (memoised)."""
        key = (template.name, merged)
        found = self._zones_cache.get(key)
        if found is None:
            found = []
            for index in self._serving(template, merged):
                option = template.options[index]
                zones = frozenset(o.zone for o in option.offerings if o.allowed_by(merged))
                if zones:
                    found.append((option.room, zones))
            self._zones_cache[key] = found
        return found

    def _infeasible(self, cls: _Class, variant: Variant) -> str | None:
        topology = self._topology_refusal(cls, variant)
        if topology:
            return topology
        for state in (*self.nodes, *self.in_flight):
            if self._node_admits(state, cls, variant, variant.requirements) and cls.requests.fits(
                state.node.allocatable
            ):
                return None
        reasons = []
        for template in self.templates:
            refusal = self._pool_refusal(template, cls, variant)
            if refusal is None:
                return None
            reasons.append(refusal)
        if not reasons:
            return "no node pool is configured and no existing node can run it"
        return "; ".join(reasons)

    def _topology_refusal(self, cls: _Class, variant: Variant) -> str | None:
        for term in variant.affinity:
            if term.topology_key == HOSTNAME:
                continue
            if not self._self_selects(cls, term) and not self._domains_with(cls.example, term):
                return (
                    f"pod affinity on {term.topology_key} to pods matching {term.selector.describe()}: "
                    "no such pod is running"
                )
        for term in variant.affinity:
            if (
                term.topology_key == HOSTNAME
                and not self._self_selects(cls, term)
                and not any(_selects(cls.example, term, p.labels, p.namespace) for p in self.placed)
            ):
                return (
                    f"pod affinity on {HOSTNAME} to pods matching {term.selector.describe()}: "
                    "no such pod is running"
                )
        return None

    @staticmethod
    def _self_selects(cls: _Class, term: PodAffinityTerm) -> bool:
        return _selects(cls.example, term, cls.labels, cls.example.namespace)

    def _domains_with(self, owner: Pod, term: PodAffinityTerm) -> dict[str, int]:
        return self._tally(
            ("term", owner.namespace, term),
            term.topology_key,
            lambda placed: _selects(owner, term, placed.labels, placed.namespace),
        )

    def _tally(
        self, selector: tuple[object, ...], key: str, matches: Callable[[_Placed], bool]
    ) -> dict[str, int]:
        """Per value of `key`, the placed pods a selector matches. `placed` only grows, so each selector's
        counts are kept and brought up to date with the pods placed since (classes share a few selectors;
        rescanning every placed pod per class grows with classes squared)."""
        entry = self._tallies.get(selector)
        if entry is None:
            entry = (0, {})
        seen, counts = entry
        placed_list = self.placed
        for position in range(seen, len(placed_list)):
            placed = placed_list[position]
            value = placed.domains.get(key)
            if value is not None and matches(placed):
                counts[value] = counts.get(value, 0) + placed.count
        self._tallies[selector] = (len(placed_list), counts)
        return dict(counts)

    # --- phase 2: domains -----------------------------------------------------------------------------------
    def _universe(self, cls: _Class, requirements: Requirements, key: str) -> list[str]:
        cache_key = (cls.requests, cls.example.tolerations, requirements, key)
        found = self._universe_cache.get(cache_key)
        if found is None:
            found = self._compute_universe(cls, requirements, key)
            self._universe_cache[cache_key] = found
        return list(found)

    def _compute_universe(self, cls: _Class, requirements: Requirements, key: str) -> list[str]:
        values: set[str] = set()
        variant = cls.variant
        assert variant is not None
        for template in self.templates:
            if self._pool_refusal(template, cls, variant, requirements) is not None:
                continue
            merged = template.requirements.intersect(requirements)
            if key == wk.ZONE:
                for room, zones in self._zones_by_type(template, merged):
                    if not zones <= values and cls.requests.fits(room):  # nothing new: skip the fit test
                        values.update(zones)
            else:
                allowed = merged.values(key)
                if allowed:
                    values.update(allowed)
        for state in (*self.nodes, *self.in_flight):
            value = state.labels.get(key)
            if value is not None and requirements.matches(state.labels):
                values.add(value)
        return sorted(v for v in values if requirements.allows(key, v))

    def _units(self, cls: _Class) -> list[_Unit]:
        variant = cls.variant
        assert variant is not None
        units = [_Unit(cls, variant.requirements, list(cls.pods))]
        self._before_class = len(self.placed)
        for term in variant.anti_affinity:
            if term.topology_key != HOSTNAME:
                units = [u for unit in units for u in self._split_anti(unit, term)]
        units = [u for unit in units for u in self._split_inverse_anti(unit)]
        for term in variant.affinity:
            if term.topology_key != HOSTNAME:
                units = [u for unit in units for u in self._split_affinity(unit, term)]
        for spread in variant.spreads:
            if spread.topology_key != HOSTNAME:
                units = [u for unit in units for u in self._split_spread(unit, spread)]
        return [u for u in units if u.pods]

    def _pin(self, unit: _Unit, key: str, value: str, count: int) -> _Unit:
        pods, unit.pods = unit.pods[:count], unit.pods[count:]
        pinned = _Unit(
            unit.cls, unit.requirements.intersect(Requirements((KeyRequirement.in_(key, (value,)),))), pods
        )
        self._record(
            _Placed(
                unit.cls.labels,
                unit.cls.example.namespace,
                {key: value},
                len(pods),
                unit.variant.anti_affinity,
            )
        )
        return pinned

    def _fail(self, unit: _Unit, reason: str) -> None:
        for pod in unit.pods:
            self.unschedulable.append((pod.key, reason))
        unit.pods = []

    def _split_spread(self, unit: _Unit, spread: TopologySpread) -> list[_Unit]:
        key = spread.topology_key
        owner = unit.cls.example
        domains = self._universe(unit.cls, unit.requirements, key)
        if not domains:
            self._fail(unit, f"topology spread on {key}: no eligible {key} value")
            return []
        matching = self._tally(
            ("spread", owner.namespace, spread),
            key,
            lambda placed: _spread_matches(owner, spread, placed.labels, placed.namespace),
        )
        counts = {d: matching.get(d, 0) for d in domains}
        self_matches = _spread_matches(owner, spread, unit.cls.labels, owner.namespace)
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
        units = [self._pin(unit, key, d, quota[d]) for d in domains if quota[d]]
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
            self._fail(unit, reason)
        return units

    def _split_affinity(self, unit: _Unit, term: PodAffinityTerm) -> list[_Unit]:
        key = term.topology_key
        owner = unit.cls.example
        domains = self._universe(unit.cls, unit.requirements, key)
        with_pods = [d for d, n in sorted(self._domains_with(owner, term).items()) if n > 0 and d in domains]
        if with_pods:
            if len(with_pods) == 1:
                return [self._pin(unit, key, with_pods[0], len(unit.pods))]
            unit.requirements = unit.requirements.intersect(
                Requirements((KeyRequirement.in_(key, with_pods),))
            )
            return [unit]
        if self._self_selects(unit.cls, term) and domains:
            return [self._pin(unit, key, domains[0], len(unit.pods))]
        self._fail(
            unit, f"pod affinity on {key} to pods matching {term.selector.describe()}: no eligible domain"
        )
        return []

    def _split_anti(self, unit: _Unit, term: PodAffinityTerm) -> list[_Unit]:
        key = term.topology_key
        owner = unit.cls.example
        domains = self._universe(unit.cls, unit.requirements, key)
        taken = self._domains_with(owner, term)
        free = [d for d in domains if not taken.get(d)]
        if not self._self_selects(unit.cls, term):
            if not free:
                self._fail(
                    unit,
                    f"pod anti-affinity on {key}: every domain has a pod matching {term.selector.describe()}",
                )
                return []
            unit.requirements = unit.requirements.intersect(Requirements((KeyRequirement.in_(key, free),)))
            return [unit]
        units = [self._pin(unit, key, d, 1) for d in free[: len(unit.pods)]]
        if unit.pods:
            self._fail(unit, f"pod anti-affinity on {key}: only {len(free)} {key} domains are free")
        return units

    def _split_inverse_anti(self, unit: _Unit) -> list[_Unit]:
        """Running (or planned) pods whose required anti-affinity selects this class exclude their domains."""
        labels, namespace = unit.cls.labels, unit.cls.example.namespace
        excluded: dict[str, set[str]] = {}
        for position, placed in self._domain_anti:
            if position >= self._before_class:
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
        for key, values in excluded.items():
            unit.requirements = unit.requirements.intersect(
                Requirements((KeyRequirement.make(key, True, values),))
            )
        return [unit]

    # --- phase 3: existing nodes ----------------------------------------------------------------------------
    def _node_admits(
        self, state: _NodeState, cls: _Class, variant: Variant, requirements: Requirements
    ) -> bool:
        taints = [
            t
            for t in state.taints
            if not (variant.tolerate_prefer_no_schedule and t.effect == "PreferNoSchedule")
        ]
        if not tolerates(cls.example.tolerations, taints):
            return False
        return requirements.matches(state.labels)

    def _node_room(self, state: _NodeState, unit: _Unit) -> int:
        cls = unit.cls
        variant = unit.variant
        limit = len(unit.pods)
        for name, amount in cls.requests.items:  # the cheap test first: most full nodes stop here
            if amount > 0:
                limit = min(limit, state.free.get(name, 0) // amount)
                if limit <= 0:
                    return 0
        if not self._node_admits(state, cls, variant, unit.requirements):
            return 0
        owner = cls.example
        for port in owner.host_ports:
            if any(port.conflicts(q) for p in state.pods for q in p.host_ports):
                return 0
            limit = min(limit, 1)
        host = state.node.name
        for term in variant.anti_affinity:
            if term.topology_key == HOSTNAME:
                if any(
                    _selects(owner, term, p.label_map(), p.namespace)
                    for p in state.pods
                    if p.counts_for_topology()
                ):
                    return 0
                if self._self_selects(cls, term):
                    limit = min(limit, 1)
        for placed in self._host_anti.get(host, ()):  # inverse anti-affinity of pods on this node
            for term in placed.anti_affinity:
                if (
                    term.topology_key == HOSTNAME
                    and term.selector.matches(cls.labels)
                    and (term.all_namespaces or owner.namespace in (term.namespaces or (placed.namespace,)))
                ):
                    return 0
        for spread in variant.spreads:
            if spread.topology_key == HOSTNAME:
                present = sum(
                    1
                    for p in state.pods
                    if p.counts_for_topology() and _spread_matches(owner, spread, p.label_map(), p.namespace)
                )
                if _spread_matches(owner, spread, cls.labels, owner.namespace):
                    limit = min(limit, spread.max_skew - present)
                elif present + 1 > spread.max_skew:
                    return 0
        for term in variant.affinity:
            if term.topology_key == HOSTNAME and not any(
                _selects(owner, term, p.label_map(), p.namespace)
                for p in state.pods
                if p.counts_for_topology()
            ):
                return 0
        return max(limit, 0)

    def _place_on_nodes(self, units: list[_Unit], states: list[_NodeState]) -> None:
        for unit in units:
            for state in states:
                if not unit.pods:
                    break
                count = self._node_room(state, unit)
                if count <= 0:
                    continue
                pods, unit.pods = unit.pods[:count], unit.pods[count:]
                for name, amount in unit.cls.requests.items:
                    state.free[name] = state.free.get(name, 0) - amount * count
                state.pods.extend(pods)
                state.placed.extend(p.key for p in pods)
                self._record(
                    _Placed(
                        unit.cls.labels,
                        unit.cls.example.namespace,
                        {**state.labels, HOSTNAME: state.node.name},
                        count,
                        unit.variant.anti_affinity,
                    )
                )

    # --- phase 4: new claims ----------------------------------------------------------------------------------
    def _launch(self, units: list[_Unit]) -> None:
        for template in self.templates:
            pending = [u for u in units if u.pods]
            if not pending:
                return
            takers = []
            for unit in pending:
                refusal = self._pool_refusal(template, unit.cls, unit.variant, unit.requirements)
                if refusal is None:
                    takers.append(unit)
                else:
                    unit.reasons.append(refusal)
            if takers:
                self._pack_pool(template, takers)
        for unit in units:
            if unit.pods:
                reason = "; ".join(dict.fromkeys(unit.reasons)) or "no node pool can run it"
                self._fail(unit, reason)

    def _pack_pool(self, template: NodeTemplate, units: list[_Unit]) -> None:
        dims = list(_PACK_DIMS)
        for unit in units:
            for name in unit.cls.requests.names():
                if name not in dims:
                    dims.append(name)
        self._dims = dims
        options = template.options
        offers: list[Offer] = []
        offer_option: list[TypeOption] = []
        self._offers_of = []
        narrow = self._min_values_narrow(template)
        for type_index, option in enumerate(options):
            own = []
            for offering in option.offerings:
                own.append(len(offers))
                offers.append(Offer(type_index, offering.zone, offering.capacity_type, offering.price))
                offer_option.append(option)
            self._offers_of.append(own)
        limit_names = [name for name, _ in template.pool.limits.items]
        usage = self.inp.usage_of(template.name)
        limit_room = (
            [template.pool.limits.get(n) - usage.get(n) for n in limit_names] if limit_names else None
        )
        rooms = [tuple(max(0, option.room.get(d)) for d in dims) for option in options]
        types = [  # a type minValues rules out takes nothing (it can still be a fallback of bigger claims)
            BinType(
                option.name,
                rooms[index] if index not in narrow else tuple(0 for _ in dims),
                tuple((option.capacity + Resources.of({"nodes": 1})).get(n) for n in limit_names),
            )
            for index, option in enumerate(options)
        ]
        mask_cache: dict[Requirements, int] = {}
        merged_of: dict[Requirements, Requirements] = {}
        items: list[Item] = []
        for unit in units:
            merged = merged_of.get(unit.requirements)
            if merged is None:  # units pinned alike share their requirements: intersect once
                merged = merged_of[unit.requirements] = template.requirements.intersect(unit.requirements)
            mask = mask_cache.get(merged)
            if mask is None:
                serving = set(self._serving(template, merged))
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
        items = self._hostname_constraints(units, items)
        result = pack(items, types, offers, limit_room)
        self._offer_order = sorted(range(len(offers)), key=lambda i: (offers[i].price, i))
        self._type_order_cache = {}
        self._fallback_cache = {}
        self._offering_options = {}
        for node in result.nodes:
            fallback = self._fallback(template, items, offers, options, rooms, node.offer, node.contents)
            narrowing = _offering_requirements(fallback)  # once per pattern, not per replica
            for _ in range(node.replicas):
                self._claim(template, units, offers, options, node.offer, node.contents, fallback, narrowing)
        for k, unit in enumerate(units):
            if unit.pods:
                unit.reasons.append(
                    self._leftover_reason(
                        template,
                        unit,
                        k in result.limit_blocked,
                        limit_names,
                        list(result.limit_room or ()),
                        types,
                    )
                )

    def _hostname_constraints(self, units: list[_Unit], items: list[Item]) -> list[Item]:
        caps = [0] * len(units)
        groups: list[list[tuple[int, int]]] = [[] for _ in units]
        conflicts: list[set[int]] = [set() for _ in units]
        together = [False] * len(units)
        group_ids: dict[tuple[object, ...], int] = {}
        anti_memo: dict[tuple[PodAffinityTerm, str], tuple[set[int], set[int]]] = {}
        spread_memo: dict[tuple[TopologySpread, str], list[int]] = {}
        for k, unit in enumerate(units):
            owner = unit.cls.example
            variant = unit.variant
            for term in variant.anti_affinity:
                if term.topology_key != HOSTNAME:
                    continue
                memo = anti_memo.get((term, owner.namespace))
                if memo is None:  # classes share terms: each distinct term is matched against all once
                    memo = (
                        {
                            j
                            for j, other in enumerate(units)
                            if _selects(owner, term, other.cls.labels, other.cls.example.namespace)
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
            for spread in variant.spreads:
                if spread.topology_key != HOSTNAME:
                    continue
                gid = group_ids.setdefault(("spread", spread, owner.namespace), len(group_ids))
                selected = spread_memo.get((spread, owner.namespace))
                if selected is None:
                    selected = [
                        j
                        for j, other in enumerate(units)
                        if _spread_matches(owner, spread, other.cls.labels, other.cls.example.namespace)
                    ]
                    spread_memo[(spread, owner.namespace)] = selected
                for j in (k, *selected):
                    if (gid, spread.max_skew) not in groups[j]:
                        groups[j].append((gid, spread.max_skew))
            for term in variant.affinity:
                if term.topology_key == HOSTNAME and self._self_selects(unit.cls, term):
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

    def _leftover_reason(
        self,
        template: NodeTemplate,
        unit: _Unit,
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
                    r >= d
                    for r, d in zip(t.room, (unit.cls.requests.get(x) for x in self._dims), strict=True)
                )
            ]
            for position, resource in enumerate(names):
                smallest = min((t.limit_usage[position] for t in fitting), default=0)
                if room[position] < smallest:
                    limit = template.pool.limits.get(resource)
                    return f"{name}: {resource} limit {format_quantity(resource, limit)} reached"
            return f"{name}: its limits are reached"
        if any(t.topology_key == HOSTNAME for t in unit.variant.affinity):
            return f"{name}: pods with hostname affinity must share one node and do not fit on one"
        narrow = self._min_values_narrow(template)
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

    def _fallback(
        self,
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
        known = self._fallback_cache.get(memo_key)
        if known is not None:
            return known
        order, per_type = self._type_order(mask, offers)
        limit = self.inp.max_instance_types
        bounded = not any(item.min_values for item in template.requirements.items)
        fitting: list[int] = []
        for type_index in order:
            if all(map(operator.ge, rooms[type_index], load)):
                fitting.append(type_index)
                if bounded and len(fitting) >= limit:
                    break
        names = [options[t].name for t in fitting]
        kept = set(self._truncate(template, names))
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
        made = self._offering_options  # one OfferingOption per offer, shared by every claim's list
        found = tuple(
            made.get(index) or made.setdefault(index, OfferingOption(name, zone, ct, price))
            for price, _, name, zone, ct, index in rows
        )
        self._fallback_cache[memo_key] = found
        return found

    def _type_order(self, mask: int, offers: list[Offer]) -> tuple[list[int], dict[int, list[int]]]:
        """For an offer mask: type indexes by their cheapest offer in the mask, and each type's offers in it."""
        found = self._type_order_cache.get(mask)
        if found is None:
            per_type: dict[int, list[int]] = {}
            bits = format(mask, "b")[::-1].ljust(len(offers), "0")  # bit i without copying the mask
            for index in self._offer_order:
                if bits[index] == "1":
                    per_type.setdefault(offers[index].type_index, []).append(index)
            found = (list(per_type), per_type)
            self._type_order_cache[mask] = found
        return found

    def _truncate(self, template: NodeTemplate, names: list[str]) -> list[str]:
        """At most `max_instance_types` of `names` (cheapest first), keeping `minValues` distinct values per
        key when the whole list has them: a type that brings a value still missing is always kept, any other
        only while the slots left cover the values still missing."""
        limit = self.inp.max_instance_types
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
            labels = self._type_values(by_name[name], requirements, wanted)
            missing = sum(max(0, minimum - len(seen[key])) for key, minimum in wanted)
            brings = any(len(seen[key]) < minimum and labels[key] - seen[key] for key, minimum in wanted)
            if brings or len(chosen) + 1 + missing <= limit:
                chosen.append(name)
                for key, _ in wanted:
                    seen[key] |= labels[key]
                if len(chosen) >= limit:
                    break
        return chosen

    @staticmethod
    def _type_values(
        option: TypeOption, requirements: Requirements, wanted: list[tuple[str, int]]
    ) -> dict[str, set[str]]:
        own = option.instance_type.requirements()
        return {
            key: {value for value in (own.values(key) or ()) if requirements.allows(key, value)}
            for key, _ in wanted
        }

    def _min_values_narrow(self, template: NodeTemplate) -> set[int]:
        """Types a claim must not be packed into under `minValues` (policy Strict): those for which the types
        at least as big (the claim's fallback list) no longer offer `minValues` distinct values of some key."""
        requirements = template.requirements
        wanted = [(item.key, item.min_values) for item in requirements.items if item.min_values]
        if not wanted or self.inp.settings.min_values_policy != "Strict":
            return set()
        options = template.options
        values = [self._type_values(option, requirements, wanted) for option in options]
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

    def _claim(
        self,
        template: NodeTemplate,
        units: list[_Unit],
        offers: list[Offer],
        options: tuple[TypeOption, ...],
        offer_index: int,
        contents: tuple[tuple[int, int], ...],
        fallback: tuple[OfferingOption, ...],
        narrowing: tuple[Requirements, tuple[str, ...]],
    ) -> None:
        pods: list[Pod] = []
        load = Resources()
        for k, count in contents:
            unit = units[k]
            taken, unit.pods = unit.pods[:count], unit.pods[count:]
            pods.extend(taken)
            load = load + unit.cls.requests.scale(len(taken))
        chosen = offers[offer_index]
        chosen_option = options[chosen.type_index]
        offered, type_names = narrowing
        memo_key = (template.name, tuple(units[k].requirements for k, _ in contents), offered)
        requirements = self._claim_requirements.get(memo_key)  # replicas of a pattern share them
        if requirements is None:
            requirements = template.requirements
            for k, _ in contents:
                requirements = requirements.intersect(units[k].requirements)
            requirements = requirements.intersect(offered)
            self._claim_requirements[memo_key] = requirements
        number = self.claim_counter.get(template.name, 0) + 1
        self.claim_counter[template.name] = number
        name = f"{template.name}-{number}"
        labels = {**dict(template.labels), **requirements.single_values()}
        self.claims.append(
            ClaimPlan(
                name=name,
                nodepool=template.name,
                node_class=template.node_class.name,
                requirements=requirements,
                instance_types=type_names,
                offerings=fallback,
                instance_type=chosen_option.name,
                zone=chosen.zone,
                capacity_type=chosen.capacity_type,
                price_per_hour=chosen.price,
                pods=tuple(p.key for p in pods),
                allocatable=chosen_option.allocatable,
                daemonset_overhead=chosen_option.daemon_overhead,
                requests=load,
                labels=tuple(sorted(labels.items())),
                taints=template.taints,
                startup_taints=template.startup_taints,
            )
        )
        domains = {**labels, wk.ZONE: chosen.zone, wk.CAPACITY_TYPE: chosen.capacity_type, HOSTNAME: name}
        for k, count in contents:
            unit = units[k]
            self._record(
                _Placed(
                    unit.cls.labels, unit.cls.example.namespace, domains, count, unit.variant.anti_affinity
                )
            )

    # --- driver -----------------------------------------------------------------------------------------------
    def run(self) -> Plan:
        classes = self._classes()
        units: list[_Unit] = []
        for cls in classes:
            self._choose_variant(cls)
            if cls.variant is None:
                for pod in cls.pods:
                    self.unschedulable.append((pod.key, cls.reason or "no node pool can run it"))
                continue
            units.extend(self._units(cls))
        self._place_on_nodes(units, self.nodes)
        self._place_on_nodes(units, self.in_flight)
        self._launch(units)
        if self.unschedulable:
            self._repair_spreads(classes)
        existing = tuple(
            ExistingPlacement(state.node.name, tuple(state.placed), state.node.in_flight)
            for state in (*self.nodes, *self.in_flight)
            if state.placed
        )
        order = {pod.key: index for index, pod in enumerate(self.inp.pods)}
        unschedulable = tuple(sorted(self.unschedulable, key=lambda row: order.get(row[0], 0)))
        return Plan(tuple(self.claims), existing, unschedulable)

    def _repair_spreads(self, classes: list[_Class]) -> None:
        """Take pods back off new claims where a spread split left its skew broken.

        Domain spreads are split into per-domain quotas up front; when a pool limit (or no fitting type)
        then strands part of one domain's quota, the other domains end up ahead by more than maxSkew and
        kube-scheduler would refuse those pods. Only then (some pod is unschedulable), count every node's
        matching pods per domain as the final state will, and take one offending pod off a new claim at a
        time until every such spread holds (claims left empty are dropped)."""
        checks = [
            (cls, spread)
            for cls in classes
            if cls.variant is not None
            for spread in cls.variant.spreads
            if spread.topology_key != HOSTNAME and spread.when_unsatisfiable == "DoNotSchedule"
        ]
        if not checks:
            return
        by_key = {pod.key: pod for pod in self.inp.pods}
        repaired = True
        while repaired:
            repaired = False
            hosts: list[tuple[dict[str, str], list[Pod], int]] = []  # (labels, pods, claim index or -1)
            for state in (*self.nodes, *self.in_flight):
                running = [p for p in state.pods if p.counts_for_topology()]
                hosts.append((state.labels, running + [by_key[k] for k in state.placed], -1))
            for index, claim in enumerate(self.claims):
                labels = {
                    **dict(claim.labels),
                    wk.ZONE: claim.zone,
                    wk.CAPACITY_TYPE: claim.capacity_type,
                    HOSTNAME: claim.name,
                }
                hosts.append((labels, [by_key[k] for k in claim.pods], index))
            for cls, spread in checks:
                owner, key = cls.example, spread.topology_key
                counts = {
                    labels[key]: 0
                    for labels, _, _ in hosts
                    if key in labels and _daemon_matches(owner, labels)
                }
                for labels, pods, _ in hosts:
                    value = labels.get(key)
                    if value in counts:
                        counts[value] += sum(
                            1 for p in pods if _spread_matches(owner, spread, p.label_map(), p.namespace)
                        )
                few = spread.min_domains is not None and len(counts) < spread.min_domains
                floor = 0 if few else min(counts.values(), default=0)
                mine = {p.key for p in cls.pods}
                for labels, pods, index in hosts:
                    value = labels.get(key)
                    if index < 0 or value not in counts or counts[value] - floor <= spread.max_skew:
                        continue
                    victim = next((p for p in reversed(pods) if p.key in mine), None)
                    if victim is None:
                        continue
                    self._take_off(index, victim, cls.requests)
                    self.unschedulable.append(
                        (
                            victim.key,
                            f"topology spread on {key} (maxSkew {spread.max_skew}): pods of the spread "
                            "that could not be placed elsewhere leave this one above the skew",
                        )
                    )
                    repaired = True
                    break
                if repaired:
                    break
        self.claims = [claim for claim in self.claims if claim.pods]

    def _take_off(self, index: int, pod: Pod, requests: Resources) -> None:
        claim = self.claims[index]
        self.claims[index] = replace(
            claim,
            pods=tuple(k for k in claim.pods if k != pod.key),
            requests=(claim.requests - requests).clamp_non_negative(),
        )


def _offering_requirements(fallback: tuple[OfferingOption, ...]) -> tuple[Requirements, tuple[str, ...]]:
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


def _daemon_matches(daemon: Pod, labels: dict[str, str]) -> bool:
    try:
        return any(term.matches(labels) for term in node_requirement_terms(daemon))
    except RequirementError:
        return False


def solve(inp: SchedulingInput) -> Plan:
    """Plan where every pending pod runs (see the module docstring)."""
    return _Solver(inp).run()
