"""An independent checker for plans: does every placement respect the rules, computed without the engine?

Theory of operation: the checker rebuilds every node a plan produces (existing nodes with their new pods,
new claims as the chosen instance type in the chosen zone) and checks them against first principles, with
its own small matchers for labels, tolerations and selectors. It uses only the catalog, the catalog's allocatable
formula and the raw pods, never the scheduler's own data structures. A violation is a sentence naming the
node and the pods; `check(inp, plan)` returns all of them (an empty list means the plan is valid).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from longshore.core import labels as wk
from longshore.core.allocatable import allocatable, node_capacity
from longshore.core.catalog import Catalog
from longshore.core.model import NodePool, Requirement, Taint
from longshore.core.overlays import pool_view, price_of
from longshore.core.pods import LabelSelector, Pod
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.plan import Plan


@dataclass
class _Node:
    name: str
    labels: dict[str, str]
    room: dict[str, int]
    taints: tuple[Taint, ...]
    pods: list[Pod] = field(default_factory=list)
    new: bool = False
    pool: str | None = None
    capacity: dict[str, int] = field(default_factory=dict)


def _expr_matches(expr: Requirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(expr.key)
    if expr.operator == "In":
        return value is not None and value in expr.values
    if expr.operator == "NotIn":
        return value is None or value not in expr.values
    if expr.operator == "Exists":
        return value is not None
    if expr.operator == "DoesNotExist":
        return value is None
    if value is None or not value.lstrip("-").isdigit():
        return False
    number, bound = int(value), int(expr.values[0])
    return {"Gt": number > bound, "Lt": number < bound, "Gte": number >= bound, "Lte": number <= bound}[
        expr.operator
    ]


def _selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.match_labels) and all(
        _expr_matches(e, labels) for e in selector.match_expressions
    )


def _tolerated(pod: Pod, taint: Taint) -> bool:
    for t in pod.tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        if t.operator == "Exists" or t.value == taint.value:
            return True
    return False


def _node_ok_for(pod: Pod, labels: Mapping[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in pod.node_selector):
        return False
    return not (
        pod.required_node_terms
        and not any(all(_expr_matches(e, labels) for e in term) for term in pod.required_node_terms)
    )


def _booting_taints(existing: ExistingNode) -> tuple[Taint, ...]:
    """A node not initialized yet will lose its startup taints and node-readiness taints (`readiness.k8s.io/`)."""
    startup = {(t.key, t.effect) for t in existing.startup_taints}
    return tuple(
        t
        for t in existing.taints
        if not t.key.startswith("readiness.k8s.io/") and (t.key, t.effect) not in startup
    )


def _nodes(inp: SchedulingInput, plan: Plan) -> list[_Node]:
    by_key = {p.key: p for p in inp.pods}
    nodes: dict[str, _Node] = {}
    for existing in (*inp.nodes, *inp.in_flight):
        room = dict(existing.allocatable.items)
        node = _Node(
            existing.name,
            {**dict(existing.labels), wk.HOSTNAME: existing.name},
            room,
            _booting_taints(existing) if existing.in_flight or not existing.initialized else existing.taints,
            list(existing.pods),
        )
        if existing.in_flight and not any(p.is_daemonset for p in existing.pods):
            node.pods.extend(
                d
                for d in inp.daemonsets
                if _node_ok_for(d, node.labels)
                and all(_tolerated(d, t) for t in existing.taints if t.effect != "PreferNoSchedule")
            )
        nodes[existing.name] = node
    for placement in plan.existing:
        nodes[placement.node].pods.extend(by_key[k] for k in placement.pods)
    classes = {c.name: c for c in inp.node_classes}
    pools = {p.name: p for p in inp.pools}
    for claim in plan.new_claims:
        pool = pools[claim.nodepool]
        node_class = classes[pool.node_class]
        instance_type = pool_catalog(inp, pool)[claim.instance_type]
        kubelet = pool.effective_kubelet(node_class)
        room = dict(allocatable(instance_type, kubelet, node_class, inp.settings).items)
        labels = {
            **instance_type.node_labels(),
            **dict(pool.labels),
            wk.ZONE: claim.zone,
            wk.CAPACITY_TYPE: claim.capacity_type,
            wk.NODEPOOL: pool.name,
            wk.HOSTNAME: claim.name,
        }
        labels.update(dict(claim.labels))
        node = _Node(
            claim.name,
            labels,
            room,
            pool.taints,
            [by_key[k] for k in claim.pods],
            True,
            pool.name,
            dict(node_capacity(instance_type, kubelet, node_class, inp.settings).items),
        )
        for daemon in inp.daemonsets:  # the DaemonSets that would land here take room first
            if all(
                _tolerated(daemon, t) for t in pool.taints if t.effect != "PreferNoSchedule"
            ) and _node_ok_for(daemon, labels):
                node.pods.append(daemon)
        nodes[claim.name] = node
    return list(nodes.values())


def check(inp: SchedulingInput, plan: Plan) -> list[str]:
    problems: list[str] = []
    pending = [p for p in inp.pods if p.is_provisionable()]
    seen = Counter(
        [
            *(k for c in plan.new_claims for k in c.pods),
            *(k for e in plan.existing for k in e.pods),
            *(k for k, _ in plan.unschedulable),
        ]
    )
    for pod in pending:
        if seen[pod.key] != 1:
            problems.append(f"pod {pod.key} appears {seen[pod.key]} times in the plan")
    for key, reason in plan.unschedulable:
        if not reason.strip():
            problems.append(f"pod {key} is unschedulable without a reason")
    nodes = _nodes(inp, plan)
    placed_on = {p.key: n for n in nodes for p in n.pods}
    for node in nodes:
        used: dict[str, int] = defaultdict(int)
        live = [p for p in node.pods if not p.is_terminal]
        for pod in live:
            for name, amount in pod.requests.items:
                used[name] += amount
            used["pods"] += 1
        for name, amount in used.items():
            if amount > node.room.get(name, 0):
                problems.append(
                    f"node {node.name}: {name} overcommitted ({amount} > {node.room.get(name, 0)})"
                )
        new_pods = [p for p in live if p.key in seen and not p.is_daemonset]
        for pod in new_pods:
            for taint in node.taints:
                if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(pod, taint):
                    problems.append(
                        f"pod {pod.key} on {node.name} does not tolerate {taint.key}:{taint.effect}"
                    )
            if not _node_ok_for(pod, node.labels):
                problems.append(
                    f"pod {pod.key} on {node.name} violates its node selector or required affinity"
                )
        ports = Counter((hp.port, hp.protocol) for p in live for hp in p.host_ports)
        for (port, protocol), count in ports.items():
            if count > 1:
                problems.append(f"node {node.name}: host port {port}/{protocol} used {count} times")
    # pod (anti-)affinity and spread, over every node
    everyone = [(p, n) for n in nodes for p in n.pods if p.counts_for_topology() and not p.is_daemonset]
    for pod, node in everyone:
        if pod.key not in seen:
            continue
        for term in pod.pod_anti_affinity:
            domain = node.labels.get(term.topology_key)
            for other, other_node in everyone:
                if (
                    other.key == pod.key
                    or other_node.labels.get(term.topology_key) != domain
                    or domain is None
                ):
                    continue
                if term.covers_namespace(pod.namespace, other.namespace) and _selector_matches(
                    term.selector, dict(other.labels)
                ):
                    problems.append(
                        f"pod {pod.key} shares {term.topology_key}={domain} with {other.key} "
                        "despite anti-affinity"
                    )
        for term in pod.pod_affinity:
            domain = node.labels.get(term.topology_key)
            if not any(
                other_node.labels.get(term.topology_key) == domain
                and term.covers_namespace(pod.namespace, other.namespace)
                and _selector_matches(term.selector, dict(other.labels))
                for other, other_node in everyone
            ):
                problems.append(f"pod {pod.key} has no affine pod in {term.topology_key}={domain}")
        for spread in pod.topology_spread:
            if spread.when_unsatisfiable != "DoNotSchedule":
                continue
            eligible = [n for n in nodes if spread.topology_key in n.labels and _node_ok_for(pod, n.labels)]
            counts: dict[str, int] = {n.labels[spread.topology_key]: 0 for n in eligible}
            if spread.topology_key == wk.HOSTNAME:
                counts = {}
            for other, other_node in everyone:
                value = other_node.labels.get(spread.topology_key)
                if (
                    value is not None
                    and other.namespace == pod.namespace
                    and _selector_matches(spread.selector, dict(other.labels))
                    and (value in counts or spread.topology_key == wk.HOSTNAME)
                ):
                    counts[value] = counts.get(value, 0) + 1
            floor = (
                0
                if spread.topology_key == wk.HOSTNAME
                or (spread.min_domains is not None and len(counts) < spread.min_domains)
                else min(counts.values(), default=0)
            )
            mine = counts.get(node.labels.get(spread.topology_key, ""), 0)
            if mine - floor > spread.max_skew and node.new:
                problems.append(
                    f"pod {pod.key}: {spread.topology_key} skew {mine - floor} > {spread.max_skew}"
                )
    # pool limits
    for pool in inp.pools:
        if not pool.limits:
            continue
        total: dict[str, int] = defaultdict(int)
        for name, amount in inp.usage_of(pool.name).items:
            total[name] += amount
        for node in nodes:
            if node.new and node.pool == pool.name:
                for name, amount in node.capacity.items():
                    total[name] += amount
                total["nodes"] += 1
        for name, limit in pool.limits.items:
            if total.get(name, 0) > limit:
                problems.append(f"pool {pool.name}: {name} {total[name]} exceeds its limit {limit}")
        # Karpenter's worst case: the limits hold even if every claim launches its largest fallback type
        worst: dict[str, int] = defaultdict(int)
        for name, amount in inp.usage_of(pool.name).items:
            worst[name] += amount
        node_class = next(c for c in inp.node_classes if c.name == pool.node_class)
        kubelet = pool.effective_kubelet(node_class)
        for claim in plan.new_claims:
            if claim.nodepool != pool.name:
                continue
            sizes = [
                dict(node_capacity(inp.catalog[t], kubelet, node_class, inp.settings).items)
                for t in claim.instance_types
            ]
            for name, _ in pool.limits.items:
                worst[name] += 1 if name == "nodes" else max(size.get(name, 0) for size in sizes)
        for name, limit in pool.limits.items:
            if worst.get(name, 0) > limit:
                problems.append(
                    f"pool {pool.name}: its claims' largest fallback types add up to {name} "
                    f"{worst[name]}, above its limit {limit}"
                )
    problems.extend(_dollar_limits(inp, plan))
    # each claim's priced offering exists and is available
    for claim in plan.new_claims:
        offers = [
            o
            for o in pool_catalog(inp, next(p for p in inp.pools if p.name == claim.nodepool))[
                claim.instance_type
            ].offerings
            if o.zone == claim.zone and o.capacity_type == claim.capacity_type and o.available
        ]
        if not offers or abs(offers[0].price - claim.price_per_hour) > 1e-9:
            problems.append(
                f"claim {claim.name}: no available offering {claim.instance_type}/{claim.zone}/"
                f"{claim.capacity_type} at {claim.price_per_hour}"
            )
        if (claim.instance_type, claim.zone, claim.capacity_type) in inp.unavailable:
            problems.append(f"claim {claim.name} uses an unavailable offering")
    del placed_on
    return problems


def pool_catalog(inp: SchedulingInput, pool: NodePool) -> Catalog:
    """The catalog with the pool's NodeOverlays applied (`core.overlays`, tested on its own)."""
    node_class = next((c for c in inp.node_classes if c.name == pool.node_class), None)
    return pool_view(inp.catalog, pool, node_class.ami_family if node_class else "AL2023")


def _dollar_limits(inp: SchedulingInput, plan: Plan) -> list[str]:
    """Pool and cluster dollar caps hold: live nodes of the pools at their price plus the new claims'."""
    pools = {p.name: p for p in inp.pools}
    spent: dict[str, float] = defaultdict(float)
    for existing in (*inp.nodes, *inp.in_flight):
        owner = existing.nodepool
        if owner is not None and not existing.deleting:
            view = pool_catalog(inp, pools[owner]) if owner in pools else inp.catalog
            spent[owner] += price_of(view, dict(existing.labels))
    for claim in plan.new_claims:
        spent[claim.nodepool] += claim.price_per_hour
    problems = [
        f"pool {name}: {spent[name]:.4f} $/h exceeds its cost limit {p.max_cost_per_hour}"
        for name, p in pools.items()
        if p.max_cost_per_hour is not None and spent[name] > p.max_cost_per_hour + 1e-6
    ]
    cap = inp.settings.max_cost_per_hour
    if cap is not None and sum(spent.values()) > cap + 1e-6:
        problems.append(f"the cluster: {sum(spent.values()):.4f} $/h exceeds its cost limit {cap}")
    return problems
