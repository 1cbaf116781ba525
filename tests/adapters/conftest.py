"""Fixtures for the AWS adapter tests: a seeded moto world, a cluster config, and the adapters wired to it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import boto3
import botocore.session
import pytest
from moto import mock_aws

from longshore.adapters.aws import retry
from longshore.adapters.aws.dynamodb import (
    DynamoClaimStore,
    DynamoLease,
    DynamoOfferingAvailability,
    DynamoTable,
)
from longshore.adapters.aws.eks import describe_cluster
from longshore.adapters.aws.fleet import Ec2Fleet
from longshore.adapters.aws.instances import Ec2Instances
from longshore.adapters.aws.userdata import ClusterInfo
from longshore.adapters.clock import WallClock
from longshore.core.claims import KubeletSettings, LaunchOption, LaunchRequest, NodeClaim, claim_id_for
from longshore.core.model import ClusterConfig, NodeClass, NodePool, Origin, SelectorTerm, Taint
from longshore.services.launch import ClaimLauncher
from longshore_sim.aws import FleetEmulator, SeededCluster, seed_cluster
from longshore_sim.throttle import ThrottleInjector

CLUSTER = "demo-cluster"
#: One botocore session for the whole run: service models load once, not per test.
BOTOCORE_SESSION = botocore.session.get_session()
V1 = Origin("karpenter.sh/v1", "NodePool", "test.yaml")


def node_class(name: str = "default", **overrides: object) -> NodeClass:
    values: dict[str, object] = {
        "name": name,
        "origin": Origin("karpenter.k8s.aws/v1", "EC2NodeClass", "test.yaml"),
        "ami_family": "AL2023",
        "ami_selector_terms": (SelectorTerm(alias="al2023@latest"),),
        "subnet_selector_terms": (SelectorTerm(tags=(("karpenter.sh/discovery", CLUSTER),)),),
        "security_group_selector_terms": (SelectorTerm(tags=(("karpenter.sh/discovery", CLUSTER),)),),
        "role": f"KarpenterNodeRole-{CLUSTER}",
    }
    values.update(overrides)
    return NodeClass(**values)  # type: ignore[arg-type]


def node_pool(name: str = "default", node_class_name: str = "default", **overrides: object) -> NodePool:
    values: dict[str, object] = {
        "name": name,
        "origin": V1,
        "node_class": node_class_name,
        "labels": (("team", "web"),),
        "taints": (Taint("dedicated", "NoSchedule", "web"),),
        "startup_taints": (Taint("example.com/agent-not-ready", "NoSchedule"),),
    }
    values.update(overrides)
    return NodePool(**values)  # type: ignore[arg-type]


def cluster_config(
    pools: tuple[NodePool, ...] | None = None, classes: tuple[NodeClass, ...] | None = None
) -> ClusterConfig:
    return ClusterConfig(
        name=CLUSTER,
        region="us-east-1",
        kubernetes_version="1.30",
        node_pools=pools or (node_pool(),),
        node_classes=classes or (node_class(),),
    )


PRICES = {
    ("m5.large", "spot"): 0.035,
    ("m5a.large", "spot"): 0.036,
    ("c5.large", "spot"): 0.031,
    ("m6g.large", "spot"): 0.030,
    ("m5.large", "on-demand"): 0.096,
    ("m5a.large", "on-demand"): 0.086,
    ("c5.large", "on-demand"): 0.085,
}
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def options(
    types: tuple[str, ...] = ("c5.large", "m5.large", "m5a.large"),
    capacity_types: tuple[str, ...] = ("spot", "on-demand"),
    zones: tuple[str, ...] = ZONES,
) -> tuple[LaunchOption, ...]:
    """Launch options over types x zones x capacity types, cheapest first (zone adds a small premium)."""
    found = [
        LaunchOption(t, z, ct, PRICES[(t, ct)] + 0.0001 * i, kubelet=KubeletSettings(max_pods=29))
        for t in types
        for ct in capacity_types
        for i, z in enumerate(zones)
        if (t, ct) in PRICES
    ]
    return tuple(sorted(found, key=lambda o: o.price))


def request(
    pods: tuple[str, ...] = ("default/web-1",), generation: int = 1, **kwargs: object
) -> LaunchRequest:
    opts = kwargs.pop("opts", None) or options()
    claim = NodeClaim(
        id=claim_id_for("default", pods, generation),
        nodepool="default",
        node_class="default",
        instance_types=tuple(dict.fromkeys(o.instance_type for o in opts)),  # type: ignore[attr-defined]
        pods=pods,
    )
    return LaunchRequest(claim=claim, options=opts, labels=(("app", "web"),))  # type: ignore[arg-type]


@dataclass
class World:
    """A seeded moto account plus Longshore's adapters wired to it."""

    session: boto3.session.Session
    seeded: SeededCluster
    ec2: object
    cluster: ClusterInfo
    config: ClusterConfig
    table: DynamoTable
    store: DynamoClaimStore
    offerings: DynamoOfferingAvailability
    lease: DynamoLease
    instances: Ec2Instances
    fleet: FleetEmulator
    throttle: ThrottleInjector
    sleeps: list[float] = field(default_factory=list)

    def launcher(self, config: ClusterConfig | None = None) -> ClaimLauncher:
        fleet = Ec2Fleet(
            ec2=self.ec2,
            ssm=self.session.client("ssm"),
            iam=self.session.client("iam"),
            cluster=self.cluster,
            sleep=self.sleeps.append,
        )
        return ClaimLauncher(
            fleet=fleet,
            config=config or self.config,
            store=self.store,
            offerings=self.offerings,
            instances=self.instances,
            clock=WallClock(),
        )

    def live_instances(self) -> list[dict[str, object]]:
        found: list[dict[str, object]] = []
        for reservation in self.ec2.describe_instances(  # type: ignore[attr-defined]
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )["Reservations"]:
            found.extend(reservation["Instances"])
        return found


def _world() -> Iterator[World]:
    with mock_aws():
        session = boto3.session.Session(botocore_session=BOTOCORE_SESSION, region_name="us-east-1")
        seeded = seed_cluster(session, CLUSTER)
        ec2 = retry.client(session, "ec2")
        fleet = FleetEmulator().attach(ec2)
        throttle = ThrottleInjector().attach(ec2)
        table = DynamoTable(retry.client(session, "dynamodb"), seeded.table_name)
        yield World(
            session=session,
            seeded=seeded,
            ec2=ec2,
            cluster=describe_cluster(session.client("eks"), CLUSTER),
            config=cluster_config(),
            table=table,
            store=DynamoClaimStore(table),
            offerings=DynamoOfferingAvailability(table),
            lease=DynamoLease(table),
            instances=Ec2Instances(ec2, CLUSTER),
            fleet=fleet,
            throttle=throttle,
        )


@pytest.fixture
def world() -> Iterator[World]:
    """A fresh seeded world per test (tests that change AWS state)."""
    yield from _world()


@pytest.fixture(scope="module")
def shared_world() -> Iterator[World]:
    """One seeded world per module, for tests that only read it."""
    yield from _world()
