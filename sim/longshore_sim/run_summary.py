"""The summary of a scenario run (`summary.json`) and the scenario's `expect` block checked against it.

Rules:
- Everything here is read after the run from outside the system under test: the observations, the rule
  checker, the simulated Step Functions service, the metrics the functions emitted, the queue.
- `availability` (voluntary unavailable pod-seconds, unsafe terminations) and `duplicate_launches` are checked
  in every scenario, whatever its `expect` block says.
- The LP lower bounds (fluid and configuration) are of the pods running at the end, DaemonSet pods left out;
  the cost ratio is the live instances' $/h over the better bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from longshore.core import telemetry
from longshore.core.pod_manifest import pod_from_manifest
from longshore.services.snapshot import daemonset_pods
from longshore_sim.lp_bound import BoundReport, lower_bounds
from longshore_sim.manifest_reads import is_running, pod_key
from longshore_sim.report import summarise
from longshore_sim.scenario import Scenario

if TYPE_CHECKING:
    from longshore_sim.runner import ScenarioRunner


def _lp_bound(runner: ScenarioRunner) -> BoundReport | None:
    """Both LP lower bounds (fluid, configuration) of the pods running now; None when none runs."""
    store = runner.world.cluster.store
    pods = [
        pod_from_manifest(p)
        for p in store.view("pods")
        if is_running(p)
        and not any(r.get("kind") == "DaemonSet" for r in (p["metadata"].get("ownerReferences") or []))
    ]
    if not pods:
        return None
    daemonsets, _ = daemonset_pods(store.view("daemonsets"))
    return lower_bounds(pods, runner.config, runner.world.catalog, daemonsets)


def summarise_run(runner: ScenarioRunner, wall_seconds: float) -> dict[str, Any]:
    runner.obs.fleet_requests = [t - runner.start for t in runner.world.fleet_request_times]
    runner.obs.duplicate_launches = runner.checker.duplicate_launches
    workflows = _workflows(runner)
    runner.obs.disruptions_by_reason = dict(workflows.pop("disrupted_by_reason"))
    violations = runner.checker.finish(runner.world.clock.now(), runner.obs.first_running)
    runner.obs.violations = violations
    alive = set(runner.checker.never_ran(runner.obs.first_running)) | {
        pod_key(p) for p in runner.world.cluster.store.view("pods") if is_running(p)
    }
    cost = sum(runner.counters.live_prices.values())
    bounds = _lp_bound(runner) if runner.cost_bound else None
    bound = bounds.best_per_hour if bounds else 0.0
    summary = summarise(
        runner.scenario.name,
        runner.obs,
        virtual_seconds=runner.scenario.duration,
        wall_seconds=wall_seconds,
        cost_per_hour_final=cost,
        lp_bound_per_hour_final=bound,
        fluid_bound_per_hour_final=bounds.fluid.cost_per_hour if bounds else 0.0,
        configuration_bound_per_hour_final=bounds.configuration.cost_per_hour if bounds else 0.0,
        configuration_bound_converged=bounds.configuration.converged if bounds else True,
        pods_alive_at_end=alive,
        extra={
            "cost_ratio_final": round(cost / bound, 4) if bound else None,
            "instances_launched_by_type": dict(sorted(runner.counters.launched_types.items())),
            "provisioner": {
                "invocations": runner.counters.invocations,
                "passes": runner.counters.passes,
                "crashes": runner.counters.crashes,
                "failed_launches": runner.counters.launch_failures,
                "failed_invocations": runner.counters.failed_invocations,
                "quiet_fast_forwards": runner.counters.quiet_jumps,
                "triggered": len(runner.world.triggered),
                "webhook_triggers": runner.world.webhook_triggers.get("provisioner", 0),
            },
            "pod_disruptions": runner.checker.disruptions,
            "availability": {
                "voluntary_unavailable_pod_seconds": round(
                    runner.checker.voluntary_unavailable_pod_seconds, 3
                ),
                "unsafe_terminations": runner.checker.unsafe_terminations,
            },
            "planner": {
                "passes": runner.planner.passes,
                "decisions_by_reason": dict(sorted(runner.planner.decisions.items())),
                "abandoned": runner.planner.abandoned,
                "dropped_on_revalidation": runner.planner.dropped,
                "failed_passes": runner.planner.failed,
                "skips": len(runner.planner.skipped_until),
                "webhook_triggers": runner.world.webhook_triggers.get("planner", 0),
            },
            "workflows": workflows,
            "interruption": _interruption_summary(runner),
            "nodes_final": len(runner.world.cluster.store.view("nodes")),
            "tainted_after_last_pod_left_s": _emptiness(runner),
            "max_disrupting_at_once": dict(sorted(runner.checker.max_disrupting.items())),
            "drains": _drains(runner),
            **_warning_summary(runner),
        },
    )
    summary["checks"] = evaluate_expectations(runner.scenario, summary)
    return summary


def _workflows(runner: ScenarioRunner) -> dict[str, Any]:
    """Disruption and rotation executions, read from the simulated Step Functions service."""
    sfn = runner.world.workflows
    by_status: dict[str, int] = {}
    disrupted: dict[str, int] = {}
    failures: list[str] = []
    for execution in sfn.disruptions():
        by_status[execution.status] = by_status.get(execution.status, 0) + 1
        reason = str((execution.input or {}).get("reason"))
        if execution.status == "SUCCEEDED" and (execution.output or {}).get("outcome") == "disrupted":
            disrupted[reason] = disrupted.get(reason, 0) + 1
        elif execution.done and execution.status != "SUCCEEDED":
            failures.append(f"{execution.name}: {execution.error}: {execution.cause}")
    rotations = {e.name: e.status for e in sfn.rotations()}
    return {
        "disruption_executions": dict(sorted(by_status.items())),
        "rotations": rotations,
        "failed": failures[:20],
        "disrupted_by_reason": dict(sorted(disrupted.items())),
    }


def _interruption_summary(runner: ScenarioRunner) -> dict[str, Any]:
    metrics = runner.world.metrics

    def total(name: str, **dims: str) -> int:
        return int(sum(p.value for p in metrics.named(name, **dims)))

    ignored: dict[str, int] = {}
    for point in metrics.named(telemetry.MESSAGES_IGNORED):
        reason = dict(point.dimensions).get(telemetry.DIM_REASON, "?")
        ignored[reason] = ignored.get(reason, 0) + int(point.value)
    actions: dict[str, int] = {}
    for point in metrics.named(telemetry.INTERRUPTION_ACTIONS):
        action = dict(point.dimensions).get(telemetry.DIM_ACTION, "?")
        actions[action] = actions.get(action, 0) + int(point.value)
    failed = sum(len(r.get("batchItemFailures") or []) for r in runner.world.interruption_responses)
    return {
        "messages_delivered": runner.counters.messages,
        "queue_polls": runner.counters.queue_polls,
        "actions": dict(sorted(actions.items())),
        "ignored": dict(sorted(ignored.items())),
        "malformed": total(telemetry.MESSAGES_MALFORMED),
        "failed_deliveries": failed,
        "left_in_queue": runner.world.queue_depth(),
    }


def _drains(runner: ScenarioRunner) -> dict[str, dict[str, Any]]:
    """Per disrupted node (scenario seconds): tainted, its drain deadline, and when its last pod left."""
    out: dict[str, dict[str, Any]] = {}
    for node, tainted in sorted(runner.checker.first_tainted.items()):
        deadline = runner.checker.deadlines.get(node)
        out[node] = {
            "reason": runner.checker.node_reasons.get(node),
            "tainted_s": tainted,
            "deadline_s": None if deadline is None else round(deadline - runner.start, 3),
            "emptied_s": runner.checker.last_pod_left.get(node),
        }
    return out


def _emptiness(runner: ScenarioRunner) -> dict[str, float]:
    """For nodes disrupted as empty: seconds from their last pod leaving to the disruption taint."""
    out: dict[str, float] = {}
    for node, reason in sorted(runner.checker.node_reasons.items()):
        left = runner.checker.last_pod_left.get(node)
        tainted = runner.checker.first_tainted.get(node)
        if reason == "empty" and left is not None and tainted is not None:
            out[node] = round(tainted - left, 3)
    return out


def _warning_summary(runner: ScenarioRunner) -> dict[str, Any]:
    if not runner.steps.warnings:
        return {}
    requests = [t - runner.start for t in runner.world.fleet_request_times]
    cordoned: dict[str, float | None] = {}
    replacement: dict[str, float | None] = {}
    running: dict[str, bool | None] = {}
    for warned in runner.steps.warnings:
        tainted = runner.checker.first_tainted.get(warned.node)
        cordoned[warned.node] = None if tainted is None else round(tainted - warned.warned_at, 3)
        after = [t for t in requests if t >= warned.warned_at]
        replacement[warned.node] = round(min(after) - warned.warned_at, 3) if after else None
        running[warned.node] = warned.evicted_and_running
    return {
        "cordoned_after_warning_s": cordoned,
        "replacement_requested_after_warning_s": replacement,
        "all_evicted_pods_running_before_reclaim": running,
        "warnings": [
            {
                "node": w.node,
                "instance_id": w.instance_id,
                "warned_at_s": w.warned_at,
                "reclaim_at_s": w.reclaim_at,
                "pods_at_warning": w.pods_at_warning,
                "still_running_at_reclaim": w.reclaimed_running,
            }
            for w in runner.steps.warnings
        ],
    }


def evaluate_expectations(scenario: Scenario, summary: dict[str, Any]) -> dict[str, Any]:
    """The scenario's `expect` block, checked against the summary: {name: {expected, actual, ok}}."""
    expect = scenario.expect
    checks: dict[str, Any] = {}
    if expect.all_running:
        never = summary["pods"]["never_ran"]
        checks["all_running"] = {"expected": [], "actual": never[:20], "ok": not never}
    if expect.max_first_fleet_request_s is not None:
        actual = summary["first_fleet_request_after_pending_s"]
        checks["first_fleet_request_after_pending_s"] = {
            "expected": f"<= {expect.max_first_fleet_request_s:g}",
            "actual": actual,
            "ok": actual is not None and actual <= expect.max_first_fleet_request_s,
        }
    if expect.max_cost_ratio is not None:
        ratio = summary.get("cost_ratio_final")
        checks["cost_ratio_final"] = {
            "expected": f"<= {expect.max_cost_ratio:g}",
            "actual": ratio,
            "ok": ratio is not None and ratio <= expect.max_cost_ratio,
        }
    if expect.zero_violations:
        checks["violations"] = {
            "expected": 0,
            "actual": len(summary["violations"]),
            "ok": not summary["violations"],
        }
    availability = summary.get("availability") or {}
    checks["availability"] = {  # every scenario: no voluntary unavailability, no unsafe termination
        "expected": {"voluntary_unavailable_pod_seconds": 0, "unsafe_terminations": 0},
        "actual": availability,
        "ok": not availability.get("voluntary_unavailable_pod_seconds")
        and not availability.get("unsafe_terminations"),
    }
    window = expect.taint_after_last_pod_left_s
    if window is not None:
        seen = summary.get("tainted_after_last_pod_left_s") or {}
        checks["tainted_after_last_pod_left_s"] = {
            "expected": f"first empty node {window.min:g}..{window.max:g}, none before {window.min:g}",
            "actual": seen,
            # The first node goes as soon as its wait is over; the budget may hold the others back longer.
            "ok": bool(seen)
            and window.min <= min(seen.values()) <= window.max
            and all(v >= window.min for v in seen.values()),
        }
    for key, limit, name in (
        ("cordoned_after_warning_s", expect.cordon_after_warning_s, "cordon"),
        ("replacement_requested_after_warning_s", expect.replacement_after_warning_s, "replacement"),
    ):
        if limit is not None:
            seen = summary.get(key) or {}
            checks[key] = {
                "expected": f"<= {limit:g} for every warned node ({name})",
                "actual": seen,
                "ok": bool(seen) and all(v is not None and v <= limit for v in seen.values()),
            }
    if expect.evicted_pods_running_before_reclaim:
        seen = summary.get("all_evicted_pods_running_before_reclaim") or {}
        checks["all_evicted_pods_running_before_reclaim"] = {
            "expected": True,
            "actual": seen,
            "ok": bool(seen) and all(v is True for v in seen.values()),
        }
    for reason, least in sorted(expect.min_disruptions.items()):
        actual = summary["disruptions_by_reason"].get(reason, 0)
        checks[f"disruptions_{reason}"] = {"expected": f">= {least}", "actual": actual, "ok": actual >= least}
    if expect.final_nodes is not None:
        checks["nodes_final"] = {
            "expected": expect.final_nodes,
            "actual": summary["nodes_final"],
            "ok": summary["nodes_final"] == expect.final_nodes,
        }
    checks["duplicate_launches"] = {
        "expected": 0,
        "actual": summary["duplicate_launches"],
        "ok": summary["duplicate_launches"] == 0,
    }
    return checks
