"""In-memory fakes for the ports interruption handling uses, and builders for claims and AWS-shaped events.

The store fakes come from `longshore.adapters.memory`; the rest are stateful fakes that record outcomes
(executions started, nodes deleted, events posted, instances terminated, provisioner triggers), so tests
assert on state rather than on calls.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longshore.adapters.memory import MemoryClaimStore, MemoryOfferingAvailability
from longshore.core.claims import CloudInstance, NodeClaim
from longshore.core.commands import DisruptionCommand
from longshore.ports.kube import KubeEvent
from longshore.ports.workflow import StartResult
from longshore.services.interruption import InterruptionService

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


class FakeClock:
    def __init__(self, now: float) -> None:
        self.current = now

    def now(self) -> float:
        return self.current

    def sleep(self, seconds: float) -> None:
        self.current += seconds


class FakeWorkflow:
    """Step Functions semantics: a name can be used once; a second start with it is refused."""

    def __init__(self) -> None:
        self.executions: dict[str, DisruptionCommand] = {}
        self.failures_left = 0
        self.attempts = 0

    def start(self, command: DisruptionCommand) -> StartResult:
        self.attempts += 1
        if self.failures_left:
            self.failures_left -= 1
            raise ConnectionError("states.us-east-1.amazonaws.com: throttled")
        name = command.execution_name()
        if name in self.executions:
            return StartResult(False, name)
        self.executions[name] = command
        return StartResult(True, name, f"arn:aws:states:us-east-1:123456789012:execution:disruption:{name}")


class FakeCluster:
    def __init__(self, node_names: list[str]) -> None:
        self.nodes = set(node_names)
        self.events: list[KubeEvent] = []

    def delete_node(self, name: str) -> bool:
        present = name in self.nodes
        self.nodes.discard(name)
        return present

    def post_event(self, event: KubeEvent) -> None:
        self.events.append(event)


class FakeInstances:
    """EC2 as the interruption service sees it: `tagged` holds instances carrying this cluster's tag."""

    def __init__(self) -> None:
        self.terminated: set[str] = set()
        self.tagged: dict[str, CloudInstance] = {}

    def tag(self, n: int, *, claim_id: str | None = None, nodepool: str = "default") -> None:
        self.tagged[instance_id(n)] = CloudInstance(
            instance_id(n), "running", "m5.large", ZONE, "spot", claim_id=claim_id, nodepool=nodepool
        )

    def list_owned(self) -> tuple[CloudInstance, ...]:
        return tuple(i for k, i in sorted(self.tagged.items()) if k not in self.terminated)

    def terminate(self, instance_ids: Any) -> None:
        self.terminated.update(instance_ids)


class FakeTrigger:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def trigger(self, reason: str) -> None:
        self.reasons.append(reason)


@dataclass
class World:
    """A cluster of `n` spot nodes as the interruption service sees it."""

    claims: MemoryClaimStore = field(default_factory=MemoryClaimStore)
    offerings: MemoryOfferingAvailability = field(default_factory=MemoryOfferingAvailability)
    workflow: FakeWorkflow = field(default_factory=FakeWorkflow)
    cluster: FakeCluster = field(default_factory=lambda: FakeCluster([]))
    instances: FakeInstances = field(default_factory=FakeInstances)
    trigger: FakeTrigger = field(default_factory=FakeTrigger)
    clock: FakeClock = field(default_factory=lambda: FakeClock(1710776290.0))  # 2024-03-18T15:38:10Z
    rebalance: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, *claims: NodeClaim, rebalance: dict[str, str] | None = None) -> World:
        world = cls(rebalance=rebalance or {})
        for c in claims:
            world.claims.put(c)
            if c.node_name:
                world.cluster.nodes.add(c.node_name)
        return world

    def service(self) -> InterruptionService:
        return InterruptionService(
            claims=self.claims,
            offerings=self.offerings,
            workflow=self.workflow,
            cluster=self.cluster,  # type: ignore[arg-type]
            instances=self.instances,  # type: ignore[arg-type]
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
