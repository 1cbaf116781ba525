"""The exact whole-node optimum for identical pods: the yardstick for scenarios where the fluid LP bound,
which packs fractional nodes, cannot be reached by any set of whole nodes."""

from __future__ import annotations

from longshore.core.scheduling.templates import build_templates
from longshore_sim.runner import ScenarioRunner


def whole_node_optimum(runner: ScenarioRunner, cpu_m: int, memory: int, count: int) -> float:
    """The cheapest whole-node cluster for `count` identical pods on the scenario's pools (exact, by DP)."""
    templates = build_templates(
        runner.config.node_pools, runner.config.node_classes, runner.world.catalog, (), runner.config.settings
    )
    bins = []
    for template in templates:
        for option in template.options:
            fits = min(
                option.room.get("cpu") // cpu_m, option.room.get("memory") // memory, option.room.get("pods")
            )
            if fits > 0 and option.offerings:
                bins.append((fits, min(o.price for o in option.offerings)))
    best = [0.0] + [float("inf")] * count
    for n in range(1, count + 1):
        best[n] = min(best[max(0, n - fits)] + price for fits, price in bins)
    return best[count]
