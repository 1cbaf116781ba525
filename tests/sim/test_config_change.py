"""Issues #11 and #12: a changed cluster config reaches the warm functions of a simulation (the `config` step).

The functions are built by the production wiring (`wiring.container.Container` over each `build_*`), so a
config published to the SSM parameter is read again at the start of every invocation and before every later
pass of the provisioner's and the planner's loops, and the function is rebuilt on it, warm or cold. Every
assertion reads the world from outside: taints the rule checker saw, the disruption executions started, and
CreateFleet calls on the functions' EC2 client.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longshore.core.model import ClusterConfig
from longshore_sim.checker import CONFIG_LAG_S, RuleChecker
from longshore_sim.config_change import change_pool, parse
from longshore_sim.runner import ScenarioRunner
from longshore_sim.scenario import BUNDLED, load_scenario

CONSOLIDATING = BUNDLED / "manifests" / "consolidating.yaml"


def _scenario(tmp_path: Path, text: str) -> ScenarioRunner:
    path = tmp_path / "scenario.yaml"
    path.write_text(text.replace("BUNDLED", str(BUNDLED)), encoding="utf-8")
    return ScenarioRunner(load_scenario(path))


@pytest.mark.slow
def test_a_budget_freeze_stops_a_warm_planner_from_its_next_invocation(tmp_path: Path) -> None:
    runner = _scenario(
        tmp_path,
        """
name: freeze-while-consolidating
manifests: [BUNDLED/manifests/consolidating.yaml]
clusterName: demo-cluster
workloads: [BUNDLED/workloads/nginx-to-scaleout.yaml]
duration: 12m
steps:
  - {at: 0s, scale: {deployment: nginx-to-scaleout, replicas: 30}}
  - {at: 3m, scale: {deployment: nginx-to-scaleout, replicas: 5}}
  - {at: 4m30s, config: {pool: general, budgets: [{nodes: "0"}]}}
""",
    )
    summary = runner.run().summary
    assert summary["violations"] == []
    assert summary["pods"]["never_ran"] == []
    assert any("budgets [{'nodes': '0'}]" in note for note in summary["notes"])
    tainted = sorted(runner.checker.first_tainted.values())
    assert tainted and tainted[0] < 270.0, "the planner was consolidating before the freeze"
    # A function reads the config when an invocation starts: nothing is decided past the one running then.
    assert all(t <= 270.0 + CONFIG_LAG_S for t in tainted), tainted
    assert summary["nodes_final"] >= 3, "consolidation to the 1-2 node optimum stopped half way"


@pytest.mark.slow
def test_a_warm_provisioner_honours_a_new_limit_and_its_revert(tmp_path: Path) -> None:
    runner = _scenario(
        tmp_path,
        """
name: limit-then-revert
manifests: [BUNDLED/manifests/consolidating.yaml]
clusterName: demo-cluster
workloads: [BUNDLED/workloads/inflate.yaml]
duration: 6m
steps:
  - {at: 10s, scale: {deployment: inflate, replicas: 3}}
  - {at: 2m, config: {pool: general, limits: {cpu: "0"}}}
  - {at: 2m10s, scale: {deployment: inflate, replicas: 8}}
  - {at: 4m, config: {revert: true}}
""",
    )
    summary = runner.run().summary
    assert summary["violations"] == []
    requests = [t - runner.start for t in runner.world.fleet_request_times]
    assert requests and requests[0] < 120.0  # launched for the first 3 pods, warm from then on
    assert not [t for t in requests if 120.0 <= t < 240.0], requests  # the limit: no launch at all
    assert [t for t in requests if 240.0 <= t <= 250.0], requests  # reverted: launched at its next pass
    assert summary["pods"]["never_ran"] == []


GRACEFUL = ("underutilized", "empty", "drifted")


@pytest.mark.slow
def test_a_warm_planner_decides_nothing_on_the_pass_after_a_budget_freeze(tmp_path: Path) -> None:
    """Mid-invocation (the planner holds a consolidation decision awaiting its 15 s re-validation, passing
    every 10 s), the freeze lands between two passes: the next pass re-validates on the frozen budget and
    drops the decision, so no disruption is requested after the freeze (before #12 the running invocation
    kept the old budget and started it at t=260 s)."""
    runner = _scenario(
        tmp_path,
        """
