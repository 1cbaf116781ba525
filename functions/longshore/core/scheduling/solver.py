"""The scheduler: place pending pods on existing nodes, in-flight claims, then new claims priced at least cost.

Theory of operation. `solve(SchedulingInput) -> Plan` runs six phases over *pod classes* (identical pods
grouped by `Pod.placement_signature`, so the work grows with classes, not pods):

1. *Variants* (`solver_variants`). Each class gets the strictest relaxation state (`podreqs.ladder`) that some existing node or
   some pool could ever host (taints, requirements, a type big enough, topology that can be satisfied).
   A class no state fits is unschedulable with the reason of every pool, e.g. "pool gpu: no instance type
   has 200Gi of memory".
2. *Domains* (`solver_domains`). Constraints on a topology key other than the hostname (zone spread, zone (anti-)affinity,
   spreads over custom labels such as `capacity-spread`) are decided up front: the class is split into
   *units*, each pinned to one domain value by water-filling the counts of matching pods (existing ones plus
   those already planned in this batch) over the domains the pods can reach, so the skew against the lowest
   count of all the spread's domains (by its nodeAffinityPolicy and nodeTaintsPolicy) stays within
   `maxSkew` (`minDomains` honoured); pods a spread cannot place relax one more step of the ladder;
   affinity pins to a domain that already has a matching pod (or one chosen domain when the class selects
   itself); anti-affinity, including the inverse anti-affinity of running pods, excludes domains. Pending
   pods of classes split earlier count for anti-affinity (both ways) in every domain they may still land
   in (`solver_state.Possible`, Karpenter's `Topology.Record`), so it holds whatever the packer picks.
   Pods with self-selecting anti-affinity take one free domain each; when there are more free domains than
   pods, which ones is a choice the whole plan's cost depends on (zone spot prices, the zones the other
   pods pack in), so batches of at most `TUNING.zone_choice_pods` pods are solved once per choice, up to
   `TUNING.zone_choices` (`solver_domains._choose`), and the plan with the fewest unschedulable pods, then
   the cheapest, wins (the first free domains on a tie). Every member honours every constraint.
3. *Existing nodes, then in-flight claims* (`solver_existing`; initialized first, then by name): free capacity is filled
   arithmetically per unit and node, honouring taints (startup/ephemeral ignored on nodes not yet
   initialized), requirements, host ports, hostname anti-affinity (both directions), hostname spread and
   hostname affinity.
4. *New claims, pool by pool in weight order* (`solver_launch`). Units a pool can take become packer items (count, request
   vector, the bitmask of the pool's offers they accept, per-node caps from hostname anti-affinity, spread and
   host ports, conflicts) and `packer.pack` chooses types, zones and capacity types at least total cost within
   the pool's limits. What a pool cannot take (limits, no fitting type) goes to the next pool.
5. *Claims* (`solver_claims`). Each packed node becomes a `ClaimPlan` with its narrowed requirements and every compatible
   offering cheapest first (≤ `max_instance_types` types) so a launch can fall back. The cut keeps the
   pool's `minValues`: a type bringing a value still missing is always kept, others only while the slots
   left cover the values still missing. Under the Strict policy a type is not packed into at all when the
   types at least as big (its claims' fallback list) cannot offer `minValues` distinct values; a pod only
   such types could hold is unschedulable with that reason.

6. *Spread repair* (`solver_repair`). When some pod is unschedulable, a domain spread split in phase 2 may have lost part of
   one domain's quota (a pool limit, no fitting type) and left the others ahead by more than maxSkew: the
   final per-domain counts are recomputed and offending pods are taken back off their new claims, one at a
   time, with a reason (claims left empty are dropped).
7. *Spot diversity* (`solver_diversity`, `settings.spot_diversity`). In a batch with at least `min_claims` (10)
   spot claims, no spot (type, zone) pool keeps more than `pool_share` (0.5) of the spot vCPU: the cheapest
   moves send claims to the next cheapest spot offering of their own list, zones changing only when no pending
   pod has a zone topology constraint, for at most `max_cost` (1 %) of the plan's cost.
8. *Capacity reservations* (`solver_reserved`). Each claim that may launch reserved is given one reservation
   with room, never more claims than a reservation has room for; the rest fall back to their other offerings.

Existing nodes are checked against the inverse anti-affinity of their own pods through an index by hostname,
so filling 1,000 nodes does not rescan every placed pod per (node, class). Counts of placed pods per domain
are kept per selector and brought up to date incrementally; pool refusals, type compatibility (without the
zone and capacity-type keys, which the offerings decide) and offer masks are memoised, so 1,000 pod classes
cost little more than the packing itself. The state and these memos live in `solver_state.SolverState`,
which every phase takes explicitly; `solve` is only the loop over the phases, as the scheduler loop of
`kubernetes-sigs/karpenter` `pkg/controllers/provisioning/scheduling/scheduler.go` delegates its steps.
"""

