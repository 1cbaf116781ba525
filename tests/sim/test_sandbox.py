"""`longshore sandbox` driven by the stock kubectl, as a newcomer would: apply a Deployment, watch it run."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from longshore_sim.sandbox import SandboxRunner
from longshore_sim.scenario import load_scenario

KUBECTL = shutil.which("kubectl")
# The sandbox paces virtual time to the wall clock: tests that run one share an xdist group (`make test`
# distributes with `--dist loadgroup`), so two sandboxes never compete for the two cores at once.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("sandbox"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
]
DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""


@pytest.fixture
def sandbox_world(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """The sandbox's kubeconfig, and its world (to look at what kubectl cannot see: executions, instances)."""
    kubeconfig = tmp_path / "kubeconfig"
    ready, stop = threading.Event(), threading.Event()
    worlds: list[Any] = []

    def on_ready(world: Any) -> None:
        worlds.append(world)
        ready.set()

    runner = SandboxRunner(
        load_scenario("sandbox"), kubeconfig=kubeconfig, speed=20.0, stop=stop, on_ready=on_ready
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    assert ready.wait(60), "the sandbox did not start"
    yield kubeconfig, worlds[0]
    stop.set()
    thread.join(60)
    assert not thread.is_alive(), "the sandbox did not stop"


@pytest.fixture
def sandbox(sandbox_world: tuple[Path, Any]) -> Path:
    return sandbox_world[0]


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    done = subprocess.run(
        [KUBECTL or "kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def test_a_deployment_applied_with_kubectl_runs_on_nodes_longshore_launches(sandbox: Path) -> None:
    # GIVEN the sandbox, WHEN a newcomer applies a Deployment with kubectl (validation on)
    assert "deployment.apps/web created" in kubectl(sandbox, "apply", "-f", "-", stdin=DEPLOYMENT)
    # THEN within a minute of wall time its pods are Running on nodes Longshore launched
    deadline = time.monotonic() + 60
    phases: list[str] = []
    while time.monotonic() < deadline:
        phases = kubectl(
            sandbox, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}"
        ).split()
        if phases == ["Running"] * 3:
            break
        time.sleep(1)
    assert phases == ["Running"] * 3
    nodes = kubectl(sandbox, "get", "nodes", "-L", "karpenter.sh/nodepool")
    assert "Ready" in nodes and "general" in nodes


def _wait(what: str, check: Callable[[], bool], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"not within {seconds:.0f} s of wall time: {what}")


def _names(sandbox: Path, kind: str) -> list[str]:
    return kubectl(sandbox, "get", kind, "-o", "jsonpath={.items[*].metadata.name}").split()


def _drained(world: Any, instance: str) -> bool:
    """The `deleted` disruption of `instance` ran to its end in the sandbox's Step Functions."""
    return any(
        e.name.startswith(f"deleted-{instance}") and e.status == "SUCCEEDED"
        for e in world.sfn.executions(world.workflows.disruption_arn)
    )


def _running(sandbox: Path) -> bool:
    phases = kubectl(sandbox, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}")
    return phases.split() == ["Running"] * 3


def test_nodeclaims_show_karpenters_columns_and_deleting_a_node_or_a_nodeclaim_drains_it(
    sandbox_world: tuple[Path, Any],
) -> None:
    sandbox, world = sandbox_world
    # GIVEN the Deployment running on nodes Longshore launched
    kubectl(sandbox, "apply", "-f", "-", stdin=DEPLOYMENT)
    _wait("the pods run", lambda: _running(sandbox))
    _wait(
        "every node has its NodeClaim",
        lambda: len(_names(sandbox, "nodeclaims")) == len(_names(sandbox, "nodes")),
    )
    # THEN `kubectl get nodepools,nodeclaims,nodes` prints Karpenter's columns (and the API server's for nodes)
    tables = kubectl(sandbox, "get", "nodepools,nodeclaims,nodes")
    headers = [line.split() for line in tables.splitlines() if line.startswith("NAME")]
    assert ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"] in headers
    assert ["NAME", "STATUS", "ROLES", "AGE", "VERSION"] in headers
    claim = _names(sandbox, "nodeclaims")[0]
    _wait(
        "the planner marks it Consolidatable once consolidateAfter (30 s) has passed",
        lambda: (
            "True"
            in kubectl(
                sandbox,
                "get",
                "nodeclaim",
                claim,
                "-o",
                'jsonpath={.status.conditions[?(@.type=="Consolidatable")].status}',
            )
        ),
    )
    node = kubectl(sandbox, "get", "nodeclaim", claim, "-o", "jsonpath={.status.nodeName}")
    instance = kubectl(sandbox, "get", "nodeclaim", claim, "-o", "jsonpath={.status.providerID}").split("/")[
        -1
    ]
    assert node in _names(sandbox, "nodes") and instance.startswith("i-")

    # WHEN a user deletes the NodeClaim, THEN its node is drained and terminated as Karpenter does, the claim
    # goes, and the pods run again (on a replacement when they need one)
    kubectl(sandbox, "delete", "nodeclaim", claim, "--wait=false")
    _wait("the NodeClaim's node is gone", lambda: node not in _names(sandbox, "nodes"))
    _wait("the NodeClaim is gone", lambda: claim not in _names(sandbox, "nodeclaims"))
    _wait("the pods run again", lambda: _running(sandbox))
    assert _drained(world, instance), "through the disruption workflow (drain, terminate), reason `deleted`"
    assert instance not in {i["InstanceId"] for i in world.live_instances()}

    # WHEN a user deletes a Node, THEN the finalizer holds it until it is drained and its instance terminated
    node = _names(sandbox, "nodes")[0]
    instance = kubectl(sandbox, "get", "node", node, "-o", "jsonpath={.spec.providerID}").split("/")[-1]
    kubectl(sandbox, "delete", "node", node, "--wait=false")
    _wait("the deleted node is gone", lambda: node not in _names(sandbox, "nodes"))
    _wait("the pods run again", lambda: _running(sandbox))
    assert _drained(world, instance)
    _wait(
        "its NodeClaim went with it",
        lambda: len(_names(sandbox, "nodeclaims")) == len(_names(sandbox, "nodes")),
    )


TEAM_POOL = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: team-a}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: team-a}
spec:
  template:
    metadata: {labels: {team: a}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: team-a}
      requirements:
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: ["m"]}
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
  limits: {cpu: "64"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: team-a-web}
