"""The packing engine: place pending pods on existing nodes, in-flight claims and new, cheapest claims.

`solve(SchedulingInput) -> Plan`; see `solver` for the phases and `packer` for the cost model.
"""

from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.plan import ClaimPlan, ExistingPlacement, OfferingOption, Plan
from longshore.core.scheduling.solver import solve

__all__ = [
    "ClaimPlan",
    "ExistingNode",
    "ExistingPlacement",
    "OfferingOption",
    "Plan",
    "SchedulingInput",
    "solve",
]
