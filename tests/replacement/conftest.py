"""Fixtures for the replacement launcher: a cluster config, a catalog, Kubernetes objects, and a seeded moto world.

The Kubernetes side is the shared stateful `tests.fakes.FakeCluster`; the AWS side is moto, seeded
by `sim.aws.seed_cluster`, with the `FleetEmulator` on the EC2 client so CreateFleet picks the cheapest pool and
can refuse pools with capacity errors, and the production `ClaimLauncher` over `Ec2Fleet` and DynamoDB stores on top.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
import pytest
from moto import mock_aws

from longshore.adapters.aws import retry
from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoOfferingAvailability, DynamoTable
from longshore.adapters.aws.eks import describe_cluster
from longshore.adapters.aws.fleet import Ec2Fleet
from longshore.adapters.aws.instances import Ec2Instances
from longshore.adapters.memory import MemoryClaimStore, MemoryOfferingAvailability
from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable, node_capacity
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim, provider_id
from longshore.core.model import ClusterConfig, NodeClass, NodePool, Origin, Requirement, SelectorTerm, Taint
from longshore.core.resources import Limits
from longshore.ports.kube import Manifest
from longshore.services.launch import ClaimLauncher
from longshore.services.replacement import ClusterReplacementLauncher
from longshore_sim.aws import FleetEmulator, seed_cluster
from longshore_sim.clock import VirtualClock
from tests.builders import pod_manifest, real_catalog
from tests.fakes import FakeCluster

CLUSTER = "replace-cluster"
NOW = 1_767_225_600.0
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
TYPES = ("c5.large", "c5.xlarge", "m5.large", "m5.xlarge", "m5.2xlarge", "r5.large", "r5.xlarge")
BOTOCORE_SESSION = botocore.session.get_session()
V1_POOL = Origin("karpenter.sh/v1", "NodePool", "replacement-test.yaml")
V1_CLASS = Origin("karpenter.k8s.aws/v1", "EC2NodeClass", "replacement-test.yaml")


def node_class(name: str = "default") -> NodeClass:
    discovery = (SelectorTerm(tags=(("karpenter.sh/discovery", CLUSTER),)),)
    return NodeClass(
        name=name,
        origin=V1_CLASS,
        ami_family="AL2023",
        ami_selector_terms=(SelectorTerm(alias="al2023@latest"),),
        subnet_selector_terms=discovery,
        security_group_selector_terms=discovery,
        role=f"KarpenterNodeRole-{CLUSTER}",
    )


def pool(
    name: str = "general",
    *,
    weight: int = 0,
    types: Sequence[str] = TYPES,
    capacity_types: Sequence[str] = ("on-demand",),
    limits: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    replicas: int | None = None,
) -> NodePool:
    return NodePool(
        name=name,
        origin=V1_POOL,
        node_class="default",
        weight=weight,
        requirements=(
            Requirement(wk.INSTANCE_TYPE, "In", tuple(types)),
            Requirement(wk.CAPACITY_TYPE, "In", tuple(capacity_types)),
            Requirement(wk.ZONE, "In", ZONES),
        ),
        taints=tuple(taints),
        limits=Limits.parse(limits or {}),
        replicas=replicas,
    )


def cluster_config(*pools: NodePool) -> ClusterConfig:
    return ClusterConfig(
        name=CLUSTER,
        region="us-east-1",
        kubernetes_version="1.30",
        node_pools=pools or (pool(),),
        node_classes=(node_class(),),
    )


def catalog() -> Catalog:
    return real_catalog(names=TYPES)


def node_manifest(
    name: str,
    instance_id: str,
    *,
    pool_name: str = "general",
    instance_type: str = "m5.large",
    zone: str = "us-east-1a",
    config: ClusterConfig | None = None,
) -> Manifest:
    """A registered, initialized Longshore node of `instance_type`, reporting that type's allocatable."""
    the_config = config or cluster_config()
    it = catalog().get(instance_type)
    assert it is not None
    klass = the_config.node_classes[0]
    kubelet = the_config.node_pools[0].effective_kubelet(klass)
    room = allocatable(it, kubelet, klass, the_config.settings).to_quantities()
    capacity = node_capacity(it, kubelet, klass, the_config.settings).to_quantities()
    labels = {
        wk.NODEPOOL: pool_name,
        wk.INSTANCE_TYPE: instance_type,
        wk.ZONE: zone,
        wk.CAPACITY_TYPE: "on-demand",
        wk.HOSTNAME: name,
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.INITIALIZED: "true",
        wk.REGISTERED: "true",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels, "annotations": {}},
        "spec": {"providerID": provider_id(zone, instance_id), "taints": []},
        "status": {
            "allocatable": room,
            "capacity": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def running_pod(name: str, node: str, *, cpu: str = "1", memory: str = "1Gi", **options: Any) -> Manifest:
    """A running pod bound to `node` (owned by a ReplicaSet unless `owner` says otherwise)."""
    options.setdefault("owner", ("ReplicaSet", f"{name.rsplit('-', 1)[0]}-rs"))
    manifest = pod_manifest(name, cpu=cpu, memory=memory, node_name=node, **options)
    manifest["metadata"]["creationTimestamp"] = "2025-12-31T00:00:00Z"
    manifest["status"] = {"phase": "Running"}
    return manifest


def old_claim(node: Manifest, claim_id: str = "general-old") -> NodeClaim:
    """The initialized claim a node was launched for."""
    labels = node["metadata"]["labels"]
    return NodeClaim(
        id=claim_id,
        nodepool=labels[wk.NODEPOOL],
        node_class="default",
        instance_type=labels[wk.INSTANCE_TYPE],
        zone=labels[wk.ZONE],
        capacity_type="on-demand",
        instance_id=node["spec"]["providerID"].rsplit("/", 1)[-1],
        node_name=node["metadata"]["name"],
        provider_id=node["spec"]["providerID"],
        state="initialized",
        created_at=NOW - 86_400,
    )


class NeverLaunches:
    """A launcher for planning-only tests: any launch is a test failure."""

    def launch(self, request: Any, now: float) -> Any:
        raise AssertionError(f"unexpected launch of {request.claim.id}")


@dataclass
class Planning:
    """In-memory stores and a fake cluster, for tests of the plan alone (`ClusterReplacementLauncher.plan`)."""

    config: ClusterConfig
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(NOW))
    store: MemoryClaimStore = field(default_factory=MemoryClaimStore)
    offerings: MemoryOfferingAvailability = field(default_factory=MemoryOfferingAvailability)
    cluster: FakeCluster = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = FakeCluster(self.clock)

    def launcher(self) -> ClusterReplacementLauncher:
        return ClusterReplacementLauncher(
            cluster=self.cluster,
            store=self.store,
            offerings=self.offerings,
            launcher=NeverLaunches(),
            config=self.config,
            catalog=catalog,
        )


