"""The benchmark's LP lower bounds: a bench `Workload` adapted to the shared module (`longshore_sim.lp_bound.pools`,
docs/reference/lp-bounds.md), which owns the fluid LP, the cover bound for the Karpenter mix and the
configuration LP with its rounded plan. A workload's pods are placed on its first pool."""

from __future__ import annotations

from bench.workloads import Workload
from longshore_sim.lp_bound import pools
from longshore_sim.lp_bound.pools import ClassInstance, ConfigResult
from longshore_sim.lp_bound.pools import TimedBound as LowerBound

__all__ = [
    "ClassInstance",
    "ConfigResult",
    "LowerBound",
    "class_instance",
    "configuration",
    "cover_bound",
    "fluid_bound",
]


def class_instance(workload: Workload) -> ClassInstance:
    return pools.class_instance(workload.pods, workload.pools[0], workload.catalog)


def fluid_bound(workload: Workload) -> LowerBound:
    return pools.fluid_bound(workload.pods, workload.pools[0], workload.catalog)


def cover_bound(workload: Workload) -> LowerBound:
    return pools.cover_bound(workload.pods, workload.pools[0], workload.catalog)


def configuration(workload: Workload, time_limit: float = 20.0, round_limit: float = 20.0) -> ConfigResult:
    """The configuration-LP bound and a rounded integer plan (`pools.configuration_plan`)."""
    return pools.configuration_plan(
        workload.pods, workload.pools[0], workload.catalog, time_limit=time_limit, round_limit=round_limit
    )
