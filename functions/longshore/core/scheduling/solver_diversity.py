"""Phase 7: spot diversity. No spot (instance type, zone) pool holds more than a share of the batch's spot
capacity, so one pool's interruption wave cannot take most of it.

Theory of operation: the packer prices every node at its cheapest offering, so a large spot batch lands in
one or two (type, zone) pools (a 5,000-pod batch went to 98 nodes of one type in one zone). The rule is
`SchedulingInput.settings.spot_diversity` (a `model.SpotDiversity`, set by the Cluster config's
`spec.settings.spotDiversity`). When the batch has at least `min_claims` spot claims and `pool_share` is below
1, the pools over `pool_share × total` (capacity counted in vCPU of allocatable) give up claims, the cheapest
moves first: each moved claim takes the cheapest other spot offering in its own list (every one of them holds
its pods and keeps its requirements, pool limits and `minValues`, see `solver_claims`) whose pool stays within
the share; that offering is put first in the claim's list, which the launch tries in order. A claim moves
to another zone only when no pending pod has a zone (or other non-hostname) topology constraint, since its
placement was counted in its zone; otherwise it may change type within its zone. A claim no offering can
take stays where it is: the rule caps what it can, never leaves pods out. The moves together may add at most
`max_cost` (1 % by default) to the plan's cost: where diversity is dearer than that (memory-heavy pods whose
next spot offering costs 3–6 % more), the biggest pool keeps more than its share.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from longshore.core.pods import Pod
from longshore.core.scheduling.plan import ClaimPlan, OfferingOption
from longshore.core.scheduling.solver_state import HOSTNAME, SolverState
from longshore.core.scheduling.templates import TypeOption

_Pool = tuple[str, str]  # instance type, zone


def diversify_spot(solver: SolverState) -> None:
    inp = solver.inp
    rule = inp.settings.spot_diversity
    share = rule.pool_share
    spot = [i for i, claim in enumerate(solver.claims) if claim.capacity_type == "spot"]
    if share >= 1 or len(spot) < rule.min_claims:
        return
    options = {t.name: {o.name: o for o in t.options} for t in solver.templates}
    zones_free = not any(_zonal(pod) for pod in inp.pods)
    load: dict[_Pool, int] = defaultdict(int)
    for i in spot:
        load[_pool(solver.claims[i])] += solver.claims[i].allocatable.get("cpu")
    cap = share * sum(load.values())
    budget = rule.max_cost * sum(claim.price_per_hour for claim in solver.claims)
    for crowded in sorted(load, key=lambda key: (-load[key], key)):
        if load[crowded] <= cap:
            continue
        members = [i for i in spot if _pool(solver.claims[i]) == crowded]
        moves = []
        for i in members:
            claim = solver.claims[i]
            found = _alternative(claim, options[claim.nodepool], zones_free, load, cap, crowded)
            if found is not None:
                moves.append((found[0].price - claim.price_per_hour, i))
        for _, i in sorted(moves):
            if load[crowded] <= cap:
                break
            claim = solver.claims[i]
            found = _alternative(claim, options[claim.nodepool], zones_free, load, cap, crowded)
            if found is None or found[0].price - claim.price_per_hour > budget:
                continue
            offering, option = found
            budget -= offering.price - claim.price_per_hour
            load[crowded] -= claim.allocatable.get("cpu")
            load[(offering.instance_type, offering.zone)] += option.allocatable.get("cpu")
            solver.claims[i] = _moved(claim, offering, option)


def _pool(claim: ClaimPlan) -> _Pool:
    return (claim.instance_type, claim.zone)


def _zonal(pod: Pod) -> bool:
    return (
        any(s.topology_key != HOSTNAME for s in pod.topology_spread)
        or any(t.topology_key != HOSTNAME for t in pod.pod_affinity)
        or any(t.topology_key != HOSTNAME for t in pod.pod_anti_affinity)
        or any(t.topology_key != HOSTNAME for t in pod.preferred_pod_affinity)
        or any(t.topology_key != HOSTNAME for t in pod.preferred_pod_anti_affinity)
    )


def _alternative(
    claim: ClaimPlan,
    options: dict[str, TypeOption],
    zones_free: bool,
    load: dict[_Pool, int],
    cap: float,
    crowded: _Pool,
) -> tuple[OfferingOption, TypeOption] | None:
    """The cheapest other spot offering of the claim's list whose pool stays within the cap."""
    for offering in claim.offerings:
        key = (offering.instance_type, offering.zone)
        if (
            offering.capacity_type != "spot"
            or key == crowded
            or (not zones_free and offering.zone != claim.zone)
        ):
            continue
        option = options.get(offering.instance_type)
        if option is not None and load[key] + option.allocatable.get("cpu") <= cap:
            return offering, option
    return None


def _moved(claim: ClaimPlan, offering: OfferingOption, option: TypeOption) -> ClaimPlan:
    return replace(
        claim,
        instance_type=offering.instance_type,
        zone=offering.zone,
        price_per_hour=offering.price,
        offerings=(offering, *(o for o in claim.offerings if o != offering)),
        allocatable=option.allocatable,
        daemonset_overhead=option.daemon_overhead,
    )