@dataclass
class World:
    """A seeded moto account, the production launcher and stores on it, and a fake cluster."""

    session: boto3.session.Session
    ec2: Any
    fleet: FleetEmulator
    store: DynamoClaimStore
    offerings: DynamoOfferingAvailability
    instances: Ec2Instances
    cluster: FakeCluster
    clock: VirtualClock
    metrics: MemoryMetricsSink
    config: ClusterConfig = field(default_factory=cluster_config)

    def replacements(self, config: ClusterConfig | None = None) -> ClusterReplacementLauncher:
        the_config = config or self.config
        fleet = Ec2Fleet(
            ec2=self.ec2,
            ssm=self.session.client("ssm"),
            iam=self.session.client("iam"),
            cluster=describe_cluster(self.session.client("eks"), CLUSTER),
            sleep=lambda seconds: None,
        )
        launcher = ClaimLauncher(
            fleet=fleet,
            config=the_config,
            store=self.store,
            offerings=self.offerings,
            instances=self.instances,
            clock=self.clock,
        )
        return ClusterReplacementLauncher(
            cluster=self.cluster,
            store=self.store,
            offerings=self.offerings,
            launcher=launcher,
            config=the_config,
            catalog=catalog,
            metrics=self.metrics,
        )

    def live_instances(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        pages = self.ec2.describe_instances(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )
        for reservation in pages["Reservations"]:
            found.extend(reservation["Instances"])
        return found

    def add_node(self, node: Manifest, claim_id: str = "general-old") -> NodeClaim:
        """Put the node in the cluster and its claim in the store."""
        self.cluster.add_node(node)
        claim = old_claim(node, claim_id)
        self.store.put(claim)
        return claim


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        session = boto3.session.Session(botocore_session=BOTOCORE_SESSION, region_name="us-east-1")
        seeded = seed_cluster(session, CLUSTER, zones=ZONES)
        ec2 = retry.client(session, "ec2")
        fleet = FleetEmulator().attach(ec2)
        table = DynamoTable(retry.client(session, "dynamodb"), seeded.table_name)
        clock = VirtualClock(NOW)
        yield World(
            session=session,
            ec2=ec2,
            fleet=fleet,
            store=DynamoClaimStore(table),
            offerings=DynamoOfferingAvailability(table),
            instances=Ec2Instances(ec2, CLUSTER),
            cluster=FakeCluster(clock),
            clock=clock,
            metrics=MemoryMetricsSink(),
        )
