"""`kubectl scale nodepool` on a static NodePool (issue #17): the stock kubectl scales it on the emulator (the
NodePool's scale subresource), the functions' cluster-object reader (`poolSource: cluster`) sees the new
`replicas`, and the static-pool plan launches or removes the difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longshore.config.cluster_objects import merge_cluster_objects
from longshore.core.static_pools import StaticMember, plan
from tests.builders import ec2_node_class_yaml
from tests.sim.test_kubectl import kubectl, needs_kubectl  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

STATIC = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: reserved}
spec:
  replicas: 3
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
  limits: {nodes: "10"}
---
""" + ec2_node_class_yaml()
CONFIG = """\
apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata: {name: demo}
spec: {region: us-east-1, poolSource: cluster}
"""


def _pool(kubectl):  # type: ignore[no-untyped-def]  # noqa: F811
    objects = json.loads(kubectl("get", "nodepools,ec2nodeclasses", "-o", "json"))["items"]
    merged = merge_cluster_objects(
        CONFIG, "ssm:/longshore/demo", objects, region="us-east-1", cluster_name="demo"
    )
    return merged.config.pool("reserved")


@needs_kubectl
def test_kubectl_scale_nodepool_changes_what_a_static_pool_keeps(kubectl, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    manifest = tmp_path / "static.yaml"
    manifest.write_text(STATIC)
    kubectl("apply", "-f", str(manifest))
    assert _pool(kubectl).replicas == 3
    members = [StaticMember(f"c{i}", f"n{i}", float(i)) for i in range(3)]
    assert "scaled" in kubectl("scale", "nodepool", "reserved", "--replicas=5")
    assert plan(_pool(kubectl), members).launch == 2
    assert "scaled" in kubectl("scale", "nodepool", "reserved", "--replicas=1")
    assert [m.claim_id for m in plan(_pool(kubectl), members).remove] == ["c2", "c1"]
