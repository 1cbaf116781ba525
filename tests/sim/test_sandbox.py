"""`longshore sandbox` driven by the stock kubectl, as a newcomer would: apply a Deployment, watch it run."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from longshore_sim.sandbox import SandboxRunner
from longshore_sim.scenario import load_scenario

KUBECTL = shutil.which("kubectl")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")]
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
def sandbox(tmp_path: Path) -> Iterator[Path]:
    kubeconfig = tmp_path / "kubeconfig"
    ready, stop = threading.Event(), threading.Event()
    runner = SandboxRunner(
        load_scenario("sandbox"), kubeconfig=kubeconfig, speed=20.0, stop=stop, on_ready=lambda _: ready.set()
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    assert ready.wait(60), "the sandbox did not start"
    yield kubeconfig
    stop.set()
    thread.join(60)
    assert not thread.is_alive(), "the sandbox did not stop"


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
