"""Fixtures for the provisioner tests: a simulated world (moto + the API emulator + the Lambda's adapters)."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import botocore.endpoint
import pytest

from longshore.config import bundle_cluster, load_cluster
from longshore.core.model import ClusterConfig
from longshore_sim.world import SimulatedWorld

REPO = Path(__file__).resolve().parents[2]
SEED_POOL = REPO / "sim" / "longshore_sim" / "scenarios" / "manifests" / "01-requirements-ttl-empty.yaml"
INFLATE = REPO / "sim" / "longshore_sim" / "scenarios" / "workloads" / "inflate.yaml"
CLUSTER = "demo-cluster"
PARAMETER = "/longshore/demo-cluster/config"


def publish_seed_config(world: SimulatedWorld) -> None:
    """The seed pool's cluster config in the SSM parameter the functions read at every invocation."""
    world.session.client("ssm", region_name="us-east-1").put_parameter(
        Name=PARAMETER,
        Value=bundle_cluster([SEED_POOL], region="us-east-1", cluster_name=CLUSTER),
        Type="String",
        Tier="Advanced",
    )


SMALL_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: small}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-demo-cluster
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
"""


def seed_config() -> ClusterConfig:
    return load_cluster([SEED_POOL], region="us-east-1", cluster_name=CLUSTER)


def small_pool_config(tmp_path: Path) -> ClusterConfig:
    path = tmp_path / "small-pool.yaml"
    path.write_text(SMALL_POOL)
    return load_cluster([path], region="us-east-1", cluster_name=CLUSTER)


@pytest.fixture(autouse=True)
def botocore_retry_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's own retry backoff, recorded instead of slept (its logic runs unchanged)."""
    slept: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=slept.append))
    return slept


@pytest.fixture
def make_world() -> Iterator[Callable[..., SimulatedWorld]]:
    started: list[SimulatedWorld] = []

    def make(config: ClusterConfig | None = None, **kwargs: Any) -> SimulatedWorld:
        world = SimulatedWorld(config or seed_config(), **kwargs).start()
        started.append(world)
        world.apply_file(INFLATE)
        world.sleep(0)
        return world

    yield make
    for world in started:
        world.close()


# -- reading the world ---------------------------------------------------------------------------------------


def pods(world: SimulatedWorld) -> list[dict[str, Any]]:
    return [p for p in world.cluster.store.view("pods") if not p["metadata"].get("deletionTimestamp")]


def running(world: SimulatedWorld) -> list[dict[str, Any]]:
    return [p for p in pods(world) if (p.get("status") or {}).get("phase") == "Running"]


def unbound(world: SimulatedWorld) -> list[dict[str, Any]]:
    return [p for p in pods(world) if not p["spec"].get("nodeName")]


def events(world: SimulatedWorld, reason: str | None = None) -> list[dict[str, Any]]:
    return [e for e in world.cluster.store.view("events") if reason is None or e.get("reason") == reason]


def instances_by_claim(world: SimulatedWorld) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for instance in world.live_instances():
        tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or []}
        found.setdefault(tags.get("karpenter.sh/nodeclaim", ""), []).append(instance["InstanceId"])
    return found


def all_instances(world: SimulatedWorld) -> list[dict[str, Any]]:
    reservations = world.ec2_reader.describe_instances()["Reservations"]
    return [i for r in reservations for i in r["Instances"]]
