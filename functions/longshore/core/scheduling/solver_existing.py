"""Phase 3: fill free capacity of existing nodes, then in-flight claims, arithmetically per unit."""

from __future__ import annotations

from longshore.core.requirements import Requirements
from longshore.core.scheduling.podreqs import Variant
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    NodeState,
    Placed,
    PodClass,
    SolverState,
    Unit,
    selects,
    self_selects,
    spread_matches,
)
from longshore.core.taints import tolerates


def node_admits(
    solver: SolverState, state: NodeState, cls: PodClass, variant: Variant, requirements: Requirements
) -> bool:
    taints = [
        t
        for t in state.taints
        if not (variant.tolerate_prefer_no_schedule and t.effect == "PreferNoSchedule")
    ]
    if not tolerates(cls.example.tolerations, taints):
        return False
    return requirements.matches(state.labels)


def _node_room(solver: SolverState, state: NodeState, unit: Unit) -> int:
    cls = unit.cls
    variant = unit.variant
    limit = len(unit.pods)
    for name, amount in cls.requests.items:  # the cheap test first: most full nodes stop here
        if amount > 0:
            limit = min(limit, state.free.get(name, 0) // amount)
            if limit <= 0:
                return 0
    if not node_admits(solver, state, cls, variant, unit.requirements):
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
                selects(owner, term, p.label_map(), p.namespace)
                for p in state.pods
                if p.counts_for_topology()
            ):
                return 0
            if self_selects(cls, term):
                limit = min(limit, 1)
    for placed in solver.host_anti.get(host, ()):  # inverse anti-affinity of pods on this node
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
                if p.counts_for_topology() and spread_matches(owner, spread, p.label_map(), p.namespace)
            )
            if spread_matches(owner, spread, cls.labels, owner.namespace):
                limit = min(limit, spread.max_skew - present)
            elif present + 1 > spread.max_skew:
                return 0
    for term in variant.affinity:
        if term.topology_key == HOSTNAME and not any(
            selects(owner, term, p.label_map(), p.namespace) for p in state.pods if p.counts_for_topology()
        ):
            return 0
    return max(limit, 0)


def could_fit_any(units: list[Unit], states: list[NodeState]) -> list[NodeState]:
    """The states (in order) with room for the smallest request of `units` in every resource: on the others
    no unit's pod fits (a unit's pod asks at least the smallest request of each resource), and placing only
    takes room, so they stay out for the whole phase. Most nodes of a big cluster are full: the batch is
    tried on the nodes that could take some of it, not on every node."""
    least: dict[str, int] = {}
    for index, unit in enumerate(u for u in units if u.pods):
        asked = {name: amount for name, amount in unit.cls.requests.items if amount > 0}
        if index == 0:
            least = asked
        else:
            least = {name: min(amount, asked[name]) for name, amount in least.items() if name in asked}
        if not least:
            return states
    if not least:
        return []
    floor = list(least.items())
    return [s for s in states if all(s.free.get(name, 0) >= amount for name, amount in floor)]


def place_on_nodes(solver: SolverState, units: list[Unit], states: list[NodeState]) -> None:
    states = could_fit_any(units, states)
    for unit in units:
        asked = [(name, amount) for name, amount in unit.cls.requests.items if amount > 0]
        for state in states:
            if not unit.pods:
                break
            free = state.free
            if any(free.get(name, 0) < amount for name, amount in asked):
                continue  # `_node_room`'s first test, without the call: most nodes of a big cluster are full
            count = _node_room(solver, state, unit)
            if count <= 0:
                continue
            pods, unit.pods = unit.pods[:count], unit.pods[count:]
            for name, amount in unit.cls.requests.items:
                state.free[name] = state.free.get(name, 0) - amount * count
            state.pods.extend(pods)
            state.placed.extend(p.key for p in pods)
            solver.record(
                Placed(
                    unit.cls.labels,
                    unit.cls.example.namespace,
                    {**state.labels, HOSTNAME: state.node.name},
                    count,
                    unit.variant.anti_affinity,
                )
            )
