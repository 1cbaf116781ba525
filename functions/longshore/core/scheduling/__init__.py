"""The packing engine: place pending pods on existing nodes, in-flight claims and new, cheapest claims.

`solve(SchedulingInput) -> Plan`; see `solver` for the phases (one `solver_*` module each) and `packer`
for the cost model (one `packer_*` module per step, tuned by `tuning.PackerTuning`).
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
