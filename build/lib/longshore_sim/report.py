"""The simulation report: `summary.json` and `timeline.png`.

Theory of operation: the runner records observations as it goes (`Timeline` samples once per virtual
tick, `PodTimes` the moment each pod was first pending and first running). At the end, `summarise`
turns them into the summary schema documented in the README (the LP bound is the best of the two lower
bounds `sim.lp_bound` computes, each of them reported too), and `plot` draws nodes, pending pods and
cost per hour against virtual time with matplotlib's non-interactive Agg backend.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Sample:
    t: float
    nodes: int
    pending: int
    running: int
    cost_per_hour: float


@dataclass(slots=True)
class Observations:
    """Everything the runner learns during a scenario, filled in as the run goes."""

    samples: list[Sample] = field(default_factory=list)
    first_pending: dict[str, float] = field(default_factory=dict)  # pod key -> first seen pending
    first_running: dict[str, float] = field(default_factory=dict)  # pod key -> first seen running
    pods_seen: set[str] = field(default_factory=set)
    fleet_requests: list[float] = field(default_factory=list)  # virtual times of CreateFleet calls
    nodes_launched: int = 0
    nodes_terminated: int = 0
    duplicate_launches: int = 0
    disruptions_by_reason: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _rounded(cost_per_hour: float | None) -> float | None:
    return None if cost_per_hour is None else round(cost_per_hour, 6)


def summarise(
    scenario: str,
    obs: Observations,
    *,
    virtual_seconds: float,
    wall_seconds: float,
    cost_per_hour_final: float,
    lp_bound_per_hour_final: float | None,
    pods_alive_at_end: set[str],
    fluid_bound_per_hour_final: float | None = None,
    configuration_bound_per_hour_final: float | None = None,
    configuration_bound_converged: bool | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    latencies = [obs.first_running[k] - t for k, t in obs.first_pending.items() if k in obs.first_running]
    never_ran = sorted(k for k in pods_alive_at_end if k not in obs.first_running)
    first_pending = min(obs.first_pending.values(), default=None)
    first_fleet = None
    if first_pending is not None:
        after = [t for t in obs.fleet_requests if t >= first_pending]
        first_fleet = round(min(after) - first_pending, 3) if after else None
    summary: dict[str, Any] = {
        "scenario": scenario,
        "virtual_seconds": round(virtual_seconds, 3),
        "wall_seconds": round(wall_seconds, 3),
        "pods": {
            "total_seen": len(obs.pods_seen),
            "pending_to_running_p50_s": percentile(latencies, 50),
            "pending_to_running_p95_s": percentile(latencies, 95),
            "never_ran": never_ran,
        },
        "first_fleet_request_after_pending_s": first_fleet,
        "fleet_requests": len(obs.fleet_requests),
        "nodes_launched": obs.nodes_launched,
        "nodes_terminated": obs.nodes_terminated,
        "duplicate_launches": obs.duplicate_launches,
        "cost_per_hour_final": round(cost_per_hour_final, 6),
        "lp_bound_per_hour_final": _rounded(lp_bound_per_hour_final),
        "fluid_bound_per_hour_final": _rounded(fluid_bound_per_hour_final),
        "configuration_bound_per_hour_final": _rounded(configuration_bound_per_hour_final),
        "configuration_bound_converged": configuration_bound_converged,
        "disruptions_by_reason": dict(sorted(obs.disruptions_by_reason.items())),
        "violations": list(obs.violations),
        "notes": list(obs.notes),
    }
    if extra:
        summary.update(extra)
    return summary


def write_summary(directory: Path, summary: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    return path


def plot(directory: Path, scenario: str, samples: list[Sample]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "timeline.png"
    fig, (ax_nodes, ax_pending, ax_cost) = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    times = [s.t for s in samples]
    unit, scale = (
        ("h", 3600.0)
        if (times and times[-1] > 4 * 3600)
        else ("min", 60.0)
        if (times and times[-1] > 600)
        else ("s", 1.0)
    )
    xs = [t / scale for t in times]
    ax_nodes.step(xs, [s.nodes for s in samples], where="post", color="tab:blue")
    ax_nodes.set_ylabel("nodes")
    ax_pending.step(xs, [s.pending for s in samples], where="post", color="tab:orange", label="pending")
    ax_pending.step(xs, [s.running for s in samples], where="post", color="tab:green", label="running")
    ax_pending.set_ylabel("pods")
    ax_pending.legend(loc="upper right")
    ax_cost.step(xs, [s.cost_per_hour for s in samples], where="post", color="tab:red")
    ax_cost.set_ylabel("$/h")
    ax_cost.set_xlabel(f"virtual time ({unit})")
    fig.suptitle(f"Longshore simulation: {scenario}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
