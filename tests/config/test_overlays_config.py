"""NodeOverlay documents, the pool dollar limit annotation and the cluster's maxCostPerHour, through the loader."""

from __future__ import annotations

import pytest

from longshore.config import ConfigErrors, load_cluster_text
from tests.builders import ec2_node_class_yaml

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
  annotations: {longshore.io/max-cost-per-hour: "COST"}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
""" + ec2_node_class_yaml()
OVERLAY = """
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: NAME}
spec:
  weight: 10
  requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}]
  priceAdjustment: "+100%"
  capacity: {hugepages-2Mi: 1Gi}
"""
CLUSTER = """
apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata: {name: demo}
spec:
  settings: {maxCostPerHour: 40}
---
"""


def test_overlays_and_dollar_limits_load():
    config = load_cluster_text(
        CLUSTER + POOL.replace("COST", "12.50") + OVERLAY.replace("NAME", "a"), "c.yaml"
    )
    (overlay,) = config.node_overlays
    assert (overlay.name, overlay.weight, overlay.price_adjustment) == ("a", 10, "+100%")
    assert overlay.capacity.get("hugepages-2Mi") == 2**30
    (pool,) = config.node_pools
    assert pool.overlays == (overlay,) and pool.max_cost_per_hour == 12.5
    assert config.settings.max_cost_per_hour == 40


@pytest.mark.parametrize(
    ("text", "field", "shown"),
    [
        (POOL.replace("COST", "12,5"), "metadata.annotations.longshore.io/max-cost-per-hour", "12,5"),
        (
            POOL.replace("COST", "1") + OVERLAY.replace("NAME", "a") * 2,
            "metadata.name",
            "duplicate NodeOverlay",
        ),
        (
            POOL.replace("COST", "1") + OVERLAY.replace("NAME", "a").replace("weight: 10", "weight: 0"),
            "spec.weight",
            "0",
        ),
        (
            POOL.replace("COST", "1")
            + OVERLAY.replace("NAME", "a").replace("capacity:", 'price: "1"\n  capacity:'),
            "spec.priceAdjustment",
            "cannot set both",
        ),
        (CLUSTER.replace("40", "-1") + POOL.replace("COST", "1"), "spec.settings.maxCostPerHour", "-1"),
    ],
)
def test_errors_name_the_field_and_value(text, field, shown):
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, "c.yaml")
    errors = [e for e in caught.value.errors if (e.path or "").startswith(field)]
    assert errors, str(caught.value)
    assert any(shown in str(e) for e in errors), str(caught.value)
