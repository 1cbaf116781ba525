"""The planner Lambda: its loop of passes within the invocation, the Step Functions surge start on moto, and
the AMI resolver wrapper behind AMI drift."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.amis import ResolvedImages
from longshore.adapters.aws.network import Ec2PlacementGroups
from longshore.core.commands import DisruptionCommand
from longshore.handlers import planner as planner_handler
from longshore.wiring import planner as planner_wiring
from longshore.wiring.planner import StepFunctionsSurgeWorkflow
from longshore.wiring.runtime import Runtime
from longshore.workflow.definition import disruption_definition
from longshore_sim.clock import VirtualClock
from tests.builders import node_class
from tests.planner.fakes import PlannerWorld, a_pool, cluster_config
from tests.workflow.sfn_harness import ROLE_ARN, STEPS_ARN


@dataclass
class FakeContext:
    remaining_ms: int
    function_name: str = "longshore-planner"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:longshore-planner"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_one_invocation_validates_and_acts_on_a_consolidation() -> None:
    w = PlannerWorld()
    w.add_node("a")
    w.add_node("b")
    w.add_pod("w1", "a", cpu="1")
    w.add_pod("w2", "b", cpu="1")
    deadline = w.clock.now() + 60

    report = planner_wiring.process(w.service, lambda: deadline - w.clock.now(), w.clock.advance)

    assert report.passes >= 3  # every 10 s while more than margin + a pass is left
    assert len(report.totals.started) == 1 and report.totals.started[0].startswith("underutilized-")
    assert w.clock.now() <= deadline


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_handler_runs_at_least_one_pass_with_the_installed_service() -> None:
    w = PlannerWorld()
    w.add_node("idle")
    planner_wiring.CONTAINER.install(w.service)
    try:
        result = planner_handler.handler({}, FakeContext(remaining_ms=1000))  # type: ignore[arg-type]
    finally:
        planner_wiring.CONTAINER.install(None)

    assert result["passes"] == 1 and result["started"][0].startswith("empty-i-idle")
    assert w.workflows.disruptions()[0].input["reason"] == "empty"


def test_surge_start_carries_the_replacement_claim_and_starts_once() -> None:
    with mock_aws():
        client = boto3.client("stepfunctions", region_name="us-east-1")
        arn = client.create_state_machine(
            name="d", definition=json.dumps(disruption_definition(STEPS_ARN)), roleArn=ROLE_ARN
        )["stateMachineArn"]
        workflow = StepFunctionsSurgeWorkflow(client, arn)
        command = DisruptionCommand(
            instance_id="i-0abc", reason="drifted", node_name="n1", replace=True, requested_at=100.0
        )

        first = workflow.start_surge(command, "default-abc123", 1300.0)
        again = workflow.start_surge(command, "default-abc123", 1300.0)

        assert first.started and not again.started
        (execution,) = client.list_executions(stateMachineArn=arn)["executions"]
        payload = json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"])
        assert payload["replacement"] == {
            "claimId": "default-abc123",
            "status": "launching",
            "polls": 0,
            "giveUpAt": 1300.0,
        }
        assert payload["replace"] is True and payload["instanceId"] == "i-0abc"


class FakeResolver:
    def __init__(self, images: dict[tuple[str, str], str]) -> None:
        self.images = images

    def resolve(self, node_class: Any, version: str, arch: str, accelerator: str = "") -> str:
        if (arch, accelerator) not in self.images:
            raise LookupError(arch)
        return self.images[(arch, accelerator)]


def test_resolved_images_cover_every_variant_and_refresh() -> None:
    clock = VirtualClock(0.0)
    generations = [
        FakeResolver({("x86_64", ""): "ami-1", ("arm64", ""): "ami-2"}),
        FakeResolver({("x86_64", ""): "ami-3"}),
    ]
    images = ResolvedImages(lambda: generations.pop(0), "1.31", clock.now)

    assert images.current_images(node_class()) == frozenset({"ami-1", "ami-2"})
    clock.advance_to(100.0)
    assert images.current_images(node_class()) == frozenset({"ami-1", "ami-2"})  # cached
    clock.advance_to(400.0)
    assert images.current_images(node_class()) == frozenset({"ami-3"})


@pytest.mark.slow
def test_build_service_wires_the_production_adapters_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
    from longshore.config.loader import bundle_cluster
    from longshore.core.claims import NodeClaim
    from longshore_sim.aws import seed_cluster
    from tests.conftest import VALID_V1_MANIFESTS

    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        seed_cluster(session, "demo-cluster", table_name="longshore-demo", kubernetes_version="1.31")
        session.client("ssm").put_parameter(
            Name="/longshore/demo/config",
            Type="String",
            Value=bundle_cluster([VALID_V1_MANIFESTS], cluster_name="demo-cluster", region="us-east-1"),
        )
        sfn = session.client("stepfunctions")
        arn = sfn.create_state_machine(
            name="d", definition=json.dumps(disruption_definition(STEPS_ARN)), roleArn=ROLE_ARN
        )["stateMachineArn"]
        for variable, value in {
            "LONGSHORE_CLUSTER_NAME": "demo-cluster",
            "AWS_REGION": "us-east-1",
            "LONGSHORE_CONFIG_PARAMETER": "/longshore/demo/config",
            "LONGSHORE_TABLE_NAME": "longshore-demo",
            "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": arn,
        }.items():
            monkeypatch.setenv(variable, value)

        service = planner_wiring.build_planner(Runtime.from_env())

        assert service.config.node_pools and service.config.name == "demo-cluster"  # read from SSM
        command = DisruptionCommand(instance_id="i-0abc", reason="drifted", replace=True, requested_at=100.0)
        assert service.ports.workflow.start_surge(command, "default-abc123", None).started
        [execution] = sfn.list_executions(stateMachineArn=arn)["executions"]
        assert execution["name"] == command.execution_name()
        service.ports.claims.put(NodeClaim("default-abc123", "default", "default"))
        table = DynamoClaimStore(DynamoTable(session.client("dynamodb"), "longshore-demo"))
        assert table.get("default-abc123") is not None  # the claims live in the table the environment names
        assert service.ports.images is not None
        assert service.ports.images.current_images(service.config.node_classes[0])  # AMIs from public SSM
        assert isinstance(service.ports.placement_groups, Ec2PlacementGroups)  # as the provisioner's


def test_a_quiet_cluster_costs_one_pass_per_invocation() -> None:
    w = PlannerWorld()
    w.add_node("small", type_name="m5.large")
    w.add_pod("web", "small", cpu="1500m")  # nothing cheaper can hold it, nothing empty
    started = w.clock.now()

    report = planner_wiring.process(w.service, lambda: started + 120 - w.clock.now(), w.clock.advance)

    assert report.passes == 1 and report.stopped == "quiet" and not report.totals.started
    assert w.clock.now() - started < 1, "no idle waiting was billed"


def test_an_emptiness_wait_keeps_the_invocation_until_it_ends_then_acts() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=60)))
    w.add_node("busy")
    w.add_node("idle")
    w.add_pod("web", "busy", cpu="1")
    w.add_pod("old", "idle", cpu="1")
    w.run_pass()  # an earlier invocation saw the pod
    w.clock.advance(10)
    w.cluster.delete_pod("default", "old", grace_period_seconds=0)  # what the webhook's trigger reports
    started = w.clock.now()

    report = planner_wiring.process(w.service, lambda: started + 120 - w.clock.now(), w.clock.advance)

    assert report.totals.started and report.totals.started[0].startswith("empty-i-idle")
    assert 60 <= w.clock.now() - started < 75, "it waited for consolidateAfter, not for its timeout"
    assert report.stopped == "quiet"


def test_a_wait_longer_than_the_invocation_is_left_to_a_later_scheduled_one() -> None:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=600)))
    w.add_node("idle")
    w.add_pod("old", "idle", cpu="1")
    w.run_pass()
    w.clock.advance(10)
    w.cluster.delete_pod("default", "old", grace_period_seconds=0)
    started = w.clock.now()

    report = planner_wiring.process(w.service, lambda: started + 120 - w.clock.now(), w.clock.advance)

    assert report.stopped == "deadline" and report.passes == 1 and not report.totals.started
    assert w.clock.now() - started < 1
