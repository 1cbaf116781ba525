"""The scenarios in scenarios/, run end to end, and the acceptance checks of issue #4 on their summaries.

Each run is a full simulation (moto in-process, the API emulator on 127.0.0.1, the provisioner as the Lambda
runs it, virtual time), so these are `slow`. Assertions read the summary the runner builds from outside the
system under test (pods seen Running in the emulator, CreateFleet calls and instances seen in moto).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longshore_sim.runner import ScenarioRunner, run_scenario
from longshore_sim.scenario import BUNDLED, load_scenario
from tests.scenarios.optimum import whole_node_optimum

SCENARIOS = BUNDLED
ISSUE_SCHEMA = {
    "scenario",
    "virtual_seconds",
    "wall_seconds",
    "pods",
    "first_fleet_request_after_pending_s",
    "nodes_launched",
    "nodes_terminated",
    "duplicate_launches",
    "cost_per_hour_final",
    "lp_bound_per_hour_final",
    "violations",
}

pytestmark = pytest.mark.slow


def run(name: str) -> tuple[ScenarioRunner, dict[str, Any]]:
    runner = ScenarioRunner(load_scenario(SCENARIOS / f"{name}.yaml"))
    return runner, runner.run().summary


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    directory = tmp_path_factory.mktemp("seed-report")
    result, _ = run_scenario(load_scenario(SCENARIOS / "seed-inflate.yaml"), directory)
    return result.summary, directory


def test_seed_scenario_asks_for_capacity_within_two_seconds(seed: tuple[dict[str, Any], Path]) -> None:
    summary, _ = seed
    assert summary["first_fleet_request_after_pending_s"] is not None
    assert summary["first_fleet_request_after_pending_s"] <= 2.0  # Karpenter's figure in seed 001


def test_seed_scenario_runs_every_pod_after_the_boot_delay(seed: tuple[dict[str, Any], Path]) -> None:
    summary, _ = seed
    pods = summary["pods"]
    assert pods["total_seen"] == 5 and pods["never_ran"] == []
    assert pods["pending_to_running_p50_s"] >= 30.0, "nothing runs before a node has booted"
    assert summary["duplicate_launches"] == 0 and summary["violations"] == []
    assert all(check["ok"] for check in summary["checks"].values())


def test_seed_scenario_writes_the_summary_and_the_plot(seed: tuple[dict[str, Any], Path]) -> None:
    summary, directory = seed
    written = json.loads((directory / "summary.json").read_text())
    assert set(written) >= ISSUE_SCHEMA and written == summary
    assert {"pending_to_running_p50_s", "pending_to_running_p95_s", "never_ran"} <= set(written["pods"])
    assert (directory / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_nginx_scale_out_runs_all_30_at_the_best_whole_node_cost_without_duplicates() -> None:
    runner, summary = run("nginx-to-scaleout")
    assert summary["pods"]["total_seen"] == 30 and summary["pods"]["never_ran"] == []
    assert summary["duplicate_launches"] == 0 and summary["violations"] == []
    optimum = whole_node_optimum(runner, 500, 512 * 2**20, 30)
    assert summary["cost_per_hour_final"] <= 1.05 * optimum
    # The issue asks for <= 1.05 x the fluid LP bound; 30 pods of 500m fill the best node (a c6i.4xlarge,
    # 15,890m allocatable) to 94.4 %, so no whole-node cluster gets closer than this ratio:
    assert summary["cost_ratio_final"] == pytest.approx(
        optimum / summary["lp_bound_per_hour_final"], rel=1e-3
    )


def test_a_crash_between_launch_and_record_costs_time_not_a_duplicate() -> None:
    _, summary = run("provisioner-crash")
    assert summary["provisioner"]["crashes"] == 1
    assert summary["duplicate_launches"] == 0 and summary["nodes_launched"] == 5
    assert summary["pods"]["never_ran"] == [] and summary["violations"] == []


def test_spot_capacity_errors_fall_back_to_other_offerings() -> None:
    _, summary = run("spot-capacity-errors")
    refused = {"c6a.xlarge/spot", "c5a.xlarge/spot", "c5.xlarge/spot", "c6i.xlarge/spot"}
    launched = summary["instances_launched_by_type"]
    assert launched and not refused & set(launched)
    assert summary["pods"]["never_ran"] == [] and summary["duplicate_launches"] == 0


def test_a_quiet_month_is_fast_forwarded_and_every_step_is_served() -> None:
    _, summary = run("quiet-31-days")
    assert summary["virtual_seconds"] == 31 * 86400
    assert summary["pods"]["never_ran"] == [] and summary["violations"] == []
    provisioner = summary["provisioner"]
    assert provisioner["quiet_fast_forwards"] >= 4
    assert provisioner["invocations"] < 100, "quiet days are skipped, not polled invocation by invocation"


def test_a_burst_of_2000_pods_all_run() -> None:
    _, summary = run("burst-2000")
    # The planner runs too: pods it moves while consolidating come back as new pods (hence >=).
    assert summary["pods"]["total_seen"] >= 2000 and summary["pods"]["never_ran"] == []
    assert summary["workflows"]["failed"] == []
    assert summary["duplicate_launches"] == 0 and summary["violations"] == []
    assert summary["first_fleet_request_after_pending_s"] <= 2.0
