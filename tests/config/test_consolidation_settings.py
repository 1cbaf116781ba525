"""The configuration of consolidation beyond the NodePool spec: the `featureGates.spotToSpotConsolidation`
setting of the Cluster document, and the `longshore.io/consolidation-min-savings` NodePool annotation."""

from __future__ import annotations

import pytest

from longshore.config import ConfigErrors, load_cluster_text
from longshore.core.model import SavingsThreshold

CLUSTER = """apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata:
  name: demo
spec:
  settings:
    featureGates:
      spotToSpotConsolidation: true
"""

POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
  annotations:
    longshore.io/consolidation-min-savings: "{value}"
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
  disruption:
    consolidationPolicy: Balanced
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: demo}}}}]
"""


def test_spot_to_spot_consolidation_is_a_feature_gate_off_by_default() -> None:
    on = load_cluster_text(CLUSTER + "---\n" + POOL.format(value="10%"), "cluster.yaml")
    assert on.settings.spot_to_spot_consolidation is True
    bare = CLUSTER.replace(
        "    featureGates:\n      spotToSpotConsolidation: true\n", "    reservedENIs: 0\n"
    )
    off = load_cluster_text(bare + "---\n" + POOL.format(value="10%"), "cluster.yaml")
    assert off.settings.spot_to_spot_consolidation is False


def test_an_unknown_feature_gate_is_named() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(CLUSTER.replace("spotToSpotConsolidation", "spotToSpot"), "cluster.yaml")
    assert any(e.path == "spec.settings.featureGates.spotToSpot" for e in caught.value.errors)


@pytest.mark.parametrize(
    ("value", "threshold"),
    [
        ("10%", SavingsThreshold(fraction=0.1, written="10%")),
        ("0.02", SavingsThreshold(per_hour=0.02, written="0.02")),
        ("$0.02/h", SavingsThreshold(per_hour=0.02, written="$0.02/h")),
    ],
)
def test_the_savings_threshold_annotation_sets_the_pool_threshold(
    value: str, threshold: SavingsThreshold
) -> None:
    config = load_cluster_text(POOL.format(value=value), "pools.yaml")
    pool = config.pool("general")
    assert pool.disruption.consolidation_threshold == threshold
    assert pool.disruption.consolidation_policy == "Balanced"


def test_a_pool_without_the_annotation_keeps_the_default_threshold() -> None:
    text = POOL.format(value="1%").replace(
        '  annotations:\n    longshore.io/consolidation-min-savings: "1%"\n', ""
    )
    assert load_cluster_text(text, "pools.yaml").pool("general").disruption.consolidation_threshold is None


def test_a_bad_savings_threshold_names_the_annotation_and_the_value() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(POOL.format(value="a lot"), "pools.yaml")
    (error,) = caught.value.errors
    assert error.path == "metadata.annotations.longshore.io/consolidation-min-savings"
    assert "'a lot'" in error.message and error.document == "NodePool/general"