spec:
  replicas: 2
  selector: {matchLabels: {app: team-a-web}}
  template:
    metadata: {labels: {app: team-a-web}}
    spec:
      nodeSelector: {team: a}
      containers: [{name: web, image: nginx, resources: {requests: {cpu: 250m, memory: 256Mi}}}]
"""
BAD_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: broken}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: team-a}
      requirements:
        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["many"]}
"""


def _condition(sandbox: Path, pool: str, kind: str, field: str) -> str:
    path = f'jsonpath={{.status.conditions[?(@.type=="{kind}")].{field}}}'
    return kubectl(sandbox, "get", "nodepool", pool, "-o", path)


def test_a_nodepool_applied_with_kubectl_is_used_and_gets_karpenters_status(
    sandbox_world: tuple[Path, Any],
) -> None:
    sandbox, _ = sandbox_world
    # GIVEN the sandbox (its cluster reads pools from the config and the cluster: `poolSource: both`), WHEN a
    # user applies a new EC2NodeClass and NodePool and a Deployment selecting the pool's label
    applied = kubectl(sandbox, "apply", "-f", "-", stdin=TEAM_POOL)
    assert "nodepool.karpenter.sh/team-a created" in applied
    # THEN within a minute of wall time its pods run on nodes of that pool
    deadline = time.monotonic() + 60
    phases: list[str] = []
    while time.monotonic() < deadline:
        phases = kubectl(
            sandbox, "get", "pods", "-l", "app=team-a-web", "-o", "jsonpath={.items[*].status.phase}"
        ).split()
        if phases == ["Running"] * 2:
            break
        time.sleep(1)
    assert phases == ["Running"] * 2
    nodes = kubectl(
        sandbox,
        "get",
        "nodes",
        "-l",
        "karpenter.sh/nodepool=team-a",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ).split()
    hosts = kubectl(
        sandbox, "get", "pods", "-l", "app=team-a-web", "-o", "jsonpath={.items[*].spec.nodeName}"
    ).split()
    assert nodes and set(hosts) <= set(nodes)
    # AND the pool and its class show Karpenter's conditions
    _wait("the NodePool is Ready", lambda: _condition(sandbox, "team-a", "Ready", "status") == "True")
    assert _condition(sandbox, "team-a", "ValidationSucceeded", "status") == "True"
    assert _condition(sandbox, "team-a", "NodeClassReady", "status") == "True"
    assert "team-a" in kubectl(sandbox, "get", "nodepools")

    # WHEN an invalid NodePool is applied, THEN it is not Ready and the message names the field and value
    kubectl(sandbox, "apply", "-f", "-", stdin=BAD_POOL)
    _wait(
        "the broken NodePool is judged", lambda: _condition(sandbox, "broken", "Ready", "status") == "False"
    )
    message = _condition(sandbox, "broken", "Ready", "message")
    assert "requirements" in message and "many" in message, message