from __future__ import annotations

from dataclasses import replace

from longshore.core.scheduling.inputs import SchedulingInput
from longshore.core.scheduling.plan import ExistingPlacement, Plan
from longshore.core.scheduling.podreqs import without_preferences
from longshore.core.scheduling.solver_diversity import diversify_spot
from longshore.core.scheduling.solver_domains import split_units
from longshore.core.scheduling.solver_existing import place_on_nodes
from longshore.core.scheduling.solver_launch import launch
from longshore.core.scheduling.solver_repair import repair_spreads
from longshore.core.scheduling.solver_reserved import assign_reservations
from longshore.core.scheduling.solver_state import PodClass, SolverState, Unit
from longshore.core.scheduling.solver_variants import choose_variant
from longshore.core.scheduling.tuning import TUNING


def solve(inp: SchedulingInput) -> Plan:
    """Plan where every pending pod runs (see the module docstring)."""
    if (
        inp.settings.preference_policy == "Ignore"
    ):  # bound pods' preferences never repel (inverse: required only)
        inp = replace(inp, pods=tuple(without_preferences(p) for p in inp.pods))
    plan, choices = _solve_once(inp, 0)
    if choices > 1 and len(inp.pods) <= TUNING.zone_choice_pods:
        for choice in range(1, min(choices, TUNING.zone_choices)):
            other, _ = _solve_once(inp, choice)
            if _rank(other) < _rank(plan):
                plan = other
    return plan


def _rank(plan: Plan) -> tuple[int, float]:
    """Fewer unschedulable pods first, then the cheaper plan (the first member wins a tie)."""
    return len(plan.unschedulable), plan.cost_per_hour


def _solve_once(inp: SchedulingInput, anti_choice: int) -> tuple[Plan, int]:
    """One run of the phases with the `anti_choice`-th choice of anti-affinity domains; the plan and the
    number of choices the batch offers."""
    solver = SolverState(inp, anti_choice)
    classes = solver.pod_classes()
    units: list[Unit] = []
    waiting = classes
    while waiting:  # pod affinity to pods of the batch: a follower waits until its targets are split
        deferred = []
        for cls in waiting:
            choose_variant(solver, cls)
            if cls.variant is None and cls.example.pod_affinity:
                deferred.append(cls)
            elif cls.variant is not None:
                units.extend(split_units(solver, cls))
            else:
                _unschedulable(solver, cls)
        if len(deferred) == len(waiting):  # no target came: they stay unschedulable
            for cls in deferred:
                _unschedulable(solver, cls)
            break
        waiting = deferred
    place_on_nodes(solver, units, solver.nodes)
    place_on_nodes(solver, units, solver.in_flight)
    launch(solver, units)
    if solver.unschedulable:
        repair_spreads(solver, [*classes, *solver.relaxed])
    diversify_spot(solver)
    assign_reservations(solver)
    existing = tuple(
        ExistingPlacement(state.node.name, tuple(state.placed), state.node.in_flight)
        for state in (*solver.nodes, *solver.in_flight)
        if state.placed
    )
    order = {pod.key: index for index, pod in enumerate(solver.inp.pods)}
    unschedulable = tuple(sorted(solver.unschedulable, key=lambda row: order.get(row[0], 0)))
    return Plan(tuple(solver.claims), existing, unschedulable), solver.anti_choices


def _unschedulable(solver: SolverState, cls: PodClass) -> None:
    for pod in cls.pods:
        solver.unschedulable.append((pod.key, cls.reason or "no node pool can run it"))
