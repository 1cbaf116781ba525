"""The interruption service's test world, and builders for claims and AWS-shaped events.

The store fakes come from `longshore.adapters.memory`, the cluster, instances, workflow and trigger fakes from
`tests.fakes`: stateful fakes that record outcomes (executions started, nodes deleted, events posted,
instances terminated, provisioner triggers), so tests assert on state rather than on calls.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longshore.adapters.memory import MemoryClaimStore, MemoryOfferingAvailability
from longshore.core.claims import NodeClaim
from longshore.services.interruption import InterruptionService
from longshore_sim.clock import VirtualClock
from tests.fakes import FakeCluster, FakeInstances, FakeTrigger, FakeWorkflow
from tests.workflow.fakes import make_node

EVENTS = Path(__file__).resolve().parents[1] / "events"
ZONE = "us-east-1a"


def load_event(name: str) -> dict[str, Any]:
    """A sample from tests/events (as AWS publishes it)."""
    document: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return document


def event_for(
    name: str, *instance_ids: str, event_id: str | None = None, time: str | None = None
) -> dict[str, Any]:
    """The sample `name` re-targeted at `instance_ids` (one for EC2 events, any number for Health events)."""
    event = copy.deepcopy(load_event(name))
    if event["source"] == "aws.health":
        entities = event["detail"]["affectedEntities"]
        event["detail"]["affectedEntities"] = [{**entities[0], "entityValue": i} for i in instance_ids]
        event["resources"] = list(instance_ids)
    else:
        (instance_id,) = instance_ids
        event["detail"]["instance-id"] = instance_id
        event["resources"] = [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"]
    if event_id is not None:
        event["id"] = event_id
    if time is not None:
        event["time"] = time
    return event


def instance_id(n: int) -> str:
    return f"i-{n:017x}"


def claim(
    n: int,
    *,
    nodepool: str = "default",
    instance_type: str = "m5.large",
    capacity_type: str = "spot",
    state: str = "initialized",
) -> NodeClaim:
    return NodeClaim(
        id=f"{nodepool}-claim{n:04d}",
        nodepool=nodepool,
        node_class="default",
        instance_type=instance_type,
        zone=ZONE,
        capacity_type=capacity_type,
        instance_id=instance_id(n),
        node_name=f"ip-10-0-0-{n}.ec2.internal",
        provider_id=f"aws:///{ZONE}/{instance_id(n)}",
        state=state,  # type: ignore[arg-type]
    )


@dataclass
class World:
    """A cluster of `n` spot nodes as the interruption service sees it."""

    claims: MemoryClaimStore = field(default_factory=MemoryClaimStore)
    offerings: MemoryOfferingAvailability = field(default_factory=MemoryOfferingAvailability)
    workflow: FakeWorkflow = field(default_factory=FakeWorkflow)
    trigger: FakeTrigger = field(default_factory=FakeTrigger)
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(1710776290.0))  # 2024-03-18T15:38:10Z
    rebalance: dict[str, str] = field(default_factory=dict)
    cluster: FakeCluster = field(init=False)
    instances: FakeInstances = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = FakeCluster(self.clock)
        self.instances = FakeInstances(self.clock)

    def tag(self, n: int, *, claim_id: str | None = None, nodepool: str = "default") -> None:
        """Instance `n` carries this cluster's tag (and `claim_id`'s), whatever the claim store says."""
        self.instances.add(instance_id(n), pool=nodepool, capacity_type="spot", claim_id=claim_id)

    @classmethod
    def of(cls, *claims: NodeClaim, rebalance: dict[str, str] | None = None) -> World:
        world = cls(rebalance=rebalance or {})
        for c in claims:
            world.claims.put(c)
            if c.node_name and c.instance_id:
                world.cluster.add_node(make_node(c.node_name, c.instance_id, c.nodepool, c.zone or ZONE))
        return world

    def service(self) -> InterruptionService:
        return InterruptionService(
            claims=self.claims,
            offerings=self.offerings,
            workflow=self.workflow,
            cluster=self.cluster,
            instances=self.instances,
            provisioner=self.trigger,
            clock=self.clock,
            rebalance_policy=lambda pool: self.rebalance.get(pool, "ignore"),  # type: ignore[arg-type,return-value]
        )


def sqs_record(body: str, message_id: str, receive_count: int = 1) -> dict[str, Any]:
    """One record of a Lambda SQS event, as the event source mapping delivers it."""
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1710776289000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1710776289500",
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:longshore-interruption",
        "awsRegion": "us-east-1",
    }


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {"Records": [sqs_record(body, f"m{index}") for index, body in enumerate(bodies)]}
