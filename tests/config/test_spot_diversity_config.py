"""The spot diversity rule in the Cluster document (`spec.settings.spotDiversity`): defaults, validation that
names file, field and value, and the setting reaching the plan (`longshore plan`, which builds its
`SchedulingInput` from the loaded config's settings as the provisioner does)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from longshore.cli.main import main
from longshore.config import ConfigErrors, load_cluster_text
from longshore.core.model import SpotDiversity

CLUSTER = """apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata: {name: demo}
spec:
  settings:
    spotDiversity: RULE
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - key: node.kubernetes.io/instance-type
          operator: In
          values: [c5.xlarge, m5.xlarge, c6i.xlarge, m6i.xlarge]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""
PODS = """apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: default}
spec:
  replicas: 24
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "3", memory: 4Gi}}
"""


def _config(rule: str) -> str:
    return CLUSTER.replace("RULE", rule)


def test_the_rule_is_on_by_default_and_each_field_is_read() -> None:
    assert load_cluster_text(_config("{}"), "c.yaml").settings.spot_diversity == SpotDiversity()
    given = "{maxPoolShare: 0.34, minClaims: 6, maxCostIncrease: 0.02}"
    assert load_cluster_text(_config(given), "c.yaml").settings.spot_diversity == SpotDiversity(
        pool_share=0.34, min_claims=6, max_cost=0.02
    )
    off = load_cluster_text(_config("{enabled: false, maxPoolShare: 0.3}"), "c.yaml").settings.spot_diversity
    assert off.pool_share == 1.0 and not off.enabled
    assert not load_cluster_text(_config("{maxPoolShare: 1}"), "c.yaml").settings.spot_diversity.enabled


@pytest.mark.parametrize(
    ("rule", "field", "shown"),
    [
        ("{maxPoolShare: 1.5}", "maxPoolShare", "1.5"),
        ("{maxPoolShare: 0}", "maxPoolShare", "got 0"),
        ("{maxPoolShare: 50%}", "maxPoolShare", "50%"),
        ("{minClaims: 1}", "minClaims", "got 1"),
        ("{minClaims: 2.5}", "minClaims", "2.5"),
        ("{maxCostIncrease: -0.01}", "maxCostIncrease", "-0.01"),
        ("{maxCostIncrease: 5}", "maxCostIncrease", "got 5"),
        ("{enabled: maybe}", "enabled", "maybe"),
        ("{maxShare: 0.5}", "maxShare", "maxShare"),
    ],
)
def test_a_bad_setting_names_the_file_the_field_and_the_value(rule: str, field: str, shown: str) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(_config(rule), "c.yaml")
    path = f"spec.settings.spotDiversity.{field}"
    errors = [e for e in caught.value.errors if e.path == path]
    assert errors, str(caught.value)
    text = str(errors[0])
    assert text.startswith("c.yaml:") and path in text and shown in text, text


def _plan(tmp_path: Path, rule: str) -> dict:
    config, pods = tmp_path / "cluster.yaml", tmp_path / "pods.yaml"
    config.write_text(_config(rule))
    pods.write_text(PODS)
    result = CliRunner().invoke(main, ["plan", "-c", str(config), "--pods", str(pods), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _top_pool(plan: dict) -> float:
    pools = Counter((claim["instance_type"], claim["zone"]) for claim in plan["nodeclaims"])
    return max(pools.values()) / len(plan["nodeclaims"])


def test_the_setting_changes_the_plan(tmp_path: Path) -> None:
    """24 one-pod spot nodes (3 of 4 vCPU each): off, every claim takes the cheapest pool; the default rule
    moves what 1 % of the cost buys; a share of 0.34 with a 10 % budget leaves no pool above a third."""
    off = _plan(tmp_path, "{enabled: false}")
    default = _plan(tmp_path, "{}")
    wide = _plan(tmp_path, "{maxPoolShare: 0.34, maxCostIncrease: 0.1}")
    assert len(off["nodeclaims"]) == len(default["nodeclaims"]) == len(wide["nodeclaims"]) == 24
    assert _top_pool(off) == 1.0
    assert _top_pool(wide) <= 0.34 < _top_pool(default) < 1.0
    cheapest = off["cost_per_hour"]
    assert cheapest < default["cost_per_hour"] <= cheapest * 1.01 + 1e-6
    assert cheapest < wide["cost_per_hour"] <= cheapest * 1.1 + 1e-6
    few = _plan(tmp_path, "{minClaims: 25}")  # a batch of 24 claims is under the rule's minimum
    assert few["nodeclaims"] == off["nodeclaims"]
