"""A Karpenter-style greedy scheduler, the baseline the engine is measured against.

Modelled on kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/scheduler.go` and `nodeclaim.go`.

Pods are sorted by cpu, then memory, descending (first-fit decreasing). Each pod goes to the first in-flight
claim that can take it, claims ordered by fewest pods first (re-sorted before every pod); failing that, a new
claim is opened with every compatible instance type. A claim keeps the instance types that still hold its
cumulative requests, and its zone and capacity-type sets narrow as pods with requirements join. At the end
each claim is priced at its cheapest remaining offering. Topology follows Karpenter's rules in their simplest
form: hostname anti-affinity (one per node in the group), hostname spread (at most maxSkew per node), zone
spread (the least-loaded allowed zone, within maxSkew), zone self-affinity (the group's first zone).
Like Karpenter's launch path, metal and accelerator types are used only when nothing else fits.
Pod-level and quadratic on purpose: that is what is being compared.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from bench.workloads import Workload
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.model import Requirement, Settings
from longshore.core.requirements import Requirements

DIMS = ("cpu", "memory")


@dataclass
class _Claim:
    index: int
    zones: set[str]
    capacity_types: set[str]
    types: list[int]
    used: list[int]
    pods: int = 0
    groups: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BaselineResult:
    cost: float
    nodes: int
    unplaced: int


def greedy(workload: Workload) -> BaselineResult:
    pool = workload.pools[0]
    pool_reqs = Requirements.of(pool.requirements)
    if wk.CAPACITY_TYPE not in pool_reqs:
        pool_reqs = pool_reqs.add(Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)))
    types = [it for it in workload.catalog if it.requirements().compatible(pool_reqs)]
    rooms = []
    for it in types:
        alloc = allocatable(it, None, None, Settings())
        rooms.append((alloc.get("cpu"), alloc.get("memory"), alloc.get("pods")))
    exotic = [
        ".metal" in it.name
        or any(
            name != "pods" and name not in ("cpu", "memory", "ephemeral-storage")
            for name in it.capacity.names()
        )
        for it in types
    ]
    offers = [[o for o in it.offerings if o.available and o.allowed_by(pool_reqs)] for it in types]
    all_zones = sorted({o.zone for row in offers for o in row})
    claims: list[_Claim] = []
    order: list[tuple[int, int]] = []  # (pods, index), kept sorted: fewest pods first
    zone_counts: dict[str, dict[str, int]] = {}
    affinity_zone: dict[str, str] = {}
    unplaced = 0
    pods = sorted(workload.pods, key=lambda p: (-p.requests.get("cpu"), -p.requests.get("memory"), p.name))
    for pod in pods:
        labels = dict(pod.labels)
        written = [Requirement(k, "In", (v,)) for k, v in pod.node_selector]
        if pod.required_node_terms:
            written += list(pod.required_node_terms[0])
        reqs = pool_reqs.intersect(Requirements.of(written))
        zones = {z for z in all_zones if reqs.allows(wk.ZONE, z)}
        cts = {c for c in ("spot", "on-demand") if reqs.allows(wk.CAPACITY_TYPE, c)}
        demand = (pod.requests.get("cpu"), pod.requests.get("memory"), 1)
        node_groups: list[tuple[str, int]] = []
        for term in pod.pod_anti_affinity:
            if term.topology_key == wk.HOSTNAME and term.selector.matches(labels):
                node_groups.append(("anti:" + term.selector.describe(), 1))
        spread_key = None
        for spread in pod.topology_spread:
            if spread.topology_key == wk.HOSTNAME:
                node_groups.append(("hs:" + spread.selector.describe(), spread.max_skew))
            elif spread.topology_key == wk.ZONE:
                spread_key = spread.selector.describe()
        if spread_key is not None:
            counts = zone_counts.setdefault(spread_key, dict.fromkeys(sorted(zones), 0))
            low = min(counts.values())
            zones = {z for z in zones if counts.get(z, 0) + 1 - low <= 1}
        for term in pod.pod_affinity:
            if term.topology_key == wk.ZONE:
                key = term.selector.describe()
                if key in affinity_zone:
                    zones &= {affinity_zone[key]}

        def fits(claim: _Claim, demand: tuple[int, int, int] = demand) -> list[int]:
            return [t for t in claim.types if all(claim.used[r] + demand[r] <= rooms[t][r] for r in range(3))]

        placed: _Claim | None = None
        for _, index in order:
            claim = claims[index]
            if not (claim.zones & zones) or not (claim.capacity_types & cts):
                continue
            if any(claim.groups.get(g, 0) + 1 > cap for g, cap in node_groups):
                continue
            remaining = fits(claim)
            remaining = [
                t
                for t in remaining
                if any(
                    o.zone in claim.zones & zones and o.capacity_type in claim.capacity_types & cts
                    for o in offers[t]
                )
            ]
            if remaining:
                order.remove((claim.pods, index))
                claim.types = remaining
                placed = claim
                break
        if placed is None:
            candidates = [
                t
                for t in range(len(types))
                if all(demand[r] <= rooms[t][r] for r in range(3))
                and any(o.zone in zones and o.capacity_type in cts for o in offers[t])
            ]
            # Karpenter's exotic filter (aws/karpenter-provider-aws pkg/providers/instance/instance.go).
            ordinary = [t for t in candidates if not exotic[t]]
            candidates = ordinary or candidates
            if not candidates:
                unplaced += 1
                continue
            placed = _Claim(len(claims), set(zones), set(cts), candidates, [0, 0, 0])
            claims.append(placed)
        placed.zones &= zones
        placed.capacity_types &= cts
        for r in range(3):
            placed.used[r] += demand[r]
        for group, _ in node_groups:
            placed.groups[group] = placed.groups.get(group, 0) + 1
        placed.pods += 1
        bisect.insort(order, (placed.pods, placed.index))
        if spread_key is not None or any(t.topology_key == wk.ZONE for t in pod.pod_affinity):
            zone = min(placed.zones)
            placed.zones = {zone}
            if spread_key is not None:
                zone_counts[spread_key][zone] = zone_counts[spread_key].get(zone, 0) + 1
            for term in pod.pod_affinity:
                if term.topology_key == wk.ZONE:
                    affinity_zone.setdefault(term.selector.describe(), zone)
    cost = 0.0
    for claim in claims:
        cost += min(
            o.price
            for t in claim.types
            for o in offers[t]
            if o.zone in claim.zones and o.capacity_type in claim.capacity_types
        )
    return BaselineResult(cost, len(claims), unplaced)
