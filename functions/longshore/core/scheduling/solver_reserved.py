"""Phase 8: each claim that may launch reserved gets one capacity reservation with room, never more claims
than a reservation has room for.

Theory of operation (Karpenter tracks the same room per scheduling round, kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/reservationmanager.go`): the packer priced claims on reserved
offerings without counting them, since every reserved offering of a (type, zone) looks the same to it. This
pass walks the claims in plan order with each reservation's room (`core.reservations.room_left`). A claim with
reserved offerings is given the first reservation, over its reserved offerings cheapest first, that has room
and that the claim's requirements admit (`karpenter.k8s.aws/capacity-reservation-id` / `-type`); its reserved
offerings become that one (with the reservation's id and type, what the launch targets) followed by its other
offerings, and it is priced on it. A claim no reservation has room for keeps only its other offerings (every
type that holds its pods) and is priced on the cheapest of them (with that type's allocatable). A claim with
no other offering is dropped: its pods stay pending with a reason and the next pass plans them again. Offerings
outside any reservation count as "other" only when the claim's requirements tolerate a node without
reservation labels (a pod or pool requiring `capacity-reservation-id` or `-type` does not), so a claim never
launches a node its pods could not land on.
"""

from __future__ import annotations

from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.reservations import RESERVED, pick, reservations_of, room_left
from longshore.core.scheduling.plan import ClaimPlan, OfferingOption
from longshore.core.scheduling.solver_state import SolverState


def assign_reservations(solver: SolverState) -> None:
    """Give reserved claims a reservation each, within room (module docstring); drops claims left with no
    offering and records their pods as unschedulable."""
    lists = {id(claim.offerings): claim.offerings for claim in solver.claims}  # replicas share one list
    if not any(found for _, found in solver.reservations) and not any(
        o.capacity_type == RESERVED for offerings in lists.values() for o in offerings
    ):
        return
    room = room_left(solver.reservations)
    kept: list[ClaimPlan] = []
    for claim in solver.claims:
        reserved = [o for o in claim.offerings if o.capacity_type == RESERVED]
        if not reserved:
            kept.append(claim)
            continue
        # outside any reservation a node has no reservation labels: only if the claim's requirements allow that
        outside = all(
            (item := claim.requirements.get(key)) is None or item.matches_absent()
            for key in (
                wk.CAPACITY_RESERVATION_ID,
                wk.CAPACITY_RESERVATION_TYPE,
                wk.CAPACITY_RESERVATION_INTERRUPTIBLE,
            )
        )
        others = tuple(o for o in claim.offerings if o.capacity_type != RESERVED) if outside else ()
        found = reservations_of(solver.reservations, claim.node_class)
        allows = {
            r.id: claim.requirements.allows(wk.CAPACITY_RESERVATION_ID, r.id)
            and claim.requirements.allows(wk.CAPACITY_RESERVATION_TYPE, r.reservation_type)
            and claim.requirements.allows(wk.CAPACITY_RESERVATION_INTERRUPTIBLE, str(r.interruptible).lower())
            for r in found
        }
        chosen = pick(((o.instance_type, o.zone) for o in reserved), found, room, allows)
        if chosen is not None:
            room[chosen.id] -= 1
            price = next(
                o.price for o in reserved if (o.instance_type, o.zone) == (chosen.instance_type, chosen.zone)
            )
            option = OfferingOption(
                chosen.instance_type,
                chosen.zone,
                RESERVED,
                price,
                chosen.id,
                chosen.reservation_type,
                chosen.end_time,
                chosen.interruptible,
            )
            kept.append(_priced(claim, (option, *others), option))
            continue
        if not others:
            reason = (
                f"the capacity reservations of node class {claim.node_class} have no room left for "
                f"{', '.join(sorted({o.instance_type for o in reserved}))}, and the pods or pool "
                f"{claim.nodepool} allow no capacity outside a reservation"
            )
            solver.unschedulable.extend((pod, reason) for pod in claim.pods)
            continue
        kept.append(_priced(claim, others, others[0], solver))
    solver.claims = kept


def _priced(
    claim: ClaimPlan,
    offerings: tuple[OfferingOption, ...],
    priced: OfferingOption,
    solver: SolverState | None = None,
) -> ClaimPlan:
    changed = replace(
        claim,
        offerings=offerings,
        instance_type=priced.instance_type,
        zone=priced.zone,
        capacity_type=priced.capacity_type,
        price_per_hour=priced.price,
    )
    if solver is None or priced.instance_type == claim.instance_type:
        return changed
    for template in solver.templates:  # another type: its allocatable and DaemonSet overhead
        if template.name == claim.nodepool:
            for option in template.options:
                if option.name == priced.instance_type:
                    return replace(
                        changed, allocatable=option.allocatable, daemonset_overhead=option.daemon_overhead
                    )
    return changed
