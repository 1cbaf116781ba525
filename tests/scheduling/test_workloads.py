"""Workload manifests -> pods, DaemonSets and nodes, with located errors."""

from __future__ import annotations

import pytest

from longshore.config.errors import ConfigErrors
from longshore.config.workloads import load_workloads
from tests.conftest import SEED_WORKLOADS

MANIFESTS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  parallelism: 3
  template:
    spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logs}
spec:
  template:
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {topology.kubernetes.io/zone: us-east-1a}}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "29"}}
---
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec: {nodeName: n1, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
"""


def test_controllers_expand_and_nodes_get_their_pods(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(MANIFESTS)
    workloads = load_workloads([path])
    names = sorted(p.key for p in workloads.pods)
    assert names == ["data/db-0", "data/db-1", "default/report-0", "default/report-1", "default/report-2"]
    assert dict(workloads.pods[0].labels)["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert [d.name for d in workloads.daemonsets] == ["logs"]
    (node,) = workloads.nodes
    assert node.name == "n1" and [p.name for p in node.pods] == ["bound"]
    assert node.allocatable.get("cpu") == 2000


def test_seed_inflate_scales_by_override():
    assert len(load_workloads([SEED_WORKLOADS / "inflate.yaml"]).pods) == 0
    assert len(load_workloads([SEED_WORKLOADS / "inflate.yaml"], replicas={"inflate": 5}).pods) == 5
    assert len(load_workloads([SEED_WORKLOADS / "nginx-to-scaleout.yaml"]).pods) == 5


def test_errors_name_file_line_document_field_and_value(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("""apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: c
          resources:
            requests:
              cpu: two
---
kind: Gadget
metadata: {name: x}
""")
    with pytest.raises(ConfigErrors) as caught:
        load_workloads([path])
    messages = [str(e) for e in caught.value]
    assert any(
        "bad.yaml:12" in m
        and "Deployment/web" in m
        and "spec.template.spec.containers[0].resources.requests.cpu" in m
        and "'two'" in m
        for m in messages
    ), messages
    assert any("unsupported kind 'Gadget'" in m for m in messages)