name: freeze-mid-invocation
manifests: [BUNDLED/manifests/consolidating.yaml]
clusterName: demo-cluster
workloads: [BUNDLED/workloads/nginx-to-scaleout.yaml]
duration: 9m
steps:
  - {at: 0s, scale: {deployment: nginx-to-scaleout, replicas: 30}}
  - {at: 3m, scale: {deployment: nginx-to-scaleout, replicas: 5}}
  - {at: 4m12s, config: {pool: general, budgets: [{nodes: "0"}]}}
""",
    )
    summary = runner.run().summary
    assert summary["violations"] == []
    requested = sorted(
        float(e.input["requestedAt"]) - runner.start
        for e in runner.world.sfn.executions()
        if isinstance(e.input, dict) and e.input.get("reason") in GRACEFUL
    )
    assert requested and requested[0] < 252.0, "the planner was disrupting before the freeze"
    assert all(t < 252.0 for t in requested), requested
    assert any("budgets [{'nodes': '0'}]" in note for note in summary["notes"])


@pytest.mark.slow
def test_a_warm_provisioner_launches_nothing_on_the_pass_after_a_zero_limit(tmp_path: Path) -> None:
    """Mid-invocation (the provisioner polls while its first nodes boot), `limits.cpu: "0"` stops launches at
    its next pass: the pods that arrive after it stay pending until the revert."""
    runner = _scenario(
        tmp_path,
        """
name: limit-mid-invocation
manifests: [BUNDLED/manifests/consolidating.yaml]
clusterName: demo-cluster
workloads: [BUNDLED/workloads/inflate.yaml]
duration: 5m
steps:
  - {at: 10s, scale: {deployment: inflate, replicas: 3}}
  - {at: 20s, config: {pool: general, limits: {cpu: "0"}}}
  - {at: 25s, scale: {deployment: inflate, replicas: 8}}
  - {at: 3m, config: {revert: true}}
""",
    )
    summary = runner.run().summary
    assert summary["violations"] == []
    requests = [t - runner.start for t in runner.world.fleet_request_times]
    assert requests and requests[0] < 20.0, requests  # the first 3 pods, before the limit
    assert not [t for t in requests if 22.0 <= t < 180.0], requests  # the limit, from the next pass on
    assert [t for t in requests if t >= 180.0], requests  # reverted: launched again
    assert summary["pods"]["never_ran"] == []


def test_change_pool_edits_one_nodepool_and_stays_valid() -> None:
    text = CONSOLIDATING.read_text(encoding="utf-8")
    changed = change_pool(
        text,
        "general",
        budgets=[{"nodes": "0"}],
        limits={"cpu": "8"},
        requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
    )
    [pool] = [d for d in yaml.safe_load_all(changed) if d["kind"] == "NodePool"]
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "0"}]
    assert pool["spec"]["limits"] == {"cpu": "8"}
    capacity = [
        r
        for r in pool["spec"]["template"]["spec"]["requirements"]
        if r["key"] == "karpenter.sh/capacity-type"
    ]
    assert capacity == [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    base = parse(text, _config(text))
    assert parse(changed, base).pool("general").disruption.budgets[0].nodes == "0"
    with pytest.raises(ValueError, match="no NodePool named 'missing'"):
        change_pool(text, "missing", limits={"cpu": "1"})


def _config(text: str) -> ClusterConfig:
    from longshore.config import load_cluster_text

    return load_cluster_text(text, "test", region="us-east-1", cluster_name="demo-cluster")


def test_the_budget_rule_judges_a_decision_by_the_configs_in_force_then() -> None:
    text = CONSOLIDATING.read_text(encoding="utf-8")
    open_config = _config(change_pool(text, "general", budgets=[{"nodes": "2"}]))
    frozen = _config(change_pool(text, "general", budgets=[{"nodes": "0"}]))
    checker = RuleChecker(store=None, config=open_config)  # type: ignore[arg-type]  # budgets only
    checker.config_published(1000.0, frozen)
    # decided just after the freeze, on the config its invocation read before it: the old budget counts
    assert checker._allowed("general", "Underutilized", 10, 1000.0 + CONFIG_LAG_S / 2) == 2
    # decided more than an invocation after the freeze: only the freeze
    assert checker._allowed("general", "Underutilized", 10, 1000.0 + CONFIG_LAG_S + 1) == 0
    # decided before it: the old budget
    assert checker._allowed("general", "Underutilized", 10, 999.0) == 2
